//! `waiting-room-client swarm`: many lean fans held at once, coming and going, for runs of
//! hundreds of thousands of fans on one machine (several processes, each up to
//! [`MAX_FANS`], against several server instances).
//!
//! `load` follows each fan with reqwest and measures much about each; a swarm fan costs
//! under 2 KiB instead: one small task, one TCP connection for its whole life (it joins with
//! a keep-alive `POST` and follows on the same connection: SSE, a WebSocket upgrade, or polls),
//! spoken with a minimal HTTP/1.1 of its own ([`wire`]), and a few dozen bytes of state. What
//! it measures goes to process-wide counters and histograms at once.
//!
//! Once a fan hears the show open (a state with `countdownPerSecond`, or waiting, unpaused),
//! churn starts: with `--leave-per-minute` fans leave (`DELETE` their ticket), with
//! `--return-per-minute` those who left join again at the back, with
//! `--reconnect-per-minute` stream fans drop their connection and reconnect (SSE with
//! `Last-Event-ID`). Who and when are drawn from `--seed`. Admitted fans close and are done.
//!
//! Tick → knowing latency is `load`'s ([`crate::load::count`]: pushed, polled, or counted by
//! the page between pushes), so `knowledge-plot` draws swarm reports as well.
//!
//! - [`args`]: the command line; [`shared`]: what the fans share; [`fan`]: one fan's life;
//!   [`wire`]: HTTP/1.1, SSE and WebSocket frames over a `TcpStream`; [`report`]: the
//!   figures, the timeline and the process's own cost.

mod args;
mod fan;
mod report;
mod shared;
pub mod wire;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use reqwest::Url;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use args::{MAX_FANS, Mix, SwarmArgs};
pub use report::{ByTransport, SwarmReport};
use shared::{Server, Swarm, get};

/// After the stop, how long fans get to close before the report is written anyway.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// The CLI entry: runs, prints the report (JSON with `--json`).
pub async fn main(args: SwarmArgs) -> anyhow::Result<()> {
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
    }
    Ok(())
}

/// Runs the swarm until every fan is done, `--duration` has passed or `interrupted` is
/// cancelled; writes the timeline (`--csv`) and returns what it measured.
pub async fn run(args: &SwarmArgs, interrupted: CancellationToken) -> anyhow::Result<SwarmReport> {
    start(args, interrupted).await?.finish().await
}

/// A swarm under way: what it holds now, and its report once it ends.
pub struct Running {
    swarm: Arc<Swarm>,
    ended: JoinHandle<anyhow::Result<SwarmReport>>,
}

impl Running {
    /// Fans holding a live stream, or polling, now.
    pub fn held(&self) -> u64 {
        get(&self.swarm.counts.held)
    }

    /// Waits for the swarm to end (every fan done, `--duration`, or interrupted): its report.
    pub async fn finish(self) -> anyhow::Result<SwarmReport> {
        self.ended.await.context("the swarm failed")?
    }
}

/// Starts the swarm: checks its servers and source addresses, then starts the fans at
/// `--join-rate` in the background.
pub async fn start(args: &SwarmArgs, interrupted: CancellationToken) -> anyhow::Result<Running> {
    anyhow::ensure!(
        args.fans <= MAX_FANS,
        "--fans: at most {MAX_FANS} a process (start several)"
    );
    let servers = servers(&args.urls).await?;
    if let Some(range) = &args.source_ips {
        for ip in [range.addrs().first(), range.addrs().last()]
            .into_iter()
            .flatten()
        {
            anyhow::ensure!(
                crate::load::sources::bindable(*ip),
                "--source-ips: cannot connect from {ip} on this system"
            );
        }
    }
    let rss_start = report::memory("VmRSS:").unwrap_or(0);
    let swarm = Arc::new(Swarm::new(args, servers));
    let ended = tokio::spawn(whole(args.clone(), swarm.clone(), interrupted, rss_start));
    Ok(Running { swarm, ended })
}

/// The whole run of a started swarm, to its report.
async fn whole(
    args: SwarmArgs,
    swarm: Arc<Swarm>,
    interrupted: CancellationToken,
    rss_start: u64,
) -> anyhow::Result<SwarmReport> {
    let stop = interrupted.child_token();
    let bar = progress_bar(&args);
    let sampler = tokio::spawn(report::sample(swarm.clone(), bar.clone(), stop.clone()));
    let fans = TaskTracker::new();
    let starter = tokio::spawn(start_fans(
        swarm.clone(),
        args.fans,
        args.join_rate,
        fans.clone(),
        stop.clone(),
    ));
    let deadline = swarm.start + args.duration;
    tokio::select! {
        _ = fans.wait() => {}
        _ = stop.cancelled() => {}
        _ = tokio::time::sleep_until(deadline.into()) => {}
    }
    let held = swarm.counts.held_by.each_ref().map(get);
    stop.cancel();
    for fan in starter.await.context("the fan starter failed")? {
        fan.abort();
    }
    let _ = tokio::time::timeout(WIND_DOWN, fans.wait()).await;
    let timeline = sampler.await.context("the sampler failed")?;
    bar.finish_and_clear();
    if let Some(path) = &args.csv {
        report::write_csv(path, &timeline)?;
    }
    Ok(report::report(&args, &swarm, held, &timeline, rss_start))
}

/// Each `--url`'s address (loopback only) and `host` header.
async fn servers(urls: &[Url]) -> anyhow::Result<Vec<Server>> {
    let mut servers = Vec::with_capacity(urls.len());
    for url in urls {
        let host = url
            .host_str()
            .with_context(|| format!("{url} names no host"))?;
        let port = url.port_or_known_default().unwrap_or(80);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addr = tokio::net::lookup_host((bare, port))
            .await
            .with_context(|| format!("cannot resolve {host}"))?
            .next()
            .with_context(|| format!("{host} has no address"))?;
        anyhow::ensure!(
            url.scheme() == "http" && addr.ip().is_loopback(),
            "{url}: the swarm only targets http:// servers on loopback"
        );
        servers.push(Server {
            addr,
            host: format!("{host}:{port}"),
        });
    }
    Ok(servers)
}

/// Starts fan after fan at `join_rate` a second until all are started or the run stops,
/// then closes `fans`: a handle to stop each. (A handle costs a fan 8 bytes; a cancellation
/// future in each fan's task would cost it a hundred.)
async fn start_fans(
    swarm: Arc<Swarm>,
    count: u64,
    join_rate: u32,
    fans: TaskTracker,
    stop: CancellationToken,
) -> Vec<AbortHandle> {
    let mut handles = Vec::with_capacity(count as usize);
    for i in 0..count {
        let due = swarm.start + Duration::from_secs_f64(i as f64 / f64::from(join_rate));
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = stop.cancelled() => break,
        }
        let swarm = swarm.clone();
        // Boxed: tokio aligns each task to 128 bytes, and a large aligned block wastes more
        // than a plain one; the task then holds only the pointer.
        let fan = fans.spawn(Box::pin(async move { fan::live(&swarm, i).await }));
        handles.push(fan.abort_handle());
    }
    fans.close();
    handles
}

fn progress_bar(args: &SwarmArgs) -> ProgressBar {
    if args.no_progress || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(args.fans);
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} fans joined · {msg}",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
