//! The "your turn" call through the server: a waiting fan asks (`POST …/notify`) with its
//! browser's push subscription or for the operator's webhook, and is called `soon` when its
//! turn is near and `admitted` when it is let in — at a push service that verifies VAPID and
//! decrypts with independent libraries, and a webhook receiver that verifies the token with
//! the server's own JWKS. Hostile subscriptions are refused before anything is kept.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::lanes::{joined_with, upload};
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::notify::StandIn;

both_stores!(
    a_waiting_fan_is_called_soon_then_admitted_by_push_and_by_webhook,
    a_subscription_the_show_does_not_allow_is_refused_and_nothing_is_called,
    a_fan_in_a_lane_is_called_soon_by_its_lanes_pace,
);

fn notify_path(show: &str, ticket: &str) -> String {
    format!("/orders/waiting-room/{show}/tickets/{ticket}/notify")
}

async fn ask(
    app: &crate::support::app::TestApp,
    show: &str,
    ticket: &str,
    body: &Value,
) -> StatusCode {
    reqwest::Client::new()
        .post(app.url(&notify_path(show, ticket)))
        .json(body)
        .send()
        .await
        .unwrap()
        .status()
}

/// A webhook receiver that verifies the calls with `app`'s JWKS, and its URL.
async fn webhook(app: &crate::support::app::TestApp) -> (StandIn, String) {
    let jwks: Value = app
        .get("/.well-known/jwks.json")
        .await
        .json()
        .await
        .unwrap();
    let receiver = StandIn::webhook(&jwks);
    let hook = format!("{}/hook", receiver.url);
    (receiver, hook)
}

fn events_of(records: &[Value], ticket: &str, field: &str) -> Vec<String> {
    records
        .iter()
        .filter(|r| r[field]["ticketId"] == ticket)
        .map(|r| r[field]["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn a_waiting_fan_is_called_soon_then_admitted_by_push_and_by_webhook(backend: Backend) {
    let service = StandIn::push_service();
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    let (receiver, hook) = webhook(&app).await;
    let show = "calls";
    app.create(show).await;
    app.configure(
        show,
        json!({"admitPerSecond": 1, "notifyAheadSeconds": 1, "awayHoldSeconds": 0,
               "pushServices": [service.url], "notifyUrl": hook}),
    )
    .await;
    let tickets = app.join_many(show, 4).await;
    let (by_hook, by_push) = (&tickets[2], &tickets[3]);
    assert_eq!(
        ask(&app, show, by_push, &service.hello["subscription"]).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        ask(&app, show, by_hook, &json!({"webhook": true})).await,
        StatusCode::NO_CONTENT
    );
    app.open(show).await;

    // Fan 4, one a second: `soon` once within a second of the head, then `admitted`.
    let pushes = service
        .received_when(|r| events_of(r, by_push, "payload").len() >= 2)
        .await;
    for p in &pushes {
        assert_eq!(p.get("error"), None, "{p:#}");
    }
    assert_eq!(events_of(&pushes, by_push, "payload"), ["soon", "admitted"]);
    let soon = pushes
        .iter()
        .find(|p| p["payload"]["event"] == "soon")
        .unwrap();
    assert!(soon["payload"]["position"].as_u64().unwrap() >= 1);
    let vapid: Value = app.get("/.well-known/vapid").await.json().await.unwrap();
    assert_eq!(
        pushes[0]["k"], vapid["publicKey"],
        "signed with the key pages subscribe with"
    );

    let hooks = receiver
        .received_when(|r| events_of(r, by_hook, "body").len() >= 2)
        .await;
    for h in &hooks {
        assert_eq!(h.get("error"), None, "the JWKS verifies every call: {h:#}");
        assert_eq!(h["claims"]["aud"], hook.as_str());
    }
    assert_eq!(events_of(&hooks, by_hook, "body"), ["soon", "admitted"]);
    // Each at most once: nothing more comes for either.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        events_of(&service.received().await, by_push, "payload").len(),
        2
    );
    assert_eq!(
        events_of(&receiver.received().await, by_hook, "body").len(),
        2
    );
    app.stop().await;
}

async fn a_subscription_the_show_does_not_allow_is_refused_and_nothing_is_called(backend: Backend) {
    let service = StandIn::push_service();
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    let show = "hostile";
    app.create(show).await;
    let ticket = app.join_many(show, 1).await.remove(0);
    let theirs = service.hello["subscription"].clone();
    // The default allow-list names public push services only: a loopback endpoint is refused.
    assert_eq!(
        ask(&app, show, &ticket, &theirs).await,
        StatusCode::BAD_REQUEST
    );
    let mut private = theirs.clone();
    for endpoint in [
        "https://10.0.0.7/push/abc",
        "https://169.254.169.254/latest/meta-data",
        "http://fcm.googleapis.com/fcm/send/x",
        "https://fcm.googleapis.com.evil.example/fcm/send/x",
        "ftp://fcm.googleapis.com/x",
    ] {
        private["endpoint"] = json!(endpoint);
        assert_eq!(
            ask(&app, show, &ticket, &private).await,
            StatusCode::BAD_REQUEST,
            "{endpoint}"
        );
    }
    // Not a subscription at all, too big, or a webhook the show has no URL for.
    assert_eq!(
        ask(&app, show, &ticket, &json!([1, 2])).await,
        StatusCode::BAD_REQUEST
    );
    let big = json!({"endpoint": "https://fcm.googleapis.com/".to_owned() + &"x".repeat(5000)});
    assert_eq!(
        ask(&app, show, &ticket, &big).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    assert_eq!(
        ask(&app, show, &ticket, &json!({"webhook": true})).await,
        StatusCode::CONFLICT
    );
    // A ticket that is not waiting.
    let unknown = uuid::Uuid::new_v4().to_string();
    app.configure(show, json!({"pushServices": [service.url]}))
        .await;
    assert_eq!(
        ask(&app, show, &unknown, &theirs).await,
        StatusCode::NOT_FOUND
    );
    // Allowed now: taken.
    assert_eq!(
        ask(&app, show, &ticket, &theirs).await,
        StatusCode::NO_CONTENT
    );
    app.stop().await;
}

/// A fan in a priority lane (docs/lanes.md) is called `soon` as its lane nears it, though the
/// general queue's head is far behind its arrival number, then `admitted`.
async fn a_fan_in_a_lane_is_called_soon_by_its_lanes_pace(backend: Backend) {
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    let (receiver, hook) = webhook(&app).await;
    let show = "lanecall";
    app.configure(
        show,
        json!({"admitPerSecond": 1, "notifyAheadSeconds": 1, "awayHoldSeconds": 0,
               "notifyUrl": hook, "lanes": [{"name": "vip", "priority": true}]}),
    )
    .await;
    let codes = "VIP-CALL-1,vip\nVIP-CALL-2,vip\nVIP-CALL-3,vip\n".to_owned();
    assert_eq!(upload(&app, show, codes).await.status(), StatusCode::OK);
    app.join_many(show, 3).await;
    let mut vips = Vec::new();
    for i in 1..=3 {
        let t = joined_with(&app, show, &format!("VIP-CALL-{i}")).await;
        vips.push(t["ticketId"].as_str().unwrap().to_owned());
    }
    let last = &vips[2];
    assert_eq!(
        ask(&app, show, last, &json!({"webhook": true})).await,
        StatusCode::NO_CONTENT
    );
    app.open(show).await;
    let hooks = receiver
        .received_when(|r| events_of(r, last, "body").len() >= 2)
        .await;
    assert_eq!(events_of(&hooks, last, "body"), ["soon", "admitted"]);
    let soon = hooks
        .iter()
        .find(|h| h["body"]["ticketId"] == last.as_str() && h["body"]["event"] == "soon")
        .unwrap();
    // Its place in its lane, not among the general queue's arrivals.
    assert!(soon["body"]["position"].as_u64().unwrap() <= 2, "{soon:#}");
    app.stop().await;
}
