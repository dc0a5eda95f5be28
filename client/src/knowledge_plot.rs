//! `waiting-room-client knowledge-plot`: tick → knowledge latency over time, one line per
//! `load --json` report (BENCHMARKS.md, "Ninety thousand fans": one load process per
//! instance, so one line per instance).
//!
//! Each report carries `knowledge_by_second`: per tick second, the samples and their p50 and
//! p99. The plot draws each report's p99 (solid) and p50 (thin) against seconds since the
//! first tick any report measured.

use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::prelude::*;
use serde::Deserialize;

use crate::plot::{canvas, legend, plot_err};

/// `knowledge-plot`: one line per report.
#[derive(Clone, Debug, clap::Args)]
pub struct KnowledgePlotArgs {
    /// Where to draw (SVG).
    #[arg(long, default_value = "knowledge.svg")]
    pub out: PathBuf,

    /// `load --json` reports, one per instance (`scale-report-1.json`, …).
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct Report {
    knowledge_by_second: Vec<[f64; 4]>,
}

/// One report's points: its label, then (second, p50, p99) per tick second.
type Line = (String, Vec<(f64, f64, f64)>);

/// Reads the reports and draws the plot.
pub fn main(args: KnowledgePlotArgs) -> anyhow::Result<()> {
    let mut lines: Vec<Line> = Vec::new();
    for path in &args.reports {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let report: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is no load report with knowledge", path.display()))?;
        let points = report
            .knowledge_by_second
            .iter()
            .map(|p| (p[0], p[2], p[3]))
            .collect();
        lines.push((label(path), points));
    }
    let first = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.0))
        .fold(f64::INFINITY, f64::min);
    anyhow::ensure!(first.is_finite(), "no report measured a tick");
    for (_, points) in &mut lines {
        for p in points.iter_mut() {
            p.0 -= first;
        }
    }
    draw(&args.out, &lines)
}

/// `out/scale-report-3.json` → `instance 3`; other names as they are.
fn label(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once("-report-") {
        Some((_, n)) if n.chars().all(|c| c.is_ascii_digit()) => format!("instance {n}"),
        _ => stem,
    }
}

fn draw(path: &Path, lines: &[Line]) -> anyhow::Result<()> {
    let right = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.0))
        .fold(10.0, f64::max);
    let top = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.2))
        .fold(100.0, f64::max)
        .max(1000.0)
        * 1.05;
    let title = "From each tick to every fan knowing it (pushed or counted), per instance";
    let root = canvas(path, (900, 560), title, 18)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..right, 0f64..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the first tick")
        .y_desc("tick → knowledge (ms): p99 thick, p50 thin")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(plot_err)?;
    // The target: every tick known within a second at p99.
    chart
        .draw_series(LineSeries::new(
            [(0.0, 1000.0), (right, 1000.0)],
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(plot_err)?;
    for (i, (label, points)) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.2)),
                color.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.1)),
                color.stroke_width(1),
            ))
            .map_err(plot_err)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_instance_is_drawn() {
        let dir = std::env::temp_dir().join(format!("wr-knowledge-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut reports = Vec::new();
        for n in 1..=2 {
            let by_second: Vec<[f64; 4]> = (0..10)
                .map(|s| [1_000.0 + f64::from(s), 100.0, 20.0 * f64::from(n), 90.0])
                .collect();
            let path = dir.join(format!("scale-report-{n}.json"));
            let json = serde_json::json!({"knowledge_by_second": by_second});
            std::fs::write(&path, json.to_string()).unwrap();
            reports.push(path);
        }
        let out = dir.join("plot.svg");
        main(KnowledgePlotArgs {
            out: out.clone(),
            reports,
        })
        .unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(
            svg.contains("instance 1") && svg.contains("instance 2"),
            "{svg}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
