//! `verify` over what a show published: fair as run, and not once the audit is edited by
//! hand or the revealed seed is not the committed one.

use std::time::Duration;

use waiting_room::draw;

use super::{audit_of, drawn, scheduled};
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;

on_stores!([redis: Redis] [an_edited_audit_or_a_swapped_seed_fails_verification]);

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
