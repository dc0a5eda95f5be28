//! Signed admission passes: carried by admitted tickets (poll and push), accepted at the gate
//! and at the edge route without the store, refused when forged, expired, foreign or signed
//! by a key no longer in force.

use std::time::Duration;

use reqwest::StatusCode;
use uuid::Uuid;
use waiting_room::protocol::{ADMISSION_HEADER, routes};

use super::{config_with_keys, keyring, now_s, refusal};
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::{show, ticket_id};

both_stores!(
    an_admission_carries_a_pass_that_buys_once,
    bad_passes_are_refused_and_rotated_keys_accepted,
);

/// The servers' keys: `new` signs, `old` still verifies.
const KEYS: &[(&str, u8)] = &[("new", 3), ("old", 2)];

/// `GET …/{show}/pass` with `pass` in `X-Admission-Ticket`.
async fn check(app: &TestApp, show: &str, pass: &str) -> reqwest::Response {
    app.client
        .get(app.url(&routes::show(routes::PASS_CHECK, show)))
        .header(ADMISSION_HEADER, pass)
        .send()
        .await
        .unwrap()
}

/// Opens `show`, joins one fan, waits for its admission: its ticket id and pass.
async fn admitted_with_pass(app: &TestApp, show: &str) -> (String, String) {
    let id = ticket_id(&app.join_ok(show).await);
    let t = app.wait_admitted(show, &id, Duration::from_secs(3)).await;
    (
        id,
        t["pass"]
            .as_str()
            .expect("an admission carries a pass")
            .to_owned(),
    )
}

async fn an_admission_carries_a_pass_that_buys_once(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    app.open("s1").await;
    app.open("s2").await;
    let waiting = app.join_ok("s1").await;
    assert!(
        waiting.get("pass").is_none(),
        "no pass while waiting: {waiting}"
    );
    let (ticket, pass) = admitted_with_pass(&app, "s1").await;
    // What another service reads from it, with the keys alone.
    let admission = keyring(KEYS).verify_pass(&pass, now_s()).unwrap();
    assert_eq!(admission.show, show("s1"));
    assert_eq!(admission.ticket.to_string(), ticket);
    assert_eq!(admission.kid, "new");
    let left = admission.expires_at - now_s();
    assert!((295..=300).contains(&left), "{left}");
    // Pushed too: the admitted event carries the same kind of pass.
    let mut events = app.events("s1", &ticket).await;
    let admitted = events.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(admitted.event, "admitted");
    let pushed = keyring(KEYS)
        .verify_pass(admitted.data["pass"].as_str().unwrap(), now_s())
        .unwrap();
    assert_eq!(pushed.ticket.to_string(), ticket);

    // The edge route: 204 for its show, 403 for another.
    assert_eq!(
        check(&app, "s1", &pass).await.status(),
        StatusCode::NO_CONTENT
    );
    let (status, msg) = refusal(check(&app, "s2", &pass).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("another show"), "{msg}");
    // The gate: for another show's order, 403; for its own, an order; a second hold, 409.
    let (status, _) = refusal(app.order("s2", "hold-1", Some(&pass)).await).await;
    assert_eq!(status, 403);
    let first = app.order("s1", "hold-1", Some(&pass)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let (status, msg) = refusal(app.order("s1", "hold-2", Some(&pass)).await).await;
    assert_eq!(status, 409);
    assert!(msg.contains("one admission"), "{msg}");
    // The ticket id names the same, spent admission.
    let (status, _) = refusal(app.order("s1", "hold-3", Some(&ticket)).await).await;
    assert_eq!(status, 409);
    // The same request again is the same order.
    assert_eq!(
        app.order("s1", "hold-1", Some(&pass)).await.status(),
        StatusCode::OK
    );
    // A pass buys no more than its ticket id: given back, its admission buys nothing, though
    // an edge still takes the pass until it runs out.
    let (other, other_pass) = admitted_with_pass(&app, "s1").await;
    assert_eq!(
        app.leave("s1", &other).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        check(&app, "s1", &other_pass).await.status(),
        StatusCode::NO_CONTENT
    );
    let (status, _) = refusal(app.order("s1", "hold-4", Some(&other_pass)).await).await;
    assert_eq!(status, 403);
    app.stop().await;
}

async fn bad_passes_are_refused_and_rotated_keys_accepted(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    app.open("s1").await;
    let (ticket, pass) = admitted_with_pass(&app, "s1").await;
    let ticket = Uuid::parse_str(&ticket).unwrap();
    let s1 = show("s1");
    let later = now_s() + 300;
    // Signed by the old key, second in PASS_KEYS: accepted, at the edge and at the gate.
    let rotated = keyring(&[("old", 2)]).sign_pass(&s1, ticket, later);
    assert_eq!(
        check(&app, "s1", &rotated).await.status(),
        StatusCode::NO_CONTENT
    );
    // A key no longer in force (or never), a key id reused with another secret, an
    // expired pass, one altered by a byte, and garbage: 403 each, saying why.
    let cases = [
        (
            keyring(&[("gone", 4)]).sign_pass(&s1, ticket, later),
            "does not hold",
        ),
        (
            keyring(&[("new", 9)]).sign_pass(&s1, ticket, later),
            "signature",
        ),
        (keyring(KEYS).sign_pass(&s1, ticket, now_s() - 1), "ran out"),
        (pass.replacen(":s1:", ":s2:", 1), "signature"),
        (format!("{pass}x"), "signature"),
        ("v1:new:s1:nonsense".to_owned(), "malformed"),
    ];
    for (bad, why) in &cases {
        let (status, msg) = refusal(check(&app, "s1", bad).await).await;
        assert_eq!(status, 403, "{bad}");
        assert!(msg.contains(why), "{bad}: {msg}");
        let (status, _) = refusal(app.order("s1", "hold-9", Some(bad)).await).await;
        assert_eq!(status, 403, "{bad}");
    }
    // The edge route wants a pass: a plain ticket id, or nothing, is 403.
    let (status, _) = refusal(check(&app, "s1", &ticket.to_string()).await).await;
    assert_eq!(status, 403);
    let none = app
        .client
        .get(app.url(&routes::show(routes::PASS_CHECK, "s1")))
        .send()
        .await
        .unwrap();
    assert_eq!(refusal(none).await.0, 403);
    // The old key's pass buys.
    assert_eq!(
        app.order("s1", "hold-1", Some(&rotated)).await.status(),
        StatusCode::CREATED
    );
    app.stop().await;
}

/// The check needs no store: with the test's redis-server killed, a valid pass is still
/// accepted at the edge route and a forged one refused; the order itself needs the store.
#[tokio::test]
async fn a_pass_is_checked_with_the_store_stopped() {
    let mut app = spawn_app_with(Backend::Redis, config_with_keys(KEYS)).await;
    app.open("s1").await;
    let (_, pass) = admitted_with_pass(&app, "s1").await;
    app.redis.as_mut().unwrap().server_mut().stop();
    assert!(app.get(routes::READYZ).await.status().is_server_error());
    assert_eq!(
        check(&app, "s1", &pass).await.status(),
        StatusCode::NO_CONTENT
    );
    let forged = keyring(&[("new", 9)]).sign_pass(&show("s1"), Uuid::new_v4(), now_s() + 60);
    assert_eq!(refusal(check(&app, "s1", &forged).await).await.0, 403);
    let (status, _) = refusal(app.order("s1", "hold-1", Some(&pass)).await).await;
    assert_eq!(status, 503);
    app.stop().await;
}
