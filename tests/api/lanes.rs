//! Presale and priority codes, and the lanes they join (docs/lanes.md): codes uploaded as a
//! CSV and kept hashed, a code spent once a use, lanes admitted at their shares (or first,
//! with priority) and first in, first out inside each, positions and ETAs per lane, pushed
//! as polled; the audit names each use by the code's hash and verifies the lanes.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::draw;
use waiting_room::model::{AuditKind, LANE_SPAN};
use waiting_room::protocol::{ACCESS_CODE_FALLBACK_HEADER, ACCESS_CODE_HEADER, routes};

use crate::draw::audit_of;
use crate::support::api::Api;
use crate::support::app::{config, spawn_app, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::ticket_id;

both_stores!(
    codes_join_their_lanes_which_keep_their_shares_in_arrival_order,
    a_priority_lane_goes_first_and_its_positions_are_pushed_as_polled,
    refused_codes_are_throttled_and_a_presale_takes_codes_only,
    hostile_uploads_are_refused_and_add_nothing
);
// Codes on a Redis Cluster: every key of a show, its codes and lanes too, in one slot.
on_stores!([cluster: Cluster] [codes_join_their_lanes_which_keep_their_shares_in_arrival_order]);

/// `POST …/codes` with `csv`.
pub(crate) async fn upload(api: &Api, show: &str, csv: String) -> reqwest::Response {
    api.as_operator(reqwest::Method::POST, &routes::show(routes::CODES, show))
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap()
}

/// The show's codes by lane, as `GET …/codes` counts them.
async fn counts(api: &Api, show: &str) -> Value {
    let r = api
        .as_operator(reqwest::Method::GET, &routes::show(routes::CODES, show))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// A join with `code` (and the fallback, if asked).
pub(crate) async fn join_with(
    api: &Api,
    show: &str,
    code: &str,
    fallback: bool,
) -> reqwest::Response {
    let mut r = api
        .client
        .post(api.url(&routes::show(routes::JOIN, show)))
        .header(ACCESS_CODE_HEADER, code);
    if fallback {
        r = r.header(ACCESS_CODE_FALLBACK_HEADER, "general");
    }
    r.send().await.unwrap()
}

/// A join with `code` that goes in: its ticket JSON.
pub(crate) async fn joined_with(api: &Api, show: &str, code: &str) -> Value {
    let r = join_with(api, show, code, false).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED, "{code}");
    r.json().await.unwrap()
}

async fn codes_join_their_lanes_which_keep_their_shares_in_arrival_order(backend: Backend) {
    // Ten places a second; nobody is passed over for being away.
    let app = spawn_app_with(backend, config(10, Duration::from_secs(300))).await;
    app.configure(
        "fest",
        json!({"lanes": [{"name": "presale", "share": 80}], "awayHoldSeconds": 0}),
    )
    .await;
    // 10,000 single-use codes, a code of three uses, and lines a hand-made file gets wrong.
    // A spreadsheet's export, byte order mark and all.
    let mut csv = String::from("\u{feff}code,lane,uses\n");
    for i in 0..10_000 {
        csv += &format!("PRE-{i:06},presale\n");
    }
    csv += "MULTI-777777,presale,3\r\n";
    csv += "short,presale\n"; // too short
    csv += "BAD\u{7}CODE-1,presale\n"; // a control character
    csv += "GOOD-CODE-1,General\n"; // not a lane's name
    csv += "GOOD-CODE-2,presale,0\n"; // no use
    csv += "GOOD-CODE-3,presale,1,extra\n";
    csv += "\n";
    csv += "LATER-000001,fan-club\n"; // a lane the show does not list (yet)
    let r = upload(&app, "fest", csv).await;
    assert_eq!(r.status(), StatusCode::OK);
    let report: Value = r.json().await.unwrap();
    assert_eq!(report["added"], 10_002, "{report}");
    assert_eq!(report["refusedCount"], 5, "{report}");
    let lines: Vec<u64> = report["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [10_003, 10_004, 10_005, 10_006, 10_007], "{report}");
    assert_eq!(report["unlistedLanes"], json!(["fan-club"]), "{report}");
    assert_eq!(report["alreadyHeld"], 0, "{report}");
    // No refusal repeats what the line held.
    assert!(!report.to_string().contains("BAD"), "{report}");
    let c = counts(&app, "fest").await;
    assert_eq!(
        c["lanes"],
        json!([
            {"lane": "fan-club", "codes": 1, "usesLeft": 1},
            {"lane": "presale", "codes": 10_001, "usesLeft": 10_003},
        ]),
        "{c}"
    );

    // Twenty fans in the general queue, then ten with codes and three on the multi-use code.
    let general = app.join_many("fest", 20).await;
    let mut presale = Vec::new();
    for i in 0..10 {
        let t = joined_with(&app, "fest", &format!("PRE-{i:06}")).await;
        assert_eq!(t["lane"], "presale", "{t}");
        // Its place is in its lane; its arrival the lane's.
        assert_eq!(t["position"], i + 1, "{t}");
        assert!(t["arrival"].as_u64().unwrap() > LANE_SPAN, "{t}");
        presale.push(ticket_id(&t));
    }
    for _ in 0..3 {
        presale.push(ticket_id(&joined_with(&app, "fest", "MULTI-777777").await));
    }
    // Spent: a single-use code again, the multi-use one a fourth time.
    for code in ["PRE-000003", "MULTI-777777"] {
        let r = join_with(&app, "fest", code, false).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{code}");
        assert!(r.text().await.unwrap().contains("used as often"));
    }
    // Unknown: refused, or the general queue when the fan says so.
    let r = join_with(&app, "fest", "NOT-A-CODE-1", false).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("not one of this show's"));
    let r = join_with(&app, "fest", "NOT-A-CODE-2", true).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let fell_back: Value = r.json().await.unwrap();
    assert_eq!(fell_back["position"], 21, "{fell_back}");
    assert!(fell_back.get("lane").is_none(), "{fell_back}");
    // A code for a lane the show does not list: refused as closed.
    let r = join_with(&app, "fest", "LATER-000001", false).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("not open"));
    // The general queue's places did not move for the lane's fans.
    assert_eq!(app.ticket_json("fest", &general[19]).await["position"], 20);
    let c = counts(&app, "fest").await;
    assert_eq!(c["lanes"][1]["usesLeft"], 10_003 - 13, "{c}");
    // The file sent again changes nothing: the spent codes stay spent.
    let again = upload(
        &app,
        "fest",
        "PRE-000003,presale\nMULTI-777777,presale,3\n".into(),
    )
    .await;
    let report: Value = again.json().await.unwrap();
    assert_eq!(
        (&report["added"], &report["alreadyHeld"]),
        (&json!(0), &json!(2)),
        "{report}"
    );
    assert_eq!(counts(&app, "fest").await, c);
    let r = join_with(&app, "fest", "PRE-000003", false).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);

    app.open("fest").await;
    let last = general.last().unwrap();
    app.wait_admitted("fest", last, Duration::from_secs(60))
        .await;
    app.wait_admitted("fest", &ticket_id(&fell_back), Duration::from_secs(60))
        .await;
    for t in &presale {
        assert_eq!(app.ticket_json("fest", t).await["status"], "ADMITTED");
    }

    // The audit: each use by the code's hash and the lane, never the code; every tick's
    // lanes at their shares; verified.
    let records = audit_of(&app, "fest", 1000).await;
    let uses: Vec<_> = records
        .iter()
        .filter(|r| r.kind == AuditKind::Code)
        .collect();
    assert_eq!(uses.len(), 13);
    assert!(uses.iter().all(|r| r.lane.as_deref() == Some("presale")));
    let text = serde_json::to_string(&records).unwrap();
    assert!(!text.contains("PRE-0") && !text.contains("MULTI"), "{text}");
    // While both lanes held fans, the presale lane took 8 of every 10 places.
    let first = records
        .iter()
        .find(|r| r.kind == AuditKind::Tick)
        .expect("a tick");
    let turns: Vec<(u8, u64)> = first.lanes.iter().map(|t| (t.slot, t.let_in)).collect();
    assert_eq!(turns, [(1, 8), (0, 2)], "{first:?}");
    let verified = draw::verify(None, &records, None).expect("fair");
    assert_eq!(verified.coded, 13);
    assert_eq!(verified.admitted, 34);

    // A lane's fan admitted past an earlier arrival of its lane is found.
    let mut bad = records.clone();
    let tick = bad.iter_mut().find(|r| r.kind == AuditKind::Tick).unwrap();
    let lane_range = tick.admitted.iter_mut().find(|r| r[0] > LANE_SPAN).unwrap();
    lane_range[0] += 1;
    lane_range[1] += 1;
    assert!(draw::verify(None, &bad, None).is_err());

    // The general queue's counter is its own: a fan joining now takes the next general
    // arrival (no loss was seen in the lanes' numbers).
    let next = app.join_ok("fest").await;
    assert_eq!(next["arrival"], 22, "{next}");
    assert!(records.iter().all(|r| r.kind != AuditKind::Lost));

    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_access_codes_total{show="fest",outcome="used"} 13"#),
        "{metrics}"
    );
    app.stop().await;
}

async fn a_priority_lane_goes_first_and_its_positions_are_pushed_as_polled(backend: Backend) {
    // One place a second: the ticks are slow enough to watch.
    let app = spawn_app_with(backend, config(1, Duration::from_secs(300))).await;
    app.configure(
        "vip",
        json!({"lanes": [{"name": "vip", "priority": true}], "awayHoldSeconds": 0}),
    )
    .await;
    let csv: String = (0..5).map(|i| format!("VIP-CODE-{i},vip\n")).collect();
    assert_eq!(upload(&app, "vip", csv).await.status(), StatusCode::OK);
    let general = app.join_many("vip", 3).await;
    let mut vips = Vec::new();
    for i in 0..5 {
        vips.push(ticket_id(
            &joined_with(&app, "vip", &format!("VIP-CODE-{i}")).await,
        ));
    }
    // The last VIP follows its ticket live: pushed its place in its lane, as polled.
    let mut live = app.events("vip", &vips[4]).await;
    let first = live.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.data["position"], 5, "{:?}", first.data);
    assert_eq!(first.data["lane"], "vip", "{:?}", first.data);
    // A general fan's ETA counts the VIPs ahead of it, who go first.
    let g = app.ticket_json("vip", &general[0]).await;
    assert_eq!(g["position"], 1, "{g}");

    app.open("vip").await;
    // The VIPs go first, one a second, and the one following is pushed each step.
    let mut seen = vec![5u64];
    loop {
        let e = live.next(Duration::from_secs(30)).await.expect("a push");
        if e.event == "admitted" {
            break;
        }
        if let Some(p) = e.data["position"]
            .as_u64()
            .filter(|&p| p != seen[seen.len() - 1])
        {
            seen.push(p);
        }
    }
    assert!(seen.windows(2).all(|w| w[1] < w[0]), "{seen:?}");
    app.wait_admitted("vip", &general[2], Duration::from_secs(60))
        .await;
    let records = audit_of(&app, "vip", 1000).await;
    draw::verify(None, &records, None).expect("fair");
    // No general fan was let in before every VIP.
    let order: Vec<u64> = records
        .iter()
        .filter(|r| r.kind == AuditKind::Tick)
        .flat_map(|r| r.admitted.iter().flat_map(|&[a, b]| a..=b))
        .collect();
    assert_eq!(order.len(), 8, "{order:?}");
    assert!(order[..5].iter().all(|&a| a > LANE_SPAN), "{order:?}");
    assert_eq!(order[5..], [1, 2, 3], "{order:?}");
    app.stop().await;
}

async fn refused_codes_are_throttled_and_a_presale_takes_codes_only(backend: Backend) {
    let app = spawn_app(backend).await;
    app.configure(
        "pre",
        json!({"lanes": [{"name": "presale", "share": 50}], "codesOnly": true}),
    )
    .await;
    assert_eq!(
        upload(&app, "pre", "REAL-CODE-1,presale\n".into())
            .await
            .status(),
        StatusCode::OK
    );
    // Codes only: no code, or a refused one even with the fallback, is 403.
    let r = app.join("pre").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("access code only"));
    let r = join_with(&app, "pre", "WRONG-CODE-0", true).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // A malformed code is 400 and never repeated.
    let r = join_with(&app, "pre", "a b c d e f", false).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(!r.text().await.unwrap().contains("a b c"));
    let r = app
        .client
        .post(app.url(&routes::show(routes::JOIN, "pre")))
        .header(ACCESS_CODE_HEADER, "REAL-CODE-1")
        .header(ACCESS_CODE_FALLBACK_HEADER, "elsewhere")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // Guessing: refused codes run out the client's allowance, then even the right one waits.
    let mut throttled = false;
    for i in 0..100 {
        let r = join_with(&app, "pre", &format!("GUESS-{i:04}"), false).await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            throttled = true;
            break;
        }
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
    }
    assert!(throttled, "a hundred wrong codes and never throttled");
    let r = join_with(&app, "pre", "REAL-CODE-1", false).await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    // Told when to come back, and what it was refused for.
    assert!(r.headers().contains_key("retry-after"), "{:?}", r.headers());
    assert!(r.text().await.unwrap().contains("refused access codes"));
    assert_eq!(counts(&app, "pre").await["lanes"][0]["usesLeft"], 1);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_access_codes_total{show="pre",outcome="refused"}"#),
        "{metrics}"
    );
    app.stop().await;
}

async fn hostile_uploads_are_refused_and_add_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    app.configure(
        "big",
        json!({"lanes": [{"name": "presale", "priority": true}]}),
    )
    .await;
    // One line too many: 413, and not one code added.
    let csv: String = (0..100_001).map(|i| format!("C{i:07},presale\n")).collect();
    let r = upload(&app, "big", csv).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(counts(&app, "big").await["lanes"], json!([]));
    // A line that never ends, and binary: refused lines, the good one kept.
    let mut csv = "x".repeat(100_000);
    csv += "\nGOOD-CODE-9,presale\n\u{0}\u{1}\u{2},presale\n";
    let r = upload(&app, "big", csv).await;
    assert_eq!(r.status(), StatusCode::OK);
    let report: Value = r.json().await.unwrap();
    assert_eq!(
        (&report["added"], &report["refusedCount"]),
        (&json!(1), &json!(2)),
        "{report}"
    );
    // Not a CSV: 415.
    let r = app
        .as_operator(reqwest::Method::POST, &routes::show(routes::CODES, "big"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // The operator's token is needed, and an unknown show is 404.
    let r = app
        .client
        .post(app.url(&routes::show(routes::CODES, "big")))
        .body("A-CODE-1,presale\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = upload(&app, "nobody", "A-CODE-1,presale\n".into()).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // Lanes that do not fit are refused whole.
    for lanes in [
        json!([{"name": "a", "share": 60}, {"name": "b", "share": 40}]),
        json!([{"name": "general", "share": 10}]),
        json!([{"name": "x", "share": 10, "priority": true}]),
        json!([{"name": "bad\u{7}", "share": 10}]),
    ] {
        let r = app.put_config("big", &json!({ "lanes": lanes })).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{lanes}");
    }
    app.stop().await;
}
