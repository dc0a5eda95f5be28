//! `waiting-room-client load`: many fans joining at a set rate and following their tickets, with
//! the figures BENCHMARKS.md quotes.
//!
//! Every run is bounded: at most `--fans` fans, stopped by itself after `--duration`, and it
//! only talks to loopback servers. The show must exist before the first join: an operator
//! created it, or `--open` / `--admit-per-second` do (with the operator token); a run
//! against a show no server knows stops before it starts. One process holds fewer
//! connections than its open-file limit; bigger runs use several processes, each with its
//! own `--source-ips`, against several server instances.
//!
//! Push latency is measured from the admission tick to the push arriving. The admitter ticks
//! at 50 ms past each wall-clock second (see `admitter::run`), so on one machine a push that
//! arrives at `…s + x ms` is `x - 50` ms after its tick. This holds while latency stays under
//! a second; the server's own `hub_lag_milliseconds` histogram is the cross-check.
//!
//! ETA accuracy ([`eta`]): each fan's first ETA (from its join, or its first push that has
//! one) against the time it was really admitted, as a summary, a CSV row per fan and a plot.
//!
//! What an admitted fan does (`--buy`, `--abandon`, the rest stay; [`choices`]):
//! buy (`POST /orders` with its admission), abandon (close the stream, never order), or stay
//! (keep following until the admission expires). Without either flag every admitted fan
//! stops following at once, as before these flags existed (`--abandon 1`).
//!
//! - [`args`]: the command line.
//! - [`setup`]: what is checked and prepared before the first join.
//! - [`sources`]: the loopback source addresses a run connects from (spread by default, so
//!   that the server's limits per client address do not throttle it).
//! - [`outputs`]: the timeline, the ETA rows and the plots a run writes.
//! - [`fans`]: one fan's life (join, follow, choose); [`run`]: what the fans share.
//! - [`choices`]: who buys, abandons or stays, and who steps away while waiting (`--away`:
//!   closes its connection `--away-after` its join, and comes back `--away-for` later).
//! - [`report`]: the figures, printed and as JSON.
//! - [`eta`]: the per-fan ETA records, their summary and CSV.
//! - [`rate_change`]: `--rate-change`, the operator changing the rate mid-run.
//! - [`staleness`]: how long each fan's position was out of date, pushed or polled.
//! - [`count`]: when a fan knew each tick, by a push or by its page counting down between
//!   pushes (the push cadence): tick → knowledge, per tick second.
//!
//! `--transport poll` plays the seed's client: every fan asks `GET …/tickets/{ticketId}`
//! every `--poll-interval` (1 s) over a keep-alive connection of its own, and each answer
//! counts as a message. Push latency is then not measured (nothing is pushed); staleness is,
//! as for the push transports.
//! - [`bots`]: `--bots`, a bot crowd against the server's defences, and honest fans beside.

mod args;
pub mod bots;
mod choices;
pub(crate) mod count;
mod eta;
mod fans;
mod outputs;
mod rate_change;
mod report;
mod run;
mod setup;
pub mod sources;
mod staleness;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use waiting_room::words::thousands;

use crate::plot::Sample;
pub use args::{LoadArgs, SourceIps};
pub(crate) use args::{parse_duration, parse_fraction, parse_poll_interval, parse_span};
pub use eta::{EtaReport, Which};
use fans::fan;
pub use rate_change::{RateChange, RateChangeDone};
pub use report::{LoadReport, Percentiles};
use run::{Outcome, Run};
pub(crate) use run::{add, get};

/// Where in each wall-clock second the admitter ticks (`admitter::run` wakes at `.050`).
pub const TICK_PHASE_MS: u64 = 50;

/// After the deadline, how long fans get to wind down before the report is written anyway.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// The CLI entry: runs, prints the report, says where the timeline went.
pub async fn main(args: LoadArgs) -> anyhow::Result<()> {
    let interrupted = CancellationToken::new();
    let trigger = interrupted.clone();
    tokio::spawn(async move {
        // Ctrl-C ends the run early, and the report is still written.
        if tokio::signal::ctrl_c().await.is_ok() {
            trigger.cancel();
        }
    });
    if args.bots.is_some() {
        return bots::main(&args, interrupted).await;
    }
    let report = run(&args, interrupted).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
        println!(
            "timeline:     {} · plot: {}",
            args.csv.display(),
            args.plot.display()
        );
        println!(
            "ETA per fan:  {} · plot: {}",
            args.eta_csv_path().display(),
            args.eta_plot_path().display()
        );
        if !args.rate_changes.is_empty() {
            println!(
                "ETA after the rate change: plot {}",
                args.eta_after_change_plot_path().display()
            );
        }
    }
    Ok(())
}

/// Runs the load until every fan is done, `--duration` has passed or `interrupted` is
/// cancelled; writes the CSVs and the plots, and returns what it measured.
pub async fn run(args: &LoadArgs, interrupted: CancellationToken) -> anyhow::Result<LoadReport> {
    let choices = setup::check(args)?;
    let sources = sources::Sources::of(args)?;
    setup::prepare_show(args, sources.first()).await?;
    setup::check_show(args, sources.first()).await?;
    if !args.join_only {
        setup::warn_about_open_files(args.fans);
    }

    let run = Arc::new(Run::new(args, sources, choices));
    let stop = interrupted.child_token();
    let bar = progress_bar(args);
    let beside = Beside::start(&run, args, &bar, &stop);
    let fans = start_fans(&run, args, &bar, &stop).await;
    wait_for(fans, &stop).await;
    let (samples, rate_changes) = beside.finish(&run).await?;
    bar.finish_and_clear();

    let records = run.take_records();
    let eta = EtaReport::of(&records, args.eta_min_wait);
    let eta_after_rate_change = (!args.rate_changes.is_empty())
        .then(|| EtaReport::of_which(&records, args.eta_min_wait, Which::AfterRateChange));
    let report = report::report(args, &run, eta, eta_after_rate_change, rate_changes);
    outputs::write(args, &samples, &records, &report)?;
    Ok(report)
}

/// What runs beside the fans: the once-a-second sampler, the deadline, the rate changer.
struct Beside {
    sampler: JoinHandle<Vec<Sample>>,
    stopper: JoinHandle<()>,
    rate_changer: JoinHandle<Vec<RateChangeDone>>,
}

impl Beside {
    fn start(run: &Arc<Run>, args: &LoadArgs, bar: &ProgressBar, stop: &CancellationToken) -> Self {
        let deadline = run.start + args.duration;
        let stopper = {
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline.into()).await;
                stop.cancel();
            })
        };
        Beside {
            sampler: tokio::spawn(sample_every_second(run.clone(), bar.clone(), stop.clone())),
            stopper,
            rate_changer: tokio::spawn(rate_change::run(
                run.clone(),
                args.admin_token.clone().unwrap_or_default(),
                args.rate_changes.clone(),
                args.announce_rate_changes,
                stop.clone(),
            )),
        }
    }

    /// Once the fans are done: the timeline (with a last sample) and the rate changes made.
    /// The run's stop must have been cancelled.
    async fn finish(self, run: &Run) -> anyhow::Result<(Vec<Sample>, Vec<RateChangeDone>)> {
        self.stopper.abort();
        let rate_changes = self.rate_changer.await.context("the rate changer failed")?;
        let mut samples = self.sampler.await.context("the sampler failed")?;
        samples.push(run.sample());
        Ok((samples, rate_changes))
    }
}

/// Starts fan after fan at `--join-rate` until all are started or the run stops; returns
/// their tasks.
async fn start_fans(
    run: &Arc<Run>,
    args: &LoadArgs,
    bar: &ProgressBar,
    stop: &CancellationToken,
) -> TaskTracker {
    let tasks = TaskTracker::new();
    let rate = f64::from(args.join_rate);
    for i in 0..args.fans {
        let due = run.start + Duration::from_secs_f64(i as f64 / rate);
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = stop.cancelled() => break,
        }
        // A fan starts only with a join slot in hand: asked for more joins than the server
        // answers, the run falls behind instead of piling up tasks whose wait for the CPU
        // would be counted as join latency.
        let permit = tokio::select! {
            permit = run.joining.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            _ = stop.cancelled() => break,
        };
        add(&run.counters.spawned);
        let (run, stop, bar) = (run.clone(), stop.clone(), bar.clone());
        tasks.spawn(async move {
            let mut record = eta::FanRecord::new(i, run.choices.of(i));
            let outcome = tokio::select! {
                outcome = fan(&run, i, permit, &mut record) => outcome,
                _ = stop.cancelled() => Outcome::stopped(&record),
            };
            run.ended(outcome, record);
            bar.inc(1);
        });
    }
    tasks.close();
    tasks
}

/// Waits until every fan is done, or, once the run stops, `WIND_DOWN` for them to stop too;
/// then stops the run for whatever runs beside it.
async fn wait_for(fans: TaskTracker, stop: &CancellationToken) {
    tokio::select! {
        _ = fans.wait() => {}
        _ = stop.cancelled() => {
            if tokio::time::timeout(WIND_DOWN, fans.wait()).await.is_err() {
                // Said whatever RUST_LOG says (logs are off by default).
                eprintln!("note: some fans did not stop within {WIND_DOWN:?}");
            }
        }
    }
    stop.cancel();
}

async fn sample_every_second(
    run: Arc<Run>,
    bar: ProgressBar,
    stop: CancellationToken,
) -> Vec<Sample> {
    let mut samples = vec![run.sample()];
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.tick().await;
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.cancelled() => return samples,
        }
        let s = run.sample();
        bar.set_message(format!(
            "{} held · {} joined · {} admitted · {} msgs · {} errors",
            thousands(s.connections),
            thousands(s.joined),
            thousands(s.admitted),
            thousands(s.messages),
            thousands(s.errors)
        ));
        samples.push(s);
    }
}

fn progress_bar(args: &LoadArgs) -> ProgressBar {
    if args.quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(args.fans);
    let style =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} fans done · {msg}")
            .expect("a valid template")
            .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
