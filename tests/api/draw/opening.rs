//! A scheduled show: fans wait unplaced in its pre-queue, and the show opens by itself and
//! draws them into the order its published seed says.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use waiting_room::draw::{self, order_key};
use waiting_room::model::AuditKind;
use waiting_room::protocol::routes;

use super::{audit_of, draw_of, drawn, permutation, scheduled};
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::ticket_id;

all_stores!(the_pre_queue_waits_unplaced_and_opens_by_itself_in_drawn_order);

async fn the_pre_queue_waits_unplaced_and_opens_by_itself_in_drawn_order(backend: Backend) {
    let app = spawn_app_with(backend, config(4, Duration::from_secs(300))).await;
    // Opening in 4 s: thirty joins on a slow machine are well inside it.
    scheduled(&app, "gig", 4.0, 4).await;
    let before = draw_of(&app, "gig").await;
    assert!(draw::is_hex64(&before.commitment), "{before:?}");
    assert_eq!(before.seed, None, "the seed stays secret until the draw");
    assert_eq!(before.participants, None);

    // Thirty fans join the pre-queue: no place yet, an arrival number, a countdown.
    let mut tickets = Vec::new();
    for arrival in 1..=30u64 {
        let t = app.join_ok("gig").await;
        assert_eq!(t["status"], "WAITING", "{t}");
        assert_eq!(t["preQueue"], true, "{t}");
        assert_eq!(t["arrival"], arrival, "{t}");
        assert!(
            t.get("position").is_none(),
            "no position before the draw: {t}"
        );
        assert!(t.get("etaSeconds").is_none(), "{t}");
        assert!(
            (1..=4).contains(&t["opensInSeconds"].as_u64().unwrap()),
            "{t}"
        );
        tickets.push(ticket_id(&t));
    }
    let polled = app.ticket_json("gig", &tickets[9]).await;
    assert_eq!(polled["preQueue"], true, "{polled}");
    // One of them follows live, one leaves before the draw.
    let mut live = app.events("gig", &tickets[9]).await;
    let first = live.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.event, "waiting");
    assert_eq!(first.data["preQueue"], true, "{:?}", first.data);
    assert_eq!(app.leave("gig", &tickets[4]).await.status(), 204);

    let d = drawn(&app, "gig", Duration::from_secs(8)).await;
    assert_eq!(d.participants, Some(30));
    assert_eq!(
        draw::commitment(d.seed.as_deref().unwrap()),
        before.commitment
    );
    let p = permutation(&d);

    // The live fan is pushed its drawn place at once: a position, no more preQueue.
    let mut placed = None;
    while let Some(e) = live.next(Duration::from_secs(3)).await {
        if e.data.get("position").is_some() || e.event == "admitted" {
            placed = Some(e);
            break;
        }
    }
    let placed = placed.expect("a push after the draw");
    assert!(placed.data.get("preQueue").is_none(), "{:?}", placed.data);

    // A fan joining now queues behind the whole pre-queue.
    let late = app.join_ok("gig").await;
    assert_eq!(late["arrival"], 31);
    assert!(late.get("preQueue").is_none(), "{late}");
    // Paused: nothing moves while the positions are read.
    let r = app.operator(routes::PAUSE, "gig").await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    tokio::time::sleep(Duration::from_millis(1200)).await;

    // Frozen: who was let in is the head of the drawn order, and everyone else stands at
    // their rank by drawn place, the late fan last.
    let mut waiting: Vec<(u64, u64)> = Vec::new();
    let mut admitted: Vec<u64> = Vec::new();
    let all: Vec<String> = tickets.iter().cloned().chain([ticket_id(&late)]).collect();
    for (i, t) in all.iter().enumerate() {
        let arrival = i as u64 + 1;
        let v: Value = app.ticket_json("gig", t).await;
        match v["status"].as_str().unwrap() {
            "WAITING" => waiting.push((
                order_key(arrival, Some(&p)),
                v["position"].as_u64().unwrap(),
            )),
            "ADMITTED" => admitted.push(arrival),
            _ => assert_eq!(arrival, 5, "only the leaver is unknown: {v}"),
        }
    }
    assert!(!admitted.is_empty(), "the show opened and admitted");
    waiting.sort();
    for (rank, (_, position)) in waiting.iter().enumerate() {
        assert_eq!(
            *position,
            rank as u64 + 1,
            "positions follow the drawn order"
        );
    }
    let last_admitted = admitted
        .iter()
        .map(|&a| order_key(a, Some(&p)))
        .max()
        .unwrap();
    assert!(
        waiting.iter().all(|&(key, _)| key > last_admitted),
        "everyone admitted was drawn ahead of everyone waiting"
    );

    // The audit: the draw, then ticks admitting in drawn order; verify agrees.
    let records = audit_of(&app, "gig", 2).await;
    assert_eq!(records[0].kind, AuditKind::Draw);
    let mut audited: Vec<u64> = records
        .iter()
        .flat_map(|r| r.admitted.iter().flat_map(|&[a, b]| a..=b))
        .collect();
    let verified = draw::verify(Some(&d), &records, Some(10)).expect("fair");
    assert_eq!(verified.admitted, admitted.len() as u64);
    audited.sort();
    assert_eq!(
        audited, admitted,
        "the audit names exactly the admitted arrivals"
    );
    let report = verified.arrival.unwrap();
    assert_eq!(report.drawn_place, Some(p.place(10)));
    assert_eq!(
        report.admitted.is_some(),
        admitted.contains(&10),
        "{report:?}"
    );
    let text = serde_json::to_string(&records).unwrap();
    for t in &all {
        assert!(!text.contains(t.as_str()), "the audit never names a ticket");
    }
}
