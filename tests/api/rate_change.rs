//! A rate change announced ahead: every ETA counts with it from the moment it is announced,
//! and it takes effect at its time by itself.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::ticket_id;

both_stores!(an_announced_rate_change_counts_in_every_eta_and_comes_by_itself);

/// `secs` from now as RFC 3339.
fn in_secs(secs: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs)).to_string()
}

async fn an_announced_rate_change_counts_in_every_eta_and_comes_by_itself(backend: Backend) {
    let app = spawn_app_with(backend, config(10, Duration::from_secs(300))).await;
    app.configure("tour", json!({"admitPerSecond": 10})).await;
    let tickets = app.join_many("tour", 200).await;
    let last = tickets.last().unwrap();
    let mut live = app.events("tour", last).await;
    let first = live.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.data["etaSeconds"], 20, "{:?}", first.data);

    // Halved in 30 s: the first 300 places at 10 a second would take 30 s, so the fan at 200
    // is not touched; announce it in 10 s instead and it is.
    let r = app
        .put_config(
            "tour",
            &json!({"rateChangeAt": in_secs(10), "rateChangeTo": 5}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    // Pushed at once: 10 s at 10 a second, then 100 places at 5: 30 s (29–30 as the clock
    // runs), where the plain rate said 20.
    let pushed = live.next(Duration::from_secs(2)).await.unwrap();
    let eta = pushed.data["etaSeconds"].as_u64().unwrap();
    assert!((29..=30).contains(&eta), "{:?}", pushed.data);
    let polled = app.ticket_json("tour", last).await;
    assert_eq!(polled["etaSeconds"], pushed.data["etaSeconds"], "{polled}");
    // Fans ahead of the change are not touched.
    let early = app.ticket_json("tour", &tickets[49]).await;
    assert_eq!(early["etaSeconds"], 5, "{early}");

    // Withdrawn: the plain rate again.
    let r = app.put_config("tour", &json!({"rateChangeAt": ""})).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(app.ticket_json("tour", last).await["etaSeconds"], 20);

    // Announced for 1 s from now: it comes by itself at the first tick from then.
    app.put_config(
        "tour",
        &json!({"rateChangeAt": in_secs(1), "rateChangeTo": 3}),
    )
    .await;
    app.open("tour").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let stats = app.stats("tour").await;
    assert_eq!(stats["admitPerSecond"], 3, "{stats}");
    let t = app
        .ticket_json("tour", &ticket_id(&app.join_ok("tour").await))
        .await;
    assert!(t.get("etaSeconds").is_some(), "{t}");

    // Half a change, or one in the past, is refused.
    for (body, why) in [
        (json!({"rateChangeAt": in_secs(5)}), "go together"),
        (json!({"rateChangeTo": 5}), "go together"),
        (
            json!({"rateChangeAt": "2020-01-01T00:00:00Z", "rateChangeTo": 5}),
            "future",
        ),
        (
            json!({"rateChangeAt": in_secs(5), "rateChangeTo": 0}),
            "rateChangeTo",
        ),
    ] {
        let r = app.put_config("tour", &body).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{body}");
        let text = r.text().await.unwrap();
        assert!(text.contains(why), "{text}");
    }
}
