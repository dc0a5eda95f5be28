//! `simulate` (a sale played with no server) and `rehearse` (the same curve against a real
//! server, its report beside the prediction).

use std::time::Duration;

use clap::Parser;
use waiting_room::model::ShowSettings;
use waiting_room_client::rehearse::{self, RehearseArgs};
use waiting_room_client::simulate::curve::Curve;
use waiting_room_client::simulate::{self, Behaviour, Plan};

use crate::helpers::*;

/// `rehearse`'s flags, as the command line gives them.
#[derive(Parser)]
struct Rehearse {
    #[command(flatten)]
    args: RehearseArgs,
}

fn plan(curve: &str, rate: u32, stock: Option<u64>) -> Plan {
    Plan {
        curve: Curve::shape(curve).unwrap(),
        settings: ShowSettings {
            admit_per_second: Some(rate),
            stock,
            ..ShowSettings::default()
        },
        ttl: Duration::from_secs(60),
        behaviour: Behaviour {
            buy: 0.5,
            buy_after: Duration::from_secs(5),
            leave: 0.0,
            patience: Duration::from_secs(60),
            away: 0.0,
        },
        seed: 7,
        until: None,
    }
}

#[test]
fn a_simulated_sale_admits_at_the_rate_in_order_and_every_fan_waits_its_turn() {
    // 1,000 fans in 10 s, 50 let in a second: the last in after about 20 s.
    let report = simulate::run(plan("flat:1000:10", 50, None)).unwrap();
    let f = &report.figures;
    assert_eq!(f.arrivals, 1000);
    assert_eq!(f.admitted, 1000);
    assert_eq!(f.queued, 0);
    assert!((f.admitted_per_second - 50.0).abs() < 0.5, "{f:?}");
    // Every second of admission let in exactly the rate, but the last.
    let admitting: Vec<u64> = report
        .seconds
        .iter()
        .map(|s| s.admitted)
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(admitting.len(), 20, "{admitting:?}");
    assert!(admitting.iter().all(|&n| n == 50), "{admitting:?}");
    // Arrivals outrun admission by 50 a second for 10 s: the queue peaks at 500, and the
    // fan who waits longest waits about 10 s.
    let peak = report.seconds.iter().map(|s| s.queued).max().unwrap();
    assert!((450..=550).contains(&peak), "{peak}");
    assert!(f.wait.max >= 9.0 && f.wait.max <= 11.5, "{:?}", f.wait);
    // Half the admitted buy, give or take chance, and each order lands in a row.
    assert!(f.orders > 400 && f.orders < 600, "{}", f.orders);
    assert_eq!(
        report.seconds.iter().map(|s| s.orders).sum::<u64>(),
        f.orders
    );
    assert!(report.fairness.verified, "{:?}", report.fairness);
    assert_eq!(report.fairness.inversions, Some(0));
    // The ETA a steady queue tells is the wait it gets.
    assert!(f.eta.compared > 10, "{:?}", f.eta);
    assert!((f.eta.median_ratio - 1.0).abs() <= 0.1, "{:?}", f.eta);
}

#[test]
fn a_stock_ends_the_sale_and_tells_the_rest_they_may_not_get_a_seat() {
    let report = simulate::run(plan("spike:2000:10", 100, Some(300))).unwrap();
    let f = &report.figures;
    assert_eq!(f.orders, 300, "{f:?}");
    assert_eq!(f.stock_left, Some(0));
    assert!(f.queued > 1000, "{f:?}");
    // 100 let in a tick hold all 300 seats by the third tick, so none is let in after until
    // unbought admissions run out (60 s): at the tenth tick all 2,000 have come and 1,700 wait.
    let tenth = &report.seconds[9];
    assert_eq!((tenth.admitted, tenth.queued), (0, 1700), "{tenth:?}");
    let peak = report.seconds.iter().map(|s| s.queued).max().unwrap();
    assert_eq!(peak, 1700);
    assert!(f.most_told_no_seat >= peak - 300, "{f:?}");
}

#[test]
fn the_same_seed_plays_the_same_sale() {
    // Half the fans give up within 20 s, a fifth are away: every choice is the seed's.
    let sale = |seed: u64| {
        let mut p = plan("spike:500:5", 20, None);
        p.behaviour.leave = 0.5;
        p.behaviour.patience = Duration::from_secs(20);
        p.behaviour.away = 0.2;
        p.seed = seed;
        let f = simulate::run(p).unwrap().figures;
        (f.admitted, f.orders, f.wait)
    };
    let a = sale(7);
    assert_eq!(a, sale(7));
    assert_ne!(a, sale(8));
    assert!(a.0 < 500, "some gave up: {a:?}");
}

#[tokio::test]
async fn simulate_writes_its_report_and_refuses_a_bad_curve_with_its_line() {
    let dir = std::env::temp_dir().join(format!("simulate-{}", std::process::id()));
    let curve = dir.join("curve.csv");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&curve, "second,arrivals\n0,100\n2,50\n").unwrap();
    let out = dir.join("out");
    let (code, text) = client(
        "simulate",
        &[
            "--curve",
            curve.to_str().unwrap(),
            "--rate",
            "30",
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("simulated 150 fans"), "{text}");
    for file in ["report.json", "report.csv", "report.html", "report.css"] {
        assert!(out.join(file).exists(), "{file}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"href="report.css""#) && html.contains("plot-admissions"));
    // A refusal exits 1 (an error, not a panic's 101) and names the problem.
    std::fs::write(&curve, "0,100\n0,50\n").unwrap();
    let (code, text) = client("simulate", &["--curve", curve.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("line 2: seconds must ascend"), "{text}");
    let (code, text) = client("simulate", &["--shape", "spike:0:60"]).await;
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("spike:FANS:SECONDS"), "{text}");
    // A bad flag is clap's usage error: 2.
    let (code, text) = client("simulate", &["--shape", "flat:10:1", "--buy", "2"]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("'2' is not a fraction from 0 to 1"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Settings the simulated store cannot play (its joins would fail mid-run) are refused
/// before the sale, by name; so is a settings file too long to be one.
#[tokio::test]
async fn simulate_refuses_settings_it_cannot_play() {
    let dir = std::env::temp_dir().join(format!("simulate-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let settings = dir.join("settings.json");
    for (json, name) in [
        (r#"{"joinChallengeBits": 8}"#, "joinChallengeBits"),
        (r#"{"codesOnly": true}"#, "codesOnly"),
        (r#"{"maxQueueLength": 100}"#, "maxQueueLength"),
    ] {
        std::fs::write(&settings, json).unwrap();
        let (code, text) = client(
            "simulate",
            &[
                "--shape",
                "flat:10:1",
                "--settings",
                settings.to_str().unwrap(),
            ],
        )
        .await;
        assert_eq!(code, 1, "{json}: {text}");
        assert!(
            text.contains("simulate plays the general queue only") && text.contains(name),
            "{json}: {text}"
        );
    }
    // Settings that are played run.
    std::fs::write(&settings, r#"{"joinChallengeBits": 0, "codesOnly": false}"#).unwrap();
    let args = [
        "--shape",
        "flat:10:1",
        "--settings",
        settings.to_str().unwrap(),
    ];
    let (code, text) = client("simulate", &args).await;
    assert_eq!(code, 0, "{text}");
    // A file past a MiB is not read whole.
    std::fs::write(&settings, vec![b' '; (1 << 20) + 1]).unwrap();
    let (code, text) = client("simulate", &args).await;
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("settings.json: longer than a show's settings may be"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The rehearsal against a server in-process: its admissions a second and waits are the
/// prediction's. Fans join by the wall clock, so a slow machine may let a fan in a tick
/// later than planned: waits are compared within a tenth or two seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rehearsal_does_what_the_simulation_predicted() {
    let app = spawn_app().await;
    let url = app.base();
    let args = Rehearse::parse_from([
        "rehearse",
        "--url",
        &url,
        "--admin-token",
        TOKEN,
        "--show",
        "rehearsal-test",
        "--shape",
        "spike:300:5",
        "--rate",
        "30",
        "--buy",
        "0.5",
        "--buy-after",
        "1s",
        "--linger",
        "60s",
    ])
    .args;
    let r = rehearse::run(&args).await.unwrap();
    let (p, real) = (&r.predicted.figures, &r.rehearsed.figures);
    assert_eq!((r.joined, r.join_failed), (300, 0));
    assert_eq!((p.arrivals, real.arrivals), (300, 300));
    assert_eq!((p.admitted, real.admitted), (300, 300));
    let near = |a: f64, b: f64| (a - b).abs() <= (a.abs() * 0.1).max(2.0);
    assert!(
        near(p.admitted_per_second, real.admitted_per_second),
        "{p:?} {real:?}"
    );
    for (a, b) in [
        (p.wait.p50, real.wait.p50),
        (p.wait.p90, real.wait.p90),
        (p.wait.max, real.wait.max),
    ] {
        assert!(
            near(a, b),
            "predicted {:?}, rehearsed {:?}",
            p.wait,
            real.wait
        );
    }
    assert!(real.orders > 0 && real.orders <= 300);
    assert!(r.rehearsed.fairness.verified);
    // The staging show exists now: a second rehearsal refuses it unless asked to replace it.
    let again = rehearse::run(&args).await;
    let e = again.err().expect("the show exists").to_string();
    assert!(e.contains("--replace"), "{e}");
    app.stop().await;
}
