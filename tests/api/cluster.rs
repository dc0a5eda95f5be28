//! Several real server processes on one real Redis: exactly one admitter, N per second, and
//! a quick take-over when the leader dies.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use waiting_room::admitter::LEASE_TTL;

use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

const RATE: u64 = 5;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Every tick event the admitters publish, as (store time ms, admitted).
async fn watch_ticks(redis: &RedisServer) -> mpsc::UnboundedReceiver<(u64, u64)> {
    let mut pubsub = redis::Client::open(redis.url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    pubsub.subscribe("wr:events").await.unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = pubsub.into_on_message();
        while let Some(msg) = messages.next().await {
            let v: Value = serde_json::from_slice(msg.get_payload_bytes()).unwrap();
            if v["kind"] == "tick"
                && tx
                    .send((
                        v["at_ms"].as_u64().unwrap(),
                        v["admitted"].as_u64().unwrap(),
                    ))
                    .is_err()
            {
                return;
            }
        }
    });
    rx
}

async fn collect(
    rx: &mut mpsc::UnboundedReceiver<(u64, u64)>,
    for_how_long: Duration,
) -> Vec<(u64, u64)> {
    let mut ticks = Vec::new();
    let deadline = tokio::time::Instant::now() + for_how_long;
    while let Ok(Some(t)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        ticks.push(t);
    }
    ticks
}

/// No second of the store's clock holds more than one tick, and no tick more than N.
fn assert_at_most_n_per_second(ticks: &[(u64, u64)]) {
    let mut seconds: Vec<u64> = ticks.iter().map(|(at, _)| at / 1000).collect();
    let count = seconds.len();
    seconds.dedup();
    assert_eq!(seconds.len(), count, "two ticks in one second: {ticks:?}");
    assert!(
        ticks.iter().all(|&(_, n)| n <= RATE),
        "a tick admitted more than {RATE}: {ticks:?}"
    );
}

/// Which of `servers` hold the admitter lease now, by their place in the list.
pub(crate) async fn leaders(servers: &[&ServerProcess]) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        if s.leads().await {
            found.push(i);
        }
    }
    found
}

#[tokio::test]
async fn three_instances_admit_n_per_second_and_survive_the_leader_dying() {
    let redis = RedisServer::start().await;
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(ServerProcess::start(&redis.url(), RATE as u32, &[]).await);
    }
    servers[0].create("big").await;
    for i in 0..150 {
        servers[i % 3].join_ok("big").await;
    }
    let mut ticks = watch_ticks(&redis).await;
    servers[1].open("big").await;

    // Steady state: one tick a second, N each, whoever leads.
    let steady = collect(&mut ticks, Duration::from_millis(5500)).await;
    assert_at_most_n_per_second(&steady);
    let admitted: u64 = steady.iter().map(|t| t.1).sum();
    assert!(
        (4..=6).contains(&steady.len()),
        "about one tick a second: {steady:?}"
    );
    assert_eq!(
        admitted,
        steady.len() as u64 * RATE,
        "every tick was full: {steady:?}"
    );

    let refs: Vec<&ServerProcess> = servers.iter().collect();
    let leader = leaders(&refs).await;
    assert_eq!(leader.len(), 1, "exactly one admitter: {leader:?}");
    let leader = leader[0];

    // SIGKILL the leader: no hand-over, the lease has to run out.
    let killed_at = now_ms();
    servers[leader].kill();
    let after = collect(&mut ticks, Duration::from_millis(8000)).await;
    let mut all = steady.clone();
    all.extend(&after);
    assert_at_most_n_per_second(&all);
    let first = after
        .iter()
        .map(|t| t.0)
        .find(|&at| at > killed_at)
        .expect("admission resumes");
    // The dead leader's lease runs out within LEASE_TTL, a survivor asks every half second:
    // a second more for a slow machine, never the several a missing fence would let pass.
    let bound = LEASE_TTL.as_millis() as u64 + 2000;
    assert!(
        first - killed_at <= bound,
        "admission resumed {} ms after the leader died (at most {bound})",
        first - killed_at
    );
    assert!(after.len() >= 3, "admission goes on: {after:?}");

    let survivors: Vec<&ServerProcess> = servers
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != leader)
        .map(|(_, s)| s)
        .collect();
    let new_leader = leaders(&survivors).await;
    assert_eq!(
        new_leader.len(),
        1,
        "exactly one admitter among the survivors: {new_leader:?}"
    );

    // SIGTERM the new leader: it stops cleanly and hands the lease over at once.
    let mut remaining: Vec<ServerProcess> = servers
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != leader)
        .map(|(_, s)| s)
        .collect();
    let stopping = remaining[new_leader[0]].child.id();
    let status = remaining[new_leader[0]].terminate();
    assert!(status.success(), "graceful stop exits 0: {status:?}");
    let stopped_at = now_ms();
    // Handed over, not left to run out: by the time the process is gone its lease is too
    // (or already the last one's), whatever the machine's speed.
    let mut conn = redis.conn().await;
    let holder: Option<String> = ::redis::cmd("GET")
        .arg("wr:{admitter}:lease")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        !holder
            .as_deref()
            .is_some_and(|h| h.starts_with(&format!("{stopping}-"))),
        "the stopped leader still holds the lease: {holder:?}"
    );
    let handed = collect(&mut ticks, Duration::from_millis(5000)).await;
    handed
        .iter()
        .map(|t| t.0)
        .find(|&at| at > stopped_at)
        .expect("the last one admits");
    all.extend(&handed);
    assert_at_most_n_per_second(&all);
}

/// A leader frozen past its lease (SIGSTOP, as a long GC pause or a stalled VM would) and
/// then woken (SIGCONT) must not admit with its stale fencing token: the other instance took
/// over, and the public audit, fences and all, still verifies.
#[tokio::test]
async fn a_frozen_leader_woken_past_its_lease_is_fenced_off() {
    let redis = RedisServer::start().await;
    let a = ServerProcess::start(&redis.url(), RATE as u32, &[]).await;
    let b = ServerProcess::start(&redis.url(), RATE as u32, &[]).await;
    a.create("fenced").await;
    a.join_many("fenced", 200).await;
    a.open("fenced").await;
    let servers = [&a, &b];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let leader = loop {
        let found = leaders(&servers).await;
        if found.len() == 1 {
            break found[0];
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no single leader: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let (frozen, other) = (servers[leader], servers[1 - leader]);
    // The leader admits first, under its fence.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while frozen.stats("fenced").await["queueLength"].as_u64() == Some(200) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the leader never admitted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = frozen.child.id().to_string();
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    };
    signal("-STOP");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !other.leads().await {
        assert!(tokio::time::Instant::now() < deadline, "nobody took over");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The new leader admits for a while; then the old one wakes, still thinking it leads.
    let before = other.stats("fenced").await["queueLength"].as_u64().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    signal("-CONT");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = other.stats("fenced").await["queueLength"].as_u64().unwrap();
    assert!(after < before, "admission went on: {before} → {after}");
    assert_eq!(leaders(&servers).await.len(), 1, "one leader again");
    // Every tick in the record: at most one a second, fences never going back, nobody twice.
    let mut records = Vec::new();
    let mut after_id: Option<String> = None;
    loop {
        let mut path = "/orders/waiting-room/fenced/audit?limit=1000".to_owned();
        if let Some(id) = &after_id {
            path.push_str(&format!("&after={id}"));
        }
        let page: waiting_room::model::AuditPage = other.get(&path).await.json().await.unwrap();
        records.extend(page.records);
        match page.next {
            Some(next) => after_id = Some(next),
            None => break,
        }
    }
    let verified = waiting_room::draw::verify(None, &records, None).expect("the audit verifies");
    assert_eq!(verified.admitted, 200 - after);
    let fences: Vec<u64> = records.iter().map(|r| r.fence).filter(|&f| f > 0).collect();
    assert!(
        fences.first() < fences.last(),
        "the fence moved on with the new leader: {fences:?}"
    );
}
