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
