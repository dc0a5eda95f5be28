//! Honest ETA: the pace every ETA uses is the outflow really happening,
//! every tick is published (one that admits nobody too), and with a cap an admission nobody
//! takes up goes to the next fan, through HTTP on the embedded store and on real Redis.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use waiting_room::config::Config;

use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::sse::{SseEvent, SseReader};
use crate::support::ticket_id;

both_stores!(
    a_tick_that_admits_nobody_is_pushed_and_says_the_queue_is_full,
    an_admission_nobody_takes_up_goes_to_the_next_fan,
    the_pace_follows_the_checkout_down_and_slowly_back_up,
);

async fn a_tick_that_admits_nobody_is_pushed_and_says_the_queue_is_full(backend: Backend) {
    let app = spawn_app_with(backend, config(4, Duration::from_secs(60))).await;
    app.create("f").await;
    app.configure(
        "f",
        json!({"maxActiveBuyers": 2, "arrivalWindowSeconds": 0}),
    )
    .await;
    let tickets = app.join_many("f", 10).await;
    let last = tickets.last().unwrap().clone();
    let mut fan = app.events("f", &last).await;
    let first = fan.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.data["paused"], "pending", "not open yet: {first:?}");
    app.open("f").await;
    // The first tick fills the two places; the ones after admit nobody, yet they are pushed:
    // every place is taken, and with no admission ended yet a place is taken to stay taken
    // half the TTL (and half a tick): 2 places free up every 30.5 s, so position 8 waits
    // about two minutes, and some 15 s more since both admissions are fresh (they free their
    // places half a hold later than Little's law takes of a cap in its stride); it is told a
    // range: nothing is known of the buyers yet.
    let full = next_full(&mut fan, 8).await;
    let slow = full.data["etaSeconds"].as_u64().unwrap();
    assert!(
        (125..=150).contains(&slow),
        "8 fans, 2 every 30.5 s: {full:?}"
    );
    assert!(
        full.data["etaMinSeconds"].as_u64().unwrap() < slow,
        "{full:?}"
    );
    assert!(
        full.data["etaMaxSeconds"].as_u64().unwrap() > slow,
        "{full:?}"
    );
    let stats = app.stats("f").await;
    assert_eq!(stats["paused"], "full");
    assert!(stats["outflowPerSecond"].as_f64().unwrap() < 0.1, "{stats}");
    // The two buyers order at once: places turn over fast, and the waiting fan is pushed a
    // much shorter wait as the next fans are let in.
    for (i, t) in tickets[..2].iter().enumerate() {
        let r = app.order("f", &format!("hold-{i}"), Some(t)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let moved = next_full(&mut fan, 6).await;
    let faster = moved.data["etaSeconds"].as_u64().unwrap();
    assert!(
        faster * 2 < slow,
        "measured holds shorten the wait: {slow} → {moved:?}"
    );
    // What is pushed is what a poll says at the same time, a tick allowing.
    app.agreed("f", &last, &mut fan, moved).await;
    app.stop().await;
}

/// The next push at `position` that says every place is taken.
async fn next_full(fan: &mut SseReader, position: u64) -> SseEvent {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    loop {
        let e = fan
            .next(Duration::from_secs(3))
            .await
            .expect("the stream goes on");
        if e.data["position"] == position && e.data["paused"] == "full" {
            return e;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never full at {position}: {e:?}"
        );
    }
}

async fn an_admission_nobody_takes_up_goes_to_the_next_fan(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(120))).await;
    app.create("w").await;
    let stats = app
        .configure(
            "w",
            json!({"maxActiveBuyers": 2, "arrivalWindowSeconds": 10}),
        )
        .await;
    assert_eq!(stats["arrivalWindowSeconds"], 10);
    let tickets = app.join_many("w", 4).await;
    // The first fan follows live; the second never shows up again.
    let mut live = app.events("w", &tickets[0]).await;
    assert_eq!(
        live.next(Duration::from_secs(2)).await.unwrap().event,
        "waiting"
    );
    app.open("w").await;
    loop {
        let e = live.next(Duration::from_secs(3)).await.unwrap();
        if e.event == "admitted" {
            break;
        }
        assert_eq!(e.data["position"], 1, "{e:?}");
    }
    // Nobody polls the second fan: after the window its place goes to the third.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(16);
    loop {
        let stats = app.stats("w").await;
        if stats["releasedUntaken"] == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never released: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(app.ticket_json("w", &tickets[1]).await["status"], "UNKNOWN");
    app.wait_admitted("w", &tickets[2], Duration::from_secs(3))
        .await;
    // The fan following live kept its admission, and may buy.
    assert_eq!(
        app.ticket_json("w", &tickets[0]).await["status"],
        "ADMITTED"
    );
    let order = app.order("w", "hold-1", Some(&tickets[0])).await;
    assert_eq!(order.status(), StatusCode::CREATED);
    // The released fan's stream (had it one) would have ended; its ticket opens nothing.
    let refused = app.order("w", "hold-2", Some(&tickets[1])).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.ticket_json("w", &tickets[3]).await["status"], "WAITING");
    app.stop().await;
}

#[tokio::test]
async fn an_arrival_window_must_hold_several_signs_of_life() {
    let app = spawn_app_with(Backend::Memory, Config::for_tests()).await;
    for bad in [1, 9, 86_401] {
        let r = app
            .put_config("x", &json!({"arrivalWindowSeconds": bad}))
            .await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    app.stop().await;
}

/// A checkout's health endpoint the test controls: healthy or failing.
async fn checkout(healthy: std::sync::Arc<std::sync::atomic::AtomicBool>) -> std::net::SocketAddr {
    use axum::routing::get;
    use std::sync::atomic::Ordering;
    let app = axum::Router::new().route(
        "/health",
        get(move || {
            let healthy = healthy.clone();
            async move {
                if healthy.load(Ordering::SeqCst) {
                    StatusCode::OK
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn the_pace_follows_the_checkout_down_and_slowly_back_up(backend: Backend) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let healthy = std::sync::Arc::new(AtomicBool::new(true));
    let health = checkout(healthy.clone()).await;
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    app.create("p").await;
    let url = format!("http://{health}/health");
    let stats = app
        .configure(
            "p",
            json!({"admitPerSecond": 40, "minAdmitPerSecond": 4, "checkoutHealthUrl": url}),
        )
        .await;
    assert_eq!(stats["effectiveAdmitPerSecond"], 40);
    // Plenty of fans, so the queue never runs dry; one of them follows live.
    app.join_many("p", 400).await;
    let last = ticket_id(&app.join_ok("p").await);
    let mut fan = app.events("p", &last).await;
    fan.next(Duration::from_secs(2)).await.unwrap();
    app.open("p").await;
    // The checkout struggles: the rate in force halves each tick down to the floor.
    healthy.store(false, Ordering::SeqCst);
    let low = app
        .stats_until("p", Duration::from_secs(6), |s| {
            s["effectiveAdmitPerSecond"] == 4
        })
        .await;
    assert_eq!(low["admitPerSecond"], 40, "the operator's rate is kept");
    // The fan was pushed the slower pace: a longer wait than at 40 a second.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let e = fan
            .next(Duration::from_secs(3))
            .await
            .expect("pushed while the pace fell");
        let position = e.data["position"].as_u64().expect("still waiting");
        if e.data["etaSeconds"].as_u64().unwrap() > 2 * position.div_ceil(40) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slower pace was not pushed"
        );
    }
    // Healthy again: back up by a tenth of the rate a tick, not at once.
    healthy.store(true, Ordering::SeqCst);
    let mut climb: Vec<u64> = vec![4];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while climb.last() != Some(&40) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never recovered: {climb:?}"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
        let rate = app.stats("p").await["effectiveAdmitPerSecond"]
            .as_u64()
            .unwrap();
        if climb.last() != Some(&rate) {
            climb.push(rate);
        }
    }
    assert!(
        climb.windows(2).all(|w| w[1] > w[0] && w[1] - w[0] <= 4),
        "{climb:?}"
    );
    // Clearing the URL stops following: the rate in force is the configured rate.
    app.configure("p", json!({"checkoutHealthUrl": ""})).await;
    healthy.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(app.stats("p").await["effectiveAdmitPerSecond"], 40);
    app.stop().await;
}
