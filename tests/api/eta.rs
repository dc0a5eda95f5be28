//! Honest ETA (issue "Honest ETA…"): the pace every ETA uses is the outflow really happening,
//! every tick is published (one that admits nobody too), and with a cap an admission nobody
//! takes up goes to the next fan, through HTTP on the embedded store and on real Redis.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::config::Config;

use crate::helpers::{
    Backend, SseEvent, SseReader, TOKEN, TestApp, events_path, spawn_app_with, ticket_id,
};

macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $( #[tokio::test] async fn $name() { super::$name(crate::helpers::Backend::Memory).await } )*
        }
        mod redis {
            $( #[tokio::test] async fn $name() { super::$name(crate::helpers::Backend::Redis).await } )*
        }
    };
}

both_stores!(
    a_tick_that_admits_nobody_is_pushed_and_says_the_queue_is_full,
    an_admission_nobody_takes_up_goes_to_the_next_fan,
    the_pace_follows_the_checkout_down_and_slowly_back_up,
);

fn config(rate: u32, ttl: Duration) -> Config {
    Config {
        admit_per_second: rate,
        admission_ttl: ttl,
        ..Config::for_tests()
    }
}

async fn settings(app: &TestApp, show: &str, body: Value) -> Value {
    let r = app
        .client
        .put(app.url(&format!("/orders/waiting-room/{show}/config")))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn a_tick_that_admits_nobody_is_pushed_and_says_the_queue_is_full(backend: Backend) {
    let app = spawn_app_with(backend, config(4, Duration::from_secs(60))).await;
    app.create("f").await;
    settings(
        &app,
        "f",
        json!({"maxActiveBuyers": 2, "arrivalWindowSeconds": 0}),
    )
    .await;
    let mut tickets = Vec::new();
    for _ in 0..10 {
        tickets.push(ticket_id(&app.join_ok("f").await));
    }
    let last = tickets.last().unwrap().clone();
    let mut fan = SseReader::connect(&app.client, &app.url(&events_path("f", &last)), None).await;
    let first = fan.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.data["paused"], "closed", "not open yet: {first:?}");
    app.open("f").await;
    // The first tick fills the two places; the ones after admit nobody, yet they are pushed:
    // the queue is full, and the ETA grows as the measured pace falls.
    let mut seen: Vec<SseEvent> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    while tokio::time::Instant::now() < deadline {
        let e = fan
            .next(Duration::from_secs(3))
            .await
            .expect("the stream goes on");
        seen.push(e);
        let etas: Vec<u64> = seen
            .iter()
            .filter(|e| e.data["position"] == 8 && e.data["paused"] == "full")
            .map(|e| e.data["etaSeconds"].as_u64().unwrap())
            .collect();
        if etas.len() >= 2 && etas.last() > etas.first() {
            break;
        }
    }
    let at_eight: Vec<&SseEvent> = seen.iter().filter(|e| e.data["position"] == 8).collect();
    assert!(
        at_eight.len() >= 2,
        "ticks without admissions were pushed: {seen:?}"
    );
    let etas: Vec<u64> = at_eight
        .iter()
        .map(|e| e.data["etaSeconds"].as_u64().unwrap())
        .collect();
    assert!(
        etas.windows(2).all(|w| w[1] >= w[0]) && etas.last() > etas.first(),
        "the ETA follows the pace: {etas:?}"
    );
    assert!(
        at_eight.iter().any(|e| e.data["paused"] == "full"),
        "{seen:?}"
    );
    // What is pushed is what a poll says at the same time.
    let polled: Value = app.ticket_json("f", &last).await;
    let pushed = fan.drain(Duration::from_millis(300)).await;
    let latest = pushed
        .last()
        .map_or(&seen.last().unwrap().data, |e| &e.data);
    if latest["etaSeconds"] == polled["etaSeconds"] {
        assert_eq!(*latest, polled);
    }
    let stats = app.stats("f").await;
    assert_eq!(stats["paused"], "full");
    assert!(stats["outflowPerSecond"].as_f64().unwrap() < 4.0, "{stats}");
    app.stop().await;
}

async fn an_admission_nobody_takes_up_goes_to_the_next_fan(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(120))).await;
    app.create("w").await;
    let stats = settings(
        &app,
        "w",
        json!({"maxActiveBuyers": 2, "arrivalWindowSeconds": 10}),
    )
    .await;
    assert_eq!(stats["arrivalWindowSeconds"], 10);
    let mut tickets = Vec::new();
    for _ in 0..4 {
        tickets.push(ticket_id(&app.join_ok("w").await));
    }
    // The first fan follows live; the second never shows up again.
    let mut live =
        SseReader::connect(&app.client, &app.url(&events_path("w", &tickets[0])), None).await;
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
            .client
            .put(app.url("/orders/waiting-room/x/config"))
            .bearer_auth(TOKEN)
            .json(&json!({"arrivalWindowSeconds": bad}))
            .send()
            .await
            .unwrap();
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

/// Polls the show's figures until `done` holds, or panics after `within`.
async fn stats_until(
    app: &TestApp,
    show: &str,
    within: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let stats = app.stats(show).await;
        if done(&stats) {
            return stats;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not in {within:?}: {stats}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn the_pace_follows_the_checkout_down_and_slowly_back_up(backend: Backend) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let healthy = std::sync::Arc::new(AtomicBool::new(true));
    let health = checkout(healthy.clone()).await;
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    app.create("p").await;
    let url = format!("http://{health}/health");
    let stats = settings(
        &app,
        "p",
        json!({"admitPerSecond": 40, "minAdmitPerSecond": 4, "checkoutHealthUrl": url}),
    )
    .await;
    assert_eq!(stats["effectiveAdmitPerSecond"], 40);
    // Plenty of fans, so the queue never runs dry; one of them follows live.
    for _ in 0..400 {
        app.join_ok("p").await;
    }
    let last = ticket_id(&app.join_ok("p").await);
    let mut fan = SseReader::connect(&app.client, &app.url(&events_path("p", &last)), None).await;
    fan.next(Duration::from_secs(2)).await.unwrap();
    app.open("p").await;
    // The checkout struggles: the rate in force halves each tick down to the floor.
    healthy.store(false, Ordering::SeqCst);
    let low = stats_until(&app, "p", Duration::from_secs(6), |s| {
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
    settings(&app, "p", json!({"checkoutHealthUrl": ""})).await;
    healthy.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(app.stats("p").await["effectiveAdmitPerSecond"], 40);
    app.stop().await;
}
