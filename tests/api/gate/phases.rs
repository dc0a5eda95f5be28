//! The gate holds in every phase of an on-sale, and every fan is told the phase honestly:
//! made and not opened yet, scheduled, open, paused, closed (the gate lifted), ended, and
//! sold out by its stock. Through HTTP, on the embedded store and a real redis-server.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::model::AuditKind;
use waiting_room::protocol::routes;

use super::{admitted_fan, json_of};
use crate::support::app::{TestApp, config, spawn_app, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::sse::SseEvent;
use crate::support::ticket_id;

both_stores!(
    the_gate_is_shut_before_the_opening,
    a_pause_keeps_every_place_and_the_gate,
    closing_lifts_the_gate_and_sends_waiting_fans_on,
    an_ended_on_sale_refuses_joins_and_keeps_its_gate,
    the_stock_bounds_admissions_and_its_last_seat_ends_the_on_sale,
);

const WAIT: Duration = Duration::from_secs(5);

async fn end(app: &TestApp, show: &str, body: Option<Value>) -> StatusCode {
    let mut req = app.as_operator(reqwest::Method::POST, &routes::show(routes::END, show));
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap().status()
}

/// The next SSE event that is not `waiting` with the same view as before.
async fn next_event_named(sse: &mut crate::support::sse::SseReader, name: &str) -> SseEvent {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let e = sse
            .next(left)
            .await
            .unwrap_or_else(|| panic!("the stream ended before `{name}`"));
        if e.event == name {
            return e;
        }
    }
}

async fn the_gate_is_shut_before_the_opening(backend: Backend) {
    let app = spawn_app(backend).await;
    // Made, not opened: fans may queue, nobody buys without an admission.
    app.create("gig").await;
    let fan = app.join_ok("gig").await;
    assert_eq!(fan["status"], "WAITING");
    // The wait is counted from the opening, and says so: no countdown moves it now.
    assert_eq!(fan["paused"], "pending", "{fan}");
    assert!(fan.get("countdownPerSecond").is_none(), "{fan}");
    let made_up = uuid::Uuid::new_v4().to_string();
    for ticket in [None, Some(made_up.as_str()), Some(&ticket_id(&fan))] {
        let r = app.order("gig", "hold-0001", ticket).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{ticket:?}");
        let message = json_of(r).await["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains("/orders/waiting-room/gig/join"),
            "{message}"
        );
    }
    assert_eq!(app.stats("gig").await["phase"], "pending");
    // Nothing to pause before it opened.
    let paused = app.operator(routes::PAUSE, "gig").await;
    assert_eq!(paused.status(), StatusCode::CONFLICT);
    // Scheduled: the pre-queue, and the gate shut the same way.
    let opens = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(600)).to_string();
    app.create("later").await;
    let r = app.put_config("later", &json!({"opensAt": opens})).await;
    assert_eq!(r.status(), StatusCode::OK);
    let early = app.join_ok("later").await;
    assert_eq!(early["preQueue"], true, "{early}");
    for ticket in [None, Some(made_up.as_str()), Some(&ticket_id(&early))] {
        let r = app.order("later", "hold-0001", ticket).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{ticket:?}");
    }
    // Once open, the fan who queued first is let in and buys; nobody else did before.
    app.open("gig").await;
    let id = ticket_id(&fan);
    app.wait_admitted("gig", &id, WAIT).await;
    let r = app.order("gig", "hold-0001", Some(&id)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    app.stop().await;
}

async fn a_pause_keeps_every_place_and_the_gate(backend: Backend) {
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    app.open("p").await;
    let first = admitted_fan(&app, "p").await;
    app.operator(routes::PAUSE, "p").await;
    let waiting = app.join_many("p", 3).await;
    let mut sse = app.events("p", &waiting[2]).await;
    let told = sse.next(WAIT).await.unwrap();
    assert_eq!(told.event, "waiting");
    assert_eq!(told.data["paused"], "paused", "{:?}", told.data);
    assert_eq!(told.data["position"], 3);
    assert!(told.data.get("etaSeconds").is_none(), "{:?}", told.data);
    assert!(told.data.get("countdownPerSecond").is_none());
    // Pausing again changes nothing; the stats say it.
    assert_eq!(
        app.operator(routes::PAUSE, "p").await.status(),
        StatusCode::NO_CONTENT
    );
    let stats = app.stats("p").await;
    assert_eq!(stats["phase"], "paused", "{stats}");
    assert_eq!(stats["open"], false);
    // Ticks come and go: nobody is let in, nobody moves.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for (i, t) in waiting.iter().enumerate() {
        let v = app.ticket_json("p", t).await;
        assert_eq!(v["status"], "WAITING", "{v}");
        assert_eq!(v["position"], i + 1, "{v}");
    }
    // The gate stays shut for everyone else; the fan admitted before buys.
    assert_eq!(
        app.order("p", "hold-1", None).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.order("p", "hold-2", Some(&first)).await.status(),
        StatusCode::CREATED
    );
    // Open resumes: the first waiting fan is admitted, the follower is pushed a moving queue.
    app.open("p").await;
    app.wait_admitted("p", &waiting[0], WAIT).await;
    let moving = loop {
        let e = sse.next(WAIT).await.unwrap();
        if e.data.get("paused").is_none() {
            break e;
        }
    };
    assert_eq!(moving.event, "waiting");
    assert!(
        moving.data["etaSeconds"].as_u64().is_some(),
        "{:?}",
        moving.data
    );
    app.stop().await;
}

async fn closing_lifts_the_gate_and_sends_waiting_fans_on(backend: Backend) {
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    // One place behind the gate: nobody else is let in while the first fan holds it.
    app.create("c").await;
    app.configure("c", json!({"maxActiveBuyers": 1})).await;
    app.open("c").await;
    let admitted = admitted_fan(&app, "c").await;
    let waiting = app.join_many("c", 2).await;
    let mut sse = app.events("c", &waiting[1]).await;
    assert_eq!(sse.next(WAIT).await.unwrap().event, "waiting");
    app.close("c").await;
    // Pushed, polled and in the stats: the waiting room stepped aside.
    let closed = next_event_named(&mut sse, "closed").await;
    assert_eq!(closed.data["status"], "CLOSED", "{:?}", closed.data);
    assert!(closed.data.get("position").is_none());
    assert!(sse.next(WAIT).await.is_none(), "the stream ends");
    let polled = app.ticket("c", &waiting[0]).await;
    assert_eq!(polled.status(), StatusCode::OK);
    assert_eq!(json_of(polled).await["status"], "CLOSED");
    assert_eq!(app.stats("c").await["phase"], "closed");
    // No gate: the seed's order without a ticket goes through; the admitted fan is
    // admitted still.
    assert_eq!(
        app.order("c", "hold-1", None).await.status(),
        StatusCode::CREATED
    );
    assert_eq!(app.ticket_json("c", &admitted).await["status"], "ADMITTED");
    // Opened again, the queue is back as it was: every place kept.
    app.open("c").await;
    let back = app.ticket_json("c", &waiting[1]).await;
    assert_eq!(back["status"], "WAITING", "{back}");
    assert_eq!(back["position"], 2, "{back}");
    assert_eq!(
        app.order("c", "hold-2", None).await.status(),
        StatusCode::FORBIDDEN
    );
    app.stop().await;
}

async fn an_ended_on_sale_refuses_joins_and_keeps_its_gate(backend: Backend) {
    let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
    app.create("e").await;
    app.configure("e", json!({"maxActiveBuyers": 1})).await;
    app.open("e").await;
    let admitted = admitted_fan(&app, "e").await;
    let waiting = app.join_many("e", 2).await;
    let mut sse = app.events("e", &waiting[1]).await;
    assert_eq!(sse.next(WAIT).await.unwrap().event, "waiting");
    // A reason that is no reason is refused, and ends nothing.
    for bad in [
        json!({"reason": ""}),
        json!({"reason": "x".repeat(65)}),
        json!({"why": 1}),
    ] {
        assert_eq!(
            end(&app, "e", Some(bad.clone())).await,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    assert_eq!(app.stats("e").await["phase"], "open");
    assert_eq!(
        end(&app, "e", Some(json!({"reason": "sold out"}))).await,
        StatusCode::NO_CONTENT
    );
    let ended = next_event_named(&mut sse, "ended").await;
    assert_eq!(
        ended.data,
        json!({"ticketId": waiting[1], "status": "ENDED", "reason": "sold out"})
    );
    assert!(sse.next(WAIT).await.is_none(), "the stream ends");
    assert_eq!(
        app.ticket_json("e", &waiting[0]).await,
        json!({"ticketId": waiting[0], "status": "ENDED", "reason": "sold out"})
    );
    let stats = app.stats("e").await;
    assert_eq!(stats["phase"], "ended", "{stats}");
    assert_eq!(stats["reason"], "sold out", "{stats}");
    // Joins are gone; the gate stays shut; the fan admitted before may still buy.
    let join = app.join("e").await;
    assert_eq!(join.status(), StatusCode::GONE);
    assert!(
        json_of(join).await["message"]
            .as_str()
            .unwrap()
            .contains("ended")
    );
    assert_eq!(
        app.order("e", "hold-1", None).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.order("e", "hold-2", Some(&admitted)).await.status(),
        StatusCode::CREATED
    );
    // No admission after the end, and a stream opened now is told at once.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.stats("e").await["admittedValid"], 0);
    let mut late = app.events("e", &waiting[0]).await;
    assert_eq!(late.next(WAIT).await.unwrap().event, "ended");
    // Nothing to pause; an end without a reason is an end without one.
    assert_eq!(
        app.operator(routes::PAUSE, "e").await.status(),
        StatusCode::CONFLICT
    );
    assert_eq!(end(&app, "e", None).await, StatusCode::NO_CONTENT);
    assert_eq!(
        app.ticket_json("e", &waiting[0]).await,
        json!({"ticketId": waiting[0], "status": "ENDED"})
    );
    app.stop().await;
}

async fn the_stock_bounds_admissions_and_its_last_seat_ends_the_on_sale(backend: Backend) {
    let app = spawn_app_with(backend, config(10, Duration::from_secs(60))).await;
    app.create("s").await;
    let stats = app.configure("s", json!({"stock": 3})).await;
    assert_eq!(stats["stock"], 3, "{stats}");
    assert_eq!(stats["stockLeft"], 3, "{stats}");
    let bad = app
        .put_config("s", &json!({"stock": 1_000_000_000u64}))
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let fans = app.join_many("s", 6).await;
    assert_eq!(app.ticket_json("s", &fans[5]).await["stockLeft"], 3);
    app.open("s").await;
    // Ten places a tick, three seats: three fans in, and not one more while they hold them.
    for f in &fans[..3] {
        app.wait_admitted("s", f, WAIT).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stats = app.stats("s").await;
    assert_eq!(stats["admittedValid"], 3, "{stats}");
    assert_eq!(app.ticket_json("s", &fans[3]).await["position"], 1);
    // One gives its admission back: its seat goes to the next fan.
    assert_eq!(
        app.leave("s", &fans[2]).await.status(),
        StatusCode::NO_CONTENT
    );
    app.wait_admitted("s", &fans[3], WAIT).await;
    // Two buy: one seat left, told to the fans still waiting.
    for (i, f) in [&fans[0], &fans[1]].into_iter().enumerate() {
        let r = app.order("s", &format!("hold-{i}"), Some(f)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let v = app.ticket_json("s", &fans[5]).await;
        if v["stockLeft"] == 1 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.ticket_json("s", &fans[4]).await["status"], "WAITING");
    // The last seat sold ends the on-sale by itself.
    let mut sse = app.events("s", &fans[5]).await;
    assert_eq!(sse.next(WAIT).await.unwrap().event, "waiting");
    let r = app.order("s", "hold-2", Some(&fans[3])).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let ended = next_event_named(&mut sse, "ended").await;
    assert_eq!(ended.data["reason"], "sold out", "{:?}", ended.data);
    let stats = app.stats("s").await;
    assert_eq!(stats["phase"], "ended", "{stats}");
    assert_eq!(stats["stockLeft"], 0, "{stats}");
    assert_eq!(app.join("s").await.status(), StatusCode::GONE);
    // Even with the gate lifted, no order goes past the stock.
    app.close("s").await;
    let r = app.order("s", "hold-3", None).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert!(
        json_of(r).await["message"]
            .as_str()
            .unwrap()
            .contains("sold out")
    );
    // The public record: every order by the buyer's arrival number and nothing more, the
    // stock, the phases; `verify` finds every order admitted and within the stock.
    let records = crate::draw::audit_of(&app, "s", 100).await;
    let text = serde_json::to_string(&records).unwrap();
    for secret in fans
        .iter()
        .map(String::as_str)
        .chain(["caio@example.com", "hold-"])
    {
        assert!(!text.contains(secret), "the audit names {secret}: {text}");
    }
    let bought: Vec<u64> = records
        .iter()
        .filter(|r| r.kind == AuditKind::Order)
        .filter_map(|r| r.arrival)
        .collect();
    assert_eq!(bought, [1, 2, 4], "{text}");
    let verified = waiting_room::draw::verify(None, &records, None).expect("a fair sale");
    assert_eq!((verified.orders, verified.orders_admitted), (3, 3));
    app.stop().await;
}
