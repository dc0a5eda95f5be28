//! `waiting-room-client staleness-plot`: the staleness of several `load --json` runs on one
//! plot, push beside polling (BENCHMARKS.md, "Push against polling").
//!
//! Each report carries its staleness distribution (`staleness_cdf`, a point per percent).
//! Reports whose file names differ only in a trailing `-N` (the load processes of one run,
//! `crowd-poll-19000-report-1.json` and `…-2.json`) are one line: their distributions mixed,
//! each weighed by the changes it learned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::prelude::*;
use serde::Deserialize;

use crate::plot::{canvas, legend, plot_err};

/// `staleness-plot`: one line per run.
#[derive(Clone, Debug, clap::Args)]
pub struct StalenessPlotArgs {
    /// Where to draw (SVG).
    #[arg(long, default_value = "staleness.svg")]
    pub out: PathBuf,

    /// `load --json` reports; a run's processes end in `-1.json`, `-2.json`, ….
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct Report {
    staleness_cdf: Vec<[f64; 2]>,
    positions_learned: u64,
}

/// One run: its label and its processes' distributions with their weights.
type Runs = BTreeMap<String, Vec<(u64, Vec<[f64; 2]>)>>;

/// Reads the reports and draws the plot.
pub fn main(args: StalenessPlotArgs) -> anyhow::Result<()> {
    let mut runs = Runs::new();
    for path in &args.reports {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let report: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is no load report with staleness", path.display()))?;
        if report.staleness_cdf.is_empty() {
            continue;
        }
        runs.entry(label(path))
            .or_default()
            .push((report.positions_learned, report.staleness_cdf));
    }
    anyhow::ensure!(!runs.is_empty(), "no report measured any staleness");
    let lines: Vec<(String, Vec<(f64, f64)>)> = runs
        .into_iter()
        .map(|(label, parts)| (label, mix(&parts)))
        .collect();
    draw(&args.out, &lines)
}

/// `out/crowd-poll-19000-report-2.json` → `poll-19000`.
fn label(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match stem.rsplit_once('-') {
        Some((head, n)) if n.chars().all(|c| c.is_ascii_digit()) => head.to_owned(),
        _ => stem,
    };
    let stem = stem.strip_suffix("-report").unwrap_or(&stem);
    stem.strip_prefix("crowd-").unwrap_or(stem).to_owned()
}

/// The share of all changes learned within each staleness any part names: the parts'
/// distributions (steps between their points) weighed by their counts.
fn mix(parts: &[(u64, Vec<[f64; 2]>)]) -> Vec<(f64, f64)> {
    let total: u64 = parts.iter().map(|(n, _)| n).sum::<u64>().max(1);
    let mut xs: Vec<f64> = parts
        .iter()
        .flat_map(|(_, cdf)| cdf.iter().map(|p| p[0]))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .map(|x| {
            let share: f64 = parts
                .iter()
                .map(|(n, cdf)| {
                    let within = cdf
                        .iter()
                        .filter(|p| p[0] <= x)
                        .map(|p| p[1])
                        .fold(0.0, f64::max);
                    within * *n as f64
                })
                .sum();
            (x, share / total as f64)
        })
        .collect()
}

fn draw(path: &Path, lines: &[(String, Vec<(f64, f64)>)]) -> anyhow::Result<()> {
    let right = lines
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.0))
        .fold(100.0, f64::max)
        * 1.05;
    let title =
        "How stale a fan's position is: from the tick that changed it to the fan knowing it";
    let root = canvas(path, (900, 560), title, 18)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..right, 0f64..1.0)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("staleness (ms)")
        .y_desc("share of changes known within it")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{:.0} %", v * 100.0))
        .draw()
        .map_err(plot_err)?;
    for (i, (label, points)) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        // Polling dashed-looking by weight alone: thicker lines for polling runs.
        let width = if label.starts_with("poll") { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(width),
            ))
            .map_err(plot_err)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
            });
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_processes_share_a_label() {
        for (file, expected) in [
            ("out/crowd-poll-19000-report-2.json", "poll-19000"),
            ("crowd-sse-2000-report-1.json", "sse-2000"),
            ("report-1.json", "report"),
            ("mine.json", "mine"),
        ] {
            assert_eq!(label(Path::new(file)), expected, "{file}");
        }
    }

    #[test]
    fn mixed_distributions_weigh_each_part_by_its_count() {
        // Three changes known within 10 ms, one within 100 ms.
        let fast = (3, vec![[10.0, 0.0], [10.0, 1.0]]);
        let slow = (1, vec![[100.0, 0.0], [100.0, 1.0]]);
        let mixed = mix(&[fast, slow]);
        assert_eq!(mixed, vec![(10.0, 0.75), (100.0, 1.0)]);
    }

    #[test]
    fn the_plot_is_drawn() {
        let dir = std::env::temp_dir().join(format!("wr-staleness-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let report = |p50: f64| {
            let cdf: Vec<[f64; 2]> = (0..=100)
                .map(|p| [p50 * f64::from(p) / 50.0, f64::from(p) / 100.0])
                .collect();
            serde_json::json!({"staleness_cdf": cdf, "positions_learned": 10}).to_string()
        };
        std::fs::write(dir.join("crowd-sse-10-report-1.json"), report(5.0)).unwrap();
        std::fs::write(dir.join("crowd-poll-10-report-1.json"), report(500.0)).unwrap();
        let out = dir.join("plot.svg");
        main(StalenessPlotArgs {
            out: out.clone(),
            reports: vec![
                dir.join("crowd-sse-10-report-1.json"),
                dir.join("crowd-poll-10-report-1.json"),
            ],
        })
        .unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.contains("sse-10") && svg.contains("poll-10"), "{svg}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
