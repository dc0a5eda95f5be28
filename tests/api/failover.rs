//! A Redis failover loses no place: one primary, one replica and three Sentinels, real
//! processes all; the server finds the primary through Sentinel and has every write confirmed
//! by the replica (`REDIS_WAIT_REPLICAS=1`). The primary is SIGKILLed while fans join and the
//! show admits.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use tokio::time::Instant;
use waiting_room::model::AuditPage;
use waiting_room::protocol::{IDEMPOTENCY_KEY, routes};

use crate::support::process::ServerProcess;
use crate::support::sentinel::SentinelGroup;
use crate::support::ticket_id;

/// One join, retried with the same `Idempotency-Key` while the answer is 503: the ticket,
/// and every status seen on the way (never a hang: each try is bounded).
pub(crate) async fn join_until_placed(
    server: &ServerProcess,
    show: &str,
    key: &str,
) -> (String, Vec<u16>) {
    let mut seen = Vec::new();
    for _ in 0..100 {
        let sent = server
            .client
            .post(server.url(&routes::show(routes::JOIN, show)))
            .header(IDEMPOTENCY_KEY, key)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        let r = match sent {
            Ok(r) => r,
            Err(e) => panic!("a join hung or broke during the failover: {e}"),
        };
        seen.push(r.status().as_u16());
        match r.status() {
            StatusCode::ACCEPTED | StatusCode::OK => {
                return (ticket_id(&r.json::<Value>().await.unwrap()), seen);
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(
                    r.headers().contains_key("retry-after"),
                    "503 without Retry-After"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => panic!("a join answered {other}: {}", r.text().await.unwrap()),
        }
    }
    panic!("a join was never placed: {seen:?}");
}

/// Fans joining while a failover happens: one try each, a fresh `Idempotency-Key` every
/// 100 ms, each answer 202, 200 or 503 with `Retry-After` (never a hang or a 500).
pub(crate) struct FansDuring {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<Vec<(String, u16)>>,
}

impl FansDuring {
    pub(crate) fn start(server: &ServerProcess, show: &str) -> FansDuring {
        let server: crate::support::api::Api = (**server).clone();
        let show = show.to_owned();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut tries = Vec::new();
                for i in 0.. {
                    if stop.is_cancelled() {
                        break;
                    }
                    let key = format!("during-{i}");
                    let sent = server
                        .client
                        .post(server.url(&routes::show(routes::JOIN, &show)))
                        .header(IDEMPOTENCY_KEY, &key)
                        .timeout(Duration::from_secs(5))
                        .send()
                        .await
                        .expect("a join hung or broke during the failover");
                    let status = sent.status().as_u16();
                    assert!(
                        [200, 202, 503].contains(&status),
                        "a join during the failover answered {status}: {}",
                        sent.text().await.unwrap_or_default()
                    );
                    if status == 503 {
                        assert!(
                            sent.headers().contains_key("retry-after"),
                            "503 without Retry-After"
                        );
                    }
                    tries.push((key, status));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                tries
            })
        };
        FansDuring { stop, task }
    }

    /// Stops the fans, and places every try: the refused ones by a retry with the same key,
    /// one place each. The tickets, and every status seen.
    pub(crate) async fn stop(self, server: &ServerProcess, show: &str) -> (Vec<String>, Vec<u16>) {
        self.stop.cancel();
        let tries = self.task.await.unwrap();
        let mut statuses: Vec<u16> = tries.iter().map(|(_, s)| *s).collect();
        let mut placed = Vec::new();
        for (key, _) in &tries {
            let (t, seen) = join_until_placed(server, show, key).await;
            placed.push(t);
            statuses.extend(seen);
        }
        (placed, statuses)
    }
}

/// Admission goes on: within `within`, someone more is let in.
pub(crate) async fn admission_resumes(server: &ServerProcess, show: &str, within: Duration) {
    let queue = |s: Value| s["queueLength"].as_u64().unwrap();
    let before = queue(server.stats(show).await);
    let deadline = Instant::now() + within;
    loop {
        if queue(server.stats(show).await) < before {
            return;
        }
        assert!(Instant::now() < deadline, "admission did not resume");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every acknowledged join (`placed`) is still waiting or admitted, the waiting hold 1..n
/// exactly, one ticket per key, nobody admitted twice (the audit verifies), and every answer
/// seen was 200, 202 or 503. Pauses the sale to read them.
pub(crate) async fn every_place_kept(
    server: &ServerProcess,
    show: &str,
    placed: &[String],
    statuses: &[u16],
) {
    // The sale paused first (every place kept, nobody admitted): the positions are read one
    // ticket at a time, and a tick in between would shift the later ones, as it did on a busy
    // CI machine.
    let paused = server.operator(routes::PAUSE, show).await;
    assert!(paused.status().is_success(), "{:?}", paused.status());
    // Every acknowledged join is still waiting or admitted; the waiting hold 1..n exactly.
    let mut positions = Vec::new();
    let mut admitted = 0;
    for (k, t) in placed.iter().enumerate() {
        let v = server.ticket_json(show, t).await;
        if v["status"] == "UNKNOWN" {
            panic!("acknowledged join #{k} of {} is unknown: {v}", placed.len());
        }
        match v["status"].as_str().unwrap() {
            "WAITING" => positions.push(v["position"].as_u64().unwrap()),
            "ADMITTED" => admitted += 1,
            other => panic!("an acknowledged join is {other}: {v}"),
        }
    }
    positions.sort_unstable();
    let n = positions.len() as u64;
    assert_eq!(
        positions,
        (1..=n).collect::<Vec<_>>(),
        "places with gaps or twins"
    );
    assert_eq!(
        placed.iter().collect::<BTreeSet<_>>().len(),
        placed.len(),
        "one ticket per Idempotency-Key"
    );
    assert_eq!(server.stats(show).await["queueLength"].as_u64(), Some(n));
    // Nobody admitted twice, the ticks in order: the audit verifies.
    let page: AuditPage = server
        .get(&format!("/orders/waiting-room/{show}/audit?limit=1000"))
        .await
        .json()
        .await
        .unwrap();
    let verified = waiting_room::draw::verify(None, &page.records, None).expect("verifies");
    assert!(
        verified.admitted >= admitted,
        "{verified:?}, {admitted} admitted seen"
    );
    // Joins during the failover were placed, or 503 with Retry-After (checked as they came).
    assert!(statuses.iter().all(|s| [200, 202, 503].contains(s)));
}

#[tokio::test]
async fn a_primary_killed_mid_sale_loses_no_acknowledged_join() {
    let mut group = SentinelGroup::start().await;
    let server = group.durable_server(3).await;
    server.open("fo").await;
    let mut placed: Vec<String> = Vec::new();
    let mut statuses: Vec<u16> = Vec::new();
    for i in 0..30 {
        let (t, seen) = join_until_placed(&server, "fo", &format!("before-{i}")).await;
        placed.push(t);
        statuses.extend(seen);
    }
    // The primary dies while fans go on joining (one try each, a fresh key every 100 ms);
    // the Sentinels promote the replica.
    let old_primary = group.primary.port;
    group.primary.stop();
    // The dead node's port is held until it comes back: another test's redis-server taking
    // it meanwhile would be taken by the Sentinels for the old primary returning, and made a
    // replica of this group (its data replaced by this test's).
    let held = std::net::TcpListener::bind(("127.0.0.1", old_primary))
        .expect("the dead primary's port is free");
    let killed = Instant::now();
    let fans = FansDuring::start(&server, "fo");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server
        .metrics()
        .await
        .contains("waiting_room_redis_failovers_total 1")
    {
        assert!(
            Instant::now() < deadline,
            "the server never followed the failover"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let followed = killed.elapsed();
    let new_primary = group.primary_port().await.unwrap();
    assert_ne!(new_primary, old_primary);
    // The old primary's node comes back as the new primary's replica, so writes can be
    // confirmed again.
    drop(held);
    group
        .primary
        .restart_with(&["--replicaof", "127.0.0.1", &new_primary.to_string()])
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (more, seen) = fans.stop(&server, "fo").await;
    placed.extend(more);
    statuses.extend(seen);
    admission_resumes(&server, "fo", Duration::from_secs(10)).await;
    every_place_kept(&server, "fo", &placed, &statuses).await;
    eprintln!(
        "followed the failover after {followed:?}; {} joins, {} answers 503",
        placed.len(),
        statuses.iter().filter(|&&s| s == 503).count()
    );
}
