//! Shows exist only when an operator makes them, and go with everything they held.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use waiting_room::protocol::routes;

use super::{admitted_fan, json_of, keys_but_the_lease};
use crate::support::app::spawn_app;
use crate::support::backend::Backend;
use crate::support::ticket_id;

both_stores!(
    shows_exist_only_when_an_operator_makes_them,
    a_deleted_show_takes_its_state_and_its_tickets_with_it,
    the_ticket_cookie_is_the_servers_alone,
    one_key_holds_one_place,
    metrics_name_no_show_before_it_is_announced,
);

async fn shows_exist_only_when_an_operator_makes_them(backend: Backend) {
    let app = spawn_app(backend).await;
    let keys_before = match &app.redis {
        Some(r) => Some(keys_but_the_lease(r).await),
        None => None,
    };
    let ticket = uuid::Uuid::new_v4().to_string();
    for i in 0..20 {
        let show = format!("made-up-{i}");
        let joined = app.join(&show).await;
        assert_eq!(joined.status(), StatusCode::NOT_FOUND, "{show}");
        assert!(
            json_of(joined).await["message"]
                .as_str()
                .unwrap()
                .contains(&show)
        );
        assert_eq!(
            app.ticket(&show, &ticket).await.status(),
            StatusCode::NOT_FOUND
        );
        let events = app
            .get(&routes::ticket(routes::EVENTS, &show, &ticket))
            .await;
        assert_eq!(events.status(), StatusCode::NOT_FOUND);
        json_of(events).await;
        let ws = app
            .client
            .get(app.url(&routes::ticket(routes::WS, &show, &ticket)))
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .send()
            .await
            .unwrap();
        assert_eq!(ws.status(), StatusCode::NOT_FOUND);
        let ordered = app.order_as(&show, "h", "a@b.co", None).await;
        assert_eq!(ordered.status(), StatusCode::NOT_FOUND);
        let page = app.get(&routes::show(routes::WAIT_PAGE, &show)).await;
        assert_eq!(page.status(), StatusCode::NOT_FOUND);
    }
    if let (Some(r), Some(before)) = (&app.redis, keys_before) {
        // The admitter takes its lease whenever its half second comes, maybe in the
        // middle of this: its keys are none of the made-up shows' business.
        assert_eq!(
            keys_but_the_lease(r).await,
            before,
            "nothing was written for made-up shows"
        );
    }
    let metrics = app.metrics().await;
    assert!(!metrics.contains("made-up"), "no series for made-up shows");
    // An operator makes a show: 201, then 200 with its settings.
    let gig = routes::show(routes::SHOW, "gig");
    let make = |body: serde_json::Value| app.as_operator(Method::PUT, &gig).json(&body).send();
    let made = make(json!({"admitPerSecond": 7, "maxActiveBuyers": 50}))
        .await
        .unwrap();
    assert_eq!(made.status(), StatusCode::CREATED);
    let stats = json_of(made).await;
    assert_eq!(
        (stats["admitPerSecond"].as_u64(), stats["open"].as_bool()),
        (Some(7), Some(false))
    );
    let again = app.as_operator(Method::PUT, &gig).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(json_of(again).await["maxActiveBuyers"], 50);
    let unauthorized = app
        .client
        .put(app.url(&routes::show(routes::SHOW, "gig2")))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
    let bad = make(json!({"admitPerSecond": 10_001})).await.unwrap();
    assert_eq!(
        bad.status(),
        StatusCode::BAD_REQUEST,
        "a tick admits at most 10,000"
    );
    // Now fans may join it.
    let joined = app.join_ok("gig").await;
    assert_eq!(joined["position"], 1);
    app.stop().await;
}

async fn a_deleted_show_takes_its_state_and_its_tickets_with_it(backend: Backend) {
    let app = spawn_app(backend).await;
    app.open("gone").await;
    let admitted = admitted_fan(&app, "gone").await;
    let waiting = ticket_id(&app.join_ok("gone").await);
    app.set_rate("gone", 1).await;
    let mut stream = app.events("gone", &waiting).await;
    assert_eq!(
        stream.next(Duration::from_secs(2)).await.unwrap().event,
        "waiting"
    );
    let delete = |auth: bool| {
        let path = routes::show(routes::SHOW, "gone");
        match auth {
            true => app.as_operator(Method::DELETE, &path).send(),
            false => app.client.delete(app.url(&path)).send(),
        }
    };
    assert_eq!(
        delete(false).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(delete(true).await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(delete(true).await.unwrap().status(), StatusCode::NOT_FOUND);
    // The follower is told its ticket is gone, and the stream ends.
    let last = stream
        .next(Duration::from_secs(3))
        .await
        .expect("a last event");
    assert_eq!(last.event, "unknown");
    assert!(stream.next(Duration::from_secs(3)).await.is_none());
    assert_eq!(app.join("gone").await.status(), StatusCode::NOT_FOUND);
    if let Some(r) = &app.redis {
        let mut conn = r.server().conn().await;
        let keys: Vec<String> = ::redis::cmd("KEYS")
            .arg("wr:{gone}:*")
            .query_async(&mut conn)
            .await
            .unwrap();
        // What is left: the tombstone, and admissions that run out by themselves and are void.
        for key in &keys {
            assert!(
                key == "wr:{gone}:meta" || key.starts_with("wr:{gone}:admitted:"),
                "{key}"
            );
            let ttl: i64 = ::redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(ttl > 0, "{key} lives on without a TTL");
        }
    }
    // Made again, it starts from nothing: the old admission opens nothing.
    app.open("gone").await;
    let refused = app.order("gone", "h-1", Some(&admitted)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.join_ok("gone").await["position"], 1);
    app.stop().await;
}

/// The waiting page's script keeps its ticket in localStorage; the `wr_ticket` cookie (for the
/// server's first paint) is written by the server only, on join and leave, `HttpOnly`: a
/// script could not overwrite an `HttpOnly` cookie, and needs none.
async fn the_ticket_cookie_is_the_servers_alone(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("c").await;
    let joined = app.join("c").await;
    assert_eq!(joined.status(), StatusCode::ACCEPTED);
    let cookie = joined.headers()["set-cookie"].to_str().unwrap().to_owned();
    let ticket = ticket_id(&joined.json().await.unwrap());
    assert!(
        cookie.starts_with(&format!("wr_ticket={ticket};")),
        "{cookie}"
    );
    for part in ["Path=/wait/c", "HttpOnly", "SameSite=Lax", "Max-Age=86400"] {
        assert!(cookie.contains(part), "{part} in {cookie}");
    }
    let left = app.leave("c", &ticket).await;
    assert_eq!(left.status(), StatusCode::NO_CONTENT);
    let forget = left.headers()["set-cookie"].to_str().unwrap();
    assert!(
        forget.starts_with("wr_ticket=;") && forget.contains("Max-Age=0"),
        "{forget}"
    );
    assert!(
        !std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/static/wait.js"))
            .unwrap()
            .contains("document.cookie")
    );
    app.stop().await;
}

/// One place per client: the same `Idempotency-Key`
/// gets the same ticket back while it lives, said so; another key, another place; once the
/// ticket is gone, the key joins anew.
async fn one_key_holds_one_place(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("k").await;
    let join = |key: &'static str| {
        app.client
            .post(app.url("/orders/waiting-room/k/join"))
            .header("Idempotency-Key", key)
            .send()
    };
    let first = join("fan-1").await.unwrap();
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    assert_eq!(first.headers()["idempotent-replayed"], "false");
    let first: Value = first.json().await.unwrap();
    let again = join("fan-1").await.unwrap();
    assert_eq!(
        again.status(),
        StatusCode::OK,
        "the same key: the same place"
    );
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["ticketId"], first["ticketId"]);
    assert_eq!(again["position"], 1);
    let other: Value = join("fan-2").await.unwrap().json().await.unwrap();
    assert_ne!(other["ticketId"], first["ticketId"]);
    assert_eq!(other["position"], 2);
    assert_eq!(
        app.stats("k").await["joined"],
        2,
        "no second place for fan-1"
    );
    // Gone (left), the key gets a new place at the back.
    let ticket = first["ticketId"].as_str().unwrap();
    assert_eq!(
        app.leave("k", ticket).await.status(),
        StatusCode::NO_CONTENT
    );
    let anew = join("fan-1").await.unwrap();
    assert_eq!(anew.status(), StatusCode::ACCEPTED);
    let anew: Value = anew.json().await.unwrap();
    assert_ne!(anew["ticketId"], first["ticketId"]);
    // A key that is no key is refused and joins nobody.
    let bad = app
        .client
        .post(app.url("/orders/waiting-room/k/join"))
        .header("Idempotency-Key", "x".repeat(129))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(app.stats("k").await["joined"], 3);
    app.stop().await;
}

async fn metrics_name_no_show_before_it_is_announced(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("next-week").await;
    app.open("tonight").await;
    app.join_ok("tonight").await;
    // A few watchdog passes (one a second) over both shows, and a tick of the open one.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut seen = 0;
    loop {
        let metrics = app.metrics().await;
        assert!(!metrics.contains("next-week"), "{metrics}");
        if metrics.contains("waiting_room_admissions_total{show=\"tonight\"}") {
            seen += 1;
            if seen == 3 {
                break;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    app.stop().await;
}
