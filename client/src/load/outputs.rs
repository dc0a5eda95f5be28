//! What a run writes besides its report: the once-a-second timeline (CSV and SVG), one ETA row
//! per fan (CSV) and the ETA plots (SVG). Every path is tried before the run starts, so that a
//! run never ends with results it cannot keep.

use std::path::PathBuf;

use anyhow::Context;
use waiting_room::words::thousands;

use super::eta::{self, FanRecord, Which};
use super::{LoadArgs, LoadReport};
use crate::plot::{self, Sample};

/// Every file the run will write.
fn paths(args: &LoadArgs) -> Vec<PathBuf> {
    let mut paths = vec![
        args.csv.clone(),
        args.plot.clone(),
        args.eta_csv_path(),
        args.eta_plot_path(),
    ];
    if !args.rate_changes.is_empty() {
        paths.push(args.eta_after_change_plot_path());
    }
    paths
}

/// Fails before the run, not after it, if the results cannot be written.
pub(super) fn check_writable(args: &LoadArgs) -> anyhow::Result<()> {
    for path in paths(args) {
        std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Writes the timeline and its plot, the ETA rows and the ETA plots (`records` by fan).
pub(super) fn write(
    args: &LoadArgs,
    samples: &[Sample],
    records: &[FanRecord],
    report: &LoadReport,
) -> anyhow::Result<()> {
    plot::write_csv(&args.csv, samples)?;
    let title = format!(
        "{} fans over {}, {} joins/s asked",
        thousands(args.fans),
        args.transport.name(),
        thousands(u64::from(args.join_rate))
    );
    plot::draw_svg(&args.plot, &title, samples)?;
    eta::write_csv(&args.eta_csv_path(), records, args.eta_min_wait)?;
    let min_wait = args.eta_min_wait.as_secs_f64();
    plot::draw_eta_svg(
        &args.eta_plot_path(),
        &report.eta.title(),
        &eta::points(records, Which::First),
        min_wait,
    )?;
    if let Some(after) = &report.eta_after_rate_change {
        plot::draw_eta_svg(
            &args.eta_after_change_plot_path(),
            &after.title(),
            &eta::points(records, Which::AfterRateChange),
            min_wait,
        )?;
    }
    Ok(())
}
