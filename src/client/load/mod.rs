//! `waiting-room load`: many fans joining at a set rate and following their tickets, with
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
//! What an admitted fan does (`--buy`, `--abandon`, the rest stay; [`fans::Choices`]):
//! buy (`POST /orders` with its admission), abandon (close the stream, never order), or stay
//! (keep following until the admission expires). Without either flag every admitted fan
//! stops following at once, as before these flags existed (`--abandon 1`).
//!
//! - [`fans`]: one fan's life (join, follow, choose) and what the fans share.
//! - [`report`]: the figures, printed and as JSON.
//! - [`eta`]: the per-fan ETA records, their summary and CSV.
//! - [`rate_change`]: `--rate-change`, the operator changing the rate mid-run.

mod eta;
mod fans;
mod rate_change;
mod report;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use reqwest::{Client, Url};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::follow::{self, Transport};
use super::plot::{self, Sample};
use crate::model::ShowId;
use crate::words::thousands;
pub use eta::{EtaReport, Which};
use fans::{Choices, Counters, Outcome, Run, add, fan};
pub use rate_change::{RateChange, RateChangeDone};
pub use report::{LoadReport, Percentiles};

/// Where in each wall-clock second the admitter ticks (`admitter::run` wakes at `.050`).
pub const TICK_PHASE_MS: u64 = 50;

/// After the deadline, how long fans get to wind down before the report is written anyway.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// `waiting-room load`: a bounded load run against loopback servers.
#[derive(Clone, Debug, clap::Args)]
pub struct LoadArgs {
    /// A server to load (loopback only); repeat to spread fans over several, fan i going to
    /// the i-th modulo their number.
    #[arg(long = "url", value_name = "URL", required = true)]
    pub urls: Vec<Url>,

    /// The show the fans queue for.
    #[arg(long)]
    pub show: ShowId,

    /// How many fans join, in all.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub fans: u64,

    /// How fans follow their tickets.
    #[arg(long, value_enum, default_value_t = Transport::Sse)]
    pub transport: Transport,

    /// Joins started per second, across all fans.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub join_rate: u32,

    /// The run stops after this long whatever is left (`30s`, `2m`; at most 1 h).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Loopback source addresses to spread connections over (`127.0.0.2-127.0.0.50`, or one
    /// address): each gives every server another ~28,000 ephemeral ports.
    #[arg(long, value_name = "FIRST-LAST")]
    pub source_ips: Option<SourceIps>,

    /// The operator token, for `--open`, `--admit-per-second` and `--rate-change`.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Open the show on every --url before the first join (creating it if needed).
    #[arg(long)]
    pub open: bool,

    /// Set the show's admission rate on every --url before the first join (creating it,
    /// closed, if needed).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub admit_per_second: Option<u32>,

    /// Change the show's rate AFTER into the run: `30s:10` sets 10 a second 30 s in
    /// (`PUT …/config` on the first --url, with the operator token). Repeat for more changes.
    #[arg(long = "rate-change", value_name = "AFTER:RATE")]
    pub rate_changes: Vec<RateChange>,

    /// Where to write the once-a-second timeline.
    #[arg(long, default_value = "load.csv")]
    pub csv: PathBuf,

    /// Where to draw connections and messages over time (SVG).
    #[arg(long, default_value = "load.svg")]
    pub plot: PathBuf,

    /// Print the report as JSON (for scripts that add up several processes).
    #[arg(long)]
    pub json: bool,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Fans join and stop there, following nothing: measures the join path alone.
    #[arg(long)]
    pub join_only: bool,

    /// Most joins awaiting an answer at once; the rest wait their turn. Each holds a
    /// connection, so this keeps a saturated server from running the process out of files.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_in_flight: u32,

    /// Share of admitted fans who buy at once: `POST /orders` with header
    /// `X-Admission-Ticket` and a hold of their own (0 to 1; the rest stay, unless they
    /// abandon).
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub buy: Option<f64>,

    /// Share of admitted fans who close their stream at once and never order (0 to 1).
    /// Without --buy and --abandon every admitted fan does that (as `--abandon 1`); with
    /// either, those who neither buy nor abandon stay, following until the admission expires.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub abandon: Option<f64>,

    /// The first-ETA error counts fans whose real wait was longer than this (`10s`; `0s`
    /// counts every admitted fan): a second's rounding is no error worth measuring on a
    /// two-second wait.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_min_wait)]
    pub eta_min_wait: Duration,

    /// Where to write one row per fan: first ETA told, real admission, error (CSV; default
    /// next to --csv, `load-eta.csv` for `load.csv`).
    #[arg(long, value_name = "PATH")]
    pub eta_csv: Option<PathBuf>,

    /// Where to draw first ETA against real wait (SVG; default next to --plot,
    /// `load-eta.svg` for `load.svg`).
    #[arg(long, value_name = "PATH")]
    pub eta_plot: Option<PathBuf>,
}

impl LoadArgs {
    /// Where the per-fan ETA rows go.
    pub fn eta_csv_path(&self) -> PathBuf {
        self.eta_csv
            .clone()
            .unwrap_or_else(|| beside(&self.csv, "eta"))
    }

    /// Where the ETA plot goes.
    pub fn eta_plot_path(&self) -> PathBuf {
        self.eta_plot
            .clone()
            .unwrap_or_else(|| beside(&self.plot, "eta"))
    }

    /// Where the plot of the ETAs told after the rate change goes (with `--rate-change`):
    /// next to the ETA plot, `load-eta-after-change.svg` for `load-eta.svg`.
    pub fn eta_after_change_plot_path(&self) -> PathBuf {
        beside(&self.eta_plot_path(), "after-change")
    }

    /// What admitted fans do.
    fn choices(&self) -> anyhow::Result<Choices> {
        Choices::new(self.buy, self.abandon, self.fans).map_err(anyhow::Error::msg)
    }
}

/// `dir/name.ext` → `dir/name-suffix.ext`.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "load".into());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{suffix}"),
    };
    path.with_file_name(name)
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (try 30s or 2m)"))?;
    if d.is_zero() || d > Duration::from_secs(3600) {
        return Err("must be more than 0 and at most 1h".into());
    }
    Ok(d)
}

fn parse_min_wait(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (try 10s or 0s)"))?;
    if d > Duration::from_secs(3600) {
        return Err("must be at most 1h".into());
    }
    Ok(d)
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("'{s}' is not a fraction from 0 to 1 (try 0.25)")),
    }
}

/// A range of IPv4 loopback source addresses, `127.0.0.2-127.0.0.50` or a single one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceIps {
    first: Ipv4Addr,
    last: Ipv4Addr,
}

impl SourceIps {
    /// Every address in the range, in order.
    pub fn addrs(&self) -> Vec<IpAddr> {
        (u32::from(self.first)..=u32::from(self.last))
            .map(|a| IpAddr::V4(Ipv4Addr::from(a)))
            .collect()
    }
}

impl FromStr for SourceIps {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (first, last) = s.split_once('-').unwrap_or((s, s));
        let parse = |a: &str| {
            a.trim()
                .parse::<Ipv4Addr>()
                .map_err(|_| format!("'{a}' is not an IPv4 address"))
        };
        let (first, last) = (parse(first)?, parse(last)?);
        if !first.is_loopback() || !last.is_loopback() {
            return Err("source addresses must be in 127.0.0.0/8".into());
        }
        if first > last {
            return Err(format!("{first} comes after {last}"));
        }
        if u32::from(last) - u32::from(first) >= 65_536 {
            return Err("at most 65,536 addresses".into());
        }
        Ok(SourceIps { first, last })
    }
}

/// Loopback only: a load generator pointed at the wrong host is a denial of service.
fn check_loopback(url: &Url) -> anyhow::Result<()> {
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost" || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if url.scheme() != "http" || !loopback {
        bail!(
            "{url}: the load generator only targets http:// servers on loopback (127.0.0.0/8, ::1, localhost)"
        );
    }
    Ok(())
}

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
    for url in &args.urls {
        check_loopback(url)?;
    }
    let choices = args.choices()?;
    check_rate_changes(args)?;
    // Fail before the run, not after it, if the results cannot be written.
    let (eta_csv, eta_plot) = (args.eta_csv_path(), args.eta_plot_path());
    let mut outputs = vec![
        args.csv.clone(),
        args.plot.clone(),
        eta_csv.clone(),
        eta_plot.clone(),
    ];
    if !args.rate_changes.is_empty() {
        outputs.push(args.eta_after_change_plot_path());
    }
    for path in &outputs {
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let sources: Vec<Option<IpAddr>> = match &args.source_ips {
        Some(range) => range.addrs().into_iter().map(Some).collect(),
        None => vec![None],
    };
    let clients = sources
        .iter()
        .map(|&ip| Ok((ip, follow::http_client(ip)?)))
        .collect::<reqwest::Result<Vec<_>>>()?;
    prepare_show(args, &clients[0].1).await?;
    check_show(args, &clients[0].1).await?;
    if !args.join_only {
        warn_about_open_files(args.fans);
    }

    // 1 µs to 1 h, 3 significant figures: a few kB each.
    let histogram =
        || Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"));
    let run = Arc::new(Run {
        urls: args.urls.clone(),
        show: args.show.clone(),
        transport: args.transport,
        clients,
        start: Instant::now(),
        counters: Counters {
            first_join_us: AtomicU64::new(u64::MAX),
            rate_changed_us: AtomicU64::new(u64::MAX),
            ..Counters::default()
        },
        join_latency: histogram(),
        first_event: histogram(),
        push_latency: histogram(),
        order_latency: histogram(),
        orders: Mutex::default(),
        records: Mutex::default(),
        join_only: args.join_only,
        choices,
        joining: Arc::new(Semaphore::new(args.max_in_flight as usize)),
    });

    let stop = interrupted.child_token();
    let deadline = run.start + args.duration;
    let bar = progress_bar(args);
    let tasks = TaskTracker::new();
    let sampler = tokio::spawn(sample_every_second(run.clone(), bar.clone(), stop.clone()));
    let stopper = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline.into()).await;
            stop.cancel();
        })
    };
    let rate_changer = tokio::spawn(rate_change::run(
        run.clone(),
        args.admin_token.clone().unwrap_or_default(),
        args.rate_changes.clone(),
        stop.clone(),
    ));

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
                _ = stop.cancelled() => Outcome::Unfinished,
            };
            // A fan admitted and still following (it stays) when the run stopped was
            // admitted all the same.
            let outcome = match outcome {
                Outcome::Unfinished if record.admitted_at.is_some() => Outcome::Admitted,
                other => other,
            };
            let c = &run.counters;
            add(match outcome {
                Outcome::JoinFailed => &c.join_failed,
                Outcome::Admitted => &c.admitted,
                Outcome::Unknown => &c.unknown,
                Outcome::Expired => &c.expired,
                Outcome::Lost => &c.lost,
                Outcome::Unfinished => &c.unfinished,
                Outcome::JoinOnly => &c.join_only,
            });
            if record.ticket.is_some() {
                run.records
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(record);
            }
            add(&c.done);
            bar.inc(1);
        });
    }
    tasks.close();
    tokio::select! {
        _ = tasks.wait() => {}
        _ = stop.cancelled() => {
            if tokio::time::timeout(WIND_DOWN, tasks.wait()).await.is_err() {
                // Not a log line: logs go to stdout, where `--json` writes the report.
                eprintln!("note: some fans did not stop within {WIND_DOWN:?}");
            }
        }
    }
    stop.cancel();
    stopper.abort();
    let rate_changes = rate_changer.await.context("the rate changer failed")?;
    let mut samples = sampler.await.context("the sampler failed")?;
    samples.push(run.sample());
    bar.finish_and_clear();

    let mut records = std::mem::take(&mut *run.records.lock().unwrap_or_else(|e| e.into_inner()));
    records.sort_by_key(|r| r.fan);
    let eta = EtaReport::of(&records, args.eta_min_wait);
    let eta_after_rate_change = (!args.rate_changes.is_empty())
        .then(|| EtaReport::of_which(&records, args.eta_min_wait, Which::AfterRateChange));
    let report = report::report(args, &run, eta, eta_after_rate_change, rate_changes);
    plot::write_csv(&args.csv, &samples)?;
    let title = format!(
        "{} fans over {}, {} joins/s asked",
        thousands(args.fans),
        args.transport.name(),
        thousands(u64::from(args.join_rate))
    );
    plot::draw_svg(&args.plot, &title, &samples)?;
    eta::write_csv(&eta_csv, &records, args.eta_min_wait)?;
    plot::draw_eta_svg(
        &eta_plot,
        &report.eta.title(),
        &eta::points(&records, Which::First),
        args.eta_min_wait.as_secs_f64(),
    )?;
    if let Some(after) = &report.eta_after_rate_change {
        plot::draw_eta_svg(
            &args.eta_after_change_plot_path(),
            &after.title(),
            &eta::points(&records, Which::AfterRateChange),
            args.eta_min_wait.as_secs_f64(),
        )?;
    }
    Ok(report)
}

/// `--rate-change` needs the token, and a change after the run would never happen: both are
/// said before anything is sent.
fn check_rate_changes(args: &LoadArgs) -> anyhow::Result<()> {
    if args.rate_changes.is_empty() {
        return Ok(());
    }
    if args.admin_token.is_none() {
        bail!("--rate-change needs the operator token (--admin-token or ADMIN_TOKEN)");
    }
    if let Some(late) = args.rate_changes.iter().find(|c| c.after >= args.duration) {
        bail!(
            "--rate-change at {} comes after the run's --duration of {}",
            humantime::format_duration(late.after),
            humantime::format_duration(args.duration)
        );
    }
    Ok(())
}

/// `--open` and `--admit-per-second`, on every server (idempotent when they share Redis).
async fn prepare_show(args: &LoadArgs, client: &Client) -> anyhow::Result<()> {
    if !args.open && args.admit_per_second.is_none() {
        return Ok(());
    }
    let Some(token) = &args.admin_token else {
        bail!(
            "--open and --admit-per-second need the operator token (--admin-token or ADMIN_TOKEN)"
        );
    };
    for base in &args.urls {
        let room = |action: &str| {
            let mut url = base.clone();
            url.set_path(&format!(
                "{}/orders/waiting-room/{}/{action}",
                base.path().trim_end_matches('/'),
                args.show
            ));
            url
        };
        if let Some(rate) = args.admit_per_second {
            let response = client
                .put(room("config"))
                .bearer_auth(token)
                .json(&serde_json::json!({ "admitPerSecond": rate }))
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            if !response.status().is_success() {
                bail!("{base}: setting the rate answered {}", response.status());
            }
        }
        if args.open {
            let response = client
                .post(room("open"))
                .bearer_auth(token)
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            if !response.status().is_success() {
                bail!("{base}: opening the show answered {}", response.status());
            }
        }
    }
    Ok(())
}

/// Every server must know the show before the first join: joins for a show nobody created
/// would all be refused (404), and the run would measure nothing. Asks for a ticket nobody
/// holds, which needs no token and writes nothing: a show that exists answers `UNKNOWN`.
async fn check_show(args: &LoadArgs, client: &Client) -> anyhow::Result<()> {
    let show = &args.show;
    for base in &args.urls {
        let shown = base.as_str().trim_end_matches('/');
        let response = client
            .get(follow::ticket_url(base, show, Uuid::nil(), ""))
            .timeout(follow::CONNECT_TIMEOUT)
            .send()
            .await
            .with_context(|| format!("cannot reach {shown}"))?;
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if body["status"] == "UNKNOWN" || status == reqwest::StatusCode::OK {
            continue;
        }
        if status == reqwest::StatusCode::NOT_FOUND {
            bail!(
                "{shown}: show {show} does not exist. An operator creates it \
                 (PUT /orders/waiting-room/{show}), or run with --open or --admit-per-second \
                 and the operator token"
            );
        }
        let message = body["message"].as_str().unwrap_or_default();
        bail!("{shown}: asking about show {show} answered {status}: {message}");
    }
    Ok(())
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

/// Each open stream costs this process one file descriptor; say so before it runs out.
fn warn_about_open_files(fans: u64) {
    let Some(limit) = open_file_limit() else {
        return;
    };
    if fans + 100 > limit {
        eprintln!(
            "note: this process may open at most {} files; {} fans held at once will not fit. \
             Split the run over several processes (and --source-ips).",
            thousands(limit),
            thousands(fans)
        );
    }
}

/// The soft open-file limit, from `/proc/self/limits` (Linux); `None` elsewhere.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ip_ranges_parse_and_stay_on_loopback() {
        let r: SourceIps = "127.0.0.2-127.0.0.5".parse().unwrap();
        assert_eq!(r.addrs().len(), 4);
        assert_eq!(r.addrs()[0], "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!("127.0.0.9".parse::<SourceIps>().unwrap().addrs().len(), 1);
        assert_eq!(
            "127.0.0.255-127.0.1.1"
                .parse::<SourceIps>()
                .unwrap()
                .addrs()
                .len(),
            3
        );
        for bad in [
            "10.0.0.1-10.0.0.2",
            "127.0.0.5-127.0.0.2",
            "127.0.0.1-",
            "x",
            "127.0.0.1-192.168.0.1",
        ] {
            assert!(bad.parse::<SourceIps>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn only_loopback_servers_are_loaded() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://127.9.8.7",
            "http://localhost:1",
            "http://[::1]:8080",
        ] {
            assert!(check_loopback(&ok.parse().unwrap()).is_ok(), "{ok}");
        }
        for bad in [
            "http://10.0.0.1:8080",
            "http://example.com",
            "https://127.0.0.1",
        ] {
            assert!(check_loopback(&bad.parse().unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_are_bounded() {
        assert!(parse_duration("30s").is_ok());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("2h").is_err());
        assert_eq!(parse_min_wait("0s"), Ok(Duration::ZERO));
        assert!(parse_min_wait("2h").is_err());
    }

    #[test]
    fn fractions_are_between_zero_and_one() {
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        for bad in ["-0.1", "1.5", "half", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn eta_outputs_go_next_to_the_timeline() {
        assert_eq!(
            beside(Path::new("out/load-1.csv"), "eta"),
            PathBuf::from("out/load-1-eta.csv")
        );
        assert_eq!(beside(Path::new("plot"), "eta"), PathBuf::from("plot-eta"));
    }

    #[test]
    fn the_open_file_limit_is_read() {
        if cfg!(target_os = "linux") {
            assert!(open_file_limit().is_some_and(|n| n > 0));
        }
    }
}
