//! Bypass rules (docs/bypass.md): a token for monitors, a staff network, links an operator
//! signs. A request a rule matches is admitted at once, counted, audited by kind, under the
//! stock rule; nobody else gets through, guessing is throttled, and a token never rides a URL.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use waiting_room::draw;
use waiting_room::model::{AuditKind, BypassKind};
use waiting_room::protocol::{BYPASS_TOKEN_HEADER, routes};

use crate::draw::audit_of;
use crate::support::api::Api;
use crate::support::app::{config, spawn_app, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::ticket_id;

both_stores!(
    a_token_lets_a_monitor_through_at_once_counted_and_audited,
    a_staff_network_and_a_signed_link_let_staff_through,
    a_bypass_takes_a_seat_and_waits_for_the_opening
);

const TOKEN: &str = "monitor-secret-7f3a";

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `POST …/bypass` with `token` in its header, if any.
async fn bypass(api: &Api, show: &str, token: Option<&str>) -> reqwest::Response {
    let mut r = api
        .client
        .post(api.url(&routes::show(routes::BYPASS, show)));
    if let Some(t) = token {
        r = r.header(BYPASS_TOKEN_HEADER, t);
    }
    r.send().await.unwrap()
}

async fn a_token_lets_a_monitor_through_at_once_counted_and_audited(backend: Backend) {
    // One buyer at a time, and the monitor's admission counts as one: once it is through, the
    // queue stands still, so positions can be read without a tick in between.
    let app = spawn_app_with(backend, config(1, Duration::from_secs(300))).await;
    app.configure(
        "gate",
        json!({"maxActiveBuyers": 1, "bypass": [{"kind": "token", "sha256": sha256_hex(TOKEN)}]}),
    )
    .await;
    let queued = app.join_many("gate", 20).await;
    app.open("gate").await;

    let r = bypass(&app, "gate", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let t: Value = r.json().await.unwrap();
    assert_eq!(t["status"], "ADMITTED", "{t}");
    assert!(t["pass"].as_str().is_some_and(|p| !p.is_empty()), "{t}");
    let monitor = ticket_id(&t);
    // Its pass opens the gate (the pass check an edge asks).
    let pass = t["pass"].as_str().unwrap();
    assert_eq!(
        app.check_pass("gate", pass).await.status(),
        StatusCode::NO_CONTENT
    );
    // Nobody queued moved back for it: a fan joining after stands behind the queued ones only,
    // as the store and, pushed, the hub count it.
    let after = app.join_ok("gate").await;
    let stats = app.stats("gate").await;
    assert_eq!(
        after["position"].as_u64(),
        stats["queueLength"].as_u64(),
        "{after} {stats}"
    );
    let last = app.ticket_json("gate", &ticket_id(&after)).await;
    assert_eq!(last["position"], stats["queueLength"], "{last}");
    let mut behind = app.events("gate", &ticket_id(&after)).await;
    let pushed = behind.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        pushed.data["position"], stats["queueLength"],
        "{:?}",
        pushed.data
    );
    // Its stream says it is admitted, and keeps saying so as the queue moves past a tick.
    let mut live = app.events("gate", &monitor).await;
    let first = live.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.event, "admitted", "{:?}", first.data);

    // Refused: a wrong token, none, and one in the URL (spent, and said so).
    for token in [Some("monitor-secret-7f3b"), None] {
        let r = bypass(&app, "gate", token).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
    }
    let url = format!("{}?token={TOKEN}", routes::show(routes::BYPASS, "gate"));
    let r = app.client.post(app.url(&url)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains(BYPASS_TOKEN_HEADER));

    // Counted by kind, audited by kind and arrival (never the token), and the audit verifies.
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_bypasses_total{show="gate",kind="token"} 1"#),
        "{metrics}"
    );
    let records = audit_of(&app, "gate", 1000).await;
    let bypasses: Vec<_> = records
        .iter()
        .filter(|r| r.kind == AuditKind::Bypass)
        .collect();
    assert_eq!(bypasses.len(), 1, "{records:?}");
    assert_eq!(bypasses[0].via, Some(BypassKind::Token));
    assert_eq!(bypasses[0].arrival, Some(queued.len() as u64 + 1));
    let verified = draw::verify(None, &records, bypasses[0].arrival).expect("fair");
    assert_eq!(verified.bypassed, 1);
    assert!(verified.arrival.unwrap().admitted.is_some());
    let audit_text = serde_json::to_string(&records).unwrap();
    assert!(!audit_text.contains(TOKEN));
    // The monitor's stream never took it for a fan who left.
    while let Ok(Some(e)) = tokio::time::timeout(
        Duration::from_millis(1500),
        live.next(Duration::from_secs(5)),
    )
    .await
    {
        assert_ne!(e.event, "unknown", "{:?}", e.data);
    }
    app.stop().await;
}

async fn a_staff_network_and_a_signed_link_let_staff_through(backend: Backend) {
    let app = spawn_app(backend).await;
    // The tests call from loopback: a staff network of 127.0.0.0/8.
    app.configure(
        "staff",
        json!({"bypass": [{"kind": "network", "cidr": "127.0.0.0/8"}]}),
    )
    .await;
    app.open("staff").await;
    let r = bypass(&app, "staff", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "ADMITTED");
    // The page's way through: admitted, sent on to the waiting page with its ticket.
    let page = app
        .client
        .get(app.url(&routes::show(routes::WAIT_BYPASS, "staff")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::SEE_OTHER);
    let to = page.headers()["location"].to_str().unwrap().to_owned();
    let ticket = to.split("ticket=").nth(1).unwrap();
    assert_eq!(app.ticket_json("staff", ticket).await["status"], "ADMITTED");

    // Links: none while the show has no link rule; then signed, opened, refused when forged,
    // for another show, or once the rule is gone.
    let sign = |show: &str| {
        app.as_operator(
            reqwest::Method::POST,
            &routes::show(routes::BYPASS_LINKS, show),
        )
        .json(&json!({"ttlSeconds": 3600}))
        .send()
    };
    assert_eq!(sign("staff").await.unwrap().status(), StatusCode::CONFLICT);
    app.configure("staff", json!({"bypass": [{"kind": "link"}]}))
        .await;
    let r = sign("staff").await.unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let link: Value = r.json().await.unwrap();
    let url = link["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with("/wait/staff/bypass?link=b1."), "{link}");
    let opened = app.client.get(app.url(&url)).send().await.unwrap();
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    assert_eq!(opened.headers()["referrer-policy"], "no-referrer");
    // Loopback is no staff network any more: without the link, refused.
    let plain = app
        .client
        .get(app.url(&routes::show(routes::WAIT_BYPASS, "staff")))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), StatusCode::FORBIDDEN);
    let forged = url.replacen("link=b1.", "link=b1.x", 1);
    let r = app.client.get(app.url(&forged)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    app.configure("other", json!({"bypass": [{"kind": "link"}]}))
        .await;
    app.open("other").await;
    let elsewhere = url.replacen("/wait/staff/", "/wait/other/", 1);
    let r = app.client.get(app.url(&elsewhere)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    app.configure("staff", json!({"bypass": []})).await;
    let r = app.client.get(app.url(&url)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    let metrics = app.metrics().await;
    for (kind, n) in [("network", 2), ("link", 1)] {
        let line = format!(r#"waiting_room_bypasses_total{{show="staff",kind="{kind}"}} {n}"#);
        assert!(metrics.contains(&line), "{line}\n{metrics}");
    }
    app.stop().await;
}

async fn a_bypass_takes_a_seat_and_waits_for_the_opening(backend: Backend) {
    let app = spawn_app(backend).await;
    app.configure(
        "small",
        json!({"stock": 1, "bypass": [{"kind": "token", "sha256": sha256_hex(TOKEN)}]}),
    )
    .await;
    // Not open yet: nobody is let through, bypass or not.
    let r = bypass(&app, "small", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    app.open("small").await;
    let r = bypass(&app, "small", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::OK);
    // The one seat is held by that admission: no second bypass, and no fan let in either.
    let r = bypass(&app, "small", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(r.text().await.unwrap().contains("seat"));
    let fan = ticket_id(&app.join_ok("small").await);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.ticket_json("small", &fan).await["status"], "WAITING");
    app.stop().await;
}

#[tokio::test]
async fn bypass_rules_that_do_not_fit_are_refused_and_guessing_is_throttled() {
    let app = spawn_app(Backend::Memory).await;
    app.create("tidy").await;
    for rules in [
        json!([{"kind": "token", "sha256": TOKEN}]),
        json!([{"kind": "network", "cidr": "0.0.0.0/0"}]),
        json!([{"kind": "network", "cidr": "10.0.0.1/8"}]),
        json!(vec![json!({"kind": "link"}); 33]),
    ] {
        let r = app.put_config("tidy", &json!({"bypass": rules})).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{rules}");
        assert!(r.text().await.unwrap().contains("bypass"));
    }
    for rules in [json!([{"kind": "magic"}]), json!([{"kind": "token"}])] {
        let r = app.put_config("tidy", &json!({"bypass": rules})).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{rules}");
    }
    app.configure(
        "tidy",
        json!({"bypass": [{"kind": "token", "sha256": sha256_hex(TOKEN)}]}),
    )
    .await;
    app.open("tidy").await;
    // Guesses from one block: refused, then throttled, the right token too.
    let mut statuses = Vec::new();
    for i in 0..40 {
        statuses.push(
            bypass(&app, "tidy", Some(&format!("guess-{i}")))
                .await
                .status(),
        );
    }
    assert_eq!(statuses[0], StatusCode::FORBIDDEN);
    assert_eq!(
        statuses.last(),
        Some(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    let r = bypass(&app, "tidy", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key("retry-after"));
    app.stop().await;
}
