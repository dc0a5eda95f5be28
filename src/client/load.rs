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

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use reqwest::{Client, Url};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::backoff::Backoff;
use super::follow::{self, FollowError, Joined, PushKind, PushStream, Transport};
use super::plot::{self, Sample};
use crate::model::ShowId;
use crate::words::thousands;

/// Where in each wall-clock second the admitter ticks (`admitter::run` wakes at `.050`).
pub const TICK_PHASE_MS: u64 = 50;

/// Attempts per fan at joining, and at connecting without hearing anything in between.
const ATTEMPTS: u32 = 3;

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

    /// The operator token, for `--open` and `--admit-per-second`.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Open the show on every --url before the first join (creating it if needed).
    #[arg(long)]
    pub open: bool,

    /// Set the show's admission rate on every --url before the first join (creating it,
    /// closed, if needed).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub admit_per_second: Option<u32>,

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
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (try 30s or 2m)"))?;
    if d.is_zero() || d > Duration::from_secs(3600) {
        return Err("must be more than 0 and at most 1h".into());
    }
    Ok(d)
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

/// Latency percentiles, in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        // Recorded in microseconds.
        let ms = |us: u64| (us as f64 / 100.0).round() / 10.0;
        Percentiles {
            count: h.len(),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}

impl fmt::Display for Percentiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 0 {
            return f.write_str("none measured");
        }
        write!(
            f,
            "p50 {} ms · p90 {} ms · p99 {} ms · max {} ms ({} samples)",
            self.p50,
            self.p90,
            self.p99,
            self.max,
            thousands(self.count)
        )
    }
}

/// What a run measured. The fan outcomes add up to `fans`:
/// `not_started + join_failed + join_only + admitted + unknown + expired + lost + unfinished`.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub fans: u64,
    pub transport: Transport,
    pub servers: usize,
    pub source_ips: usize,
    pub elapsed_seconds: f64,
    /// Joins answered 202.
    pub joined: u64,
    /// Joins per second achieved, from the first join sent to the last one answered.
    pub joins_per_second: f64,
    pub join_latency: Percentiles,
    /// 429s met on the way (retried after `Retry-After`).
    pub join_throttled: u64,
    /// Streams opened, reconnections included.
    pub streams_opened: u64,
    pub peak_connections: u64,
    /// Pushes received, first events included.
    pub messages: u64,
    /// From sending the stream request to its first event.
    pub first_event: Percentiles,
    /// From the admission tick to the push arriving (every push but the first of a stream).
    pub push_latency: Percentiles,
    pub stream_errors: u64,
    pub not_started: u64,
    pub join_failed: u64,
    /// Fans that joined and, with `--join-only`, stopped there.
    pub join_only: u64,
    pub admitted: u64,
    pub unknown: u64,
    pub expired: u64,
    /// Fans whose stream failed `ATTEMPTS` times in a row.
    pub lost: u64,
    /// Fans still waiting (or joining) when the run stopped.
    pub unfinished: u64,
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = thousands;
        writeln!(
            f,
            "{} fans over {} to {} server(s) from {} source address(es), {:.1} s",
            n(self.fans),
            self.transport.name(),
            self.servers,
            self.source_ips,
            self.elapsed_seconds
        )?;
        writeln!(
            f,
            "joins:        {} answered at {:.0}/s · {} throttled",
            n(self.joined),
            self.joins_per_second,
            n(self.join_throttled)
        )?;
        writeln!(f, "join latency: {}", self.join_latency)?;
        writeln!(
            f,
            "streams:      {} opened · peak {} held · {} errors",
            n(self.streams_opened),
            n(self.peak_connections),
            n(self.stream_errors)
        )?;
        writeln!(f, "first event:  {}", self.first_event)?;
        writeln!(f, "messages:     {} pushed", n(self.messages))?;
        writeln!(f, "tick → push:  {}", self.push_latency)?;
        write!(
            f,
            "fans:         {} admitted · {} joined only · {} still waiting · {} lost · {} join failed · {} unknown · {} expired · {} not started",
            n(self.admitted),
            n(self.join_only),
            n(self.unfinished),
            n(self.lost),
            n(self.join_failed),
            n(self.unknown),
            n(self.expired),
            n(self.not_started)
        )
    }
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
    }
    Ok(())
}

/// How one fan's run ended.
enum Outcome {
    JoinFailed,
    JoinOnly,
    Admitted,
    Unknown,
    Expired,
    Lost,
    Unfinished,
}

#[derive(Default)]
struct Counters {
    spawned: AtomicU64,
    joined: AtomicU64,
    join_throttled: AtomicU64,
    streams_opened: AtomicU64,
    connections: AtomicU64,
    peak_connections: AtomicU64,
    messages: AtomicU64,
    stream_errors: AtomicU64,
    join_errors: AtomicU64,
    done: AtomicU64,
    join_failed: AtomicU64,
    admitted: AtomicU64,
    unknown: AtomicU64,
    expired: AtomicU64,
    lost: AtomicU64,
    unfinished: AtomicU64,
    join_only: AtomicU64,
    /// Microseconds since the start: the first join sent and the last one answered.
    first_join_us: AtomicU64,
    last_join_us: AtomicU64,
}

fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

fn add(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// What every fan task shares.
struct Run {
    urls: Vec<Url>,
    show: ShowId,
    transport: Transport,
    /// One HTTP client per source address (reqwest binds per client).
    clients: Vec<(Option<IpAddr>, Client)>,
    start: Instant,
    counters: Counters,
    join_latency: Mutex<Histogram<u64>>,
    first_event: Mutex<Histogram<u64>>,
    push_latency: Mutex<Histogram<u64>>,
    join_only: bool,
    /// Bounds joins in flight (`--max-in-flight`).
    joining: Arc<Semaphore>,
}

impl Run {
    fn since_start_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn record(h: &Mutex<Histogram<u64>>, d: Duration) {
        let mut h = h.lock().unwrap_or_else(|e| e.into_inner());
        h.saturating_record(d.as_micros() as u64);
    }

    fn sample(&self) -> Sample {
        let c = &self.counters;
        Sample {
            seconds: self.start.elapsed().as_secs_f64(),
            connections: get(&c.connections),
            joined: get(&c.joined),
            messages: get(&c.messages),
            admitted: get(&c.admitted),
            errors: get(&c.stream_errors) + get(&c.join_errors),
        }
    }
}

/// One open stream, counted while it lives (also when its task is cancelled).
struct Held<'a>(&'a Counters);

impl<'a> Held<'a> {
    fn new(c: &'a Counters) -> Self {
        add(&c.streams_opened);
        let now = c.connections.fetch_add(1, Ordering::Relaxed) + 1;
        c.peak_connections.fetch_max(now, Ordering::Relaxed);
        Held(c)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs the load until every fan is done, `--duration` has passed or `interrupted` is
/// cancelled; writes the CSV and the plot, and returns what it measured.
pub async fn run(args: &LoadArgs, interrupted: CancellationToken) -> anyhow::Result<LoadReport> {
    for url in &args.urls {
        check_loopback(url)?;
    }
    // Fail before the run, not after it, if the results cannot be written.
    for path in [&args.csv, &args.plot] {
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
            ..Counters::default()
        },
        join_latency: histogram(),
        first_event: histogram(),
        push_latency: histogram(),
        join_only: args.join_only,
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
            let outcome = tokio::select! {
                outcome = fan(&run, i, permit) => outcome,
                _ = stop.cancelled() => Outcome::Unfinished,
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
            add(&c.done);
            bar.inc(1);
        });
    }
    tasks.close();
    tokio::select! {
        _ = tasks.wait() => {}
        _ = stop.cancelled() => {
            if tokio::time::timeout(WIND_DOWN, tasks.wait()).await.is_err() {
                tracing::warn!("some fans did not stop within {WIND_DOWN:?}");
            }
        }
    }
    stop.cancel();
    stopper.abort();
    let mut samples = sampler.await.context("the sampler failed")?;
    samples.push(run.sample());
    bar.finish_and_clear();

    let report = report(args, &run);
    plot::write_csv(&args.csv, &samples)?;
    let title = format!(
        "{} fans over {}, {} joins/s asked",
        thousands(args.fans),
        args.transport.name(),
        thousands(u64::from(args.join_rate))
    );
    plot::draw_svg(&args.plot, &title, &samples)?;
    Ok(report)
}

fn report(args: &LoadArgs, run: &Run) -> LoadReport {
    let c = &run.counters;
    let pct =
        |h: &Mutex<Histogram<u64>>| Percentiles::of(&h.lock().unwrap_or_else(|e| e.into_inner()));
    let joined = get(&c.joined);
    let window_us = get(&c.last_join_us).saturating_sub(get(&c.first_join_us));
    LoadReport {
        fans: args.fans,
        transport: args.transport,
        servers: args.urls.len(),
        source_ips: run.clients.len(),
        elapsed_seconds: run.start.elapsed().as_secs_f64(),
        joined,
        joins_per_second: if joined > 1 && window_us > 0 && window_us != u64::MAX {
            joined as f64 / (window_us as f64 / 1e6)
        } else {
            0.0
        },
        join_latency: pct(&run.join_latency),
        join_throttled: get(&c.join_throttled),
        streams_opened: get(&c.streams_opened),
        peak_connections: get(&c.peak_connections),
        messages: get(&c.messages),
        first_event: pct(&run.first_event),
        push_latency: pct(&run.push_latency),
        stream_errors: get(&c.stream_errors),
        not_started: args.fans - get(&c.spawned),
        join_failed: get(&c.join_failed),
        admitted: get(&c.admitted),
        unknown: get(&c.unknown),
        expired: get(&c.expired),
        lost: get(&c.lost),
        unfinished: get(&c.unfinished),
        join_only: get(&c.join_only),
    }
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

/// One fan: join, then follow until admitted (or the run stops).
async fn fan(run: &Run, i: u64, permit: OwnedSemaphorePermit) -> Outcome {
    let url = &run.urls[(i % run.urls.len() as u64) as usize];
    let (local, client) = &run.clients[(i % run.clients.len() as u64) as usize];
    let c = &run.counters;
    let Some(ticket) = join(run, client, url, permit).await else {
        return Outcome::JoinFailed;
    };
    if run.join_only {
        return Outcome::JoinOnly;
    }

    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(4));
    let mut last_event_id: Option<String> = None;
    loop {
        let asked = Instant::now();
        let opened = match run.transport {
            Transport::Sse => {
                PushStream::sse(client, url, &run.show, ticket, last_event_id.as_deref()).await
            }
            Transport::Ws => PushStream::ws(url, &run.show, ticket, *local).await,
        };
        match opened {
            Ok(mut stream) => {
                let _held = Held::new(c);
                let mut first = true;
                let end = loop {
                    match stream.next().await {
                        Some(Ok(push)) => {
                            add(&c.messages);
                            backoff.reset();
                            if first {
                                first = false;
                                Run::record(&run.first_event, asked.elapsed());
                            } else {
                                Run::record(&run.push_latency, since_tick(SystemTime::now()));
                            }
                            match push.kind {
                                PushKind::Waiting => {}
                                PushKind::Admitted => break Some(Outcome::Admitted),
                                PushKind::Unknown => break Some(Outcome::Unknown),
                                PushKind::Expired => break Some(Outcome::Expired),
                            }
                        }
                        Some(Err(_)) | None => break None,
                    }
                };
                if let Some(outcome) = end {
                    stream.close().await;
                    return outcome;
                }
                add(&c.stream_errors);
                last_event_id = stream.last_event_id().map(str::to_owned);
            }
            Err(FollowError::Fatal(_)) => {
                add(&c.stream_errors);
                return Outcome::Lost;
            }
            Err(FollowError::Retry(_)) => add(&c.stream_errors),
        }
        if backoff.failures() + 1 >= ATTEMPTS {
            return Outcome::Lost;
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// Joins with a few attempts; 429s wait as asked and do not count as attempts. The first
/// attempt uses the slot the fan started with; later ones queue for another.
async fn join(run: &Run, client: &Client, url: &Url, permit: OwnedSemaphorePermit) -> Option<Uuid> {
    let c = &run.counters;
    let mut failures = 0;
    let mut first = Some(permit);
    loop {
        let (answer, sent) = {
            // Held for the request only, not for the waits below.
            let _permit = match first.take() {
                Some(permit) => permit,
                None => run
                    .joining
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed"),
            };
            c.first_join_us
                .fetch_min(run.since_start_us(), Ordering::Relaxed);
            let sent = Instant::now();
            (follow::join(client, url, &run.show).await, sent)
        };
        match answer {
            Ok(Joined::Ticket(ticket)) => {
                Run::record(&run.join_latency, sent.elapsed());
                add(&c.joined);
                c.last_join_us
                    .fetch_max(run.since_start_us(), Ordering::Relaxed);
                return Some(ticket.ticket_id);
            }
            Ok(Joined::TooMany(wait)) => {
                add(&c.join_throttled);
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                add(&c.join_errors);
                failures += 1;
                if failures >= ATTEMPTS || matches!(e, FollowError::Fatal(_)) {
                    tracing::debug!(error = %e, "join failed");
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
            }
        }
    }
}

/// How long after the latest admission tick `at` is (see the module doc).
fn since_tick(at: SystemTime) -> Duration {
    let ms = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let into_second = ms.as_micros() as u64 % 1_000_000;
    let phase = TICK_PHASE_MS * 1000;
    Duration::from_micros((into_second + 1_000_000 - phase) % 1_000_000)
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
    fn latency_counts_from_the_tick_at_fifty_ms_past_the_second() {
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(since_tick(at(1_000_053)), Duration::from_millis(3));
        assert_eq!(since_tick(at(1_000_050)), Duration::ZERO);
        // Just before the next tick: nearly a second late, not negative.
        assert_eq!(since_tick(at(1_001_049)), Duration::from_millis(999));
    }

    #[test]
    fn durations_are_bounded() {
        assert!(parse_duration("30s").is_ok());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("2h").is_err());
    }

    #[test]
    fn the_open_file_limit_is_read() {
        if cfg!(target_os = "linux") {
            assert!(open_file_limit().is_some_and(|n| n > 0));
        }
    }
}
