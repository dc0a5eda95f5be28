//! A show's schedule of events (docs/events.md): each event lays its settings over the show's
//! while it runs, applied at the tick, audited, announced in every ETA ahead; a schedule that
//! does not fit is refused whole and changes nothing.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::time::Instant;
use waiting_room::model::{AuditKind, AuditRecord};

use crate::cluster::leaders;
use crate::draw::audit_of;
use crate::lanes::{joined_with, upload};
use crate::support::api::Api;
use crate::support::app::{config, spawn_app, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

both_stores!(
    a_schedule_changes_the_settings_at_its_times_and_audits_each_change,
    every_eta_counts_with_the_next_events_rate,
    events_open_pause_and_end_the_sale_with_its_lanes_at_their_times
);

/// `secs` from now (negative: ago) as RFC 3339.
fn in_secs(secs: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs)).to_string()
}

/// The audit's schedule changes: (the event running from then, the rate in force).
async fn event_records(api: &Api, show: &str) -> Vec<(Option<u32>, Option<u32>)> {
    let records: Vec<AuditRecord> = audit_of(api, show, 1000).await;
    records
        .iter()
        .filter(|r| r.kind == AuditKind::Event)
        .map(|r| (r.event, r.rate))
        .collect()
}

async fn a_schedule_changes_the_settings_at_its_times_and_audits_each_change(backend: Backend) {
    let app = spawn_app(backend).await;
    // A presale that already runs and ends in 3 s, then a gap of 6 s (ticks come every
    // second), then the general sale for good.
    let events = json!([
        {"name": "presale", "startsAt": in_secs(-60), "endsAt": in_secs(3),
         "settings": {"admitPerSecond": 7, "joinChallengeBits": 4}},
        {"name": "general", "startsAt": in_secs(9),
         "settings": {"admitPerSecond": 9, "maxActiveBuyers": 4}},
    ]);
    let s = app
        .configure("fest", json!({"admitPerSecond": 3, "events": events}))
        .await;
    // Sent while the presale should run: in force at once, before any tick.
    assert_eq!(s["admitPerSecond"], 7, "{s}");
    assert_eq!(s["joinChallengeBits"], 4, "{s}");
    assert_eq!(s["runningEvent"], 1, "{s}");
    // The operator's settings answered whole: the schedule as sent, the show's own rate.
    assert_eq!(s["settings"]["admitPerSecond"], 3, "{s}");
    assert_eq!(s["settings"]["events"], events, "{s}");
    app.open("fest").await;

    // The presale ends: the show's own settings again, applied by a tick.
    let s = app
        .stats_until("fest", Duration::from_secs(30), |s| {
            s.get("runningEvent").is_none()
        })
        .await;
    assert_eq!(s["admitPerSecond"], 3, "{s}");
    assert_eq!(s["joinChallengeBits"], 0, "{s}");
    // The general sale starts.
    let s = app
        .stats_until("fest", Duration::from_secs(30), |s| s["runningEvent"] == 2)
        .await;
    assert_eq!(
        (&s["admitPerSecond"], &s["maxActiveBuyers"]),
        (&json!(9), &json!(4)),
        "{s}"
    );

    // A setting sent while an event runs is the show's own: laid under the event.
    let s = app.configure("fest", json!({"admitPerSecond": 5})).await;
    assert_eq!(s["admitPerSecond"], 9, "{s}");
    assert_eq!(s["settings"]["admitPerSecond"], 5, "{s}");
    // The schedule removed: the show's own settings at once.
    let s = app.configure("fest", json!({"events": []})).await;
    assert_eq!(s["admitPerSecond"], 5, "{s}");
    assert!(s.get("runningEvent").is_none(), "{s}");
    assert!(s["settings"].get("events").is_none(), "{s}");

    // Every change of the running event audited, with the rate from then.
    assert_eq!(
        event_records(&app, "fest").await,
        [
            (Some(1), Some(7)),
            (None, Some(3)),
            (Some(2), Some(9)),
            (None, Some(5))
        ]
    );
    app.stop().await;
}

async fn every_eta_counts_with_the_next_events_rate(backend: Backend) {
    let app = spawn_app_with(backend, config(10, Duration::from_secs(300))).await;
    app.configure("tour", json!({"admitPerSecond": 10})).await;
    let tickets = app.join_many("tour", 2000).await;
    app.open("tour").await;
    let last = tickets.last().unwrap();
    let plain = |view: &Value| view["position"].as_u64().unwrap().div_ceil(10);
    let t = app.ticket_json("tour", last).await;
    assert_eq!(t["etaSeconds"], plain(&t), "{t}");
    // Halved from a minute on by the schedule: every place past the first minute's comes at
    // 5 a second, so the last fan waits far longer than the plain rate says.
    app.configure(
        "tour",
        json!({"events": [{"startsAt": in_secs(60), "settings": {"admitPerSecond": 5}}]}),
    )
    .await;
    let t = app.ticket_json("tour", last).await;
    let eta = t["etaSeconds"].as_u64().unwrap();
    assert!(eta > plain(&t) + 60, "{t}");
    // Nothing runs yet: the rate in force is the show's.
    let s = app.stats("tour").await;
    assert_eq!(
        (&s["admitPerSecond"], s.get("runningEvent")),
        (&json!(10), None),
        "{s}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_schedule_that_does_not_fit_is_refused_whole() {
    let app = spawn_app(Backend::Memory).await;
    app.configure("tidy", json!({"admitPerSecond": 3})).await;
    let event = |starts: i64, ends: Option<i64>, settings: Value| {
        let mut e = json!({"startsAt": in_secs(starts), "settings": settings});
        if let Some(ends) = ends {
            e["endsAt"] = json!(in_secs(ends));
        }
        e
    };
    let many: Vec<Value> = (0..101)
        .map(|i| event(100 + i * 10, None, json!({})))
        .collect();
    // Each refused by the check, which names the setting.
    let bad = [
        // Overlapping: the second starts before the first ends.
        json!([
            event(100, Some(300), json!({})),
            event(200, None, json!({}))
        ]),
        // Out of order.
        json!([event(300, None, json!({})), event(200, None, json!({}))]),
        // Ending before it starts.
        json!([event(300, Some(200), json!({}))]),
        // A setting an event may not set, one out of bounds, one nobody knows.
        json!([event(100, None, json!({"stock": 10}))]),
        json!([event(100, None, json!({"admitPerSecond": 0}))]),
        // Not a time, or further than a year.
        json!([{"startsAt": "tomorrow", "settings": {}}]),
        json!([event(400 * 24 * 3600, None, json!({}))]),
        // A name with a control character, and too many events.
        json!([{"name": "pre\u{7}sale", "startsAt": in_secs(100), "settings": {}}]),
        json!(many),
    ];
    // Refused as JSON that is not a schedule at all (as any body that does not fit its type).
    let malformed = [
        json!([event(100, None, json!({"admitPerSecnd": 4}))]),
        json!({"startsAt": in_secs(100)}),
        json!([{"startsAt": 1_800_000_000, "settings": {}}]),
    ];
    for events in bad {
        let r = app.put_config("tidy", &json!({"events": events})).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{events}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body.to_string().contains("events: "),
            "the refusal names the setting: {body}"
        );
    }
    for events in malformed {
        let r = app.put_config("tidy", &json!({"events": events})).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{events}");
    }
    // Nothing changed.
    let s = app.stats("tidy").await;
    assert!(s["settings"].get("events").is_none(), "{s}");
    assert_eq!(s["admitPerSecond"], 3, "{s}");
    app.stop().await;
}

/// Two server processes on one redis-server of their own (kept alive with them).
async fn two_servers() -> (RedisServer, [ServerProcess; 2]) {
    let redis = RedisServer::start().await;
    let servers = [
        ServerProcess::start(&redis.url(), 2, &[]).await,
        ServerProcess::start(&redis.url(), 2, &[]).await,
    ];
    (redis, servers)
}

/// Which of `servers` leads the admitter, once exactly one does.
async fn one_leader(servers: &[ServerProcess; 2]) -> usize {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let found = leaders(&[&servers[0], &servers[1]]).await;
        if let [i] = found[..] {
            return i;
        }
        assert!(Instant::now() < until, "no one leader: {found:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The tick that applies an event is the admitter's: with the leader killed just before an
/// event starts, the instance that takes over applies it once, under its own fencing token.
#[tokio::test]
async fn an_event_comes_at_its_time_across_a_leader_kill() {
    let (_redis, mut servers) = two_servers().await;
    servers[0].create("relay").await;
    servers[0].join_many("relay", 200).await;
    servers[0].open("relay").await;
    let until = Instant::now() + Duration::from_secs(30);
    let leader = one_leader(&servers).await;
    let survivor = 1 - leader;
    // The leader has admitted under its token before it dies.
    let dead_fences = loop {
        let records = audit_of(&servers[survivor], "relay", 1000).await;
        let fences: Vec<u64> = records
            .iter()
            .filter(|r| r.kind == AuditKind::Tick)
            .map(|r| r.fence)
            .collect();
        if fences.len() >= 2 {
            break fences;
        }
        assert!(Instant::now() < until, "no ticks: {records:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    servers[survivor]
        .configure(
            "relay",
            json!({"events": [{"startsAt": in_secs(5), "settings": {"admitPerSecond": 4}}]}),
        )
        .await;
    servers[leader].kill();
    let s = servers[survivor]
        .stats_until("relay", Duration::from_secs(60), |s| s["runningEvent"] == 1)
        .await;
    assert_eq!(s["admitPerSecond"], 4, "{s}");

    // Applied once, by a tick under the survivor's token, newer than the dead leader's.
    let records = audit_of(&servers[survivor], "relay", 1000).await;
    let applied: Vec<&AuditRecord> = records
        .iter()
        .filter(|r| r.kind == AuditKind::Event)
        .collect();
    assert_eq!(applied.len(), 1, "{applied:?}");
    let at = records
        .iter()
        .position(|r| r.kind == AuditKind::Event)
        .unwrap();
    let fence = applied[0].fence;
    assert!(
        dead_fences.iter().all(|&f| f < fence),
        "the dead leader's ticks {dead_fences:?}, the event's fence {fence}: {records:?}"
    );
    // The ticks after it admit at the event's rate, under the same token.
    let until = Instant::now() + Duration::from_secs(30);
    let later = loop {
        let records = audit_of(&servers[survivor], "relay", 1000).await;
        let later: Vec<AuditRecord> = records[at + 1..]
            .iter()
            .filter(|r| r.kind == AuditKind::Tick)
            .cloned()
            .collect();
        if later.len() >= 2 {
            break later;
        }
        assert!(
            Instant::now() < until,
            "no ticks after the event: {records:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let admitted = |r: &AuditRecord| r.admitted.iter().map(|[a, b]| b - a + 1).sum::<u64>();
    assert!(
        later
            .iter()
            .all(|r| r.fence == fence && r.rate == Some(4) && admitted(r) == 4),
        "{later:?}"
    );
}

/// The phases of an audit, in order, and whether every tick came while the sale was open.
fn phases_and_ticks(records: &[AuditRecord]) -> (Vec<String>, bool) {
    let mut phases = Vec::new();
    let mut open = false;
    let mut ticks_open = true;
    for r in records {
        match r.kind {
            AuditKind::Phase => {
                let p = serde_json::to_value(r.phase).unwrap();
                open = p == "open";
                phases.push(p.as_str().unwrap_or("").to_owned());
            }
            AuditKind::Tick => ticks_open &= open,
            _ => {}
        }
    }
    (phases, ticks_open)
}

/// A sale run by its schedule alone: a presale of codes only opens it, a pause, the general
/// sale opens it again with the presale lane beside the general queue, and the end. Each
/// starts at its tick with nobody calling, and no fan is admitted while it is not open.
async fn events_open_pause_and_end_the_sale_with_its_lanes_at_their_times(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(300))).await;
    let lanes = json!([{"name": "presale", "share": 50}]);
    // Each step's calls take milliseconds; the windows are wide, so that a machine three times
    // slower still makes them inside (nothing waits for a phase that lasts a moment).
    let events = json!([
        {"name": "presale", "startsAt": in_secs(2), "phase": "open",
         "settings": {"lanes": lanes, "codesOnly": true}},
        {"name": "break", "startsAt": in_secs(20), "phase": "paused"},
        {"name": "general", "startsAt": in_secs(22), "phase": "open",
         "settings": {"lanes": lanes, "admitPerSecond": 3}},
        {"name": "over", "startsAt": in_secs(34), "phase": "ended"},
    ]);
    app.configure("tour", json!({"events": events})).await;
    let codes: String = (0..40)
        .map(|i| format!("TOUR-CODE-{i:02},presale\n"))
        .collect();
    assert_eq!(upload(&app, "tour", codes).await.status(), StatusCode::OK);
    assert_eq!(app.stats("tour").await["phase"], "pending");
    // The presale opens the sale by itself: codes only.
    app.stats_until("tour", Duration::from_secs(60), |s| s["phase"] == "open")
        .await;
    let refused = app.join("tour").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    for i in 0..20 {
        joined_with(&app, "tour", &format!("TOUR-CODE-{i:02}")).await;
    }
    // The break pauses it (the audit shows it below), the general sale opens it again for all.
    let s = app
        .stats_until("tour", Duration::from_secs(60), |s| s["runningEvent"] == 3)
        .await;
    assert_eq!(s["phase"], "open", "{s}");
    app.join_ok("tour").await;
    // And it ends.
    app.stats_until("tour", Duration::from_secs(60), |s| s["phase"] == "ended")
        .await;
    let records = audit_of(&app, "tour", 1000).await;
    let (phases, ticks_open) = phases_and_ticks(&records);
    assert_eq!(phases, ["open", "paused", "open", "ended"], "{records:?}");
    assert!(ticks_open, "a tick while not open: {records:?}");
    assert!(
        records
            .iter()
            .any(|r| r.kind == AuditKind::Tick && !r.lanes.is_empty()),
        "{records:?}"
    );
    waiting_room::draw::verify(None, &records, None).expect("fair");
    app.stop().await;
}

/// An event that opens a sale comes at its time across a leader kill: the survivor opens it
/// once, under its token, and admits from then.
#[tokio::test]
async fn an_event_opens_the_sale_across_a_leader_kill() {
    let (_redis, mut servers) = two_servers().await;
    servers[0].create("dawn").await;
    servers[0].join_many("dawn", 50).await;
    let leader = one_leader(&servers).await;
    let survivor = 1 - leader;
    servers[survivor]
        .configure(
            "dawn",
            json!({"events": [{"startsAt": in_secs(5), "phase": "open",
                               "settings": {"admitPerSecond": 4}}]}),
        )
        .await;
    servers[leader].kill();
    servers[survivor]
        .stats_until("dawn", Duration::from_secs(60), |s| s["phase"] == "open")
        .await;
    let until = Instant::now() + Duration::from_secs(30);
    let records = loop {
        let records = audit_of(&servers[survivor], "dawn", 1000).await;
        if records.iter().filter(|r| r.kind == AuditKind::Tick).count() >= 2 {
            break records;
        }
        assert!(Instant::now() < until, "no ticks: {records:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Opened once, by the event applied under the survivor's token; its ticks follow.
    let (phases, ticks_open) = phases_and_ticks(&records);
    assert_eq!(phases, ["open"], "{records:?}");
    assert!(ticks_open);
    let event = records
        .iter()
        .find(|r| r.kind == AuditKind::Event)
        .expect("the event applied");
    assert!(event.fence > 0, "{event:?}");
    assert!(
        records
            .iter()
            .filter(|r| r.kind == AuditKind::Tick)
            .all(|r| r.fence == event.fence && r.rate == Some(4)),
        "{records:?}"
    );
}
