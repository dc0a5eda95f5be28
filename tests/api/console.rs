//! The console's operator calls over HTTP: the ticket lookup for support, and the live feed's
//! figures beyond `…/stats` (fans live on every instance, the checkout the pace follows, an
//! announced rate change, a scheduled show's draw).

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use crate::support::api::Api;
use crate::support::app::{spawn_app, spawn_app_configured, spawn_app_with};
use crate::support::backend::{Backend, settings, store};
use crate::support::sse::SseReader;
use crate::support::{show, ticket_id, unique_show};

all_stores!(
    support_finds_a_ticket_by_its_id_alone,
    every_instance_report_is_summed_until_it_runs_out,
);

/// Long enough for a loaded machine; every wait below ends as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(20);

async fn lookup(app: &Api, ticket: &str, query: &str) -> reqwest::Response {
    let path = routes::ADMIN_TICKET.replace("{ticket_id}", ticket);
    app.as_operator(Method::GET, &format!("{path}{query}"))
        .send()
        .await
        .unwrap()
}

async fn support_finds_a_ticket_by_its_id_alone(backend: Backend) {
    let app = spawn_app(backend).await;
    let (quiet, busy) = (unique_show("quiet"), unique_show("busy"));
    app.create(&quiet).await;
    app.create(&busy).await;
    app.join_many(&quiet, 2).await;
    let tickets = app.join_many(&busy, 3).await;
    let third = &tickets[2];

    // Found in its show without naming it: where it stands, as its fan is told.
    let res = lookup(&app, third, "").await;
    assert_eq!(res.status(), 200);
    let found: Value = res.json().await.unwrap();
    assert_eq!(found["showId"], busy.as_str());
    assert_eq!(found["phase"], "pending");
    assert_eq!(found["ticket"]["status"], "WAITING");
    assert_eq!(found["ticket"]["position"], 3);
    assert_eq!(found["ticket"]["arrival"], 3);
    assert_eq!(found["ticket"]["ticketId"], third.as_str());

    // Named with its show, the same; named with another show, not there.
    let named: Value = lookup(&app, third, &format!("?show={busy}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(named, found);
    let elsewhere = lookup(&app, third, &format!("?show={quiet}")).await;
    assert_eq!(elsewhere.status(), 404);

    // Admitted: the seconds left to buy, never the pass.
    app.configure(&busy, json!({"admitPerSecond": 10})).await;
    app.open(&busy).await;
    app.wait_admitted(&busy, third, WAIT).await;
    let admitted: Value = lookup(&app, third, "").await.json().await.unwrap();
    assert_eq!(admitted["ticket"]["status"], "ADMITTED");
    assert_eq!(admitted["phase"], "open");
    let left = admitted["ticket"]["expiresInSeconds"].as_u64().unwrap();
    assert!((1..=300).contains(&left), "expires in {left}");
    assert!(admitted["ticket"].get("pass").is_none(), "{admitted}");

    // Left the queue, or never joined: 404 with a sentence; not a UUID: 400.
    let first = &tickets[0];
    app.leave(&busy, first).await;
    let gone = lookup(&app, &uuid::Uuid::new_v4().to_string(), "").await;
    assert_eq!(gone.status(), 404);
    let body: Value = gone.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("no show holds"),
        "{body}"
    );
    assert_eq!(lookup(&app, "not-a-ticket", "").await.status(), 400);
    assert_eq!(lookup(&app, third, "?show=a%20b").await.status(), 400);

    // Operator-only.
    let path = routes::ADMIN_TICKET.replace("{ticket_id}", third);
    let anonymous = app.client.get(app.url(&path)).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);

    // Documented where the other operator calls are, with the shape it answers.
    let doc: Value = app.get(routes::OPENAPI).await.json().await.unwrap();
    let op = &doc["paths"]["/admin/tickets/{ticketId}"]["get"];
    assert_eq!(op["tags"][0], "operator", "{op}");
    assert!(op["responses"]["401"].is_object(), "{op}");
    let schema = &doc["components"]["schemas"]["TicketLookup"];
    for field in ["showId", "phase", "ticket"] {
        assert!(schema["properties"][field].is_object(), "{schema}");
    }
    app.stop().await;
}

/// The operator feed of `app`, naming `shows`.
async fn feed(app: &Api, shows: &[&str]) -> SseReader {
    let path = format!("{}?shows={}", routes::ADMIN_STATS_EVENTS, shows.join(","));
    let res = app.as_operator(Method::GET, &path).send().await.unwrap();
    assert_eq!(res.status(), 200);
    SseReader::from_response(res)
}

/// Reads samples until `show`'s figures satisfy `wanted`, or fails naming `what`.
async fn until(feed: &mut SseReader, show: &str, what: &str, wanted: impl Fn(&Value) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut last = Value::Null;
    while tokio::time::Instant::now() < deadline {
        let Some(event) = feed.next(Duration::from_secs(5)).await else {
            continue;
        };
        let shows = event.data["shows"].as_array().cloned().unwrap_or_default();
        if let Some(figures) = shows.into_iter().find(|s| s["showId"] == show) {
            if wanted(&figures) {
                return;
            }
            last = figures;
        }
    }
    panic!("the feed never showed {what}; last: {last}");
}

#[tokio::test]
async fn fans_live_are_counted_on_every_instance() {
    // Two instances on one Redis: the fan follows on B, the console watches on A.
    let a = spawn_app_with(Backend::Redis, Config::for_tests()).await;
    let url = a.redis.as_ref().unwrap().url();
    let b = spawn_app_configured(Config {
        redis_url: Some(url),
        ..Config::for_tests()
    })
    .await;
    let show = unique_show("everywhere");
    a.create(&show).await;
    let ticket = ticket_id(&b.join_ok(&show).await);
    let mut console = feed(&a, &[&show]).await;
    until(&mut console, &show, "no fan yet", |s| {
        s["fansEverywhere"] == 0
    })
    .await;

    let following = b.events(&show, &ticket).await;
    until(&mut console, &show, "the fan on B, seen from A", |s| {
        s["fansEverywhere"] == 1 && s["connectedFans"] == 0
    })
    .await;

    // B stops: its streams end and its report is withdrawn at once, not when it runs out.
    b.stop().await;
    until(&mut console, &show, "the fan gone with B", |s| {
        s["fansEverywhere"] == 0
    })
    .await;
    drop(following);
    a.stop().await;
}

#[tokio::test]
async fn the_feed_carries_the_settings_and_a_scheduled_shows_draw() {
    // The embedded store: one instance, whose own count is every instance's.
    let app = spawn_app(Backend::Memory).await;
    let show = unique_show("fair");
    let opens_at = jiff::Timestamp::now() + jiff::SignedDuration::from_mins(10);
    app.configure(
        &show,
        json!({
            "opensAt": opens_at.to_string(),
            "drawBeacon": "drand quicknet round 1",
            "checkoutHealthUrl": "http://127.0.0.1:9/health",
            "minAdmitPerSecond": 2,
        }),
    )
    .await;
    let tickets = app.join_many(&show, 3).await;
    let _following = app.events(&show, &tickets[0]).await;
    let mut console = feed(&app, &[&show]).await;
    until(&mut console, &show, "the draw and the settings", |s| {
        let draw = &s["draw"];
        draw["state"] == "scheduled"
            && draw["preQueue"] == 3
            && draw["opensAtMs"] == opens_at.as_millisecond()
            && draw["commitment"].as_str().is_some_and(|c| c.len() == 64)
            && draw["beacon"] == "drand quicknet round 1"
            && s["checkoutHealthUrl"] == "http://127.0.0.1:9/health"
            && s["minAdmitPerSecond"] == 2
            && s["fansEverywhere"] == 1
    })
    .await;

    // An announced rate change reaches the feed; withdrawn, it goes.
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_mins(5);
    app.configure(
        &show,
        json!({"rateChangeAt": at.to_string(), "rateChangeTo": 40}),
    )
    .await;
    until(&mut console, &show, "the announced change", |s| {
        s["rateChange"]["to"] == 40
            && s["rateChange"]["atMs"]
                .as_i64()
                .is_some_and(|ms| (ms - at.as_millisecond()).abs() < 2_000)
    })
    .await;
    app.configure(&show, json!({"rateChangeAt": ""})).await;
    until(&mut console, &show, "no change", |s| {
        s.get("rateChange").is_none()
    })
    .await;
    app.stop().await;
}

async fn every_instance_report_is_summed_until_it_runs_out(backend: Backend) {
    let (store, _redis) = store(backend, settings(5, Duration::from_secs(60))).await;
    let (x, y) = (show("x"), show("y"));
    let long = Duration::from_secs(60);
    store
        .report_fans("a", &[(x.clone(), 2), (y.clone(), 1)], long)
        .await
        .unwrap();
    store
        .report_fans("b", &[(x.clone(), 3)], long)
        .await
        .unwrap();
    let all = store.fans_everywhere().await.unwrap();
    assert_eq!((all[&x], all[&y]), (5, 1));

    // A new report replaces the instance's last one.
    store.report_fans("a", &[], long).await.unwrap();
    let all = store.fans_everywhere().await.unwrap();
    assert_eq!((all.get(&x), all.get(&y)), (Some(&3), None));

    // A report not renewed runs out by itself (an instance that died).
    store
        .report_fans("c", &[(y.clone(), 7)], Duration::from_millis(300))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let all = store.fans_everywhere().await.unwrap();
        assert_eq!(all[&x], 3, "b's report holds");
        if !all.contains_key(&y) {
            break;
        }
        assert_eq!(all[&y], 7);
        assert!(tokio::time::Instant::now() < deadline, "c never ran out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
