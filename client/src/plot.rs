//! The load run's timeline as a CSV and an SVG plot, and its first ETAs against the real
//! waits as another.
//!
//! SVG, because plotters' bitmap backend needs system fonts to draw any text, and the SVG
//! backend leaves text to whoever views the file.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;

use waiting_room::words::thousands;

/// The run's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Sample {
    /// Seconds since the run started.
    pub seconds: f64,
    /// Streams open at that moment.
    pub connections: u64,
    /// Cumulative counts.
    pub joined: u64,
    pub messages: u64,
    pub admitted: u64,
    pub errors: u64,
}

/// A per-second rate between two samples.
fn rate(now: &Sample, before: &Sample, pick: fn(&Sample) -> u64) -> f64 {
    let dt = now.seconds - before.seconds;
    if dt <= 0.0 {
        return 0.0;
    }
    pick(now).saturating_sub(pick(before)) as f64 / dt
}

/// Writes one row per sample, with the rates since the previous sample.
pub(crate) fn write_csv(path: &Path, samples: &[Sample]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    writeln!(
        out,
        "seconds,connections,joined,messages,admitted,errors,joins_per_second,messages_per_second"
    )?;
    let mut before = Sample::default();
    for s in samples {
        writeln!(
            out,
            "{:.3},{},{},{},{},{},{:.1},{:.1}",
            s.seconds,
            s.connections,
            s.joined,
            s.messages,
            s.admitted,
            s.errors,
            rate(s, &before, |s| s.joined),
            rate(s, &before, |s| s.messages),
        )?;
        before = *s;
    }
    out.flush()?;
    Ok(())
}

/// One point of the plot: the levels at a sample and the rates since the previous one.
struct Row {
    seconds: f64,
    connections: f64,
    admitted: f64,
    joins_per_second: f64,
    messages_per_second: f64,
}

/// A line: its legend, its colour and where it reads its value.
type Line = (&'static str, RGBColor, fn(&Row) -> f64);

/// Two panels over the same time axis: connections held (and fans admitted so far) above,
/// joins and pushed messages per second below.
pub(crate) fn draw_svg(path: &Path, title: &str, samples: &[Sample]) -> anyhow::Result<()> {
    let rows: Vec<Row> = samples
        .iter()
        .scan(Sample::default(), |before, s| {
            let row = Row {
                seconds: s.seconds,
                connections: s.connections as f64,
                admitted: s.admitted as f64,
                joins_per_second: rate(s, before, |s| s.joined),
                messages_per_second: rate(s, before, |s| s.messages),
            };
            *before = *s;
            Some(row)
        })
        .collect();
    let root = canvas(path, (1000, 700), title, 22)?;
    let (upper, lower) = root.split_vertically(330);
    let levels: [Line; 2] = [
        ("connections held", BLUE, |r| r.connections),
        ("admitted (cumulative)", GREEN, |r| r.admitted),
    ];
    panel(
        &upper,
        "fans",
        SeriesLabelPosition::UpperLeft,
        &rows,
        &levels,
    )?;
    // Joins drawn last: while fans connect, each join brings one message and the lines meet.
    let rates: [Line; 2] = [
        ("messages pushed / s", MAGENTA, |r| r.messages_per_second),
        ("joins / s", RED, |r| r.joins_per_second),
    ];
    panel(
        &lower,
        "per second",
        SeriesLabelPosition::UpperRight,
        &rows,
        &rates,
    )?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// One chart of `lines` against time, its y axis fitted to the data.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    y_desc: &str,
    legend_at: SeriesLabelPosition,
    rows: &[Row],
    lines: &[Line],
) -> anyhow::Result<()> {
    let t_max = rows.last().map_or(1.0, |r| r.seconds).max(1.0);
    let y_max = rows
        .iter()
        .flat_map(|r| lines.iter().map(move |(_, _, pick)| pick(r)))
        .fold(1.0, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..t_max, 0f64..y_max)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc(y_desc)
        .x_label_formatter(&|t| format!("{t:.0}"))
        .y_label_formatter(&|v| thousands(v.round() as u64))
        .draw()
        .map_err(plot_err)?;
    for &(label, color, pick) in lines {
        chart
            .draw_series(LineSeries::new(
                rows.iter().map(|r| (r.seconds, pick(r))),
                color.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    legend(&mut chart, legend_at)?;
    Ok(())
}

/// One fan on the ETA plot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EtaPoint {
    /// The first ETA it was told, in seconds.
    pub eta: f64,
    /// How long it really waited from then.
    pub wait: f64,
    /// The range it was told with that ETA, if any.
    pub range: Option<(f64, f64)>,
}

/// First ETA told (x) against the real wait (y), one dot per admitted fan. On the diagonal
/// the ETA was exact; below it the fan was admitted early, above it late; the two grey lines
/// are ±10 %. A range told with the ETA is a horizontal bar through the dot. Fans whose wait
/// is at most `min_wait` (not counted in the error) are grey.
pub(crate) fn draw_eta_svg(
    path: &Path,
    title: &str,
    points: &[EtaPoint],
    min_wait: f64,
) -> anyhow::Result<()> {
    let top = points
        .iter()
        .flat_map(|p| [p.eta, p.wait, p.range.map_or(0.0, |r| r.1)])
        .fold(1.0, f64::max)
        * 1.05;
    let root = canvas(path, (800, 760), title, 20)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..top, 0f64..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("first ETA told (s)")
        .y_desc("real wait (s)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(plot_err)?;
    let grey = RGBColor(150, 150, 150);
    for (factor, label) in [(0.9, "±10 %"), (1.1, "")] {
        // From the origin to where y = factor·x leaves the square.
        let end = if factor > 1.0 {
            (top / factor, top)
        } else {
            (top, top * factor)
        };
        let series = chart
            .draw_series(LineSeries::new([(0.0, 0.0), end], grey.stroke_width(1)))
            .map_err(plot_err)?;
        if !label.is_empty() {
            series.label(label).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1))
            });
        }
    }
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (top, top)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?
        .label("told = real (below: admitted early, above: late)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
    let ranged = RGBColor(120, 170, 230);
    let bars = chart
        .draw_series(points.iter().filter_map(|p| {
            let (lo, hi) = p.range?;
            Some(PathElement::new(
                vec![(lo, p.wait), (hi, p.wait)],
                ranged.stroke_width(1),
            ))
        }))
        .map_err(plot_err)?;
    if points.iter().any(|p| p.range.is_some()) {
        bars.label("range told").legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], ranged.stroke_width(1))
        });
    }
    chart
        .draw_series(
            points
                .iter()
                .filter(|p| p.wait <= min_wait)
                .map(|p| Circle::new((p.eta, p.wait), 3, grey.filled())),
        )
        .map_err(plot_err)?
        .label(format!("fan waiting at most {min_wait} s (not counted)"))
        .legend(move |(x, y)| Circle::new((x + 10, y), 3, grey.filled()));
    chart
        .draw_series(
            points
                .iter()
                .filter(|p| p.wait > min_wait)
                .map(|p| Circle::new((p.eta, p.wait), 3, BLUE.filled())),
        )
        .map_err(plot_err)?
        .label(format!("fan waiting over {min_wait} s (counted)"))
        .legend(|(x, y)| Circle::new((x + 10, y), 3, BLUE.filled()));
    // Lower right: fans admitted far earlier than told, the rarest dots.
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// An SVG canvas at `path`, white, titled: what every plot here draws on.
pub(crate) fn canvas<'a>(
    path: &'a Path,
    size: (u32, u32),
    title: &str,
    title_px: u32,
) -> anyhow::Result<DrawingArea<SVGBackend<'a>, plotters::coord::Shift>> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    root.titled(title, ("sans-serif", title_px))
        .map_err(plot_err)
}

/// The legend box every plot here draws, at `at`.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_err)
}

/// plotters' errors borrow the backend's error type; keep only the text.
pub(crate) fn plot_err<E: std::error::Error + Send + Sync>(
    e: DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the plot: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Sample> {
        (1..=5)
            .map(|i| Sample {
                seconds: i as f64,
                connections: 10 * i,
                joined: 10 * i,
                messages: 25 * i,
                admitted: i,
                errors: 0,
            })
            .collect()
    }

    #[test]
    fn csv_has_a_header_a_row_per_sample_and_rates() {
        let path = std::env::temp_dir().join(format!("wr-plot-{}.csv", uuid::Uuid::new_v4()));
        write_csv(&path, &samples()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 6);
        assert!(lines[0].starts_with("seconds,connections"));
        assert_eq!(lines[2], "2.000,20,20,50,2,0,10.0,25.0");
    }

    #[test]
    fn the_eta_plot_has_its_diagonal_dots_and_ranges() {
        let path = std::env::temp_dir().join(format!("wr-eta-{}.svg", uuid::Uuid::new_v4()));
        let points = [
            EtaPoint {
                eta: 12.0,
                wait: 11.4,
                range: None,
            },
            EtaPoint {
                eta: 2.0,
                wait: 1.5,
                range: None,
            },
            EtaPoint {
                eta: 30.0,
                wait: 40.0,
                range: Some((20.0, 45.0)),
            },
        ];
        draw_eta_svg(&path, "eta run", &points, 10.0).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(svg.starts_with("<svg"));
        for label in ["eta run", "told = real", "first ETA told (s)", "range told"] {
            assert!(svg.contains(label), "missing {label}");
        }
        // Three dots, and three more in the legend's markers at most.
        assert!(svg.matches("<circle").count() >= 3, "{svg}");
        // Nothing to draw still draws the axes.
        draw_eta_svg(&path, "empty", &[], 10.0).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("real wait")
        );
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn svg_is_drawn_with_both_panels() {
        let path = std::env::temp_dir().join(format!("wr-plot-{}.svg", uuid::Uuid::new_v4()));
        draw_svg(&path, "test run", &samples()).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(svg.starts_with("<svg"));
        for label in ["connections held", "messages pushed / s", "test run"] {
            assert!(svg.contains(label), "missing {label}");
        }
    }
}
