//! The report's seconds as CSV (RFC 4180: CRLF line ends; numbers only, so nothing is quoted),
//! one row a sampled second, for a spreadsheet or a plotting script.

use super::COLUMNS;
use crate::model::{Report, Second};

/// The seconds as CSV: a header line (the columns named as the JSON's fields are), then one
/// line a second; a missing value is an empty cell.
pub fn csv(report: &Report) -> String {
    let header: Vec<&str> = COLUMNS.iter().map(|c| c.csv).collect();
    let mut out = header.join(",") + "\r\n";
    for second in &report.seconds {
        out += &row(second);
    }
    out
}

fn row(s: &Second) -> String {
    let cells: Vec<String> = COLUMNS
        .iter()
        .map(|c| (c.value)(s).map(|v| v.to_string()).unwrap_or_default())
        .collect();
    cells.join(",") + "\r\n"
}

#[cfg(test)]
mod tests {
    use super::super::report_of;
    use super::*;

    #[test]
    fn a_header_then_a_line_a_second_with_empty_cells_for_none() {
        let full = Second {
            t: 0,
            at_ms: 1_700_000_000_000,
            arrivals: 12,
            queued: 300,
            away: 4,
            admitted: 50,
            orders: 7,
            active: 90,
            rate: 50,
            stock_left: Some(1_000),
            told_no_seat: 2,
            eta_told: Some(6),
            real_wait: Some(5),
        };
        let bare = Second {
            t: 1,
            at_ms: 1_700_000_001_000,
            ..Default::default()
        };
        let text = csv(&report_of(vec![full, bare]));
        let lines: Vec<&str> = text.split_terminator("\r\n").collect();
        assert_eq!(
            lines,
            [
                "t,at_ms,arrivals,queued,away,admitted,orders,active,rate,stock_left,told_no_seat,eta_told,real_wait",
                "0,1700000000000,12,300,4,50,7,90,50,1000,2,6,5",
                "1,1700000001000,0,0,0,0,0,0,0,,0,,",
            ]
        );
        assert_eq!(csv(&report_of(vec![])), format!("{}\r\n", lines[0]));
    }
}
