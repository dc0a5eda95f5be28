//! A failover that lost writes is noticed: a primary and a replica, real processes, WAIT off
//! (`REDIS_WAIT_REPLICAS` unset, the default). The replica is cut off (`REPLICAOF NO ONE`),
//! fans go on joining on the primary, then the primary dies and comes back as a copy of the
//! cut-off replica, promoted: the store has less than the server handed out.

use std::time::Duration;

use reqwest::StatusCode;
use tokio::time::Instant;
use waiting_room::model::{AuditKind, AuditPage};

use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;
use crate::support::ticket_id;

async fn counter(redis: &RedisServer) -> u64 {
    let seq: Option<u64> = ::redis::cmd("GET")
        .arg("wr:{lw}:seq")
        .query_async(&mut redis.conn().await)
        .await
        .unwrap();
    seq.unwrap_or(0)
}

/// Until `redis` holds `want` as the show's arrival counter (a replica catching up).
async fn counter_reaches(redis: &RedisServer, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while counter(redis).await != want {
        assert!(
            Instant::now() < deadline,
            "the counter never reached {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn promote(redis: &RedisServer) {
    let _: () = ::redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut redis.conn().await)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_failover_that_lost_joins_raises_the_counter_and_tells_the_lost_fans() {
    let mut primary = RedisServer::start().await;
    let replica =
        RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]).await;
    let server = ServerProcess::start(&primary.url(), 1, &[]).await;
    server.open("lw").await;
    let kept = server.join_many("lw", 10).await;
    counter_reaches(&replica, 10).await;
    // The replica is cut off; five more fans join on the primary alone.
    promote(&replica).await;
    let lost = server.join_many("lw", 5).await;
    assert_eq!(counter(&primary).await, 15);
    assert_eq!(
        counter(&replica).await,
        10,
        "the replica missed the last joins"
    );
    // The primary dies and its address comes back with the replica's data, promoted: what a
    // failover to a lagging replica leaves behind.
    primary
        .restart_with(&["--replicaof", "127.0.0.1", &replica.port.to_string()])
        .await;
    counter_reaches(&primary, 10).await;
    promote(&primary).await;
    // Within a few checks the server notices, and mends.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = server.metrics().await;
        if metrics.contains("waiting_room_lost_writes_total{show=\"lw\"} 1") {
            assert!(
                metrics.contains("waiting_room_lost_places_total{show=\"lw\"} 5"),
                "{metrics}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the lost writes went unnoticed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // No arrival number is handed out twice: the counter went past every one handed out.
    assert_eq!(counter(&primary).await, 15);
    let fresh = ticket_id(&server.join_ok("lw").await);
    let seq: u64 = ::redis::cmd("ZSCORE")
        .arg("wr:{lw}:queue")
        .arg(&fresh)
        .query_async(&mut primary.conn().await)
        .await
        .unwrap();
    assert_eq!(seq, 16, "the next join comes after every number handed out");
    // Every lost fan is told so (410 LOST), never a bare UNKNOWN; the kept ones wait or are in.
    for t in &lost {
        let r = server.ticket("lw", t).await;
        assert_eq!(r.status(), StatusCode::GONE);
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["status"], "LOST", "{v}");
        assert!(v["message"].as_str().unwrap().contains("join again"), "{v}");
    }
    let mut positions = Vec::new();
    for t in kept.iter().chain([&fresh]) {
        let v = server.ticket_json("lw", t).await;
        match v["status"].as_str().unwrap() {
            "WAITING" => positions.push(v["position"].as_u64().unwrap()),
            "ADMITTED" => {}
            other => panic!("a kept ticket is {other}: {v}"),
        }
    }
    positions.sort_unstable();
    let n = positions.len() as u64;
    assert_eq!(positions, (1..=n).collect::<Vec<_>>());
    // The event is in the audit, which still verifies.
    let page: AuditPage = server
        .get("/orders/waiting-room/lw/audit?limit=1000")
        .await
        .json()
        .await
        .unwrap();
    let mended: Vec<_> = page
        .records
        .iter()
        .filter(|r| r.kind == AuditKind::Lost)
        .collect();
    assert_eq!(mended.len(), 1, "{:?}", page.records);
    assert_eq!(mended[0].arrival, Some(15));
    waiting_room::draw::verify(None, &page.records, None).expect("the audit verifies");
    // Admission goes on, and reaches the fresh fan after the kept ones.
    server
        .wait_admitted("lw", &fresh, Duration::from_secs(30))
        .await;
}
