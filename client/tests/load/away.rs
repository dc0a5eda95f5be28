//! `load --away`: a share of the fans step away while waiting (their connection closed) and
//! come back, against a show whose presence rules (docs/presence.md) keep an away fan's
//! place for `awayHoldSeconds` and release it after.
//!
//! Fans ahead are held present by the test's own streams, so the run's fans' turns come only
//! ticks after the show opens: each steps away (a second after its join) before its turn.

use std::time::Duration;

use serde_json::json;
use waiting_room_client::follow::Transport;
use waiting_room_client::load::LoadArgs;

use super::{args, clean_up, outcomes, run_within_30s};
use crate::helpers::*;
use crate::support::sse::SseReader;

/// An open show of `settings` with `ahead` fans in it, each held present by a stream of the
/// test's (kept open while the streams are).
async fn open_with_fans_ahead(
    app: &Api,
    name: &str,
    settings: serde_json::Value,
    ahead: usize,
) -> Vec<SseReader> {
    app.configure(name, settings).await;
    let mut streams = Vec::new();
    for ticket in app.join_many(name, ahead).await {
        streams.push(app.events(name, &ticket).await);
    }
    app.open(name).await;
    streams
}

/// Every fan steps away for 3 s, well inside a hold of a minute: each comes back, follows
/// again and is admitted after coming back.
#[tokio::test]
async fn fans_back_within_the_hold_are_admitted_after_coming_back() {
    let app = spawn_app().await;
    let show_name = "load-away-back";
    let settings = json!({"admitPerSecond": 1, "presenceGraceSeconds": 1, "awayHoldSeconds": 60});
    let _ahead = open_with_fans_ahead(&app, show_name, settings, 5).await;
    let args = LoadArgs {
        open: false,
        admit_per_second: None,
        away: Some(1.0),
        away_after: Duration::from_secs(1),
        away_for: Duration::from_secs(3),
        ..args(&app, show_name, 3, Transport::Sse)
    };
    let report = run_within_30s(&args, "three fans are admitted well within 30 s").await;
    clean_up(&args);
    assert_eq!((report.stepped_away, report.came_back), (3, 3), "{report}");
    assert_eq!(report.admitted, 3, "{report}");
    assert_eq!(report.admitted_after_return, 3, "{report}");
    assert_eq!(report.released, 0, "{report}");
    assert_eq!(outcomes(&report), 3, "{report}");
    // Each fan's stream closed as it stepped away, without counting as an error.
    assert_eq!(report.stream_errors, 0, "{report}");
    assert_eq!(report.streams_opened, 6, "{report}");
    assert!(
        report.to_string().contains("3 admitted after coming back"),
        "{report}"
    );
}

/// Polling fans away 6 s from a show that holds a place 2 s: each place is released while
/// its fan is away, and the fan's first poll on coming back answers 410 `EXPIRED`, the end.
#[tokio::test]
async fn polling_fans_away_longer_than_the_hold_are_counted_released() {
    let app = spawn_app().await;
    let show_name = "load-away-released";
    let settings = json!({"admitPerSecond": 1, "presenceGraceSeconds": 1, "awayHoldSeconds": 2});
    // Their turns would come twenty ticks after the opening: long after the hold.
    let _ahead = open_with_fans_ahead(&app, show_name, settings, 20).await;
    let args = LoadArgs {
        open: false,
        admit_per_second: None,
        poll_interval: Duration::from_millis(500),
        away: Some(1.0),
        away_after: Duration::from_secs(1),
        away_for: Duration::from_secs(6),
        ..args(&app, show_name, 3, Transport::Poll)
    };
    let report = run_within_30s(&args, "three fans are released well within 30 s").await;
    clean_up(&args);
    assert_eq!(
        (report.stepped_away, report.came_back, report.released),
        (3, 3, 3),
        "{report}"
    );
    assert_eq!(
        (report.admitted, report.admitted_after_return),
        (0, 0),
        "{report}"
    );
    assert_eq!(outcomes(&report), 3, "{report}");
    // 410 is the end of the ticket, not a failure to retry.
    assert_eq!(report.stream_errors, 0, "{report}");
    assert_eq!(report.streams_opened, 6, "{report}");
}
