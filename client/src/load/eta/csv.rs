//! The per-fan ETA records as a CSV row each, and as the points of the ETA plot.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use waiting_room::model::Paused;

use super::{FanRecord, Which, relative_error};
use crate::plot::EtaPoint;

/// The `paused` word, as the server sends it.
fn paused_name(paused: Paused) -> &'static str {
    match paused {
        Paused::Pending => "pending",
        Paused::Paused => "paused",
        Paused::Full => "full",
    }
}

/// One row per fan that joined, in fan order; empty cells for what did not happen.
pub(crate) fn write_csv(
    path: &Path,
    records: &[FanRecord],
    min_wait: Duration,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    writeln!(
        out,
        "fan,ticket,choice,told_at_seconds,position,eta_seconds,eta_min_seconds,eta_max_seconds,paused,admitted_at_seconds,wait_seconds,error,counted,order_status,expired,retold_at_seconds,retold_eta_seconds,stepped_away"
    )?;
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let time = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for r in records {
        let told = r.first;
        let measured = r.measured(Which::First);
        let wait = measured.map(|(_, wait)| wait);
        let error = measured.and_then(|(told, wait)| relative_error(f64::from(told.eta), wait));
        let counted = wait.is_some_and(|w| w > min_wait.as_secs_f64()) && error.is_some();
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.fan,
            r.ticket.map(|t| t.to_string()).unwrap_or_default(),
            r.choice.name(),
            time(told.map(|t| f64::from(t.at))),
            opt(told.and_then(|t| t.position)),
            opt(told.map(|t| t.eta)),
            opt(told.and_then(|t| t.eta_min)),
            opt(told.and_then(|t| t.eta_max)),
            told.and_then(|t| t.paused)
                .map(paused_name)
                .unwrap_or_default(),
            time(r.admitted_at.map(f64::from)),
            time(wait),
            error.map(|e| format!("{e:.4}")).unwrap_or_default(),
            u8::from(counted),
            r.order_status.map(|s| s.to_string()).unwrap_or_default(),
            u8::from(r.expired),
            time(r.retold.map(|t| f64::from(t.at))),
            opt(r.retold.map(|t| t.eta)),
            u8::from(r.stepped_away),
        )?;
    }
    out.flush()?;
    Ok(())
}

/// What the plot draws: every fan told the ETA `which` and admitted.
pub(crate) fn points(records: &[FanRecord], which: Which) -> Vec<EtaPoint> {
    records
        .iter()
        .filter_map(|r| r.measured(which))
        .map(|(told, wait)| EtaPoint {
            eta: f64::from(told.eta),
            wait,
            range: told
                .eta_min
                .zip(told.eta_max)
                .map(|(lo, hi)| (f64::from(lo), f64::from(hi))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Told;
    use super::super::tests::fan;
    use super::*;
    use uuid::Uuid;

    #[test]
    fn the_csv_has_a_row_per_fan_with_empty_cells_for_what_did_not_happen() {
        let mut told_range = fan(1, 0.25, 12, Some(12.0));
        told_range.first.as_mut().unwrap().paused = Some(Paused::Full);
        told_range.order_status = Some(201);
        told_range.retold = Some(Told {
            at: 5.0,
            eta: 7,
            ..told_range.first.unwrap()
        });
        let records = vec![fan(0, 0.0, 2, Some(1.5)), told_range, fan(2, 0.0, 30, None)];
        let path = std::env::temp_dir().join(format!("wr-eta-{}.csv", Uuid::new_v4()));
        write_csv(&path, &records, Duration::from_secs(10)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.len() == rows[0].len()), "{text}");
        let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
        assert_eq!(rows[1][col("error")], "-0.3333");
        assert_eq!(rows[1][col("counted")], "0");
        assert_eq!(rows[2][col("wait_seconds")], "11.750");
        assert_eq!(rows[2][col("counted")], "1");
        assert_eq!(rows[2][col("paused")], "full");
        assert_eq!(rows[2][col("order_status")], "201");
        assert_eq!(rows[2][col("retold_at_seconds")], "5.000");
        assert_eq!(rows[2][col("retold_eta_seconds")], "7");
        assert_eq!(rows[1][col("retold_eta_seconds")], "");
        assert_eq!(rows[3][col("admitted_at_seconds")], "");
        assert_eq!(rows[3][col("error")], "");
    }
}
