//! A small SVG chart, written as text on the server so the report reads without JavaScript:
//! one or more series over the seconds of a sale (lines) or over named buckets (bars), a y
//! axis of a few round ticks, a legend, and a title screen readers say. Colours come from the
//! series' CSS classes (`static/report.css`): the server's CSP allows no inline style.

use std::fmt::Write;

use super::escape;
use crate::words::{countdown, thousands};

/// Points a line keeps at most: more than the chart is wide has no use, and a day of
/// seconds would make a page of megabytes.
pub(super) const MAX_POINTS: usize = 1_200;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 260.0;
/// Room for the y ticks' labels (left), the legend (top) and the x ticks' labels (bottom).
const LEFT: f64 = 64.0;
const RIGHT: f64 = 28.0;
const TOP: f64 = 32.0;
const BOTTOM: f64 = 28.0;

/// Round steps of the time axis, seconds.
const TIME_STEPS: &[u64] = &[
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200,
    86_400,
];

/// What a chart has along its x axis.
pub(super) enum Along<'a> {
    /// Seconds from the first tick, one per value: each series is a line.
    Seconds(&'a [u64]),
    /// Named buckets, one per value: each series is a row of bars.
    Buckets(&'a [String]),
}

/// One series: its values, one per x (`None`: no value there, a gap in a line).
pub(super) struct Series<'a> {
    /// Its name in the legend.
    pub(super) name: &'a str,
    /// The CSS class that colours it.
    pub(super) class: &'a str,
    /// One per x; NaN and infinities count as missing, negatives as 0.
    pub(super) values: Vec<Option<f64>>,
}

/// A chart, drawn by [`Chart::svg`].
pub(super) struct Chart<'a> {
    /// Said by screen readers (`<title>`, `aria-label`).
    pub(super) title: &'a str,
    /// The x axis.
    pub(super) along: Along<'a>,
    /// What is drawn.
    pub(super) series: Vec<Series<'a>>,
    /// Written across the chart when no series has a value.
    pub(super) empty: &'a str,
}

/// Where data land in the view box: x from `x0` to `x1`, y from 0 to `y1`.
struct Frame {
    x0: f64,
    x1: f64,
    y1: f64,
}

impl Frame {
    fn x(&self, x: f64) -> f64 {
        LEFT + (x - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, y: f64) -> f64 {
        HEIGHT - BOTTOM - y / self.y1 * (HEIGHT - TOP - BOTTOM)
    }
}

impl Chart<'_> {
    /// The chart as an inline `<svg>` element, scaled by CSS through its view box.
    pub(super) fn svg(&self) -> String {
        let title = escape(self.title);
        let series: Vec<Vec<Option<f64>>> = self
            .series
            .iter()
            .map(|s| s.values.iter().map(|&v| finite(v)).collect())
            .collect();
        let top = series.iter().flatten().flatten().copied().reduce(f64::max);
        let body = match top {
            Some(top) => self.plot(&series, top),
            None => empty(self.empty),
        };
        format!(
            r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}"><title>{title}</title>{legend}{body}</svg>"#,
            legend = self.legend(),
        )
    }

    fn plot(&self, series: &[Vec<Option<f64>>], top: f64) -> String {
        let step = y_step(top);
        let ticks = (top / step).ceil().max(1.0);
        let (x0, x1) = match self.along {
            Along::Seconds(ts) => {
                let (first, last) = (ts.first().copied(), ts.last().copied());
                let first = first.unwrap_or(0) as f64;
                (first, (last.unwrap_or(0) as f64).max(first + 1.0))
            }
            Along::Buckets(names) => (0.0, names.len().max(1) as f64),
        };
        let frame = Frame {
            x0,
            x1,
            y1: ticks * step,
        };
        let mut out = y_axis(&frame, step, ticks as u64);
        out += &self.x_axis(&frame);
        for (i, (s, values)) in self.series.iter().zip(series).enumerate() {
            let marks = match self.along {
                Along::Seconds(ts) => lines(&frame, &downsample(ts, values)),
                Along::Buckets(_) => bars(&frame, values, i, self.series.len()),
            };
            let _ = write!(out, r#"<g class="series {}">{marks}</g>"#, escape(s.class));
        }
        out
    }

    fn x_axis(&self, frame: &Frame) -> String {
        let base = frame.y(0.0);
        let mut out = format!(
            r#"<line class="axis" x1="{LEFT}" y1="{base:.1}" x2="{}" y2="{base:.1}"/>"#,
            WIDTH - RIGHT
        );
        let labels: Vec<(f64, String)> = match self.along {
            Along::Seconds(_) => {
                let step = x_step((frame.x1 - frame.x0) as u64);
                let first = (frame.x0 as u64).div_ceil(step) * step;
                let ticks = (first..=frame.x1 as u64).step_by(step as usize);
                ticks.map(|t| (t as f64, countdown(t))).collect()
            }
            // At most a dozen labels; bars between them go unlabelled.
            Along::Buckets(names) => {
                let every = names.len().div_ceil(12).max(1);
                let centred = names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (i as f64 + 0.5, n.clone()));
                centred.step_by(every).collect()
            }
        };
        for (x, label) in labels {
            let _ = write!(
                out,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                frame.x(x),
                base + 18.0,
                escape(&label)
            );
        }
        out
    }

    fn legend(&self) -> String {
        let mut x = LEFT;
        let mut out = String::new();
        for s in &self.series {
            let _ = write!(
                out,
                r#"<g class="series legend {}"><rect x="{x:.1}" y="8" width="12" height="12"/><text x="{:.1}" y="18">{}</text></g>"#,
                escape(s.class),
                x + 16.0,
                escape(s.name)
            );
            // A rough width of the name: the legend only needs not to overlap.
            x += 32.0 + 7.0 * s.name.chars().count() as f64;
        }
        out
    }
}

/// The words across an empty chart, over a bare axis.
fn empty(words: &str) -> String {
    let base = HEIGHT - BOTTOM;
    format!(
        r#"<line class="axis" x1="{LEFT}" y1="{base}" x2="{}" y2="{base}"/><text class="empty" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        WIDTH - RIGHT,
        (LEFT + WIDTH - RIGHT) / 2.0,
        (TOP + base) / 2.0,
        escape(words)
    )
}

/// Grid lines and labels at 0, `step`, … `ticks × step`.
fn y_axis(frame: &Frame, step: f64, ticks: u64) -> String {
    let mut out = String::new();
    for i in 0..=ticks {
        let value = i as f64 * step;
        let y = frame.y(value);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 8.0,
            y + 4.0,
            thousands(value.round() as u64)
        );
    }
    out
}

/// One polyline per run of values; a missing value breaks the line. A lone value is drawn
/// as a zero-length line, which round line caps show as a dot.
fn lines(frame: &Frame, points: &[(u64, Option<f64>)]) -> String {
    let runs = points
        .split(|(_, v)| v.is_none())
        .filter(|run| !run.is_empty());
    runs.map(|run| {
        let at = |&(t, v): &(u64, Option<f64>)| {
            format!("{:.1},{:.1}", frame.x(t as f64), frame.y(v.unwrap_or(0.0)))
        };
        let mut points: Vec<String> = run.iter().map(at).collect();
        if let [only] = &points[..] {
            points.push(only.clone());
        }
        format!(r#"<polyline points="{}"/>"#, points.join(" "))
    })
    .collect()
}

/// The `nth` of `of` series as bars, side by side within each bucket.
fn bars(frame: &Frame, values: &[Option<f64>], nth: usize, of: usize) -> String {
    let width = (frame.x(1.0) - frame.x(0.0)) * 0.8 / of as f64;
    let present = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((i, (*v)?)));
    present
        .map(|(i, v)| {
            let x = frame.x(i as f64) + width * (0.125 * of as f64 + nth as f64);
            let (y, base) = (frame.y(v), frame.y(0.0));
            format!(
                r#"<rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{:.1}"/>"#,
                base - y
            )
        })
        .collect()
}

/// A value a chart may draw: finite, and not below its axis.
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite()).map(|v| v.max(0.0))
}

/// At most [`MAX_POINTS`] points of a line: consecutive seconds go in equal buckets, each
/// drawn at its first second with its greatest value. The max, not the mean, so a burst of
/// arrivals or a peak of the queue stays as tall as it was; a bucket with no value at all
/// stays a gap.
pub(super) fn downsample(ts: &[u64], values: &[Option<f64>]) -> Vec<(u64, Option<f64>)> {
    let size = ts.len().div_ceil(MAX_POINTS).max(1);
    let buckets = ts.chunks(size).zip(values.chunks(size));
    buckets
        .map(|(ts, vs)| (ts[0], vs.iter().flatten().copied().reduce(f64::max)))
        .collect()
}

/// The y axis' step: 3 to 5 round intervals from 0 to at least `top` (so 4 to 6 ticks), each
/// 1, 2 or 5 times a power of ten, or 2.5 times one from 25 on, so every tick is whole.
fn y_step(top: f64) -> f64 {
    // Below 4, steps of 1 to 4: counts have no fractions to show.
    let top = top.max(4.0);
    let mut power = 1.0;
    loop {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = m * power;
            if (m != 2.5 || power >= 10.0) && (top / step).ceil() <= 5.0 {
                return step;
            }
        }
        power *= 10.0;
    }
}

/// The time axis' step: the least round one that leaves at most 7 ticks over `span` seconds.
fn x_step(span: u64) -> u64 {
    let fits = TIME_STEPS.iter().copied().find(|s| span / s <= 6);
    fits.unwrap_or(span.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ts: &[u64], values: Vec<Option<f64>>) -> String {
        let series = vec![Series {
            name: "queued",
            class: "s-queued",
            values,
        }];
        let along = Along::Seconds(ts);
        let chart = Chart {
            title: "Queued",
            along,
            series,
            empty: "no ticks yet",
        };
        chart.svg()
    }

    #[test]
    fn a_day_of_seconds_is_at_most_1200_points_and_keeps_its_peak() {
        let ts: Vec<u64> = (0..86_400).collect();
        let mut values: Vec<Option<f64>> = ts.iter().map(|&t| Some((t % 100) as f64)).collect();
        values[43_210] = Some(1e6);
        let points = downsample(&ts, &values);
        assert!(points.len() <= MAX_POINTS, "{}", points.len());
        let peak = points.iter().filter_map(|p| p.1).reduce(f64::max);
        assert_eq!(peak, Some(1e6));
        let svg = line(&ts, values);
        assert!(svg.len() < 60_000, "{}", svg.len());
    }

    #[test]
    fn the_y_axis_has_four_to_six_whole_ticks() {
        for top in [
            0.0, 1.0, 4.0, 5.0, 6.0, 11.0, 12.5, 99.0, 101.0, 2_345.0, 86_400.0, 1e12,
        ] {
            let step = y_step(top);
            let ticks = (top.max(4.0) / step).ceil() + 1.0;
            assert!((4.0..=6.0).contains(&ticks), "{top}: {step} → {ticks}");
            assert_eq!(step.fract(), 0.0, "{top}: {step}");
        }
        assert!(line(&[0, 1], vec![Some(1_500.0), Some(0.0)]).contains(">1,500<"));
    }

    #[test]
    fn a_missing_value_breaks_the_line_and_nan_never_reaches_the_svg() {
        let values = vec![
            Some(1.0),
            Some(2.0),
            None,
            Some(f64::NAN),
            Some(3.0),
            Some(4.0),
        ];
        let svg = line(&[0, 1, 2, 3, 4, 5], values);
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        let infinite = line(&[0, 1], vec![Some(f64::INFINITY), Some(f64::NEG_INFINITY)]);
        for svg in [svg, infinite] {
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
    }

    #[test]
    fn no_ticks_make_a_readable_chart() {
        let svg = line(&[], vec![]);
        assert!(svg.contains(r#"role="img""#) && svg.contains("<title>Queued</title>"));
        assert!(svg.contains("no ticks yet"), "{svg}");
        assert!(!svg.contains("<polyline"));
    }

    #[test]
    fn time_ticks_read_as_a_clock_and_names_are_escaped() {
        let ts: Vec<u64> = (0..=3_720).collect();
        let svg = Chart {
            title: "<b>\"Q\" & 'A'</b>",
            along: Along::Seconds(&ts),
            series: vec![Series {
                name: "<script>",
                class: "s-queued",
                values: ts.iter().map(|&t| Some(t as f64)).collect(),
            }],
            empty: "no ticks yet",
        }
        .svg();
        assert!(svg.contains(">0:00<") && svg.contains(">1:00:00<"), "{svg}");
        assert!(svg.contains("&lt;b&gt;&quot;Q&quot; &amp; &#x27;A&#x27;&lt;/b&gt;"));
        assert!(svg.contains("&lt;script&gt;") && !svg.contains("<script"));
    }
}
