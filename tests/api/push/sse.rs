//! Following a ticket over SSE: the first state at once, every move after it, resuming,
//! and the streams one ticket may hold.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use waiting_room::protocol::routes;

use super::WAIT;
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::sse::{SseEvent, SseReader};

#[tokio::test]
async fn sse_first_state_at_once_then_falling_positions_admission_and_expiry() {
    for backend in [Backend::Memory, Backend::Redis] {
        let app = spawn_app_with(backend, config(2, Duration::from_millis(1500))).await;
        app.create("s").await;
        let tickets = app.join_many("s", 5).await;
        let mine = &tickets[4];
        let mut sse = app.events("s", mine).await;
        let first = sse
            .next(Duration::from_secs(1))
            .await
            .expect("the current state at once");
        assert_eq!(first.event, "waiting");
        assert_eq!(first.data["position"], 5);
        // Not open, and no opening announced: no wait promised yet.
        assert_eq!(first.data["paused"], "pending");
        assert_eq!(first.data.get("etaSeconds"), None);
        assert_eq!(
            first.data,
            app.ticket_json("s", mine).await,
            "pushed = polled"
        );
        assert!(first.id.is_some());

        // Opened mid-second, its push is checked by a poll well before the next tick.
        super::mid_second().await;
        app.open("s").await;
        let mut seen: Vec<SseEvent> = Vec::new();
        loop {
            let e = sse.next(WAIT).await.expect("stream goes on until expiry");
            if e.event == "waiting" {
                // What a poll answers right now is what was pushed.
                assert_eq!(e.data, app.ticket_json("s", mine).await);
            }
            let done = e.event == "expired";
            seen.push(e);
            if done {
                break;
            }
        }
        // Opening changes the pace (no longer "closed") before it moves anyone: a push at the
        // same place. What matters is every move, in order.
        seen.insert(0, first.clone());
        seen.dedup_by(|b, a| a.event == b.event && a.data["position"] == b.data["position"]);
        seen.remove(0);
        let names: Vec<&str> = seen.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(
            names,
            ["waiting", "waiting", "admitted", "expired"],
            "{backend:?}: {seen:?}"
        );
        assert_eq!(seen[0].data["position"], 3);
        assert_eq!(seen[1].data["position"], 1);
        assert_eq!(seen[2].data["status"], "ADMITTED");
        assert!(seen[2].data["expiresInSeconds"].as_u64().unwrap() <= 2);
        assert_eq!(seen[3].data["status"], "UNKNOWN");
        let ids: Vec<u64> = seen
            .iter()
            .map(|e| e.id.as_deref().unwrap().parse().unwrap())
            .collect();
        assert!(
            ids.windows(2).all(|w| w[0] <= w[1]),
            "ids never go back: {ids:?}"
        );
        assert_eq!(
            app.ticket("s", mine).await.status(),
            404,
            "expired means a poll says UNKNOWN"
        );
        assert!(
            sse.next(WAIT).await.is_none(),
            "the stream ends after expired"
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn a_reconnecting_event_source_resumes_at_its_current_place() {
    let app = spawn_app_with(Backend::Memory, config(1, Duration::from_secs(60))).await;
    app.create("r").await;
    let tickets = app.join_many("r", 6).await;
    let url = app.url(&routes::ticket(routes::EVENTS, "r", &tickets[5]));
    let mut sse = SseReader::connect(&app.client, &url, None).await;
    let first = sse.next(WAIT).await.unwrap();
    assert_eq!(first.data["position"], 6);
    drop(sse); // the fan's network drops
    app.open("r").await;
    tokio::time::sleep(Duration::from_millis(2300)).await; // ticks happen meanwhile
    let mut sse = SseReader::connect(&app.client, &url, first.id.as_deref()).await;
    let resumed = sse.next(WAIT).await.unwrap();
    assert_eq!(resumed.event, "waiting");
    let position = resumed.data["position"].as_u64().unwrap();
    assert!(
        (3..=4).contains(&position),
        "the place kept moving while away: {position}"
    );
    // What a poll says, a tick between the two allowed.
    app.agreed("r", &tickets[5], &mut sse, resumed.clone())
        .await;
    let (old, new): (u64, u64) = (
        first.id.unwrap().parse().unwrap(),
        resumed.id.unwrap().parse().unwrap(),
    );
    assert!(new > old, "the new id is past the old one");
    app.stop().await;
}

#[tokio::test]
async fn a_leave_moves_everyone_behind_up_in_pushed_positions() {
    for backend in [Backend::Memory, Backend::Redis, Backend::Cluster] {
        let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
        app.create("l").await;
        let tickets = app.join_many("l", 4).await;
        let mut streams = Vec::new();
        for t in &tickets {
            let mut sse = app.events("l", t).await;
            sse.next(WAIT).await.unwrap();
            streams.push(sse);
        }
        assert_eq!(app.leave("l", &tickets[1]).await.status(), 204);
        let gone = streams[1].next(WAIT).await.unwrap();
        assert_eq!(gone.event, "unknown");
        assert!(
            streams[1].next(WAIT).await.is_none(),
            "a left ticket's stream ends"
        );
        for (i, expected) in [(2usize, 2u64), (3, 3)] {
            let e = streams[i].next(WAIT).await.unwrap();
            assert_eq!(e.data["position"], expected);
            assert_eq!(e.data, app.ticket_json("l", &tickets[i]).await);
        }
        // Nothing changed ahead of the first fan: it is not pushed anything.
        assert!(
            streams[0]
                .drain(Duration::from_millis(300))
                .await
                .is_empty()
        );
        app.stop().await;
    }
}

#[tokio::test]
async fn a_burst_of_leaves_reaches_the_fans_behind_as_one_update() {
    let app = spawn_app_with(Backend::Redis, config(1, Duration::from_secs(60))).await;
    app.create("b").await;
    let mut tickets = app.join_many("b", 61).await;
    let last = tickets.pop().unwrap();
    let mut fan = app.events("b", &last).await;
    assert_eq!(fan.next(WAIT).await.unwrap().data["position"], 61);
    // Fifty fans give up at once.
    let leaves = tickets[..50].iter().map(|t| app.leave("b", t));
    for r in futures::future::join_all(leaves).await {
        assert_eq!(r.status(), 204);
    }
    let pushed = fan.drain(Duration::from_millis(800)).await;
    assert!(
        (1..=3).contains(&pushed.len()),
        "fifty leaves, {} pushes: {pushed:?}",
        pushed.len()
    );
    let final_position = &pushed.last().unwrap().data;
    assert_eq!(final_position["position"], 11);
    assert_eq!(*final_position, app.ticket_json("b", &last).await);
    app.stop().await;
}

/// An SSE stream read straight off a socket: what arrived, and whether the body ended.
async fn raw_stream(addr: SocketAddr, path: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n");
    socket.write_all(head.as_bytes()).await.unwrap();
    socket
}

/// Reads until `within` passes or the chunked body ends; the text read and whether it ended.
async fn read_raw(socket: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, socket.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
        // The last chunk (`0`) may come in a read of its own.
        if text.ends_with("0\r\n\r\n") {
            return (text, true);
        }
    }
    (text, false)
}

#[tokio::test]
async fn one_ticket_holds_a_few_streams_the_newest_replacing_the_oldest() {
    let app = spawn_app_with(Backend::Memory, config(1, Duration::from_secs(60))).await;
    app.create("t").await;
    let ticket = app.join_many("t", 10).await.pop().unwrap();
    let path = routes::ticket(routes::EVENTS, "t", &ticket);
    let mut streams = Vec::new();
    for _ in 0..waiting_room::hub::STREAMS_PER_TICKET + 2 {
        let mut s = raw_stream(app.addr, &path).await;
        let (first, ended) = read_raw(&mut s, Duration::from_millis(300)).await;
        assert!(first.contains("event: waiting") && !ended, "{first}");
        streams.push(s);
    }
    // The two oldest were let go, the newest are followed.
    for old in &mut streams[..2] {
        let (rest, ended) = read_raw(old, WAIT).await;
        assert!(ended, "the oldest streams end: {rest:?}");
    }
    // The opening is pushed to the streams still followed: a wait is told from then on.
    app.open("t").await;
    for live in &mut streams[2..] {
        let (pushed, ended) = read_raw(live, Duration::from_millis(500)).await;
        assert!(pushed.contains("\"etaSeconds\":") && !ended, "{pushed}");
    }
    app.stop().await;
}
