//! The report for people and spreadsheets: a page (`html`, its plots drawn as SVG on the
//! server, styled by `static/report.css`) and a table of its seconds (`csv`). The JSON is the
//! [`Report`](crate::model::Report) itself.

mod csv;
mod html;
mod svg;

pub use self::csv::csv;
pub use self::html::{Links, PLOTS, html};

use crate::html::escape;
use crate::model::Second;

/// One column of the seconds, for both tables: its CSV name (the JSON field's), its head in
/// the page's table (`None`: CSV only), and its value (`None`: an empty cell).
struct Column {
    csv: &'static str,
    head: Option<&'static str>,
    value: fn(&Second) -> Option<u64>,
}

/// The seconds' columns, in order. The page heads each row with `t` (as a clock).
const COLUMNS: [Column; 13] = [
    column("t", Some("t"), |s| Some(s.t)),
    column("at_ms", None, |s| Some(s.at_ms)),
    column("arrivals", Some("arrivals"), |s| Some(s.arrivals)),
    column("queued", Some("queued"), |s| Some(s.queued)),
    column("away", Some("away"), |s| Some(s.away)),
    column("admitted", Some("admitted"), |s| Some(s.admitted)),
    column("orders", Some("orders"), |s| Some(s.orders)),
    column("active", Some("active"), |s| Some(s.active)),
    column("rate", Some("rate"), |s| Some(u64::from(s.rate))),
    column("stock_left", Some("stock left"), |s| s.stock_left),
    column("told_no_seat", Some("told no seat"), |s| {
        Some(s.told_no_seat)
    }),
    column("eta_told", Some("ETA told (s)"), |s| s.eta_told),
    column("real_wait", Some("real wait (s)"), |s| s.real_wait),
];

const fn column(
    csv: &'static str,
    head: Option<&'static str>,
    value: fn(&Second) -> Option<u64>,
) -> Column {
    Column { csv, head, value }
}

/// A report of `seconds` and nothing else, for the renderers' tests to fill in.
#[cfg(test)]
fn report_of(seconds: Vec<crate::model::Second>) -> crate::model::Report {
    crate::model::Report {
        show_id: "show-1".into(),
        generated_at: "2026-05-01T12:00:00Z".into(),
        phase: crate::model::Phase::Open,
        admit_per_second: 50,
        max_active_buyers: 0,
        stock: None,
        figures: Default::default(),
        fairness: Default::default(),
        seconds,
        push_latency: Default::default(),
    }
}
