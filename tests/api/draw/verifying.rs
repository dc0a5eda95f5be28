//! `verify` over what a show published: fair as run, a sale whose fans step away included,
//! and not once the audit is edited by hand or the revealed seed is not the committed one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use waiting_room::draw;
use waiting_room::model::AuditRecord;

use super::{audit_of, drawn, make, scheduled};
use crate::support::api::Api;
use crate::support::app::{config, spawn_app, spawn_app_with};
use crate::support::backend::Backend;

on_stores!([redis: Redis] [an_edited_audit_or_a_swapped_seed_fails_verification]);
on_stores!([memory: Memory] [a_sale_with_fans_away_passes_them_over_and_verifies]);

/// Whether some record's `field` (of `admitted`, `passed`, `returned`) holds `arrival`.
fn listed(records: &[AuditRecord], field: fn(&AuditRecord) -> &[[u64; 2]], arrival: u64) -> bool {
    records
        .iter()
        .flat_map(field)
        .any(|&[a, b]| (a..=b).contains(&arrival))
}

/// Waits until the audit says what `holds` asks, or panics after `within`.
async fn audit_until(
    api: &Api,
    show: &str,
    within: Duration,
    holds: impl Fn(&[AuditRecord]) -> bool,
) -> Vec<AuditRecord> {
    let until = tokio::time::Instant::now() + within;
    loop {
        let records = audit_of(api, show, 1000).await;
        if holds(&records) {
            return records;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "{show}: not in the audit within {within:?}: {records:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_sale_with_fans_away_passes_them_over_and_verifies(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = "away";
    let (status, body) = make(
        &app,
        show,
        json!({"admitPerSecond": 2, "presenceGraceSeconds": 1, "awayHoldSeconds": 60}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Arrivals 1 to 6: 2, 3 and 5 keep polling, 1, 4 and 6 go quiet once joined.
    let tickets = app.join_many(show, 6).await;
    let polling = Arc::new(AtomicBool::new(true));
    let poller = tokio::spawn({
        let api = Api::clone(&app);
        let present = [1, 2, 4].map(|i| tickets[i].clone());
        let polling = polling.clone();
        async move {
            while polling.load(Ordering::Relaxed) {
                for t in &present {
                    api.ticket(show, t).await;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    // Past the grace since the quiet fans joined: they are away when their turn comes.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    app.open(show).await;
    let records = audit_until(&app, show, Duration::from_secs(30), |r| {
        [1, 4, 6].iter().all(|&a| listed(r, |x| &x.passed, a))
            && [2, 3, 5].iter().all(|&a| listed(r, |x| &x.admitted, a))
    })
    .await;
    assert!(!listed(&records, |x| &x.admitted, 1), "away: not let in");
    // Arrival 1 comes back (its polls are signs of life) and is let in as a return.
    app.wait_admitted(show, &tickets[0], Duration::from_secs(30))
        .await;
    polling.store(false, Ordering::Relaxed);
    poller.await.unwrap();
    let records = audit_until(&app, show, Duration::from_secs(5), |r| {
        listed(r, |x| &x.returned, 1)
    })
    .await;

    let fair = draw::verify(None, &records, Some(1)).expect("fair as run");
    assert!(fair.passed >= 3 && fair.returned >= 1, "{fair:?}");
    let one = fair.arrival.unwrap();
    assert!(one.passed.is_some() && one.admitted.is_some(), "{one:?}");
    // Still away: passed over, never let in.
    for a in [4, 6] {
        let still = draw::verify(None, &records, Some(a))
            .unwrap()
            .arrival
            .unwrap();
        assert!(
            still.passed.is_some() && still.admitted.is_none(),
            "{still:?}"
        );
    }
    // The same audit with arrival 1's return struck out: admitted while away.
    let mut edited = records.clone();
    for r in &mut edited {
        r.returned.clear();
    }
    let violation = draw::verify(None, &edited, None).unwrap_err();
    assert!(violation.0.contains("admitted while away"), "{violation}");
}

async fn an_edited_audit_or_a_swapped_seed_fails_verification(backend: Backend) {
    let app = spawn_app_with(backend, config(3, Duration::from_secs(300))).await;
    scheduled(&app, "audited", 1.5, 3).await;
    app.join_many("audited", 12).await;
    let d = drawn(&app, "audited", Duration::from_secs(6)).await;
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let records = audit_of(&app, "audited", 1000).await;
    let fair = draw::verify(Some(&d), &records, None).expect("fair as run");
    assert!(fair.admitted >= 6, "{fair:?}");

    let redis = app.redis.as_ref().unwrap().server();
    let mut conn = redis.conn().await;
    // Someone admits the first arrival let in once more, by hand.
    let first = records
        .iter()
        .find_map(|r| r.admitted.first())
        .map(|&[a, _]| a.to_string())
        .unwrap();
    let epoch = records[0].epoch.to_string();
    let now = (waiting_room::clock::wall_ms() + 5000).to_string();
    let _: String = ::redis::cmd("XADD")
        .arg("wr:{audited}:audit")
        .arg("*")
        .arg(&[
            ("kind", "tick"),
            ("at_ms", now.as_str()),
            ("fence", "99"),
            ("epoch", epoch.as_str()),
            ("rate", "3"),
            ("admitted", first.as_str()),
        ])
        .query_async(&mut conn)
        .await
        .unwrap();
    let edited = audit_of(&app, "audited", 1000).await;
    let violation = draw::verify(Some(&d), &edited, None).unwrap_err();
    assert!(
        violation.0.contains("out of queue order or twice"),
        "{violation}"
    );

    // A seed swapped after the fact no longer matches the commitment.
    let _: i64 = ::redis::cmd("HSET")
        .arg("wr:{audited}:meta")
        .arg("seed")
        .arg("0".repeat(64))
        .query_async(&mut conn)
        .await
        .unwrap();
    let swapped = drawn(&app, "audited", Duration::from_secs(1)).await;
    let violation = draw::verify(Some(&swapped), &records, None).unwrap_err();
    assert!(violation.0.contains("commitment"), "{violation}");
}
