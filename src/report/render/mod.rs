//! The report for people and spreadsheets: a page (`html`, its plots drawn as SVG on the
//! server, styled by `static/report.css`) and a table of its seconds (`csv`). The JSON is the
//! [`Report`](crate::model::Report) itself.

mod csv;
mod html;
mod svg;

pub use self::csv::csv;
pub use self::html::{Links, html};

/// `text` safe anywhere in HTML and SVG: in text and in quoted attributes alike.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
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
