//! What admitted fans do (buy, abandon, stay), and what they were told before: the first
//! ETA against the real admission, and the ETAs after a rate change mid-run.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use waiting_room::config::Config;
use waiting_room_client::follow::Transport;
use waiting_room_client::load::{self, LoadArgs};

use super::{args, clean_up, outcomes, run_within_30s};
use crate::helpers::*;

async fn admitted_fans_choose(transport: Transport) {
    let app = spawn_app_configured(Config {
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
    let report = run_within_30s(&args, "the run ends once every stayer's admission expired").await;

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
    wait_for_stats(&app, &show_name, Duration::from_secs(5), |s| {
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

/// Polling stayers learn their admission ran out from the 404 UNKNOWN that follows it.
#[tokio::test]
async fn admitted_fans_buy_abandon_or_stay_while_polling() {
    admitted_fans_choose(Transport::Poll).await;
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
    admitter_ready(&app).await;
    let args = LoadArgs {
        admit_per_second: Some(5),
        eta_min_wait: Duration::from_secs(5),
        ..args(&app, "eta", 60, Transport::Sse)
    };
    let report = run_within_30s(&args, "60 fans at 5 a second are admitted in about 12 s").await;
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
    admitter_ready(&app).await;
    let args = LoadArgs {
        admit_per_second: Some(10),
        rate_changes: vec!["1s:5".parse().unwrap(), "29s:7".parse().unwrap()],
        ..args(&app, "halved", 30, Transport::Sse)
    };
    let report = run_within_30s(
        &args,
        "30 fans at 10 then 5 a second are admitted in a few seconds",
    )
    .await;
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
