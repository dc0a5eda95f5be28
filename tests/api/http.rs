//! The HTTP contract: the seed's "Try it" sequence on both stores, and every bad input of the
//! spec answered with a clear JSON 4xx.

use std::time::Duration;

use reqwest::{Method, StatusCode, header};
use serde_json::{Value, json};
use waiting_room::config::Config;

use waiting_room::protocol::routes;

use crate::support::app::{spawn_app, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::{TOKEN, ticket_id};

both_stores!(
    the_seeds_try_it_sequence,
    bad_input_gets_a_clear_json_4xx,
    a_body_is_a_json_object_or_nothing_at_all,
    the_gate_refuses_forged_expired_and_foreign_tickets,
    operator_calls_need_the_token,
    leave_and_rate_change_over_http,
    settings_are_kept_and_answered_whole,
    a_full_queue_says_when_to_come_back,
);

/// A 400 whose message names `field`.
async fn refused_naming(r: reqwest::Response, field: &str) {
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let message = body(r).await["message"].as_str().unwrap().to_owned();
    assert!(message.contains(field), "{message}");
}

/// A 4xx's JSON: the original's UNKNOWN ticket (`application/json`), or an RFC 9457 problem
/// (`application/problem+json`) that keeps the fields clients read (`status`, `error`,
/// `message`) beside the RFC's (`type`, `title`, `detail`).
async fn body(r: reqwest::Response) -> Value {
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let problem = match ct.as_deref() {
        Some("application/problem+json") => true,
        Some("application/json") => false,
        other => panic!("4xx bodies are JSON: {other:?}"),
    };
    let body: Value = r.json().await.unwrap();
    if problem {
        assert_eq!(body["status"], status, "{body}");
        assert_eq!(body["type"], "about:blank", "{body}");
        assert_eq!(body["title"], body["error"], "{body}");
        assert_eq!(body["detail"], body["message"], "{body}");
        assert!(!body["message"].as_str().unwrap().is_empty(), "{body}");
    } else {
        assert_eq!(
            body["status"], "UNKNOWN",
            "only the original's answer is plain JSON"
        );
    }
    body
}

async fn the_seeds_try_it_sequence(backend: Backend) {
    let app = spawn_app(backend).await;
    // open → 204
    app.open("show-42").await;
    // join → 202 WAITING position 1 eta 1 (and, added since the seed, its arrival number)
    let joined = app.join_ok("show-42").await;
    let id = ticket_id(&joined);
    assert_eq!(
        joined,
        json!({"ticketId": id, "status": "WAITING", "position": 1, "etaSeconds": 1, "arrival": 1})
    );
    // a moment later → ADMITTED with expiresInSeconds
    let admitted = app
        .wait_admitted("show-42", &id, Duration::from_secs(3))
        .await;
    assert_eq!(admitted["ticketId"], id.as_str());
    let expires = admitted["expiresInSeconds"].as_u64().unwrap();
    assert!((295..=300).contains(&expires), "{admitted}");
    // The signed pass (a JWT) rides along (tests/api/bots/ checks it).
    assert_eq!(
        admitted["pass"].as_str().unwrap().split('.').count(),
        3,
        "{admitted}"
    );
    assert_eq!(
        admitted.as_object().unwrap().len(),
        4,
        "null fields are omitted: {admitted}"
    );
    // order without a ticket → 403 naming the join URL
    let refused = app.order("show-42", "hold-0100", None).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let msg = body(refused).await["message"].as_str().unwrap().to_owned();
    assert!(msg.contains("/orders/waiting-room/show-42/join"), "{msg}");
    // order with the ticket → 201 + Location
    let created = app.order("show-42", "hold-0100", Some(&id)).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let order: Value = created.json().await.unwrap();
    assert_eq!(
        location,
        format!("/orders/{}", order["id"].as_str().unwrap())
    );
    assert_eq!(order["holdId"], "hold-0100");
    assert_eq!(order["amount"], 350.0);
    // the buyer is done buying: its place is free for the next fan
    let stats = app.stats("show-42").await;
    assert_eq!(stats["admittedValid"], 0, "{stats}");
    // the same hold again → 200 with the same order (the admission still opens the gate)
    let again = app.order("show-42", "hold-0100", Some(&id)).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.json::<Value>().await.unwrap(), order);
    // GET the order
    let fetched = app.client.get(app.url(&location)).send().await.unwrap();
    assert_eq!(fetched.status(), StatusCode::OK);
    assert_eq!(fetched.json::<Value>().await.unwrap(), order);
    // a closed show has no gate (the seed's close lifts it)
    app.close("show-42").await;
    assert_eq!(
        app.order("show-42", "hold-0200", None).await.status(),
        StatusCode::CREATED
    );
    app.stop().await;
}

async fn bad_input_gets_a_clear_json_4xx(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("s").await;
    let c = &app.client;
    let order = |v: Value| c.post(app.url("/orders")).json(&v).send();
    let valid = json!({"showId": "s", "holdId": "h", "customerEmail": "a@b.co", "amount": 1});

    // show ids outside [A-Za-z0-9._-]{1,64}
    for bad in ["bad%20id", "a:b", "%7Bx%7D", &"x".repeat(65), "admitter"] {
        let r = app.join(bad).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        assert!(
            body(r).await["message"]
                .as_str()
                .unwrap()
                .contains("show id")
        );
    }
    // ticket ids that are not UUIDs → 404 UNKNOWN
    let r = app.ticket("s", "not-a-uuid").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        body(r).await,
        json!({"ticketId": "not-a-uuid", "status": "UNKNOWN"})
    );
    let r = app.ticket("s", &uuid::Uuid::new_v4().to_string()).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(body(r).await["status"], "UNKNOWN");
    // malformed JSON
    let r = c
        .post(app.url("/orders"))
        .header("content-type", "application/json")
        .body("{\"showId\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    body(r).await;
    // wrong content type
    let r = c
        .post(app.url("/orders"))
        .body(valid.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    body(r).await;
    // oversized JSON → 413
    let huge = json!({"showId": "s", "holdId": "x".repeat(100_000), "customerEmail": "a@b.co", "amount": 1});
    let r = order(huge).await.unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    body(r).await;
    // invalid fields → 400 naming the field; nothing stored
    for (field, value) in [
        ("showId", json!("no spaces")),
        ("holdId", json!("")),
        ("customerEmail", json!("not-an-email")),
        ("amount", json!(0)),
        ("amount", json!(-5)),
        ("amount", json!("lots")),
    ] {
        let mut v = valid.clone();
        v[field] = value.clone();
        let r = order(v).await.unwrap();
        assert!(
            r.status() == StatusCode::BAD_REQUEST || r.status() == StatusCode::UNPROCESSABLE_ENTITY,
            "{field}={value}: {}",
            r.status()
        );
        let b = body(r).await;
        assert!(
            b["message"].as_str().unwrap().contains(field),
            "{field}: {b}"
        );
    }
    // missing and unknown fields
    let r = order(json!({"showId": "s"})).await.unwrap();
    assert!(r.status().is_client_error());
    body(r).await;
    // unknown order ids
    for id in ["nope", &uuid::Uuid::new_v4().to_string()] {
        let r = c
            .get(app.url(&format!("/orders/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        body(r).await;
    }
    // unknown routes and methods
    let r = c.get(app.url("/nowhere")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    body(r).await;
    let r = c.delete(app.url("/orders")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    body(r).await;
    // a path that is not UTF-8, a WebSocket URL without the upgrade
    let r = c
        .get(app.url("/orders/waiting-room/%FF/tickets/x"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    body(r).await;
    let ws = format!("/orders/waiting-room/s/tickets/{}/ws", uuid::Uuid::new_v4());
    let r = c.get(app.url(&ws)).send().await.unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    body(r).await;
    // the server is still fine after all that
    assert_eq!(app.join("s").await.status(), StatusCode::ACCEPTED);
    app.stop().await;
}

/// A body a route may go without is absent only when not a byte was sent; whitespace, JSON
/// that is no object (a derived struct would take `[null]` as its fields) and anything else
/// are 400, and change nothing. A required body that is a JSON array is the wrong shape.
async fn a_body_is_a_json_object_or_nothing_at_all(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = routes::show(routes::SHOW, "bodies");
    let send = |method: Method, path: &str, body: &str| {
        app.as_operator(method, path).body(body.to_owned()).send()
    };
    for bad in ["\r", "\t", " ", "[null]", "[]", "null", "\"x\""] {
        let r = send(Method::PUT, &show, bad).await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "PUT {bad:?}");
        body(r).await;
    }
    let stats = routes::show(routes::STATS, "bodies");
    let r = send(Method::GET, &stats, "").await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND, "no show was made");
    // No body at all, whatever the content type: the defaults.
    let r = send(Method::PUT, &show, "").await.unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = send(Method::PUT, &show, r#"{"admitPerSecond":7}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    let end = routes::show(routes::END, "bodies");
    for bad in ["\t", "[null]", "[\"sold out\"]", "\n\n"] {
        let r = send(Method::POST, &end, bad).await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "end {bad:?}");
        body(r).await;
    }
    let phase = async || app.stats("bodies").await["phase"].clone();
    assert_ne!(phase().await, "ended", "a refused end ends nothing");

    // A required body: an array of the fields is the wrong shape.
    let twelve_nulls = format!("[{}]", ["null"; 12].join(","));
    let config = routes::show(routes::CONFIG, "bodies");
    let r = app
        .as_operator(Method::PUT, &config)
        .header("content-type", "application/json")
        .body(twelve_nulls)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    body(r).await;
    assert_eq!(app.stats("bodies").await["admitPerSecond"], 7);
    let r = app
        .client
        .post(app.url(routes::ORDERS))
        .header("content-type", "application/json")
        .body(r#"["bodies","h","a@b.co",1]"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    body(r).await;

    let r = send(Method::POST, &end, "").await.unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(phase().await, "ended");
    app.stop().await;
}

async fn the_gate_refuses_forged_expired_and_foreign_tickets(backend: Backend) {
    let config = Config {
        admission_ttl: Duration::from_millis(1500),
        ..Config::for_tests()
    };
    let app = spawn_app_with(backend, config).await;
    app.create("a").await;
    app.open("b").await;
    // 20 a second: with 25 ahead, joined before the opening, the ticket waits at least one
    // tick after it, however slow the joins.
    app.join_many("a", 25).await;
    let mine = ticket_id(&app.join_ok("a").await);
    app.open("a").await;
    // still waiting: refused
    assert_eq!(
        app.order("a", "h1", Some(&mine)).await.status(),
        StatusCode::FORBIDDEN
    );
    // forged and malformed tickets: refused
    let forged = uuid::Uuid::new_v4().to_string();
    assert_eq!(
        app.order("a", "h1", Some(&forged)).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.order("a", "h1", Some("garbage")).await.status(),
        StatusCode::FORBIDDEN
    );
    app.wait_admitted("a", &mine, Duration::from_secs(4)).await;
    // admitted for show a: not a pass for show b
    assert_eq!(
        app.order("b", "h1", Some(&mine)).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.order("a", "h1", Some(&mine)).await.status(),
        StatusCode::CREATED
    );
    // spent, and once its time is up: refused again (it bought once already: 409)
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert_eq!(app.ticket("a", &mine).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        app.order("a", "h2", Some(&mine)).await.status(),
        StatusCode::CONFLICT
    );
    app.stop().await;
}

async fn operator_calls_need_the_token(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("s").await;
    let c = &app.client;
    for (method, path) in [
        ("POST", "/orders/waiting-room/s/open"),
        ("POST", "/orders/waiting-room/s/close"),
        ("GET", "/orders/waiting-room/s/stats"),
        ("PUT", "/orders/waiting-room/s/config"),
    ] {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Basic dGVzdC10b2tlbg=="),
            Some(TOKEN),
        ] {
            let mut req = c
                .request(method.parse().unwrap(), app.url(path))
                .json(&json!({"admitPerSecond": 3}));
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let r = req.send().await.unwrap();
            assert_eq!(
                r.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {auth:?}"
            );
            body(r).await;
        }
    }
    let stats = app
        .as_operator(Method::GET, &routes::show(routes::STATS, "s"))
        .send()
        .await
        .unwrap();
    assert_eq!(stats.status(), StatusCode::OK);
    assert_eq!(
        stats.json::<Value>().await.unwrap(),
        json!({"showId": "s", "open": false, "lost": false, "queueLength": 0, "admittedValid": 0, "admitPerSecond": 20, "effectiveAdmitPerSecond": 20, "maxActiveBuyers": 0, "joined": 0, "outflowPerSecond": 20.0, "paused": "pending", "phase": "pending", "arrivalWindowSeconds": 60, "releasedUntaken": 0, "joinChallengeBits": 0, "settings": {}, "presence": {"away": 0, "passedOver": 0, "released": 0, "askedToBeCalled": 0}})
    );
    app.stop().await;
}

async fn leave_and_rate_change_over_http(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("s").await;
    let a = ticket_id(&app.join_ok("s").await);
    let b = ticket_id(&app.join_ok("s").await);
    let c = ticket_id(&app.join_ok("s").await);
    assert_eq!(app.leave("s", &b).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.leave("s", &b).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        app.leave("s", "not-a-uuid").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.ticket_json("s", &a).await["position"], 1);
    assert_eq!(app.ticket_json("s", &c).await["position"], 2);
    // Not open, and no opening announced: a place, and no wait promised, whatever the rate.
    let r = app.set_rate("s", 1).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["admitPerSecond"], 1);
    let waiting = app.ticket_json("s", &c).await;
    assert_eq!(waiting["paused"], "pending", "{waiting}");
    assert_eq!(waiting.get("etaSeconds"), None, "{waiting}");
    let r = app.put_config("s", &json!({"maxActiveBuyers": 50})).await;
    assert_eq!(r.json::<Value>().await.unwrap()["maxActiveBuyers"], 50);
    for empty in [json!({}), json!({"admitPerSecond": 2, "bogus": 1})] {
        let r = app.put_config("s", &empty).await;
        assert!(r.status().is_client_error(), "{empty}");
        body(r).await;
    }
    for bad in [0, 2_000_000] {
        let r = app.set_rate("s", bad).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert!(
            body(r).await["message"]
                .as_str()
                .unwrap()
                .contains("admitPerSecond")
        );
    }
    app.stop().await;
}

/// What an operator sets is kept whole with the show, each `PUT …/config` laid over the
/// last, and answered whole in its stats; the fair start's fields live with the draw.
async fn settings_are_kept_and_answered_whole(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("s").await;
    assert_eq!(app.stats("s").await["settings"], json!({}));
    app.configure("s", json!({"admitPerSecond": 50, "stock": 10}))
        .await;
    let opens_at = "2099-01-01T10:00:00Z";
    let r = app
        .put_config("s", &json!({"opensAt": opens_at, "joinChallengeBits": 4}))
        .await;
    // A year ahead at most: refused, and nothing of it kept.
    refused_naming(r, "opensAt").await;
    let after = app
        .configure("s", json!({"stock": 0, "joinChallengeBits": 4}))
        .await;
    assert_eq!(
        after["settings"],
        json!({"admitPerSecond": 50, "stock": 0, "joinChallengeBits": 4})
    );
    assert_eq!(after["admitPerSecond"], 50);
    assert_eq!(after["joinChallengeBits"], 4);
    assert!(after.get("stock").is_none(), "0 removes the stock: {after}");
    let stats = app.stats("s").await;
    assert_eq!(stats["settings"], after["settings"]);
    // An empty list is answered as it was sent (it stands for the default push services).
    let none = app.configure("s", json!({"pushServices": []})).await;
    assert_eq!(none["settings"]["pushServices"], json!([]), "{none}");
    app.stop().await;
}

/// `maxQueueLength`: a join past it is 503 with `Retry-After`, a fan in line joining again
/// with its key is answered its place, and a place freed lets the next one in.
async fn a_full_queue_says_when_to_come_back(backend: Backend) {
    let app = spawn_app(backend).await;
    app.create("s").await;
    let r = app
        .put_config("s", &json!({"maxQueueLength": 100_000_001}))
        .await;
    refused_naming(r, "maxQueueLength").await;
    let stats = app.configure("s", json!({"maxQueueLength": 2})).await;
    assert_eq!(stats["settings"]["maxQueueLength"], 2);
    let keyed = |key: &str| {
        let path = routes::show(routes::JOIN, "s");
        app.client
            .post(app.url(&path))
            .header("Idempotency-Key", key)
    };
    let first = keyed("fan-1").send().await.unwrap();
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first = ticket_id(&first.json().await.unwrap());
    let second = ticket_id(&app.join_ok("s").await);
    let full = app.join("s").await;
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.headers()[header::RETRY_AFTER], "10");
    assert!(
        body(full).await["message"]
            .as_str()
            .unwrap()
            .contains("full")
    );
    // In line already: its place, not a refusal.
    let again = keyed("fan-1").send().await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(ticket_id(&again.json().await.unwrap()), first);
    assert_eq!(
        app.leave("s", &second).await.status(),
        StatusCode::NO_CONTENT
    );
    app.join_ok("s").await;
    assert_eq!(
        app.join("s").await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    app.configure("s", json!({"maxQueueLength": 0})).await;
    app.join_ok("s").await;
    app.stop().await;
}

#[tokio::test]
async fn too_many_joins_from_one_client_get_429_with_retry_after() {
    let config = Config {
        join_rate_limit: 2,
        ..Config::for_tests()
    };
    let app = spawn_app_with(Backend::Memory, config).await;
    app.create("s").await;
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(app.join("s").await);
    }
    let accepted = statuses
        .iter()
        .filter(|r| r.status() == StatusCode::ACCEPTED)
        .count();
    assert!(
        (2..=5).contains(&accepted),
        "a burst of about twice the rate passes: {accepted}"
    );
    let limited = statuses
        .into_iter()
        .find(|r| r.status() == StatusCode::TOO_MANY_REQUESTS)
        .expect("the burst beyond the limit is refused");
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry));
    body(limited).await;
    // nothing lost: the accepted tickets are all queued, positions dense
    let stats = app.stats("s").await;
    assert_eq!(stats["queueLength"], accepted as u64);
    app.stop().await;
}

#[tokio::test]
async fn health_readiness_and_metrics() {
    let mut app = spawn_app(Backend::Redis).await;
    assert_eq!(app.get(routes::HEALTHZ).await.status(), StatusCode::OK);
    assert_eq!(app.get(routes::READYZ).await.status(), StatusCode::OK);
    app.open("m").await;
    app.join_ok("m").await;
    let text = app.metrics().await;
    assert!(
        text.contains("waiting_room_joins_total{show=\"m\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("waiting_room_queue_length{show=\"m\"}"),
        "{text}"
    );
    // Redis gone: not ready, but alive
    drop(app.redis.take());
    let r = app.get(routes::READYZ).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(app.get(routes::HEALTHZ).await.status(), StatusCode::OK);
    app.stop().await;
}

/// HTTP conventions: a show made answers `Location`; a join answers where its ticket lives;
/// ticket JSON (it may carry a bearer pass) is never cached; a 503 says when to come back.
#[tokio::test]
async fn answers_say_where_things_are_and_what_not_to_cache() {
    let mut app = spawn_app(Backend::Redis).await;
    let made = app
        .as_operator(Method::PUT, &routes::show(routes::SHOW, "conv"))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), StatusCode::CREATED);
    assert_eq!(made.headers()["location"], "/orders/waiting-room/conv");
    let joined = app.join("conv").await;
    assert_eq!(joined.status(), StatusCode::ACCEPTED);
    assert_eq!(joined.headers()["cache-control"], "no-store");
    let location = joined.headers()["location"].to_str().unwrap().to_owned();
    let id = ticket_id(&joined.json().await.unwrap());
    assert_eq!(location, routes::ticket(routes::TICKET, "conv", &id));
    let polled = app.get(&location).await;
    assert_eq!(polled.status(), StatusCode::OK);
    assert_eq!(polled.headers()["cache-control"], "no-store");
    // The store gone: 503, with a Retry-After the clients honour.
    drop(app.redis.take());
    let r = app.join("conv").await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().contains_key("retry-after"));
    app.stop().await;
}

/// Pages, scripts and JSON are gzipped for a client that asks; an event stream never is (it
/// must reach the fan event by event).
#[tokio::test]
async fn pages_and_scripts_are_compressed_and_event_streams_are_not() {
    let app = spawn_app(Backend::Memory).await;
    app.create("gz").await;
    let get = |path: String| {
        app.client
            .get(app.url(&path))
            .header("accept-encoding", "gzip")
            .send()
    };
    for path in ["/wait/gz".to_owned(), "/static/wait.js".to_owned()] {
        let r = get(path.clone()).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(r.headers()["content-encoding"], "gzip", "{path}");
        let zipped = r.bytes().await.unwrap().len();
        let plain = app.get(&path).await.bytes().await.unwrap().len();
        assert!(zipped * 2 < plain, "{path}: {zipped} of {plain} bytes");
    }
    let id = ticket_id(&app.join_ok("gz").await);
    let mut events = get(routes::ticket(routes::EVENTS, "gz", &id))
        .await
        .unwrap();
    assert!(events.headers().get("content-encoding").is_none());
    let first = tokio::time::timeout(Duration::from_secs(5), events.chunk())
        .await
        .expect("the first event comes at once")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&first).contains("event: waiting"));
    app.stop().await;
}
