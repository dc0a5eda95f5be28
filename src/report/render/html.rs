//! The report as a page an operator reads, prints or keeps: the figures, the audit's verdict
//! on fairness, plots drawn as inline SVG and the seconds as a table. The server's CSP allows
//! no script and no inline style, so the page has neither: every look is a class of
//! `static/report.css`. Everything that came from outside (names, the violation) is escaped.

use std::fmt::Write;

use super::svg::{Along, Chart, Series};
use super::{COLUMNS, escape};
use crate::model::{Count, Fairness, PushLatency, Report, Second};
use crate::words::{countdown, duration_text, thousands};

/// Every plot of the page, by its element's id, in the page's order.
pub const PLOTS: [&str; 7] = [
    "plot-arrivals",
    "plot-queue",
    "plot-admissions",
    "plot-presence",
    "plot-eta",
    "plot-push",
    "plot-stock",
];

/// Rows of the seconds table at most: past that, one row stands for several seconds.
const MAX_ROWS: u64 = 600;

/// The seconds one row of the table may stand for, the first that keeps it to [`MAX_ROWS`].
const ROW_SPANS: &[u64] = &[60, 300, 900, 1_800, 3_600, 7_200, 21_600, 86_400];

/// Written where a value is missing.
const NONE: &str = "–";

/// Written across a plot of no ticks.
const NO_TICKS: &str = "no ticks yet";

/// Where the page's stylesheet and the report's other forms are.
#[derive(Clone, Copy, Debug)]
pub struct Links<'a> {
    /// The stylesheet (`static/report.css`).
    pub css: &'a str,
    /// The report as JSON.
    pub json: &'a str,
    /// Its seconds as CSV.
    pub csv: &'a str,
}

/// The report as a complete HTML document, linking to its stylesheet and other forms.
pub fn html(report: &Report, links: &Links<'_>) -> String {
    let title = escape(&format!("Report: {}", report.show_id));
    let head = format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{css}">
</head>
<body>
<main class="report">
<h1>{title}</h1>
"#,
        css = escape(links.css),
    );
    [
        head,
        summary(report),
        figures(report),
        fairness(&report.fairness),
        plots(report),
        seconds_table(&report.seconds),
        format!(
            r#"<p class="formats">This report as <a href="{json}">JSON</a> or <a href="{csv}">CSV</a>.</p>
</main>
</body>
</html>
"#,
            json = escape(links.json),
            csv = escape(links.csv),
        ),
    ]
    .concat()
}

fn summary(r: &Report) -> String {
    let f = &r.figures;
    let cap = match r.max_active_buyers {
        0 => String::new(),
        n => format!(", at most {} buyers at once", thousands(u64::from(n))),
    };
    format!(
        r#"<p class="meta">Made <time datetime="{at}">{at}</time>; the sale is <strong>{phase}</strong>.</p>
<p class="summary">{arrivals} arrivals over {span}; {admitted} let in ({bypassed} more by bypass), {orders} orders, {queued} still waiting. Rate set: {rate} a second{cap}.</p>
"#,
        at = escape(&r.generated_at),
        phase = r.phase.as_str(),
        arrivals = thousands(f.arrivals),
        span = countdown(f.seconds),
        admitted = thousands(f.admitted),
        bypassed = thousands(f.bypassed),
        orders = thousands(f.orders),
        queued = thousands(f.queued),
        rate = thousands(u64::from(r.admit_per_second)),
    )
}

fn figures(r: &Report) -> String {
    let (f, w, e) = (&r.figures, &r.figures.wait, &r.figures.eta);
    let row = |(name, value): (&str, String)| table_row(name, &[&value]);
    let head = [
        ("Arrivals", thousands(f.arrivals)),
        ("Admitted", thousands(f.admitted)),
        ("Admitted a second", decimal(f.admitted_per_second, 1)),
        ("Bypassed", thousands(f.bypassed)),
        ("Orders", thousands(f.orders)),
        ("Redeemed", thousands(f.redeemed)),
        ("Released after the hold", thousands(f.released)),
        ("Still queued", thousands(f.queued)),
        ("Stock", r.stock.map_or("none set".into(), thousands)),
        ("Stock left", f.stock_left.map_or(NONE.into(), thousands)),
        ("Waits counted", format!("{} fans", thousands(w.fans))),
        ("Wait, half within", wait_text(w.p50)),
        ("Wait, 90 % within", wait_text(w.p90)),
        ("Wait, 99 % within", wait_text(w.p99)),
        ("Longest wait", wait_text(w.max)),
    ];
    let shares = f.admitted_by.iter().map(|s| {
        let when = format!("{} after the first tick", countdown(s.seconds));
        table_row(&format!("{} % admitted by", s.percent), &[&when])
    });
    // Told ÷ real means nothing before a single wait was compared.
    let compared = |v: String| if e.compared > 0 { v } else { NONE.into() };
    let tail = [
        (
            "Most told they may not get a seat",
            thousands(f.most_told_no_seat),
        ),
        ("ETAs compared with the real wait", thousands(e.compared)),
        (
            "ETA told ÷ real wait, median",
            compared(decimal(e.median_ratio, 2)),
        ),
        (
            "ETAs within a fifth of the real wait",
            compared(format!("{} %", decimal(e.within_a_fifth * 100.0, 0))),
        ),
    ];
    let body: String = head
        .into_iter()
        .map(row)
        .chain(shares)
        .chain(tail.into_iter().map(row))
        .collect();
    format!(
        r#"<table class="figures"><caption>The sale in figures</caption><tbody>{body}</tbody></table>
"#
    )
}

fn fairness(f: &Fairness) -> String {
    let verdict = if f.verified {
        let n = thousands(f.inversions.unwrap_or(0));
        format!(r#"<p class="verdict verified">Inversions: {n} (the audit verified)</p>"#)
    } else {
        let what = f
            .violation
            .as_deref()
            .unwrap_or("the audit was not walked whole");
        let inversions = f.inversions.map_or(
            "unknown (the walk stopped at the violation)".into(),
            thousands,
        );
        format!(
            r#"<p class="verdict failed"><strong>Not verified:</strong> {}</p><p>Inversions: {inversions}</p>"#,
            escape(what)
        )
    };
    let mut facts = vec![format!("Audit records walked: {}", thousands(f.records))];
    if f.drawn.is_some() || f.draw_verified.is_some() {
        let drawn = f.drawn.map_or(NONE.into(), thousands);
        let checked = match f.draw_verified {
            Some(true) => "yes",
            Some(false) => "no",
            None => "not checked",
        };
        facts.push(format!(
            "The draw: a pre-queue of {drawn} drawn; draw verified: {checked}"
        ));
    }
    facts.push(format!(
        "Passed over while away: {}; let in once back: {}",
        thousands(f.passed_over),
        thousands(f.returned)
    ));
    let facts: String = facts
        .iter()
        .map(|l| format!("<li>{}</li>", escape(l)))
        .collect();
    format!(
        r#"<section id="fairness"><h2>Fairness</h2>{verdict}<ul class="facts">{facts}</ul>{}{}</section>
"#,
        counts("Bypasses by kind", "Kind", &f.bypasses),
        counts("Fans let in by lane", "Lane", &f.lanes),
    )
}

/// A small table of names and counts (or a line saying there are none).
fn counts(caption: &str, what: &str, counts: &[Count]) -> String {
    if counts.is_empty() {
        return format!(r#"<p class="none">{caption}: none.</p>"#);
    }
    let body: String = counts
        .iter()
        .map(|c| table_row(&c.name, &[&thousands(c.count)]))
        .collect();
    format!(
        r#"<table class="counts"><caption>{caption}</caption><thead><tr><th scope="col">{what}</th><th scope="col">Fans</th></tr></thead><tbody>{body}</tbody></table>"#
    )
}

/// How a line of a plot over time reads its value from a second.
type Pick = fn(&Second) -> Option<f64>;

/// A line of a plot over time: its name, the CSS class that colours it, its values.
type Line = (&'static str, &'static str, Pick);

/// The plots over time drawn before the push latency's: id, caption, lines.
const OVER_TIME: &[(&str, &str, &[Line])] = &[
    (
        "plot-arrivals",
        "Arrivals a second",
        &[("arrivals", "s-arrivals", |s| count(s.arrivals))],
    ),
    (
        "plot-queue",
        "Queued, and away",
        &[
            ("queued", "s-queued", |s| count(s.queued)),
            ("away", "s-away", |s| count(s.away)),
        ],
    ),
    (
        "plot-admissions",
        "Admitted and orders a second",
        &[
            ("admitted", "s-admitted", |s| count(s.admitted)),
            ("orders", "s-orders", |s| count(s.orders)),
        ],
    ),
    (
        "plot-presence",
        "Present (queued and not away), and away",
        &[
            ("present", "s-present", |s| {
                count(s.queued.saturating_sub(s.away))
            }),
            ("away", "s-away", |s| count(s.away)),
        ],
    ),
    (
        "plot-eta",
        "ETA told at the back of the queue, and its real wait, seconds",
        &[
            // The real wait first, so the ETA told is drawn over it where they agree.
            ("real wait", "s-real-wait", |s| s.real_wait.and_then(count)),
            ("ETA told", "s-eta-told", |s| s.eta_told.and_then(count)),
        ],
    ),
];

const STOCK_LEFT: Line = ("stock left", "s-stock", |s| s.stock_left.and_then(count));
const NO_SEAT: Line = ("told no seat", "s-no-seat", |s| count(s.told_no_seat));

fn plots(r: &Report) -> String {
    let ts: Vec<u64> = r.seconds.iter().map(|s| s.t).collect();
    let over_time = |id, caption, lines: &[Line], note: &str| {
        let series = lines.iter().map(|&(name, class, pick)| {
            let values = r.seconds.iter().map(pick).collect();
            Series {
                name,
                class,
                values,
            }
        });
        let chart = Chart {
            title: caption,
            along: Along::Seconds(&ts),
            series: series.collect(),
            empty: NO_TICKS,
        };
        figure(id, caption, &chart.svg(), note)
    };
    let mut out = String::from(r#"<section id="plots"><h2>Over time</h2>"#);
    for &(id, caption, lines) in OVER_TIME {
        out += &over_time(id, caption, lines, "");
    }
    out += &push_plot(&r.push_latency);
    let stock = "Stock left, and fans told they may not get a seat";
    out += &match r.stock {
        Some(_) => over_time("plot-stock", stock, &[STOCK_LEFT, NO_SEAT], ""),
        None => over_time("plot-stock", stock, &[NO_SEAT], &note("No stock set.")),
    };
    out + "</section>\n"
}

/// The push latency histogram as bars of each bucket's own count (not cumulative).
fn push_plot(p: &PushLatency) -> String {
    let mut last_bound = 0.0;
    let labels: Vec<String> = p
        .buckets
        .iter()
        .map(|b| match b.le_ms {
            // Bare bounds: twelve labels with units do not fit under a chart.
            Some(le) => {
                last_bound = le;
                ms(le)
            }
            None => format!(">{}", ms(last_bound)),
        })
        .collect();
    let mut below = 0;
    // No pushes: no values, so the chart says so instead of drawing bars of 0.
    let values = p.buckets.iter().map(|b| {
        let own = b.count.saturating_sub(below);
        below = below.max(b.count);
        (p.count > 0).then_some(own as f64)
    });
    let caption = "Push latency: tick to every fan's new state, pushes by bucket (ms, at most)";
    let chart = Chart {
        title: caption,
        along: Along::Buckets(&labels),
        series: vec![Series {
            name: "pushes",
            class: "s-push",
            values: values.collect(),
        }],
        empty: "no pushes yet",
    };
    let bound = |q| {
        p.quantile_bound(q)
            .map_or("past the last bound".into(), |b| format!("≤{} ms", ms(b)))
    };
    let text = match p.count {
        0 => "No pushes yet.".to_owned(),
        n => format!(
            "{} pushes; p50 {}, p99 {}.",
            thousands(n),
            bound(0.5),
            bound(0.99)
        ),
    };
    figure("plot-push", caption, &chart.svg(), &note(&text))
}

fn figure(id: &str, caption: &str, svg: &str, note: &str) -> String {
    format!(
        r#"<figure id="{id}" class="plot"><figcaption>{}</figcaption>{svg}{note}</figure>
"#,
        escape(caption)
    )
}

fn note(text: &str) -> String {
    format!(r#"<p class="note">{}</p>"#, escape(text))
}

fn seconds_table(secs: &[Second]) -> String {
    let span = row_span(secs);
    let caption = match span {
        1 => "One row a second.".to_owned(),
        n => format!(
            "Each row stands for {}: arrivals, admitted and orders summed over it; the other \
             columns as at its last second.",
            span_words(n)
        ),
    };
    let rows = grouped(secs, span);
    let body = if rows.is_empty() {
        let span = COLUMNS.iter().filter(|c| c.head.is_some()).count();
        format!(r#"<tr><td colspan="{span}">{NO_TICKS}.</td></tr>"#)
    } else {
        rows.iter().map(second_row).collect()
    };
    let heads: String = COLUMNS
        .iter()
        .filter_map(|c| c.head)
        .map(|h| format!(r#"<th scope="col">{}</th>"#, escape(h)))
        .collect();
    format!(
        r#"<section id="data"><h2>Second by second</h2><div class="scroll"><table id="seconds"><caption>{caption}</caption><thead><tr>{heads}</tr></thead><tbody>{body}</tbody></table></div></section>
"#
    )
}

/// A row of the seconds' table, headed by its `t` as a clock.
fn second_row(s: &Second) -> String {
    let cells: Vec<String> = COLUMNS
        .iter()
        .filter(|c| c.head.is_some() && c.csv != "t")
        .map(|c| (c.value)(s).map_or(NONE.into(), thousands))
        .collect();
    let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
    table_row(&countdown(s.t), &cells)
}

/// A row headed by `head`, every cell escaped.
fn table_row(head: &str, cells: &[&str]) -> String {
    let mut row = format!(r#"<tr><th scope="row">{}</th>"#, escape(head));
    for cell in cells {
        let _ = write!(row, "<td>{}</td>", escape(cell));
    }
    row + "</tr>"
}

/// Seconds a row of the table stands for: 1 while the seconds fit in [`MAX_ROWS`], else the
/// first of [`ROW_SPANS`] that makes them fit.
fn row_span(secs: &[Second]) -> u64 {
    let (Some(first), Some(last)) = (secs.first(), secs.last()) else {
        return 1;
    };
    if secs.len() as u64 <= MAX_ROWS {
        return 1;
    }
    let span = last.t.saturating_sub(first.t);
    let fits = ROW_SPANS.iter().copied().find(|n| span / n < MAX_ROWS);
    fits.unwrap_or(span.saturating_add(1))
}

/// The seconds in rows of `span` seconds from the first: counts of a second (arrivals,
/// admitted, orders) summed, levels (the rest) as at the row's last second.
fn grouped(secs: &[Second], span: u64) -> Vec<Second> {
    let Some(t0) = secs.first().map(|s| s.t) else {
        return Vec::new();
    };
    let row_of = |s: &Second| s.t.saturating_sub(t0) / span;
    secs.chunk_by(|a, b| row_of(a) == row_of(b))
        .filter_map(|seconds| {
            let last = *seconds.last()?;
            let sum =
                |count: fn(&Second) -> u64| seconds.iter().map(count).fold(0, u64::saturating_add);
            Some(Second {
                t: t0 + row_of(&last) * span,
                arrivals: sum(|s| s.arrivals),
                admitted: sum(|s| s.admitted),
                orders: sum(|s| s.orders),
                ..last
            })
        })
        .collect()
}

/// `300` as `5 minutes`, `60` as `one minute`.
fn span_words(seconds: u64) -> String {
    let (n, unit) = match seconds {
        s if s.is_multiple_of(3_600) => (s / 3_600, "hour"),
        s if s.is_multiple_of(60) => (s / 60, "minute"),
        s => (s, "second"),
    };
    if n == 1 {
        format!("one {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// A wait as the clients word one (`words::duration_text`): `42s`, `1m 5s`, `2h 3m 4s`.
fn wait_text(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return NONE.to_owned();
    }
    duration_text(std::time::Duration::from_secs(seconds.round() as u64))
}

/// `v` with `places` decimals, or a dash for what is not a number.
fn decimal(v: f64, places: usize) -> String {
    if v.is_finite() {
        format!("{v:.places$}")
    } else {
        NONE.to_owned()
    }
}

/// A count as a value to plot.
fn count(v: u64) -> Option<f64> {
    Some(v as f64)
}

/// A bucket bound, ms: whole when it is (`250`), else as it is (`0.5`).
fn ms(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        decimal(v, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::super::report_of;
    use super::*;

    fn links(css: &str) -> Links<'_> {
        Links {
            css,
            json: "r.json",
            csv: "r.csv",
        }
    }
    use crate::model::{Bucket, ShareAt};

    fn second(t: u64) -> Second {
        Second {
            t,
            at_ms: 1_700_000_000_000 + t * 1_000,
            arrivals: 3,
            queued: 100 + t % 7,
            away: 2,
            admitted: 1,
            orders: 1,
            rate: 50,
            eta_told: (!t.is_multiple_of(5)).then_some(20),
            real_wait: (!t.is_multiple_of(3)).then_some(18),
            ..Default::default()
        }
    }

    fn full_report() -> Report {
        let mut r = report_of((0..120).map(second).collect());
        r.stock = Some(1_000);
        r.figures.wait.p50 = 65.0;
        r.figures.admitted_by = vec![ShareAt {
            percent: 50,
            seconds: 90,
        }];
        r.fairness.verified = true;
        r.fairness.inversions = Some(0);
        r.fairness.lanes = vec![Count {
            name: "<script>alert(1)</script>".into(),
            count: 7,
        }];
        r.push_latency = PushLatency {
            count: 10,
            sum_ms: 30.0,
            buckets: vec![
                Bucket {
                    le_ms: Some(1.0),
                    count: 4,
                },
                Bucket {
                    le_ms: Some(4000.0),
                    count: 9,
                },
                Bucket {
                    le_ms: None,
                    count: 10,
                },
            ],
        };
        r
    }

    fn assert_safe(page: &str) {
        assert!(page.starts_with("<!doctype html>\n<html lang=\"en\">"));
        assert!(
            !page.contains("<script") && !page.contains(" style="),
            "{page}"
        );
        assert!(!page.contains("NaN") && !page.contains("inf\""));
        assert!(page.trim_end().ends_with("</html>"));
    }

    #[test]
    fn the_page_has_every_plot_the_table_and_the_verdict() {
        let page = html(&full_report(), &links("/static/report.css?v=1&x=2"));
        assert_safe(&page);
        for id in PLOTS {
            assert!(page.contains(&format!(r#"<figure id="{id}""#)), "{id}");
        }
        // PLOTS names every plot the page draws, none more.
        assert_eq!(page.matches(r#"<figure id="plot-"#).count(), PLOTS.len());
        assert!(page.contains(r#"<link rel="stylesheet" href="/static/report.css?v=1&amp;x=2">"#));
        assert!(
            page.contains(r#"<table class="figures">"#)
                && page.contains(r#"<section id="fairness">"#)
        );
        assert!(page.contains("Inversions: 0 (the audit verified)"));
        assert_eq!(
            page.matches("<tr><th scope=\"row\">1:").count(),
            60,
            "a row a second"
        );
        assert!(page.contains("1m 5s") && page.contains(">4000<") && page.contains("&gt;4000"));
        assert!(page.contains(r#"href="r.json""#) && page.contains(r#"href="r.csv""#));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn a_failed_audit_says_so_with_its_violation_escaped() {
        let mut r = full_report();
        r.fairness = Fairness {
            violation: Some("ticket <7> & 'the' \"next\" let in first".into()),
            ..Default::default()
        };
        let page = html(&r, &links("/r.css"));
        assert_safe(&page);
        assert!(!page.contains("(the audit verified)"));
        assert!(page.contains(r#"class="verdict failed""#));
        assert!(
            page.contains("ticket &lt;7&gt; &amp; &#x27;the&#x27; &quot;next&quot; let in first")
        );
    }

    #[test]
    fn an_empty_report_renders() {
        let mut r = report_of(vec![]);
        r.figures.admitted_per_second = f64::NAN;
        r.figures.wait.p99 = f64::INFINITY;
        let page = html(&r, &links("/r.css"));
        assert_safe(&page);
        assert!(page.contains("no ticks yet") && page.contains("No stock set."));
        assert!(page.contains("No pushes yet.") && page.contains(r#"<table id="seconds">"#));
    }

    #[test]
    fn a_day_of_seconds_is_at_most_600_rows_with_counts_summed() {
        let day: Vec<Second> = (0..86_400).map(second).collect();
        let rows = grouped(&day, row_span(&day));
        assert!(rows.len() <= MAX_ROWS as usize, "{}", rows.len());
        assert_eq!(rows[1].t, 300);
        assert_eq!(rows[1].arrivals, 900);
        assert_eq!(rows[1].queued, day[599].queued);
        assert_eq!(
            (rows[1].eta_told, rows[1].real_wait),
            (day[599].eta_told, day[599].real_wait)
        );
        let page = html(&report_of(day), &links("/r.css"));
        assert!(page.contains("Each row stands for 5 minutes:"));
    }

    #[test]
    fn waits_read_in_minutes_past_a_minute() {
        assert_eq!(wait_text(0.4), "0s");
        assert_eq!(wait_text(42.0), "42s");
        assert_eq!(wait_text(65.0), "1m 5s");
        assert_eq!(wait_text(7_384.0), "2h 3m 4s");
        assert_eq!(wait_text(f64::NAN), NONE);
        assert_eq!(span_words(60), "one minute");
        assert_eq!(span_words(7_200), "2 hours");
    }
}
