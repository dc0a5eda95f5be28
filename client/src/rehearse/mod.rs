//! `waiting-room-client rehearse`: the curve `simulate` plays, played against a real server
//! (a staging show) by fans that join, follow their tickets, give up or buy, at a scale the
//! box holds; then the server's own report beside the simulation's prediction of the same.

mod fan;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rand::SeedableRng;
use rand::rngs::Xoshiro128PlusPlus;
use reqwest::Method;
use tokio::task::JoinSet;
use waiting_room::model::{Phase, Report, ShowId, ShowStats};
use waiting_room::protocol::routes;

use self::fan::{Stage, Tally};
use crate::load::get;
use crate::load::sources::Sources;
use crate::shows::{Server, ServerArgs, answer};
use crate::simulate::{self, CurveArgs, ModelArgs, Plan};
use crate::swarm::MAX_FANS;

/// `rehearse`'s flags.
#[derive(Args, Debug)]
pub struct RehearseArgs {
    /// The server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// The staging show the sale is played on; it must not exist (or `--replace`).
    #[arg(long, default_value = "rehearsal")]
    pub show: ShowId,
    /// Delete the staging show first if it exists, with all its fans.
    #[arg(long)]
    pub replace: bool,
    /// The arrival curve.
    #[command(flatten)]
    pub curve: CurveArgs,
    /// The show and its fans.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Play this share of the curve, and of the show's rate, cap and stock: a sale the box
    /// holds, whose waits are those of the whole one.
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    pub scale: f64,
    /// How long past the curve's last second to wait for the queue to empty.
    #[arg(long, default_value = "10m", value_parser = crate::load::parse_span)]
    pub linger: Duration,
    /// Where to write both reports (`predicted/`, `rehearsed/`: JSON, CSV and HTML).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// A scale: above 0, at most 1.
fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err("a share above 0 and at most 1".into()),
    }
}

/// What a rehearsal came to: the prediction, the server's report, and what the fans did.
pub struct Rehearsal {
    /// The simulation's report of the plan.
    pub predicted: Report,
    /// The server's report of the staging show.
    pub rehearsed: Report,
    /// Fans that got a ticket.
    pub joined: u64,
    /// Fans that could not get a ticket.
    pub join_failed: u64,
    /// Fans that gave up waiting.
    pub gave_up: u64,
}

/// `waiting-room-client rehearse`: runs it, writes what `--out` asks, prints both side by
/// side.
pub async fn main(args: RehearseArgs) -> anyhow::Result<()> {
    let r = run(&args).await?;
    if let Some(dir) = &args.out {
        simulate::write_outputs(&dir.join("predicted"), &r.predicted)?;
        simulate::write_outputs(&dir.join("rehearsed"), &r.rehearsed)?;
    }
    print!("{}", side_by_side(&r));
    Ok(())
}

/// Plays the sale on the staging show, reads the server's report, and predicts the same
/// sale over the same span.
pub async fn run(args: &RehearseArgs) -> anyhow::Result<Rehearsal> {
    let plan = args.model.plan(args.curve.read()?)?.scaled(args.scale);
    let fans = plan.curve.fans();
    anyhow::ensure!(
        fans <= MAX_FANS,
        "{fans} fans: one rehearsal plays at most {MAX_FANS}; lower --scale"
    );
    let server = Server::new(&args.server)?;
    set_up(&server, args, &plan).await?;
    let stage = play(&server, args, &plan).await?;
    let response = server
        .request(
            Method::GET,
            &format!(
                "{}?format=json",
                routes::show(routes::REPORT, args.show.as_str())
            ),
        )?
        .send()
        .await?;
    let rehearsed: Report = answer(response).await?.json().await?;
    // The prediction over the same span: a rehearsal that stopped while fans still waited is
    // compared with a simulation stopped then.
    let started = Instant::now();
    let predicted = simulate::run(Plan {
        until: Some(Duration::from_secs(rehearsed.figures.seconds + 1)),
        ..plan
    })?;
    eprintln!("predicted in {:.1?}", started.elapsed());
    Ok(Rehearsal {
        predicted,
        rehearsed,
        joined: get(&stage.tally.joined),
        join_failed: get(&stage.tally.join_failed),
        gave_up: get(&stage.tally.gave_up),
    })
}

/// Makes the staging show afresh with the plan's settings, and opens it.
async fn set_up(server: &Server, args: &RehearseArgs, plan: &Plan) -> anyhow::Result<()> {
    let show = args.show.as_str();
    let exists = server
        .settings(show)
        .await
        .context("looking for the staging show")?;
    if exists.is_some() {
        anyhow::ensure!(
            args.replace,
            "{show} exists on the server: name another --show, or --replace to delete it"
        );
        let gone = server
            .request(Method::DELETE, &routes::show(routes::SHOW, show))?
            .send()
            .await?;
        answer(gone).await.context("deleting the staging show")?;
    }
    server
        .send(
            Method::PUT,
            &routes::show(routes::SHOW, show),
            &plan.settings,
        )
        .await
        .context("making the staging show")?;
    server
        .send(
            Method::POST,
            &routes::show(routes::OPEN, show),
            &serde_json::json!({}),
        )
        .await
        .context("opening the staging show")
}

/// Plays the curve: each second's fans spread over it, then waits until nobody waits (or the
/// sale ends, or `--linger` runs out).
async fn play(server: &Server, args: &RehearseArgs, plan: &Plan) -> anyhow::Result<Arc<Stage>> {
    let curve = plan.curve.seconds();
    let peak = curve.iter().copied().max().unwrap_or(1);
    let sources = Sources::spread(
        &args.server.url,
        plan.curve.fans(),
        u32::try_from(peak).unwrap_or(u32::MAX),
    )?;
    let stage = Arc::new(Stage {
        base: args.server.url.clone(),
        show: args.show.clone(),
        tally: Tally::default(),
    });
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(plan.seed);
    let b = plan.behaviour;
    let bar = ProgressBar::new(plan.curve.fans()).with_style(ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} joined {msg}",
    )?);
    let mut fans = JoinSet::new();
    let start = tokio::time::Instant::now();
    let mut i = 0;
    for (second, &n) in curve.iter().enumerate() {
        for k in 0..n {
            let at =
                Duration::from_secs(second as u64) + Duration::from_secs(1) * k as u32 / n as u32;
            tokio::time::sleep_until(start + at).await;
            let choices = b.draw(&mut rng);
            let (_, client) = sources.client(i)?;
            fans.spawn(fan::fan(stage.clone(), client.clone(), i, choices));
            i += 1;
        }
        show_progress(&bar, &stage.tally);
    }
    let deadline = tokio::time::Instant::now() + args.linger;
    loop {
        while fans.try_join_next().is_some() {}
        show_progress(&bar, &stage.tally);
        let stats = server
            .request(
                Method::GET,
                &routes::show(routes::STATS, args.show.as_str()),
            )?
            .send()
            .await?;
        let stats: ShowStats = answer(stats).await?.json().await?;
        let over = stats.phase != Phase::Open || (stats.queue_length == 0 && fans.is_empty());
        if over || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    bar.finish();
    fans.shutdown().await;
    Ok(stage)
}

fn show_progress(bar: &ProgressBar, tally: &Tally) {
    bar.set_position(get(&tally.joined) + get(&tally.join_failed));
    bar.set_message(format!(
        "· {} let in · {} ordered · {} gave up",
        get(&tally.admitted),
        get(&tally.ordered),
        get(&tally.gave_up)
    ));
}

/// The prediction beside what the server did, with how far apart they are.
fn side_by_side(rehearsal: &Rehearsal) -> String {
    let (p, r) = (&rehearsal.predicted.figures, &rehearsal.rehearsed.figures);
    let rows: [(&str, f64, f64); 11] = [
        ("arrivals", p.arrivals as f64, r.arrivals as f64),
        ("admitted", p.admitted as f64, r.admitted as f64),
        (
            "admitted a second",
            p.admitted_per_second,
            r.admitted_per_second,
        ),
        ("orders", p.orders as f64, r.orders as f64),
        ("wait p50 (s)", p.wait.p50, r.wait.p50),
        ("wait p90 (s)", p.wait.p90, r.wait.p90),
        ("wait p99 (s)", p.wait.p99, r.wait.p99),
        ("longest wait (s)", p.wait.max, r.wait.max),
        ("still waiting", p.queued as f64, r.queued as f64),
        (
            "most told no seat",
            p.most_told_no_seat as f64,
            r.most_told_no_seat as f64,
        ),
        ("ETA told ÷ real", p.eta.median_ratio, r.eta.median_ratio),
    ];
    let mut out = format!(
        "{:<20} {:>12} {:>12} {:>8}\n",
        "", "predicted", "rehearsed", "apart"
    );
    for (name, p, r) in rows {
        let apart = if p == 0.0 && r == 0.0 {
            "0 %".to_owned()
        } else {
            format!("{:+.1} %", (r - p) / p.abs().max(f64::MIN_POSITIVE) * 100.0)
        };
        out.push_str(&format!("{name:<20} {p:>12.1} {r:>12.1} {apart:>8}\n"));
    }
    out.push_str(&format!(
        "fans: {} joined, {} could not join, {} gave up; the audit: {}\n",
        rehearsal.joined,
        rehearsal.join_failed,
        rehearsal.gave_up,
        if rehearsal.rehearsed.fairness.verified {
            "verified, 0 inversions"
        } else {
            "NOT verified"
        },
    ));
    out
}
