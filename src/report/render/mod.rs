//! The report for people and spreadsheets: a page (`html`, its plots drawn as SVG on the
//! server, styled by `static/report.css`) and a table of its seconds (`csv`). The JSON is the
//! [`Report`](crate::model::Report) itself.

mod csv;
mod html;
mod svg;

pub use self::csv::csv;
pub use self::html::{Links, PLOTS, html};

use crate::html::escape;

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
