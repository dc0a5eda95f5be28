//! Signed admission passes (JWTs): carried by admitted tickets (poll and push), verified by
//! the public keys alone, accepted at the gate and at the edge route while their admission is
//! unspent, refused when forged, expired, foreign, spent or signed by a key no longer in
//! force; redeemed once by a checkout outside.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;
use waiting_room::protocol::routes;

use super::{config_with_keys, keyring, now_s, refusal};
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::{show, ticket_id};

both_stores!(
    an_admission_carries_a_pass_that_buys_once,
    bad_passes_are_refused_and_rotated_keys_accepted,
    a_checkout_outside_redeems_an_admission_once,
    a_pass_of_a_show_made_anew_lets_nobody_in,
);

/// The servers' keys: `new` signs, `old` still verifies.
const KEYS: &[(&str, u8)] = &[("new", 3), ("old", 2)];

/// `GET …/{show}/pass` with `pass` in `X-Admission-Ticket`.
async fn check(app: &TestApp, show: &str, pass: &str) -> reqwest::Response {
    app.check_pass(show, pass).await
}

/// A pass's claims, read as any edge reads them (base64url JSON between the dots).
fn claims(pass: &str) -> Value {
    let payload = pass.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// `pass` with its claims changed by `edit` and its signature kept: a forgery.
fn tampered(pass: &str, edit: impl FnOnce(&mut Value)) -> String {
    let parts: Vec<&str> = pass.split('.').collect();
    let mut c = claims(pass);
    edit(&mut c);
    let payload = URL_SAFE_NO_PAD.encode(c.to_string());
    format!("{}.{payload}.{}", parts[0], parts[2])
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
    let c = claims(&pass);
    assert_eq!(
        (c["sub"].as_str(), c["aud"].as_str()),
        (Some(&*ticket), Some("s1"))
    );
    assert_eq!(admission.epoch, c["epoch"].as_u64());
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
    // Spent, the pass no longer passes the edge route either.
    let (status, msg) = refusal(check(&app, "s1", &pass).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("spent"), "{msg}");
    // A pass buys no more than its ticket id: given back, its admission buys nothing and
    // passes the edge route no more.
    let (other, other_pass) = admitted_with_pass(&app, "s1").await;
    assert_eq!(
        check(&app, "s1", &other_pass).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        app.leave("s1", &other).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(refusal(check(&app, "s1", &other_pass).await).await.0, 403);
    let (status, _) = refusal(app.order("s1", "hold-4", Some(&other_pass)).await).await;
    assert_eq!(status, 403);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_pass_checks_total{outcome="valid"} 2"#)
            && metrics.contains(r#"waiting_room_pass_checks_total{outcome="cached"} 1"#)
            && metrics.contains(r#"waiting_room_pass_checks_total{outcome="refused"} 2"#),
        "{metrics}"
    );
    app.stop().await;
}

async fn bad_passes_are_refused_and_rotated_keys_accepted(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    app.open("s1").await;
    let (ticket, pass) = admitted_with_pass(&app, "s1").await;
    let ticket = Uuid::parse_str(&ticket).unwrap();
    let s1 = show("s1");
    let later = now_s() + 300;
    let epoch = claims(&pass)["epoch"].as_u64().unwrap();
    let sign =
        |keys: &[(&str, u8)], exp: u64| keyring(keys).sign_pass(&s1, ticket, epoch, exp, now_s());
    // Signed by the old key, second in PASS_KEYS: accepted, at the edge and at the gate.
    let rotated = sign(&[("old", 2)], later);
    assert_eq!(
        check(&app, "s1", &rotated).await.status(),
        StatusCode::NO_CONTENT
    );
    // A key no longer in force (or never), a key id reused with another secret, an
    // expired pass, one altered by a byte, and garbage: 403 each, saying why.
    let cases = [
        (sign(&[("gone", 4)], later), "does not hold"),
        (sign(&[("new", 9)], later), "signature"),
        (sign(KEYS, now_s() - 1), "ran out"),
        (
            tampered(&pass, |c| c["exp"] = (later + 3600).into()),
            "signature",
        ),
        (
            tampered(&pass, |c| c["sub"] = Uuid::new_v4().to_string().into()),
            "signature",
        ),
        (format!("{pass}x"), "malformed"),
        ("eyJhbGciOiJub25lIn0.e30.".to_owned(), "malformed"),
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

async fn a_checkout_outside_redeems_an_admission_once(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    app.open("s1").await;
    app.open("s2").await;
    let (ticket, pass) = admitted_with_pass(&app, "s1").await;
    // Bad input first: nothing is spent by it.
    assert_eq!(refusal(app.redeem("s1", None).await).await.0, 400);
    assert_eq!(
        refusal(app.redeem("s1", Some("nonsense")).await).await.0,
        400
    );
    assert_eq!(refusal(app.redeem("s1/x", Some(&pass)).await).await.0, 404);
    let (status, msg) = refusal(app.redeem("s2", Some(&pass)).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("another show"), "{msg}");
    let forged = tampered(&pass, |c| c["sub"] = Uuid::new_v4().to_string().into());
    assert_eq!(refusal(app.redeem("s1", Some(&forged)).await).await.0, 403);
    assert_eq!(
        refusal(app.redeem("nobody", Some(&ticket)).await).await.0,
        404
    );
    // A fan still waiting holds no admission to redeem.
    app.set_rate("s2", 0).await;
    let waiting = ticket_id(&app.join_ok("s2").await);
    assert_eq!(refusal(app.redeem("s2", Some(&waiting)).await).await.0, 403);

    // Redeemed once: the admission, with its arrival number.
    let first = app.redeem("s1", Some(&pass)).await;
    assert_eq!(first.status(), StatusCode::OK);
    let body: Value = first.json().await.unwrap();
    assert_eq!(body["ticketId"], ticket);
    assert_eq!(body["showId"], "s1");
    assert_eq!(body["arrival"], 1);
    // Every time after, by pass or ticket id: 409.
    for again in [&pass, &ticket] {
        let (status, msg) = refusal(app.redeem("s1", Some(again)).await).await;
        assert_eq!(status, 409);
        assert!(msg.contains("already spent"), "{msg}");
    }
    // Spent: no order, no pass at the edge route, and the ticket gets no fresh pass.
    assert_eq!(
        refusal(app.order("s1", "h1", Some(&pass)).await).await.0,
        409
    );
    assert_eq!(refusal(check(&app, "s1", &pass).await).await.0, 403);
    let after = app.ticket("s1", &ticket).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    let after: Value = after.json().await.unwrap();
    assert!(after.get("pass").is_none(), "{after}");
    // An admission that ordered is not redeemed either.
    let (other, other_pass) = admitted_with_pass(&app, "s1").await;
    assert_eq!(
        app.order("s1", "h2", Some(&other)).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(
        refusal(app.redeem("s1", Some(&other_pass)).await).await.0,
        409
    );
    // The public record holds the redemption by arrival number only.
    let audit = app.get(&routes::show(routes::AUDIT, "s1")).await;
    let audit: Value = audit.json().await.unwrap();
    let kinds: Vec<&str> = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"redeem") && kinds.contains(&"order"),
        "{audit}"
    );
    assert!(!audit.to_string().contains(&ticket), "{audit}");
    assert!(
        app.metrics()
            .await
            .contains(r#"waiting_room_redemptions_total{show="s1"} 1"#)
    );
    app.stop().await;
}

async fn a_pass_of_a_show_made_anew_lets_nobody_in(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    app.open("s1").await;
    let (_, pass) = admitted_with_pass(&app, "s1").await;
    let old_epoch = claims(&pass)["epoch"].as_u64();
    assert_eq!(app.delete_show("s1").await.status(), StatusCode::NO_CONTENT);
    app.open("s1").await;
    // Its signature still holds, but the show is another incarnation: refused everywhere.
    assert_eq!(refusal(check(&app, "s1", &pass).await).await.0, 403);
    assert_eq!(refusal(app.redeem("s1", Some(&pass)).await).await.0, 403);
    assert_eq!(
        refusal(app.order("s1", "h1", Some(&pass)).await).await.0,
        403
    );
    let (_, fresh) = admitted_with_pass(&app, "s1").await;
    assert_ne!(claims(&fresh)["epoch"].as_u64(), old_epoch);
    app.stop().await;
}

/// `GET /.well-known/jwks.json`: every key in force, the signing one first, as public keys an
/// edge verifies passes with, cacheable for as long as a new key waits before it signs.
#[tokio::test]
async fn the_jwks_verifies_every_pass_and_holds_no_secret() {
    let app = spawn_app_with(Backend::Memory, config_with_keys(KEYS)).await;
    app.open("s1").await;
    let (_, pass) = admitted_with_pass(&app, "s1").await;
    let r = app.get(routes::JWKS).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "public, max-age=300");
    let jwks: jsonwebtoken::jwk::JwkSet = r.json().await.unwrap();
    let kids: Vec<_> = jwks
        .keys
        .iter()
        .map(|k| k.common.key_id.clone().unwrap())
        .collect();
    assert_eq!(kids, ["new", "old"]);
    // The pass verifies with the published key alone, as any JWT library does it.
    let header = jsonwebtoken::decode_header(&pass).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::EdDSA);
    let jwk = jwks.find(header.kid.as_deref().unwrap()).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
    validation.set_audience(&["s1"]);
    validation.set_issuer(&[waiting_room::pass::PASS_ISSUER]);
    let data = jsonwebtoken::decode::<Value>(&pass, &key, &validation).unwrap();
    assert!(data.claims["jti"].is_string() && data.claims["iat"].is_u64());
    // The other key does not verify it, and no secret is published.
    let other = jsonwebtoken::DecodingKey::from_jwk(jwks.find("old").unwrap()).unwrap();
    assert!(jsonwebtoken::decode::<Value>(&pass, &other, &validation).is_err());
    let text = serde_json::to_string(&jwks).unwrap();
    for (_, b) in KEYS {
        assert!(!text.contains(&base64::engine::general_purpose::STANDARD.encode([*b; 32])));
    }
    app.stop().await;
}

/// With the test's redis-server killed, the edge route lets a valid pass through on its
/// signature alone and says so; a forged one is still refused; the order needs the store.
#[tokio::test]
async fn a_pass_is_checked_with_the_store_stopped() {
    let mut app = spawn_app_with(Backend::Redis, config_with_keys(KEYS)).await;
    app.open("s1").await;
    let (_, pass) = admitted_with_pass(&app, "s1").await;
    let before = check(&app, "s1", &pass).await;
    assert_eq!(before.status(), StatusCode::NO_CONTENT);
    assert!(before.headers().get("x-admission-checked").is_none());
    app.redis.as_mut().unwrap().server_mut().stop();
    assert!(app.get(routes::READYZ).await.status().is_server_error());
    let during = check(&app, "s1", &pass).await;
    assert_eq!(during.status(), StatusCode::NO_CONTENT);
    assert_eq!(during.headers()["x-admission-checked"], "signature");
    let forged =
        keyring(&[("new", 9)]).sign_pass(&show("s1"), Uuid::new_v4(), 1, now_s() + 60, now_s());
    assert_eq!(refusal(check(&app, "s1", &forged).await).await.0, 403);
    let (status, _) = refusal(app.order("s1", "hold-1", Some(&pass)).await).await;
    assert_eq!(status, 503);
    let (status, _) = refusal(app.redeem("s1", Some(&pass)).await).await;
    assert_eq!(status, 503);
    assert!(
        app.metrics()
            .await
            .contains(r#"waiting_room_pass_checks_total{outcome="unverified"} 1"#)
    );
    app.stop().await;
}
