//! `waiting-room-client load`: small bounded runs whose counts must add up.

mod admitted;
mod away;
mod bots;
mod defaults;
mod poll;
mod refusals;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use waiting_room_client::follow::Transport;
use waiting_room_client::load::{self, LoadArgs, LoadReport};

use crate::helpers::*;

pub(super) fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wr-load-{}-{name}", uuid::Uuid::new_v4()))
}

pub(super) fn args(app: &TestApp, show_name: &str, fans: u64, transport: Transport) -> LoadArgs {
    LoadArgs {
        urls: vec![base(app)],
        show: show(show_name),
        fans,
        transport,
        poll_interval: Duration::from_secs(1),
        join_rate: 400,
        duration: Duration::from_secs(30),
        source_ips: None,
        no_source_spread: false,
        admin_token: Some(TOKEN.into()),
        open: true,
        admit_per_second: Some(100),
        csv: scratch("timeline.csv"),
        plot: scratch("plot.svg"),
        json: false,
        quiet: true,
        join_only: false,
        idempotency_key: false,
        max_in_flight: 64,
        buy: None,
        abandon: None,
        eta_min_wait: Duration::from_secs(10),
        eta_csv: Some(scratch("eta.csv")),
        eta_plot: Some(scratch("eta.svg")),
        rate_changes: Vec::new(),
        announce_rate_changes: false,
        bots: None,
        bots_solve: false,
        bots_idempotency_key: false,
        bot_concurrency: 4,
        join_challenge_bits: None,
        away: None,
        away_after: Duration::from_secs(30),
        away_for: Duration::from_secs(60),
    }
}

/// Runs `args` to its end, which must come within 30 s (`why` says why it should).
pub(super) async fn run_within_30s(args: &LoadArgs, why: &str) -> load::LoadReport {
    tokio::time::timeout(
        Duration::from_secs(30),
        load::run(args, CancellationToken::new()),
    )
    .await
    .expect(why)
    .expect("the run completes")
}

/// Removes what a run wrote.
pub(super) fn clean_up(args: &LoadArgs) {
    for path in [&args.csv, &args.plot] {
        std::fs::remove_file(path).ok();
    }
    std::fs::remove_file(args.eta_csv_path()).ok();
    std::fs::remove_file(args.eta_plot_path()).ok();
    std::fs::remove_file(args.eta_after_change_plot_path()).ok();
}

pub(super) fn outcomes(r: &LoadReport) -> u64 {
    r.not_started
        + r.join_failed
        + r.throttled
        + r.joining
        + r.join_only
        + r.admitted
        + r.unknown
        + r.expired
        + r.released
        + r.lost
        + r.unfinished
}

/// `--open` and `--admit-per-second` create the show: nobody made it before the run.
async fn every_fan_is_admitted(transport: Transport, source_ips: Option<&str>) {
    let app = spawn_app().await;
    let show_name = format!("load-{}", transport.name());
    assert!(!exists(&app, &show_name).await);
    let mut args = args(&app, &show_name, 200, transport);
    args.source_ips = source_ips.map(|s| s.parse().unwrap());

    let report = run_within_30s(&args, "a 200-fan run ends well within its 30 s").await;

    assert_eq!(report.joined, 200, "{report}");
    assert_eq!(report.admitted, 200, "{report}");
    assert_eq!(outcomes(&report), 200, "{report}");
    assert_eq!(report.stream_errors, 0, "{report}");
    assert_eq!(report.streams_opened, 200, "{report}");
    assert!((1..=200).contains(&report.peak_connections), "{report}");
    assert_eq!(report.join_latency.count, 200);
    assert_eq!(report.first_event.count, 200);
    // Every fan hears at least its first state (which is its admission if the tick came
    // before its stream did); each later push is timed from its tick.
    assert!(report.messages >= 200, "{report}");
    assert_eq!(
        report.push_latency.count,
        report.messages - report.streams_opened
    );
    assert!(report.joins_per_second > 0.0);
    // The server counted the same joins and admissions.
    let stats = app.stats(&show_name).await;
    assert_eq!(stats["joined"], 200, "{stats}");
    assert_eq!(stats["queueLength"], 0, "{stats}");

    let csv = std::fs::read_to_string(&args.csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("seconds,connections,joined,messages,admitted"));
    assert!(
        rows.len() >= 3,
        "a sample at the start, each second, and at the end:\n{csv}"
    );
    let last: Vec<&str> = rows.last().unwrap().split(',').collect();
    assert_eq!((last[1], last[2], last[4]), ("0", "200", "200"), "{csv}");
    let svg = std::fs::read_to_string(&args.plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("connections held"));

    // Without --buy and --abandon, every admitted fan stops following at once, as ever.
    assert_eq!(report.abandoners, 200, "{report}");
    assert_eq!((report.buyers, report.stayers), (0, 0), "{report}");
    assert!(report.orders.is_empty(), "{report}");
    // Every fan was told an ETA with its join and then admitted.
    assert_eq!(report.eta.measured, 200, "{report}");
    let rows = std::fs::read_to_string(args.eta_csv_path()).unwrap();
    assert_eq!(rows.lines().count(), 201, "{rows}");
    clean_up(&args);
}

#[tokio::test]
async fn a_sse_run_admits_every_fan_and_the_counts_add_up() {
    every_fan_is_admitted(Transport::Sse, None).await;
}

#[tokio::test]
async fn a_websocket_run_from_several_source_addresses_admits_every_fan() {
    every_fan_is_admitted(Transport::Ws, Some("127.0.0.2-127.0.0.4")).await;
}

#[tokio::test]
async fn a_run_stops_by_itself_at_its_duration_holding_every_connection_until_then() {
    let app = spawn_app().await;
    // A closed show: nobody is admitted, every fan holds its stream.
    app.create("closed").await;
    let args = LoadArgs {
        open: false,
        admit_per_second: None,
        duration: Duration::from_secs(2),
        ..args(&app, "closed", 50, Transport::Sse)
    };
    let started = Instant::now();
    let report = load::run(&args, CancellationToken::new()).await.unwrap();

    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(report.unfinished, 50, "{report}");
    assert_eq!(report.admitted, 0);
    assert_eq!(report.peak_connections, 50, "{report}");
    assert_eq!(outcomes(&report), 50);
    let csv = std::fs::read_to_string(&args.csv).unwrap();
    // Mid-run, every connection was held.
    assert!(
        csv.lines().any(|row| row.split(',').nth(1) == Some("50")),
        "{csv}"
    );
    clean_up(&args);
}

#[tokio::test]
async fn a_join_only_run_joins_every_fan_and_follows_none() {
    let app = spawn_app().await;
    app.create("joins").await;
    let args = LoadArgs {
        join_only: true,
        open: false,
        admit_per_second: None,
        join_rate: 1000,
        max_in_flight: 8,
        ..args(&app, "joins", 300, Transport::Sse)
    };
    let report = load::run(&args, CancellationToken::new()).await.unwrap();

    assert_eq!(report.joined, 300, "{report}");
    assert_eq!(report.join_only, 300, "{report}");
    assert_eq!(outcomes(&report), 300);
    assert_eq!(report.streams_opened, 0);
    assert_eq!(report.join_latency.count, 300);
    assert_eq!(app.stats("joins").await["queueLength"], 300);
    clean_up(&args);
}

#[tokio::test]
async fn an_interrupted_run_stops_early_and_still_reports() {
    let app = spawn_app().await;
    app.create("interrupted").await;
    let args = LoadArgs {
        open: false,
        admit_per_second: None,
        duration: Duration::from_secs(60),
        ..args(&app, "interrupted", 20, Transport::Ws)
    };
    let interrupt = CancellationToken::new();
    let trigger = interrupt.clone();
    tokio::spawn(async move {
        // Time for twenty fans to join and connect, on a slow machine.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let report = load::run(&args, interrupt).await.unwrap();

    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(report.unfinished, 20, "{report}");
    assert_eq!(report.peak_connections, 20, "{report}");
    assert!(std::fs::read_to_string(&args.csv).unwrap().lines().count() >= 2);
    clean_up(&args);
}

pub(super) async fn assert_untouched(app: &TestApp, show: &str) {
    let stats = app.stats(show).await;
    assert_eq!(stats["joined"], 0, "{stats}");
    assert_eq!(stats["open"], false, "{stats}");
    assert_eq!(stats["admitPerSecond"], 20, "{stats}");
}
