//! `load --bots`: a bot crowd against the server's defences, and what those cost an honest
//! fan.
//!
//! Each bot is one client address, posed with `X-Forwarded-For` (the server must trust one
//! proxy hop, `TRUSTED_PROXY_HOPS=1`, as behind a load balancer), joining again and again
//! with `--bot-concurrency` joins in flight until `--duration` ends. With `--bots-solve` a
//! bot asks the show's challenge and solves it before each join (this machine's CPU is the
//! bot's); without it, it sends no proof. With `--bots-idempotency-key` it sends one key on
//! every join. Beside them, `--fans` honest fans join at `--join-rate`, one fresh address
//! each, the way the waiting page does (challenge, solve when asked, join), and their time to
//! join is measured. What counts for a bot is a place: a 202, a new ticket in the queue.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use reqwest::{Client, StatusCode, Url};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use waiting_room::protocol::{Challenge, JOIN_PROOF_HEADER, routes};

use super::{LoadArgs, setup};
use crate::follow::{self, challenge};

/// What the crowd and the honest fans got.
#[derive(Debug, Default, serde::Serialize)]
pub struct BotReport {
    /// The bots' addresses (each a crowd of joins).
    pub bots: u32,
    /// Whether the bots solved the join challenge.
    pub solve: bool,
    /// Whether each bot sent one `Idempotency-Key` throughout.
    pub idempotency_key: bool,
    /// The show's `joinChallengeBits` during the run.
    pub join_challenge_bits: Option<u32>,
    /// How long the crowd ran.
    pub seconds: f64,
    /// Joins the bots sent, and what came back, by HTTP status.
    pub bot_joins: u64,
    /// By HTTP status.
    pub bot_answers: BTreeMap<u16, u64>,
    /// New places (202) the bots got, in all and per bot address per minute.
    pub bot_places: u64,
    /// New places per bot address per minute.
    pub places_per_bot_per_minute: f64,
    /// Mean time a bot spent solving one challenge (ms), when it solved.
    pub bot_solve_ms: f64,
    /// Honest fans: joined, refused, and their time to join (challenge + solve + join, ms).
    pub fans: u64,
    /// Honest fans that joined.
    pub fans_joined: u64,
    /// Honest fans refused.
    pub fans_refused: u64,
    /// Their time to join, median (ms).
    pub fan_join_ms_p50: f64,
    /// 90th percentile (ms).
    pub fan_join_ms_p90: f64,
    /// The slowest (ms).
    pub fan_join_ms_max: f64,
    /// The honest fans' solving alone: mean ms per challenge, and hashes a second over all
    /// of them (total hashes over total time: the luck of one challenge does not skew it).
    pub fan_solve_ms_mean: f64,
    /// Hashes a second over all of them.
    pub fan_hashes_per_second: f64,
}

impl std::fmt::Display for BotReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "bots: {} address(es), solve={}, idempotency-key={}, joinChallengeBits={}, {:.1} s",
            self.bots,
            self.solve,
            self.idempotency_key,
            self.join_challenge_bits
                .map_or("as set".into(), |b| b.to_string()),
            self.seconds
        )?;
        writeln!(
            f,
            "bot joins:    {} sent, answers {:?}",
            self.bot_joins, self.bot_answers
        )?;
        writeln!(
            f,
            "bot places:   {} ({:.1} per address per minute); solving {:.1} ms a challenge",
            self.bot_places, self.places_per_bot_per_minute, self.bot_solve_ms
        )?;
        write!(
            f,
            "honest fans:  {} joined of {} ({} refused); time to join p50 {:.0} ms, p90 {:.0} ms, \
             max {:.0} ms; solving {:.1} ms a challenge at {:.0} hashes/s",
            self.fans_joined,
            self.fans,
            self.fans_refused,
            self.fan_join_ms_p50,
            self.fan_join_ms_p90,
            self.fan_join_ms_max,
            self.fan_solve_ms_mean,
            self.fan_hashes_per_second
        )
    }
}

#[derive(Default)]
struct Tally {
    joins: AtomicU64,
    places: AtomicU64,
    solved: AtomicU64,
    solve_us: AtomicU64,
    answers: Mutex<BTreeMap<u16, u64>>,
    fan_ms: Mutex<Vec<f64>>,
    fans_refused: AtomicU64,
    fan_solved: AtomicU64,
    fan_solve_us: AtomicU64,
    fan_hashes: AtomicU64,
}

impl Tally {
    fn answered(&self, status: u16) {
        *self
            .answers
            .lock()
            .expect("never poisoned")
            .entry(status)
            .or_default() += 1;
    }
}

/// The address bot `i` poses as (10.77.0.0/16), and honest fan `i`'s (172.16.0.0/12).
fn bot_addr(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 77, 0, 1)) + i)
}
fn fan_addr(i: u64) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(172, 16, 0, 1)) + i as u32)
}

/// The CLI entry of `load --bots`.
pub async fn main(args: &LoadArgs, interrupted: CancellationToken) -> anyhow::Result<()> {
    let report = run(args, interrupted).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(())
}

/// Runs the crowd and the honest fans until `--duration` (or `interrupted`).
pub async fn run(args: &LoadArgs, interrupted: CancellationToken) -> anyhow::Result<BotReport> {
    let bots = args.bots.context("--bots names the bot addresses")?;
    let client = prepare(args).await?;
    let crowd = Crowd {
        client,
        base: args.urls[0].clone(),
        show: args.show.to_string(),
        tally: Arc::default(),
        stop: interrupted.child_token(),
        tasks: TaskTracker::new(),
        started: Instant::now(),
        duration: args.duration,
    };
    crowd.start_bots(args, bots);
    crowd.start_fans(args).await;
    crowd.end().await;
    Ok(crowd.report(args, bots))
}

/// Loopback servers only, the show prepared (and its challenge set) as asked, and known.
async fn prepare(args: &LoadArgs) -> anyhow::Result<Client> {
    for url in &args.urls {
        setup::check_loopback(url)?;
    }
    let client = follow::http_client(None)?;
    setup::prepare_show(args, &client).await?;
    if let Some(bits) = args.join_challenge_bits {
        set_bits(args, &client, bits).await?;
    }
    setup::check_show(args, &client).await?;
    Ok(client)
}

/// What the bots and the honest fans share: where they join, what they got, when to stop.
struct Crowd {
    client: Client,
    base: Url,
    show: String,
    tally: Arc<Tally>,
    stop: CancellationToken,
    tasks: TaskTracker,
    started: Instant,
    duration: Duration,
}

impl Crowd {
    /// `--bot-concurrency` tasks per bot address, each joining again and again until the end.
    fn start_bots(&self, args: &LoadArgs, bots: u32) {
        for b in 0..bots {
            let key = format!("bot-{b}-{}", uuid::Uuid::new_v4().simple());
            let addr = bot_addr(b).to_string();
            for _ in 0..args.bot_concurrency {
                let (client, base, tally, stop) = (
                    self.client.clone(),
                    self.base.clone(),
                    self.tally.clone(),
                    self.stop.clone(),
                );
                let (show, addr) = (self.show.clone(), addr.clone());
                let key = args.bots_idempotency_key.then(|| key.clone());
                let solve = args.bots_solve;
                self.tasks.spawn(async move {
                    while !stop.is_cancelled() {
                        let joined =
                            bot_join(&client, &base, &show, &addr, key.as_deref(), solve, &tally);
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            r = joined => if let Err(e) = r {
                                tracing::debug!(error = %e, "bot join failed");
                                tally.answered(0);
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            },
                        }
                    }
                });
            }
        }
    }

    /// Honest fans, at --join-rate, one address each, until all joined or the run ends.
    async fn start_fans(&self, args: &LoadArgs) {
        let every = Duration::from_secs_f64(1.0 / f64::from(args.join_rate));
        for i in 0..args.fans {
            let at = self.started + every.mul_f64(i as f64);
            tokio::select! {
                _ = self.stop.cancelled() => break,
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = tokio::time::sleep_until((self.started + self.duration).into()) => break,
            }
            let (client, base, tally) =
                (self.client.clone(), self.base.clone(), self.tally.clone());
            let show = self.show.clone();
            self.tasks.spawn(async move {
                let t0 = Instant::now();
                match fan_join(&client, &base, &show, &fan_addr(i).to_string(), &tally).await {
                    Ok(true) => tally
                        .fan_ms
                        .lock()
                        .expect("never poisoned")
                        .push(t0.elapsed().as_secs_f64() * 1000.0),
                    _ => {
                        tally.fans_refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    }

    /// Waits for `--duration` (or the interruption), then stops every bot and fan.
    async fn end(&self) {
        tokio::select! {
            _ = self.stop.cancelled() => {}
            _ = tokio::time::sleep_until((self.started + self.duration).into()) => {}
        }
        self.stop.cancel();
        self.tasks.close();
        // A solve under way finishes on its blocking thread; nothing waits for more than that.
        let _ = tokio::time::timeout(Duration::from_secs(30), self.tasks.wait()).await;
    }

    /// What the tally adds up to.
    fn report(&self, args: &LoadArgs, bots: u32) -> BotReport {
        let tally = &self.tally;
        let seconds = self
            .started
            .elapsed()
            .as_secs_f64()
            .min(self.duration.as_secs_f64());
        let mut fan_ms = tally.fan_ms.lock().expect("never poisoned").clone();
        fan_ms.sort_by(f64::total_cmp);
        let pick = |q: f64| {
            if fan_ms.is_empty() {
                0.0
            } else {
                fan_ms[((fan_ms.len() - 1) as f64 * q).round() as usize]
            }
        };
        let places = tally.places.load(Ordering::Relaxed);
        BotReport {
            bots,
            solve: args.bots_solve,
            idempotency_key: args.bots_idempotency_key,
            join_challenge_bits: args.join_challenge_bits,
            seconds,
            bot_joins: tally.joins.load(Ordering::Relaxed),
            bot_answers: tally.answers.lock().expect("never poisoned").clone(),
            bot_places: places,
            places_per_bot_per_minute: places as f64 / f64::from(bots) / seconds * 60.0,
            bot_solve_ms: per(&tally.solve_us, &tally.solved) / 1000.0,
            fans: args.fans,
            fans_joined: fan_ms.len() as u64,
            fans_refused: tally.fans_refused.load(Ordering::Relaxed),
            fan_join_ms_p50: pick(0.5),
            fan_join_ms_p90: pick(0.9),
            fan_join_ms_max: fan_ms.last().copied().unwrap_or(0.0),
            fan_solve_ms_mean: per(&tally.fan_solve_us, &tally.fan_solved) / 1000.0,
            fan_hashes_per_second: per(&tally.fan_hashes, &tally.fan_solve_us) * 1e6,
        }
    }
}

/// `a / b`, 0 when `b` is.
fn per(a: &AtomicU64, b: &AtomicU64) -> f64 {
    let (a, b) = (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed));
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// `PUT …/config {"joinChallengeBits": bits}` on every server.
async fn set_bits(args: &LoadArgs, client: &Client, bits: u32) -> anyhow::Result<()> {
    let Some(token) = &args.admin_token else {
        bail!("--join-challenge-bits needs the operator token (--admin-token or ADMIN_TOKEN)");
    };
    for base in &args.urls {
        let response = client
            .put(follow::show_url(base, routes::CONFIG, &args.show))
            .bearer_auth(token)
            .json(&serde_json::json!({ "joinChallengeBits": bits }))
            .send()
            .await
            .with_context(|| format!("cannot reach {base}"))?;
        if !response.status().is_success() {
            bail!(
                "{base}: setting joinChallengeBits answered {}",
                response.status()
            );
        }
    }
    Ok(())
}

/// The show's challenge, asked as `addr`.
async fn ask(client: &Client, base: &Url, show: &str, addr: &str) -> anyhow::Result<Challenge> {
    let url = base.join(&routes::show(routes::CHALLENGE, show))?;
    let r = client
        .post(url)
        .header("X-Forwarded-For", addr)
        .send()
        .await?;
    if r.status() != StatusCode::OK {
        bail!("challenge answered {}", r.status());
    }
    Ok(r.json().await?)
}

/// One join as `addr`: its status.
async fn join(
    client: &Client,
    base: &Url,
    show: &str,
    addr: &str,
    key: Option<&str>,
    proof: Option<&str>,
) -> anyhow::Result<StatusCode> {
    let mut request = client
        .post(base.join(&routes::show(routes::JOIN, show))?)
        .header("X-Forwarded-For", addr);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    if let Some(proof) = proof {
        request = request.header(JOIN_PROOF_HEADER, proof);
    }
    Ok(request.send().await?.status())
}

async fn bot_join(
    client: &Client,
    base: &Url,
    show: &str,
    addr: &str,
    key: Option<&str>,
    solve: bool,
    tally: &Tally,
) -> anyhow::Result<()> {
    let proof = if solve {
        let solved = challenge::solve(ask(client, base, show, addr).await?).await;
        if solved.header.is_some() {
            tally.solved.fetch_add(1, Ordering::Relaxed);
            tally
                .solve_us
                .fetch_add(solved.took.as_micros() as u64, Ordering::Relaxed);
        }
        solved.header
    } else {
        None
    };
    let status = join(client, base, show, addr, key, proof.as_deref()).await?;
    tally.joins.fetch_add(1, Ordering::Relaxed);
    tally.answered(status.as_u16());
    if status == StatusCode::ACCEPTED {
        tally.places.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// An honest fan's join, as the waiting page makes it: true when it got a ticket.
async fn fan_join(
    client: &Client,
    base: &Url,
    show: &str,
    addr: &str,
    tally: &Tally,
) -> anyhow::Result<bool> {
    let key = uuid::Uuid::new_v4().simple().to_string();
    let proof = challenge::solve(ask(client, base, show, addr).await?).await;
    if proof.header.is_some() {
        tally.fan_solved.fetch_add(1, Ordering::Relaxed);
        let took = proof.took.as_micros() as u64;
        tally.fan_solve_us.fetch_add(took, Ordering::Relaxed);
        tally.fan_hashes.fetch_add(proof.hashes, Ordering::Relaxed);
    }
    let status = join(
        client,
        base,
        show,
        addr,
        Some(&key),
        proof.header.as_deref(),
    )
    .await?;
    Ok(status == StatusCode::ACCEPTED)
}
