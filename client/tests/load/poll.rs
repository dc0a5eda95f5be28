//! `load --transport poll`: the seed's client, asking for its ticket every interval over a
//! connection of its own, measured as the push transports are (admission, positions,
//! staleness), on the embedded store and on Redis.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use waiting_room_client::follow::Transport;
use waiting_room_client::load::{self, LoadArgs};

use super::{args, clean_up, outcomes, run_within_30s};
use crate::helpers::*;
use crate::support::backend::Backend;

const FANS: u64 = 60;

/// Opens the show once every fan joined and a second and a half went by (every fan has heard
/// its ticket while the show stood still); when it opened.
fn open_once_all_joined(app: &Api, show: &'static str) -> tokio::task::JoinHandle<Instant> {
    let app = app.clone();
    tokio::spawn(async move {
        wait_for_stats(&app, show, Duration::from_secs(10), |s| s["joined"] == FANS).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        app.open(show).await;
        Instant::now()
    })
}

/// Sixty fans join a closed show and poll; once all have joined it opens at 20 a second. Each
/// learns new positions and its admission from answers, never from a push.
async fn polling_fans_learn_positions_and_admission(backend: Backend) {
    let app = crate::support::app::spawn_app(backend).await;
    admitter_ready(&app).await;
    let show_name = "polled";
    let args = LoadArgs {
        open: false,
        admit_per_second: Some(20),
        ..args(&app, show_name, FANS, Transport::Poll)
    };
    let opener = open_once_all_joined(&app, show_name);
    let started = Instant::now();
    let report = run_within_30s(&args, "a 60-fan run ends well within its 30 s").await;
    let opened = opener.await.unwrap();
    let elapsed = started.elapsed().as_secs_f64();

    assert_eq!(report.joined, FANS, "{report}");
    assert_eq!(report.admitted, FANS, "{report}");
    assert_eq!(outcomes(&report), FANS, "{report}");
    assert_eq!(report.stream_errors, 0, "{report}");
    // One keep-alive connection per fan, held while it polls.
    assert_eq!(report.streams_opened, FANS, "{report}");
    assert!((1..=FANS).contains(&report.peak_connections), "{report}");
    assert_eq!(report.first_event.count, FANS, "{report}");
    assert_eq!(report.poll_interval_seconds, Some(1.0), "{report}");
    // Nothing is pushed, so nothing is timed from a tick as a push.
    assert_eq!(report.push_latency.count, 0, "{report}");

    // Every fan learned its admission, and those behind the first tick's twenty new
    // positions before it: 60 fans at 20 a second, three ticks.
    assert!(report.positions_learned >= FANS + 20, "{report}");
    assert_eq!(report.staleness.count, report.positions_learned, "{report}");
    // A poll a second learns a change at most a second (and an answer) after its tick.
    assert!(report.staleness.max <= 1_500.0, "{report}");
    // Once a second, not more: each fan asked about once a second while it waited.
    let waited = elapsed - (Instant::now() - opened).as_secs_f64().min(elapsed);
    assert!(report.messages >= FANS * 2, "{report}");
    assert!(
        report.messages as f64 <= FANS as f64 * (waited + 5.0),
        "{} answers for {FANS} fans over about {waited:.1} s: {report}",
        report.messages
    );
    let text = report.to_string();
    assert!(text.contains("over polling"), "{text}");
    assert!(text.contains("staleness:"), "{text}");

    let stats = app.stats(show_name).await;
    assert_eq!(stats["queueLength"], 0, "{stats}");
    clean_up(&args);
}

#[tokio::test]
async fn polling_fans_learn_positions_and_admission_on_the_embedded_store() {
    polling_fans_learn_positions_and_admission(Backend::Memory).await;
}

#[tokio::test]
async fn polling_fans_learn_positions_and_admission_on_redis() {
    polling_fans_learn_positions_and_admission(Backend::Redis).await;
}

/// Pushed fans' staleness is their push latency: the same crowd over SSE learns every change
/// within a fraction of a second of its tick, and the report counts it the same way.
#[tokio::test]
async fn pushed_fans_are_measured_for_staleness_alike() {
    let app = spawn_app().await;
    // The admitter's first tick, on taking its lease, comes off the once-a-second cadence
    // staleness is counted from.
    admitter_ready(&app).await;
    let args = LoadArgs {
        open: false,
        admit_per_second: Some(20),
        ..args(&app, "pushed", FANS, Transport::Sse)
    };
    let opener = open_once_all_joined(&app, "pushed");
    let report = load::run(&args, CancellationToken::new()).await.unwrap();
    opener.await.unwrap();
    assert_eq!(report.admitted, FANS, "{report}");
    assert!(report.positions_learned >= FANS, "{report}");
    assert_eq!(report.staleness.count, report.positions_learned, "{report}");
    assert!(report.staleness.p99 < 500.0, "{report}");
    clean_up(&args);
}
