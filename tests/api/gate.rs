//! The gate holds (issue "The gate holds…"): every hole an attacker found through HTTP, shut,
//! on the embedded store and on real Redis. Redis restarts here are real restarts of a real
//! `redis-server`.

use std::time::Duration;

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use waiting_room::config::Config;

use crate::helpers::{
    Backend, RedisBehind, SseReader, TOKEN, TestApp, events_path, metrics_text, spawn_app,
    spawn_app_with, ticket_id,
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
    holds_belong_to_their_show,
    one_admission_places_one_order,
    shows_exist_only_when_an_operator_makes_them,
    a_deleted_show_takes_its_state_and_its_tickets_with_it,
    the_ticket_cookie_is_the_servers_alone,
);

async fn order(
    app: &TestApp,
    show: &str,
    hold: &str,
    email: &str,
    ticket: Option<&str>,
) -> Response {
    let mut req = app.client.post(app.url("/orders")).json(&json!({
        "showId": show, "holdId": hold, "customerEmail": email, "amount": 350.00
    }));
    if let Some(t) = ticket {
        req = req.header("X-Admission-Ticket", t);
    }
    req.send().await.unwrap()
}

async fn json_of(r: Response) -> Value {
    assert_eq!(r.headers()["content-type"], "application/json");
    r.json().await.unwrap()
}

/// Opens `show`, joins one fan and waits for its admission.
async fn admitted_fan(app: &TestApp, show: &str) -> String {
    let id = ticket_id(&app.join_ok(show).await);
    app.wait_admitted(show, &id, Duration::from_secs(3)).await;
    id
}

async fn holds_belong_to_their_show(backend: Backend) {
    let app = spawn_app(backend).await;
    app.open("show-42").await;
    app.create("side").await;
    // The attacker orders hold-0100 on a show with no gate (a made-up one is 404 now).
    let made_up = order(&app, "made-up", "hold-0100", "mallory@example.com", None).await;
    assert_eq!(made_up.status(), StatusCode::NOT_FOUND);
    json_of(made_up).await;
    let theirs = order(&app, "side", "hold-0100", "mallory@example.com", None).await;
    assert_eq!(theirs.status(), StatusCode::CREATED);
    // The admitted fan of show-42 ordering hold-0100 gets an order of its own.
    let fan = admitted_fan(&app, "show-42").await;
    let mine = order(&app, "show-42", "hold-0100", "caio@example.com", Some(&fan)).await;
    assert_eq!(mine.status(), StatusCode::CREATED);
    let mine = json_of(mine).await;
    assert_eq!(mine["customerEmail"], "caio@example.com");
    assert_eq!(mine["showId"], "show-42");
    // The very same request again is the same order, 200.
    let again = order(&app, "show-42", "hold-0100", "caio@example.com", Some(&fan)).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(json_of(again).await["id"], mine["id"]);
    // Anything else on that hold is 409, and says nothing of the order.
    let other = order(&app, "side", "hold-0100", "eve@example.com", None).await;
    assert_eq!(other.status(), StatusCode::CONFLICT);
    let body = json_of(other).await;
    let text = body.to_string();
    assert!(
        !text.contains("mallory") && !text.contains("caio"),
        "{text}"
    );
    assert_eq!(body["status"], 409);
    app.stop().await;
}

async fn one_admission_places_one_order(backend: Backend) {
    let app = spawn_app(backend).await;
    app.open("show-42").await;
    let fan = admitted_fan(&app, "show-42").await;
    let first = order(&app, "show-42", "hold-0101", "caio@example.com", Some(&fan)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = json_of(first).await;
    for hold in ["hold-0102", "hold-0103"] {
        let more = order(&app, "show-42", hold, "caio@example.com", Some(&fan)).await;
        assert_eq!(more.status(), StatusCode::CONFLICT, "{hold}");
        let msg = json_of(more).await["message"].as_str().unwrap().to_owned();
        assert!(msg.contains("one admission"), "{msg}");
    }
    // Retries of the one order still answer it.
    let retry = order(&app, "show-42", "hold-0101", "caio@example.com", Some(&fan)).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(json_of(retry).await["id"], first["id"]);
    // Racing twins: of many different holds sent at once with one admission, one wins.
    let other_fan = admitted_fan(&app, "show-42").await;
    let racers = (0..8).map(|i| {
        let hold = format!("race-{i}");
        let app = &app;
        let fan = other_fan.clone();
        async move {
            order(app, "show-42", &hold, "ana@example.com", Some(&fan))
                .await
                .status()
        }
    });
    let statuses = futures::future::join_all(racers).await;
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::CREATED || *s == StatusCode::CONFLICT)
    );
    // Buying frees the place: the show counts no active buyer left.
    assert_eq!(app.stats("show-42").await["admittedValid"], 0);
    app.stop().await;
}

async fn shows_exist_only_when_an_operator_makes_them(backend: Backend) {
    let app = spawn_app(backend).await;
    let keys_before = match &app.redis {
        Some(r) => Some(dbsize(r).await),
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
            .client
            .get(app.url(&events_path(&show, &ticket)))
            .send()
            .await
            .unwrap();
        assert_eq!(events.status(), StatusCode::NOT_FOUND);
        json_of(events).await;
        let ws = app
            .client
            .get(app.url(&format!("/orders/waiting-room/{show}/tickets/{ticket}/ws")))
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .send()
            .await
            .unwrap();
        assert_eq!(ws.status(), StatusCode::NOT_FOUND);
        let ordered = order(&app, &show, "h", "a@b.co", None).await;
        assert_eq!(ordered.status(), StatusCode::NOT_FOUND);
        let page = app
            .client
            .get(app.url(&format!("/wait/{show}")))
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::NOT_FOUND);
    }
    if let (Some(r), Some(before)) = (&app.redis, keys_before) {
        assert_eq!(
            dbsize(r).await,
            before,
            "nothing was written for made-up shows"
        );
    }
    let metrics = metrics_text(&app.client, &app.url("")).await;
    assert!(!metrics.contains("made-up"), "no series for made-up shows");
    // An operator makes a show: 201, then 200 with its settings.
    let made = app
        .client
        .put(app.url("/orders/waiting-room/gig"))
        .bearer_auth(TOKEN)
        .json(&json!({"admitPerSecond": 7, "maxActiveBuyers": 50}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), StatusCode::CREATED);
    let stats = json_of(made).await;
    assert_eq!(
        (stats["admitPerSecond"].as_u64(), stats["open"].as_bool()),
        (Some(7), Some(false))
    );
    let again = app
        .client
        .put(app.url("/orders/waiting-room/gig"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(json_of(again).await["maxActiveBuyers"], 50);
    let unauthorized = app
        .client
        .put(app.url("/orders/waiting-room/gig2"))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
    let bad = app
        .client
        .put(app.url("/orders/waiting-room/gig"))
        .bearer_auth(TOKEN)
        .json(&json!({"admitPerSecond": 10_001}))
        .send()
        .await
        .unwrap();
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
    let mut stream =
        SseReader::connect(&app.client, &app.url(&events_path("gone", &waiting)), None).await;
    assert_eq!(
        stream.next(Duration::from_secs(2)).await.unwrap().event,
        "waiting"
    );
    let delete = |auth: bool| {
        let mut req = app.client.delete(app.url("/orders/waiting-room/gone"));
        if auth {
            req = req.bearer_auth(TOKEN);
        }
        req.send()
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
    let refused = order(&app, "gone", "h-1", "caio@example.com", Some(&admitted)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(app.join_ok("gone").await["position"], 1);
    app.stop().await;
}

async fn dbsize(redis: &RedisBehind) -> u64 {
    let mut conn = redis.server().conn().await;
    ::redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap()
}

fn slow_config(rate: u32) -> Config {
    Config {
        admit_per_second: rate,
        ..Config::for_tests()
    }
}

#[tokio::test]
async fn redis_forgetting_never_opens_the_gate() {
    let mut app = spawn_app_with(Backend::Redis, slow_config(1)).await;
    app.open("show-42").await;
    let admitted = admitted_fan(&app, "show-42").await;
    app.set_rate("show-42", 1).await;
    let mut waiting = Vec::new();
    for _ in 0..3 {
        waiting.push(ticket_id(&app.join_ok("show-42").await));
    }
    // Hold the admitter back, so the fans stay queued: close the show, follow the last fan.
    assert_eq!(
        app.operator("show-42", "close").await.status(),
        StatusCode::NO_CONTENT
    );
    app.open("show-42").await;
    let last = waiting.last().unwrap().clone();
    let mut stream =
        SseReader::connect(&app.client, &app.url(&events_path("show-42", &last)), None).await;
    assert_eq!(
        stream.next(Duration::from_secs(2)).await.unwrap().event,
        "waiting"
    );
    assert_eq!(
        app.client
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );

    // Redis restarts with nothing: wr:open is gone, the queue too.
    match app.redis.as_mut().unwrap() {
        RedisBehind::Server(s) => s.restart().await,
        RedisBehind::Cluster(_) => unreachable!(),
    }
    // Within a few seconds every instance knows, and says so.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
        if ready.status() == StatusCode::SERVICE_UNAVAILABLE {
            // While the store reconnects it says "store unavailable"; then, the loss.
            let msg = json_of(ready).await["message"].as_str().unwrap().to_owned();
            if msg.contains("show-42") {
                assert!(msg.contains("lost"), "{msg}");
                break;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "readyz never said the show was lost"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The gate stays shut: no ticket, the old admission, anything: 503 saying why.
    for ticket in [None, Some(admitted.as_str())] {
        let r = order(&app, "show-42", "hold-0100", "caio@example.com", ticket).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{ticket:?}");
        let msg = json_of(r).await["message"].as_str().unwrap().to_owned();
        assert!(msg.contains("lost") && msg.contains("re-open"), "{msg}");
    }
    assert_eq!(
        app.join("show-42").await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let stats = app.stats("show-42").await;
    assert_eq!(
        (stats["lost"].as_bool(), stats["open"].as_bool()),
        (Some(true), Some(false))
    );
    let metrics = metrics_text(&app.client, &app.url("")).await;
    assert!(
        metrics.contains("waiting_room_show_lost{show=\"show-42\"} 1"),
        "{metrics}"
    );
    // The stream of a ticket the store no longer knows is told so, never admitted.
    let told = stream
        .next(Duration::from_secs(3))
        .await
        .expect("the follower is told");
    assert_eq!(told.event, "unknown", "{told:?}");
    // The admitter admits nothing from a queue that restarted from nothing.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(app.stats("show-42").await["admittedValid"], 0);

    // The operator re-opens deliberately: a new queue, the gate shut again.
    app.open("show-42").await;
    assert_eq!(
        app.client
            .get(app.url("/readyz"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    let stats = app.stats("show-42").await;
    assert_eq!(
        (stats["lost"].as_bool(), stats["open"].as_bool()),
        (Some(false), Some(true))
    );
    let no_ticket = order(&app, "show-42", "hold-0100", "caio@example.com", None).await;
    assert_eq!(no_ticket.status(), StatusCode::FORBIDDEN);
    let old = order(
        &app,
        "show-42",
        "hold-0100",
        "caio@example.com",
        Some(&admitted),
    )
    .await;
    assert_eq!(
        old.status(),
        StatusCode::FORBIDDEN,
        "an admission of the old epoch opens nothing"
    );
    // New joins reuse the old sequence numbers; the old tickets stay unknown when those are
    // admitted.
    let fresh = ticket_id(&app.join_ok("show-42").await);
    app.wait_admitted("show-42", &fresh, Duration::from_secs(3))
        .await;
    for old in &waiting {
        assert_eq!(app.ticket_json("show-42", old).await["status"], "UNKNOWN");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_show_fenced_above_the_counter_heals_and_never_starves_the_others() {
    let app = spawn_app_with(Backend::Redis, slow_config(2)).await;
    app.open("stuck").await;
    app.open("other").await;
    // Let the admitter lead, then lose the {admitter} slot's keys while the show keeps its
    // fence: the next leader's token is far below it.
    let first = admitted_fan(&app, "other").await;
    let mut conn = app.redis.as_ref().unwrap().server().conn().await;
    let _: () = ::redis::cmd("SET")
        .arg("wr:{stuck}:fence")
        .arg(1000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = ::redis::cmd("DEL")
        .arg("wr:{admitter}:fence")
        .arg("wr:{admitter}:lease")
        .query_async(&mut conn)
        .await
        .unwrap();
    let stuck: Vec<String> = {
        let mut t = Vec::new();
        for _ in 0..3 {
            t.push(ticket_id(&app.join_ok("stuck").await));
        }
        t
    };
    let other: Vec<String> = {
        let mut t = Vec::new();
        for _ in 0..3 {
            t.push(ticket_id(&app.join_ok("other").await));
        }
        t
    };
    // The other show is served all along, and the stuck one heals within a few ticks.
    for t in &other {
        app.wait_admitted("other", t, Duration::from_secs(4)).await;
    }
    for t in &stuck {
        app.wait_admitted("stuck", t, Duration::from_secs(6)).await;
    }
    let token: u64 = ::redis::cmd("GET")
        .arg("wr:{admitter}:fence")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(token > 1000, "the healed token passed the fence: {token}");
    assert_ne!(first, stuck[0]);
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
