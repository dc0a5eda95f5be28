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
    // Open, so that waits are told (a show nobody opened tells none), with a queue long
    // enough that the fans followed here wait minutes: positions fall 10 a second, so each
    // ETA is checked against the position told with it.
    let tickets = app.join_many("tour", 2000).await;
    app.open("tour").await;
    let last = tickets.last().unwrap();
    let mut live = app.events("tour", last).await;
    let first = live.next(Duration::from_secs(5)).await.unwrap();
    let plain = |view: &serde_json::Value| {
        let position = view["position"].as_u64().expect("waiting, with a place");
        position.div_ceil(10)
    };
    assert_eq!(
        first.data["etaSeconds"],
        plain(&first.data),
        "{:?}",
        first.data
    );

    // Halved in 10 s: the places before it at 10 a second, the rest at 5 (up to 10 whole
    // seconds before it, fewer as the clock runs on).
    let changed = |view: &serde_json::Value| {
        let position = view["position"].as_u64().expect("waiting, with a place");
        (5..=10)
            .map(|before: u64| before + (position - 10 * before).div_ceil(5))
            .collect::<Vec<_>>()
    };
    let r = app
        .put_config(
            "tour",
            &json!({"rateChangeAt": in_secs(10), "rateChangeTo": 5}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    // Pushed at once (a tick's push may come first): far longer than the plain rate said.
    let pushed = loop {
        let e = live.next(Duration::from_secs(5)).await.unwrap();
        if e.data["etaSeconds"].as_u64() != Some(plain(&e.data)) {
            break e;
        }
    };
    let eta = pushed.data["etaSeconds"].as_u64().unwrap();
    assert!(changed(&pushed.data).contains(&eta), "{:?}", pushed.data);
    let polled = app.ticket_json("tour", last).await;
    assert!(
        changed(&polled).contains(&polled["etaSeconds"].as_u64().unwrap()),
        "{polled}"
    );
    // Fans let in before the change are not touched: one 80 places from the front (at
    // most, and the queue moves 10 a second) waits as before.
    let early = app.ticket_json("tour", &tickets[79]).await;
    assert_eq!(early["status"], "WAITING", "{early}");
    assert_eq!(early["etaSeconds"], plain(&early), "{early}");

    // Withdrawn: the plain rate again.
    let r = app.put_config("tour", &json!({"rateChangeAt": ""})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let polled = app.ticket_json("tour", last).await;
    assert_eq!(polled["etaSeconds"], plain(&polled), "{polled}");

    // Announced for 1 s from now: it comes by itself at the first tick from then.
    app.put_config(
        "tour",
        &json!({"rateChangeAt": in_secs(1), "rateChangeTo": 3}),
    )
    .await;
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    let stats = loop {
        let stats = app.stats("tour").await;
        if stats["admitPerSecond"] == 3 {
            break stats;
        }
        assert!(tokio::time::Instant::now() < until, "{stats}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The show's own rate from then on, as its settings say (a schedule's events lay
    // themselves over it); the change is done.
    assert_eq!(stats["settings"]["admitPerSecond"], 3, "{stats}");
    assert!(stats["settings"].get("rateChangeAt").is_none(), "{stats}");
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
