//! Bypass rules (docs/bypass.md): a token for monitors, a staff network, links an operator
//! signs. A request a rule matches is admitted at once, counted, audited by kind, under the
//! stock rule; nobody else gets through, guessing is throttled, and a token never rides a URL.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
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
    a_bypass_takes_a_seat_and_waits_for_the_opening,
    no_phase_but_an_open_one_lets_a_bypass_through
);

const TOKEN: &str = "monitor-secret-7f3a";

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
        json!({"maxActiveBuyers": 1, "bypass": [{"kind": "token", "sha256": draw::sha256_hex(TOKEN.as_bytes())}]}),
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
    // Its stream says it is admitted.
    let mut live = app.events("gate", &monitor).await;
    let first = live.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.event, "admitted", "{:?}", first.data);

    // Refused: a wrong token, none, and one in the URL (spent, and said so).
    for token in [Some("monitor-secret-7f3b"), None] {
        let r = bypass(&app, "gate", token).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
    }
    // Sent by a page of another site (a staff browser made to): refused, the right token too.
    let cross = app
        .client
        .post(app.url(&routes::show(routes::BYPASS, "gate")))
        .header(BYPASS_TOKEN_HEADER, TOKEN)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
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
    app.stop().await;
}

async fn a_staff_network_and_a_signed_link_let_staff_through(backend: Backend) {
    let app = spawn_app(backend).await;
    // The tests call from loopback: a staff network of 127.0.0.0/16.
    app.configure(
        "staff",
        json!({"bypass": [{"kind": "network", "cidr": "127.0.0.0/16"}]}),
    )
    .await;
    app.open("staff").await;
    let r = bypass(&app, "staff", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "ADMITTED");
    // The page's way is a link only: a page of another site could make a staff browser open
    // it, and take a seat every time, if its address were enough.
    let page = app
        .client
        .get(app.url(&routes::show(routes::WAIT_BYPASS, "staff")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::FORBIDDEN);

    // Links: none while the show has no link rule; then signed and opened once.
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
    let signed = |r: reqwest::Response| async move {
        assert_eq!(r.status(), StatusCode::CREATED);
        let link: Value = r.json().await.unwrap();
        link["url"].as_str().unwrap().to_owned()
    };
    let url = signed(sign("staff").await.unwrap()).await;
    assert!(url.starts_with("/wait/staff/bypass?link=b2."), "{url}");
    let open_link = |url: String, cookie: Option<String>| {
        let mut r = app.client.get(app.url(&url));
        if let Some(c) = cookie {
            r = r.header("cookie", c);
        }
        r.send()
    };
    let opened = open_link(url.clone(), None).await.unwrap();
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    assert_eq!(opened.headers()["referrer-policy"], "no-referrer");
    let to = opened.headers()["location"].to_str().unwrap().to_owned();
    let ticket = to.split("ticket=").nth(1).unwrap().to_owned();
    assert_eq!(
        app.ticket_json("staff", &ticket).await["status"],
        "ADMITTED"
    );
    // Used: another browser is refused (on the staff network too, whose rule would let it
    // through without the link); the one holding its admission keeps that one.
    app.configure(
        "staff",
        json!({"bypass": [{"kind": "network", "cidr": "127.0.0.0/16"}, {"kind": "link"}]}),
    )
    .await;
    let again = open_link(url.clone(), None).await.unwrap();
    assert_eq!(again.status(), StatusCode::FORBIDDEN);
    assert!(again.text().await.unwrap().contains("used"));
    let kept = open_link(url.clone(), Some(format!("wr_ticket={ticket}")))
        .await
        .unwrap();
    assert_eq!(kept.status(), StatusCode::SEE_OTHER);
    assert!(
        kept.headers()["location"]
            .to_str()
            .unwrap()
            .ends_with(&ticket)
    );
    // Forged, or for another show: refused.
    let fresh = signed(sign("staff").await.unwrap()).await;
    let forged = fresh.replacen("link=b2.", "link=b2.x", 1);
    assert_eq!(
        open_link(forged, None).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    app.configure("other", json!({"bypass": [{"kind": "link"}]}))
        .await;
    app.open("other").await;
    let elsewhere = fresh.replacen("/wait/staff/", "/wait/other/", 1);
    assert_eq!(
        open_link(elsewhere, None).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    // Voided for good: the rule removed, then added again, the links signed before stay
    // refused; one signed since goes through.
    app.configure("staff", json!({"bypass": []})).await;
    assert_eq!(
        open_link(fresh.clone(), None).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    // Links are signed to the second: the rule comes back in a later one.
    let signed_in = jiff::Timestamp::now().as_second();
    while jiff::Timestamp::now().as_second() == signed_in {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.configure("staff", json!({"bypass": [{"kind": "link"}]}))
        .await;
    let revived = open_link(fresh, None).await.unwrap();
    assert_eq!(revived.status(), StatusCode::FORBIDDEN);
    assert!(revived.text().await.unwrap().contains("signed before"));
    let newer = signed(sign("staff").await.unwrap()).await;
    assert_eq!(
        open_link(newer, None).await.unwrap().status(),
        StatusCode::SEE_OTHER
    );
    // An empty list of rules is answered as the list it is.
    app.configure("other", json!({"bypass": []})).await;
    assert_eq!(app.stats("other").await["settings"]["bypass"], json!([]));

    let metrics = app.metrics().await;
    for (kind, n) in [("network", 1), ("link", 2)] {
        let line = format!(r#"waiting_room_bypasses_total{{show="staff",kind="{kind}"}} {n}"#);
        assert!(metrics.contains(&line), "{line}\n{metrics}");
    }
    app.stop().await;
}

async fn a_bypass_takes_a_seat_and_waits_for_the_opening(backend: Backend) {
    let app = spawn_app(backend).await;
    app.configure(
        "small",
        json!({"stock": 1, "bypass": [{"kind": "token", "sha256": draw::sha256_hex(TOKEN.as_bytes())}]}),
    )
    .await;
    // Not open yet: nobody is let through, bypass or not.
    let r = bypass(&app, "small", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    app.open("small").await;
    // The same key answers the same running admission (a monitor holds one seat, not one a
    // check); the one seat is held: no second bypass, and no fan let in either.
    let keyed = |key: &'static str| {
        app.client
            .post(app.url(&routes::show(routes::BYPASS, "small")))
            .header(BYPASS_TOKEN_HEADER, TOKEN)
            .header("idempotency-key", key)
            .send()
    };
    let first: Value = keyed("monitor-1").await.unwrap().json().await.unwrap();
    let twice = keyed("monitor-1").await.unwrap();
    assert_eq!(twice.status(), StatusCode::OK);
    assert_eq!(twice.headers()["idempotent-replayed"], "true");
    assert_eq!(
        twice.json::<Value>().await.unwrap()["ticketId"],
        first["ticketId"]
    );
    // A join's key never names a bypass's admission.
    for key in ["monitor-1", "bypass:monitor-1"] {
        let joined = app
            .client
            .post(app.url(&routes::show(routes::JOIN, "small")))
            .header("idempotency-key", key)
            .send()
            .await
            .unwrap();
        assert_eq!(joined.status(), StatusCode::ACCEPTED, "{key}");
        let t: Value = joined.json().await.unwrap();
        assert_ne!(t["ticketId"], first["ticketId"], "{key}");
        assert_eq!(t["status"], "WAITING", "{key}");
        assert!(
            app.leave("small", &ticket_id(&t))
                .await
                .status()
                .is_success()
        );
    }
    let r = bypass(&app, "small", Some(TOKEN)).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(r.text().await.unwrap().contains("seat"));
    let fan = ticket_id(&app.join_ok("small").await);
    // A whole admission pass after: another show's second fan let in, one a second.
    app.configure("probe", json!({"admitPerSecond": 1})).await;
    let probes = app.join_many("probe", 2).await;
    app.open("probe").await;
    app.wait_admitted("probe", &probes[1], Duration::from_secs(30))
        .await;
    assert_eq!(app.ticket_json("small", &fan).await["status"], "WAITING");
    // The seat given back: the fan gets it.
    let held = ticket_id(&first);
    assert!(app.leave("small", &held).await.status().is_success());
    app.wait_admitted("small", &fan, Duration::from_secs(30))
        .await;
    app.stop().await;
}

/// The gate in every phase: a bypass admits only while the on-sale is open. Made, scheduled
/// (a fair start's pre-queue), paused, closed and ended shows let nobody through this way, and
/// none of them gains a running admission.
async fn no_phase_but_an_open_one_lets_a_bypass_through(backend: Backend) {
    let app = spawn_app(backend).await;
    let rules = json!([{"kind": "token", "sha256": draw::sha256_hex(TOKEN.as_bytes())}]);
    let refused = |show: &'static str| {
        let app = &app;
        async move {
            let r = bypass(app, show, Some(TOKEN)).await;
            assert_eq!(r.status(), StatusCode::CONFLICT, "{show}");
            assert_eq!(app.stats(show).await["admittedValid"], 0, "{show}");
        }
    };
    app.configure("made", json!({"bypass": rules})).await;
    refused("made").await;
    let opens_at = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600)).to_string();
    app.configure("scheduled", json!({"bypass": rules, "opensAt": opens_at}))
        .await;
    refused("scheduled").await;
    for (show, step) in [
        ("paused", routes::PAUSE),
        ("closed", routes::CLOSE),
        ("ended", routes::END),
    ] {
        app.configure(show, json!({"bypass": rules})).await;
        app.open(show).await;
        assert!(
            app.operator(step, show).await.status().is_success(),
            "{show}"
        );
        refused(show).await;
    }
    app.stop().await;
}

#[tokio::test]
async fn bypass_rules_that_do_not_fit_are_refused_and_bypasses_are_bounded() {
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
    // However leaky a token, a show has at most 100 bypass admissions running at once.
    app.configure(
        "crowded",
        json!({"bypass": [{"kind": "network", "cidr": "127.0.0.0/16"}]}),
    )
    .await;
    app.open("crowded").await;
    for _ in 0..100 {
        assert_eq!(bypass(&app, "crowded", None).await.status(), StatusCode::OK);
    }
    let r = bypass(&app, "crowded", None).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));

    app.configure(
        "tidy",
        json!({"bypass": [{"kind": "token", "sha256": draw::sha256_hex(TOKEN.as_bytes())}]}),
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
