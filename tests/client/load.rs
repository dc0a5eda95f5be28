//! `waiting-room load`: small bounded runs whose counts must add up.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use waiting_room::client::follow::Transport;
use waiting_room::client::load::{self, LoadArgs, LoadReport};
use waiting_room::config::Config;

use crate::helpers::*;

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wr-load-{}-{name}", uuid::Uuid::new_v4()))
}

fn args(app: &TestApp, show_name: &str, fans: u64, transport: Transport) -> LoadArgs {
    LoadArgs {
        urls: vec![app.base()],
        show: show(show_name),
        fans,
        transport,
        join_rate: 400,
        duration: Duration::from_secs(30),
        source_ips: None,
        admin_token: Some(TOKEN.into()),
        open: true,
        admit_per_second: Some(100),
        csv: scratch("timeline.csv"),
        plot: scratch("plot.svg"),
        json: false,
        quiet: true,
        join_only: false,
        max_in_flight: 64,
        buy: None,
        abandon: None,
        eta_min_wait: Duration::from_secs(10),
        eta_csv: Some(scratch("eta.csv")),
        eta_plot: Some(scratch("eta.svg")),
        rate_changes: Vec::new(),
    }
}

/// Removes what a run wrote.
fn clean_up(args: &LoadArgs) {
    for path in [&args.csv, &args.plot] {
        std::fs::remove_file(path).ok();
    }
    std::fs::remove_file(args.eta_csv_path()).ok();
    std::fs::remove_file(args.eta_plot_path()).ok();
    std::fs::remove_file(args.eta_after_change_plot_path()).ok();
}

fn outcomes(r: &LoadReport) -> u64 {
    r.not_started
        + r.join_failed
        + r.join_only
        + r.admitted
        + r.unknown
        + r.expired
        + r.lost
        + r.unfinished
}

/// `--open` and `--admit-per-second` create the show: nobody made it before the run.
async fn every_fan_is_admitted(transport: Transport, source_ips: Option<&str>) {
    let app = spawn_app().await;
    let show_name = format!("load-{}", transport.name());
    assert!(!app.exists(&show_name).await);
    let mut args = args(&app, &show_name, 200, transport);
    args.source_ips = source_ips.map(|s| s.parse().unwrap());

    let report = tokio::time::timeout(
        Duration::from_secs(30),
        load::run(&args, CancellationToken::new()),
    )
    .await
    .expect("a 200-fan run ends well within its 30 s")
    .expect("the run completes");

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
        started.elapsed() < Duration::from_secs(6),
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
        tokio::time::sleep(Duration::from_millis(800)).await;
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

#[tokio::test]
async fn a_run_whose_results_cannot_be_written_fails_before_it_starts() {
    let app = spawn_app().await;
    app.create("unwritable").await;
    let unwritable = || Some(PathBuf::from("/nonexistent-dir/eta.csv"));
    for args in [
        LoadArgs {
            csv: PathBuf::from("/nonexistent-dir/timeline.csv"),
            ..args(&app, "unwritable", 5, Transport::Sse)
        },
        LoadArgs {
            eta_csv: unwritable(),
            ..args(&app, "unwritable", 5, Transport::Sse)
        },
    ] {
        let err = load::run(&args, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("cannot write"), "{err}");
        clean_up(&args);
    }
    // Nothing was sent: not the rate, not the open, not a join.
    assert_untouched(&app, "unwritable").await;
}

/// A show as `create` left it: closed, the server's default rate, nobody joined.
async fn assert_untouched(app: &TestApp, show: &str) {
    let stats = app.stats(show).await;
    assert_eq!(stats["joined"], 0, "{stats}");
    assert_eq!(stats["open"], false, "{stats}");
    assert_eq!(stats["admitPerSecond"], 20, "{stats}");
}

#[tokio::test]
async fn a_run_against_a_show_nobody_created_fails_before_it_starts() {
    let app = spawn_app().await;
    for join_only in [false, true] {
        let args = LoadArgs {
            open: false,
            admit_per_second: None,
            join_only,
            ..args(&app, "nobody", 5, Transport::Sse)
        };
        let err = tokio::time::timeout(
            Duration::from_secs(5),
            load::run(&args, CancellationToken::new()),
        )
        .await
        .expect("it fails at once")
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("show nobody does not exist. An operator creates it (PUT /orders/waiting-room/nobody), or run with --open"),
            "{err}"
        );
        assert!(err.contains(shown(&app.base())), "names the server: {err}");
        clean_up(&args);
    }
    // Its joins were never sent, and nothing created the show.
    assert!(!app.exists("nobody").await);

    // `--admit-per-second` alone creates it, closed, with that rate, and fans can join.
    let args = LoadArgs {
        open: false,
        admit_per_second: Some(7),
        join_only: true,
        ..args(&app, "nobody", 5, Transport::Sse)
    };
    let report = load::run(&args, CancellationToken::new()).await.unwrap();
    assert_eq!(report.joined, 5, "{report}");
    let stats = app.stats("nobody").await;
    assert_eq!(stats["open"], false, "{stats}");
    assert_eq!(stats["admitPerSecond"], 7, "{stats}");
    assert_eq!(stats["queueLength"], 5, "{stats}");
    clean_up(&args);
}

#[tokio::test]
async fn a_run_refuses_servers_off_loopback_and_opening_without_a_token() {
    let app = spawn_app().await;
    app.create("s1").await;
    let mut remote = args(&app, "s1", 1, Transport::Sse);
    remote.urls = vec!["http://192.0.2.1:8080".parse().unwrap()];
    let err = load::run(&remote, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("loopback"), "{err}");

    let tokenless = LoadArgs {
        admin_token: None,
        ..args(&app, "s1", 1, Transport::Sse)
    };
    let err = load::run(&tokenless, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("operator token"), "{err}");
    clean_up(&tokenless);
    // Nothing was sent: the show was never opened nor joined.
    assert_untouched(&app, "s1").await;
}

/// A run whose admitted fans buy, abandon or stay: with a 2 s admission, stayers are told
/// `expired` within the run.
async fn admitted_fans_choose(transport: Transport) {
    let app = spawn_app_with(Config {
        admission_ttl: Duration::from_secs(2),
        ..Config::for_tests()
    })
    .await;
    let show_name = format!("choices-{}", transport.name());
    let args = LoadArgs {
        buy: Some(0.5),
        abandon: Some(0.25),
        ..args(&app, &show_name, 40, transport)
    };
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        load::run(&args, CancellationToken::new()),
    )
    .await
    .expect("the run ends once every stayer's admission expired")
    .expect("the run completes");

    assert_eq!(report.joined, 40, "{report}");
    assert_eq!(report.admitted, 40, "{report}");
    assert_eq!(outcomes(&report), 40, "{report}");
    // Half buy, a quarter abandon, the rest stay: exactly, over the whole run.
    assert_eq!(
        (report.buyers, report.abandoners, report.stayers),
        (20, 10, 10),
        "{report}"
    );
    assert_eq!(
        report.buyers + report.abandoners + report.stayers,
        report.admitted
    );
    assert_eq!(report.stayers_expired, 10, "{report}");
    assert_eq!(
        report.orders,
        BTreeMap::from([("201".to_owned(), 20)]),
        "{report}"
    );
    assert_eq!(report.order_latency.count, 20, "{report}");
    let text = report.to_string();
    assert!(
        text.contains("once admitted: 20 bought · 10 abandoned · 10 stayed (10 until expired)"),
        "{text}"
    );
    assert!(
        text.contains("orders:       20 answered 201 · p50"),
        "{text}"
    );

    // Per fan: buyers have their 201, stayers their expiry, abandoners neither.
    let csv = std::fs::read_to_string(args.eta_csv_path()).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let (choice, status, expired) = (col("choice"), col("order_status"), col("expired"));
    assert_eq!(rows.len(), 41, "{csv}");
    for row in &rows[1..] {
        let expected = match row[choice] {
            "buy" => ("201", "0"),
            "abandon" => ("", "0"),
            "stay" => ("", "1"),
            other => panic!("choice {other}"),
        };
        assert_eq!((row[status], row[expired]), expected, "{row:?}");
    }
    // The server took the orders: buyers' admissions are spent, the others' ran out.
    app.wait_for_stats(&show_name, Duration::from_secs(5), |s| {
        s["admittedValid"] == 0
    })
    .await;
    clean_up(&args);
}

#[tokio::test]
async fn admitted_fans_buy_abandon_or_stay_over_sse() {
    admitted_fans_choose(Transport::Sse).await;
}

#[tokio::test]
async fn admitted_fans_buy_abandon_or_stay_over_websockets() {
    admitted_fans_choose(Transport::Ws).await;
}

#[tokio::test]
async fn buy_and_abandon_cannot_add_up_to_more_than_everyone() {
    let app = spawn_app().await;
    app.create("greedy").await;
    let args = LoadArgs {
        buy: Some(0.75),
        abandon: Some(0.5),
        ..args(&app, "greedy", 5, Transport::Sse)
    };
    let err = load::run(&args, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("add up to more than 1"), "{err}");
    assert_untouched(&app, "greedy").await;
    clean_up(&args);
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// At a plain rate the first ETA is `ceil(position / rate)` and the admission comes at that
/// many ticks: within a tick of the truth.
#[tokio::test]
async fn the_first_eta_is_measured_against_the_real_admission_at_a_plain_rate() {
    let app = spawn_app().await;
    // Not the admitter's first tick, which comes off the cadence the ETA counts on.
    app.admitter_ready().await;
    let args = LoadArgs {
        admit_per_second: Some(5),
        eta_min_wait: Duration::from_secs(5),
        ..args(&app, "eta", 60, Transport::Sse)
    };
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        load::run(&args, CancellationToken::new()),
    )
    .await
    .expect("60 fans at 5 a second are admitted in about 12 s")
    .expect("the run completes");
    assert_eq!(report.admitted, 60, "{report}");

    let eta = &report.eta;
    assert_eq!(eta.measured, 60, "{report}");
    assert_eq!(eta.min_wait_seconds, 5.0);
    // Positions 26 to 60 wait over 5 s, give or take the first tick's phase.
    assert!((25..=40).contains(&eta.fans), "{report}");
    let p90_seconds = eta.p90_abs_error_seconds.unwrap();
    assert!(p90_seconds <= 2.0, "p90 {p90_seconds} s off: {report}");
    let (p50, p90) = (eta.p50_abs_error.unwrap(), eta.p90_abs_error.unwrap());
    assert!(p50 <= p90 && p90 <= 0.25, "{report}");
    let (early, late) = (eta.early.unwrap(), eta.late.unwrap());
    assert!((early + late - 1.0).abs() < 0.01, "{report}");
    assert_eq!(
        (eta.ranged, eta.in_range),
        (0, None),
        "a plain rate is certain"
    );
    let text = report.to_string();
    assert!(text.contains("first ETA:    p50 "), "{text}");
    assert!(text.contains("over all 60 admitted"), "{text}");

    // The JSON report carries it as an `eta` object.
    let json = serde_json::to_value(&report).unwrap();
    for field in ["fans", "p50AbsError", "p90AbsError", "early", "late"] {
        assert!(json["eta"][field].is_number(), "{field}: {}", json["eta"]);
    }

    // One row per fan: told ceil(position / 5) with its join, then admitted.
    let csv = std::fs::read_to_string(args.eta_csv_path()).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 61, "{csv}");
    let col = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let mut counted = 0;
    for row in &rows[1..] {
        let position: u64 = row[col("position")].parse().unwrap();
        let told: u64 = row[col("eta_seconds")].parse().unwrap();
        assert_eq!(told, ceil_div(position, 5), "{row:?}");
        let wait: f64 = row[col("wait_seconds")].parse().unwrap();
        assert!((wait - told as f64).abs() <= 2.0, "{row:?}");
        assert_eq!(row[col("choice")], "abandon");
        counted += row[col("counted")].parse::<u64>().unwrap();
    }
    assert_eq!(counted, eta.fans);
    let svg = std::fs::read_to_string(args.eta_plot_path()).unwrap();
    assert!(svg.contains("First ETA vs real wait"), "{svg}");
    assert!(svg.matches("<circle").count() >= 60);
    clean_up(&args);
}

#[tokio::test]
async fn fans_who_stay_follow_until_the_run_stops_and_count_as_admitted() {
    // The default five-minute admission outlasts the run.
    let app = spawn_app().await;
    let args = LoadArgs {
        buy: Some(0.0),
        duration: Duration::from_secs(2),
        ..args(&app, "stay", 10, Transport::Sse)
    };
    let started = Instant::now();
    let report = load::run(&args, CancellationToken::new()).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(report.admitted, 10, "{report}");
    assert_eq!(report.unfinished, 0, "{report}");
    assert_eq!(outcomes(&report), 10, "{report}");
    assert_eq!(
        (report.stayers, report.stayers_expired),
        (10, 0),
        "{report}"
    );
    assert_eq!(report.abandoners + report.buyers, 0, "{report}");
    // They held their streams to the end.
    assert_eq!(report.peak_connections, 10, "{report}");
    let csv = std::fs::read_to_string(&args.csv).unwrap();
    let last: Vec<&str> = csv.lines().last().unwrap().split(',').collect();
    assert_eq!(last[4], "10", "every admission on the timeline: {csv}");
    clean_up(&args);
}

/// `--rate-change`: the operator's `PUT …/config` at its time into the run; a change the run
/// does not last until is reported as not made.
#[tokio::test]
async fn a_rate_change_is_made_mid_run_and_reported() {
    let app = spawn_app().await;
    app.admitter_ready().await;
    let args = LoadArgs {
        admit_per_second: Some(10),
        rate_changes: vec!["1s:5".parse().unwrap(), "29s:7".parse().unwrap()],
        ..args(&app, "halved", 30, Transport::Sse)
    };
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        load::run(&args, CancellationToken::new()),
    )
    .await
    .expect("30 fans at 10 then 5 a second are admitted in a few seconds")
    .expect("the run completes");
    assert_eq!(report.admitted, 30, "{report}");
    assert_eq!(app.stats("halved").await["admitPerSecond"], 5);

    let [made, not_made] = &report.rate_changes[..] else {
        panic!("two changes: {report}");
    };
    assert_eq!((made.rate, made.status), (5, Some(200)), "{report}");
    let at = made.at_seconds.unwrap();
    assert!((1.0..2.0).contains(&at), "{report}");
    assert_eq!((not_made.rate, not_made.status), (7, None), "{report}");
    assert!(
        report
            .to_string()
            .contains("rate changes: 5/s asked at 1 s, set at 1.0"),
        "{report}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["rate_changes"][0]["status"], 200, "{json}");
    assert_eq!(
        json["rate_changes"][1]["at_seconds"],
        serde_json::Value::Null
    );
    clean_up(&args);
}

#[tokio::test]
async fn a_rate_change_needs_the_token_and_a_time_within_the_run() {
    let app = spawn_app().await;
    app.create("changes").await;
    let change = |s: &str| vec![s.parse().unwrap()];
    for (args, says) in [
        (
            LoadArgs {
                admin_token: None,
                open: false,
                admit_per_second: None,
                rate_changes: change("1s:5"),
                ..args(&app, "changes", 5, Transport::Sse)
            },
            "--rate-change needs the operator token",
        ),
        (
            LoadArgs {
                rate_changes: change("30s:5"),
                ..args(&app, "changes", 5, Transport::Sse)
            },
            "--rate-change at 30s comes after the run's --duration of 30s",
        ),
    ] {
        let err = load::run(&args, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
        clean_up(&args);
    }
    assert_untouched(&app, "changes").await;
}
