//! A failover that lost writes is noticed: a primary and a replica, real processes, WAIT off
//! (`REDIS_WAIT_REPLICAS` unset, the default). The replica is cut off (`REPLICAOF NO ONE`),
//! fans go on joining on the primary, then the primary dies and comes back as a copy of the
//! cut-off replica, promoted: the store has less than the server handed out.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::Value;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use waiting_room::model::{AuditKind, AuditPage};
use waiting_room::protocol::routes;

use crate::support::api::Api;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;
use crate::support::sse::SseReader;
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
    // Paused (every place kept) while the places are read one by one: a tick in between
    // would shift the later ones.
    assert!(
        server
            .operator(routes::PAUSE, "lw")
            .await
            .status()
            .is_success()
    );
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
    server.open("lw").await;
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

/// A failover to a replica that lags: `primary` dies and its address comes back as a copy of
/// `replica` (cut off earlier, holding `counter` arrivals), promoted.
async fn fail_over(primary: &mut RedisServer, replica: &RedisServer, counter: u64) {
    primary
        .restart_with(&["--replicaof", "127.0.0.1", &replica.port.to_string()])
        .await;
    counter_reaches(primary, counter).await;
    promote(primary).await;
}

/// Until `api` answers 410 LOST for every one of `tickets` (the watchdog's check runs once a
/// second).
async fn told_lost(api: &Api, show: &str, tickets: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(15);
    for t in tickets {
        loop {
            let r = api.ticket(show, t).await;
            if r.status() == StatusCode::GONE {
                let v: Value = r.json().await.unwrap();
                assert_eq!(
                    (v["ticketId"].as_str(), v["status"].as_str()),
                    (Some(t.as_str()), Some("LOST")),
                    "{v}"
                );
                assert!(v["message"].as_str().unwrap().contains("join again"), "{v}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "ticket {t} was never told LOST: {}",
                r.status()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Reads `stream` until it says `unknown`, which must say LOST: never `admitted` on the way.
async fn told_lost_over(stream: &mut SseReader, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = stream
            .next(left)
            .await
            .expect("the stream goes on until it is told");
        assert_ne!(
            event.event, "admitted",
            "a lost place was admitted: {:?}",
            event.data
        );
        if event.event == "unknown" {
            assert_eq!(event.data["status"], "LOST", "{:?}", event.data);
            assert!(
                stream.next(within).await.is_none(),
                "the stream ends after it"
            );
            return;
        }
    }
}

/// The commands clients sent `redis` while `during` ran that name `needle` (from `MONITOR`; a
/// script's own commands, marked `lua`, left out). A marker sent after `during` ends the
/// reading, so nothing depends on timing.
async fn commands_naming<F: std::future::Future<Output = ()>>(
    redis: &RedisServer,
    needle: &str,
    during: F,
) -> Vec<String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut monitor = tokio::net::TcpStream::connect(("127.0.0.1", redis.port))
        .await
        .unwrap();
    monitor.write_all(b"MONITOR\r\n").await.unwrap();
    let mut lines = BufReader::new(monitor).lines();
    let ok = lines.next_line().await.unwrap().unwrap();
    assert_eq!(ok, "+OK", "monitoring");
    during.await;
    let marker = format!("end-of-{}", uuid::Uuid::new_v4());
    let _: String = ::redis::cmd("ECHO")
        .arg(&marker)
        .query_async(&mut redis.conn().await)
        .await
        .unwrap();
    let mut naming = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the marker comes")
            .unwrap()
            .expect("MONITOR goes on");
        if line.contains(&marker) {
            return naming;
        }
        if line.contains(needle) && !line.contains(" lua]") {
            naming.push(line);
        }
    }
}

/// The first frame a WebSocket following `ticket` is sent, as JSON.
async fn first_frame(api: &Api, show: &str, ticket: &str) -> Value {
    let (mut ws, _) = tokio_tungstenite::connect_async(api.ws_url(show, ticket))
        .await
        .unwrap();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a frame in time")
            .expect("the socket stays open")
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

/// A lost place is pushed as it is polled: over SSE and over the WebSocket the first event
/// is `unknown` and its JSON says `LOST`, never a bare UNKNOWN. A stream opened before the
/// failover, on the instance that handed the ticket out, is told the same as soon as the
/// mend marks it.
#[tokio::test]
async fn a_lost_place_is_pushed_unknown_saying_lost_over_sse_and_websocket() {
    let mut primary = RedisServer::start().await;
    let replica =
        RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]).await;
    let server = ServerProcess::start(&primary.url(), 5, &[]).await;
    // Made, not open: nobody is admitted before the failover.
    server.create("lw").await;
    let kept = server.join_many("lw", 3).await;
    counter_reaches(&replica, 3).await;
    promote(&replica).await;
    let lost = server.join_many("lw", 2).await;
    // This fan follows its ticket across the failover.
    let mut following = server.events("lw", &lost[1]).await;
    let first = following.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(first.event, "waiting");
    assert_eq!(first.data["position"], 5);
    fail_over(&mut primary, &replica, 3).await;
    told_lost(&server, "lw", &lost).await;
    // The poll's 410 comes from one store call: the status read says LOST itself.
    let polled = commands_naming(&primary, &lost[0], async {
        assert_eq!(
            server.ticket("lw", &lost[0]).await.status(),
            StatusCode::GONE
        );
    })
    .await;
    assert_eq!(polled.len(), 1, "one command for the poll: {polled:#?}");
    assert!(
        polled[0].to_lowercase().contains("\"fcall\"")
            || polled[0].to_lowercase().contains("\"evalsha\""),
        "{polled:?}"
    );

    // Followed afresh: the first event says so.
    let mut sse = server.events("lw", &lost[0]).await;
    let event = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(event.event, "unknown");
    assert_eq!(event.data["status"], "LOST", "{:?}", event.data);
    assert_eq!(event.data["ticketId"], lost[0].as_str());
    assert!(
        event.data["message"]
            .as_str()
            .unwrap()
            .contains("join again")
    );
    assert!(
        sse.next(Duration::from_secs(10)).await.is_none(),
        "the stream ends after it"
    );
    let frame = first_frame(&server, "lw", &lost[0]).await;
    assert_eq!(
        (
            frame["event"].as_str(),
            frame["status"].as_str(),
            frame["ticketId"].as_str()
        ),
        (Some("unknown"), Some("LOST"), Some(lost[0].as_str())),
        "{frame}"
    );
    // A kept ticket is no lost one.
    let frame = first_frame(&server, "lw", &kept[0]).await;
    assert_eq!(
        (frame["event"].as_str(), frame["position"].as_u64()),
        (Some("waiting"), Some(1))
    );

    // The stream opened before the failover, on the instance whose mend marked its ticket:
    // told at once, the show not even open (nobody was admitted, nothing passed its place).
    told_lost_over(&mut following, Duration::from_secs(10)).await;
}

/// Two instances on one Redis, each handing out tickets the failover loses: each mends its
/// own, and any instance asked about any lost ticket (poll, SSE, WebSocket) says LOST.
#[tokio::test]
async fn two_instances_each_mend_their_own_lost_places_and_both_tell_every_one() {
    let mut primary = RedisServer::start().await;
    let replica =
        RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]).await;
    let a = ServerProcess::start(&primary.url(), 5, &[]).await;
    let b = ServerProcess::start(&primary.url(), 5, &[]).await;
    a.create("lw").await;
    let mut kept = a.join_many("lw", 2).await;
    kept.extend(b.join_many("lw", 2).await);
    counter_reaches(&replica, 4).await;
    promote(&replica).await;
    let lost_a = a.join_many("lw", 2).await;
    let lost_b = b.join_many("lw", 3).await;
    // Followed across the failover: one of A's on A, one of A's on B.
    let mut on_a = a.events("lw", &lost_a[0]).await;
    let mut on_b = b.events("lw", &lost_a[1]).await;
    for stream in [&mut on_a, &mut on_b] {
        let first = stream.next(Duration::from_secs(10)).await.unwrap();
        assert_eq!(first.event, "waiting");
    }
    fail_over(&mut primary, &replica, 4).await;

    let lost: Vec<String> = lost_a.iter().chain(&lost_b).cloned().collect();
    for server in [&a, &b] {
        told_lost(server, "lw", &lost).await;
    }
    // Each instance marked the tickets it handed out, and only those.
    for (server, n) in [(&a, 2), (&b, 3)] {
        let deadline = Instant::now() + Duration::from_secs(10);
        let want = format!("waiting_room_lost_places_total{{show=\"lw\"}} {n}");
        loop {
            let metrics = server.metrics().await;
            if metrics.contains(&want) {
                break;
            }
            assert!(Instant::now() < deadline, "{want} never came: {metrics}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Followed on the instance that did not hand it out: LOST all the same.
    let mut sse = b.events("lw", &lost_a[0]).await;
    let event = sse.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        (event.event.as_str(), event.data["status"].as_str()),
        ("unknown", Some("LOST")),
        "{:?}",
        event.data
    );
    let frame = first_frame(&a, "lw", &lost_b[2]).await;
    assert_eq!(
        (frame["event"].as_str(), frame["status"].as_str()),
        (Some("unknown"), Some("LOST")),
        "{frame}"
    );
    // The kept ones still wait, in order, on both.
    for server in [&a, &b] {
        for (i, t) in kept.iter().enumerate() {
            let v = server.ticket_json("lw", t).await;
            assert_eq!(v["status"], "WAITING", "{v}");
            assert_eq!(v["position"], i as u64 + 1, "{v}");
        }
    }
    // The stream on A, whose mend marked the ticket, was told at once.
    told_lost_over(&mut on_a, Duration::from_secs(10)).await;
    // B did not hand the ticket out: its stream is told when the queue passes the place (the
    // hub asks the store about what it took for an admission, and the store says LOST).
    let fresh = ticket_id(&a.join_ok("lw").await);
    a.open("lw").await;
    a.wait_admitted("lw", &fresh, Duration::from_secs(30)).await;
    told_lost_over(&mut on_b, Duration::from_secs(10)).await;
}
