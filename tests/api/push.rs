//! The push contract with real clients: an SSE reader over HTTP and tokio-tungstenite.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use reqwest::Client;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use waiting_room::config::Config;

use crate::helpers::{
    Backend, RedisServer, ServerProcess, SseEvent, SseReader, TOKEN, events_path, leads,
    metrics_text, spawn_app_with, ticket_id,
};

const WAIT: Duration = Duration::from_secs(5);

fn config(rate: u32, ttl: Duration) -> Config {
    Config {
        admit_per_second: rate,
        admission_ttl: ttl,
        ..Config::for_tests()
    }
}

/// Sleeps to the middle of a wall-clock second: admission ticks land early in a second, so
/// nothing moves between now and the next 400 ms.
async fn mid_second() {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        % 1000;
    let wait = if ms < 450 { 450 - ms } else { 1450 - ms };
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

#[tokio::test]
async fn sse_first_state_at_once_then_falling_positions_admission_and_expiry() {
    for backend in [Backend::Memory, Backend::Redis] {
        let app = spawn_app_with(backend, config(2, Duration::from_millis(1500))).await;
        app.create("s").await;
        let tickets: Vec<String> = {
            let mut t = Vec::new();
            for _ in 0..5 {
                t.push(ticket_id(&app.join_ok("s").await));
            }
            t
        };
        let mine = &tickets[4];
        let mut sse =
            SseReader::connect(&app.client, &app.url(&events_path("s", mine)), None).await;
        let first = sse
            .next(Duration::from_secs(1))
            .await
            .expect("the current state at once");
        assert_eq!(first.event, "waiting");
        assert_eq!(first.data["position"], 5);
        assert_eq!(first.data["etaSeconds"], 3);
        assert_eq!(
            first.data,
            app.ticket_json("s", mine).await,
            "pushed = polled"
        );
        assert!(first.id.is_some());

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
async fn websocket_frames_carry_the_same_json_and_event_names() {
    for backend in [Backend::Memory, Backend::Redis, Backend::Cluster] {
        let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
        app.create("w").await;
        let a = ticket_id(&app.join_ok("w").await);
        let b = ticket_id(&app.join_ok("w").await);
        let url = format!("ws://{}/orders/waiting-room/w/tickets/{b}/ws", app.addr);
        let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut next = async || -> Value {
            loop {
                let msg = tokio::time::timeout(WAIT, ws.next())
                    .await
                    .unwrap()
                    .unwrap()
                    .unwrap();
                if let Message::Text(t) = msg {
                    return serde_json::from_str(&t).unwrap();
                }
            }
        };
        let first = next().await;
        assert_eq!(first["event"], "waiting");
        assert_eq!(first["position"], 2);
        assert_eq!(first["ticketId"], b.as_str());
        app.open("w").await;
        let opened = next().await;
        assert!(opened.get("paused").is_none(), "open: no longer paused");
        let moved = if opened["position"] == 2 {
            next().await
        } else {
            opened
        };
        assert_eq!(
            (moved["event"].as_str(), moved["position"].as_u64()),
            (Some("waiting"), Some(1))
        );
        let admitted = next().await;
        assert_eq!(admitted["event"], "admitted");
        assert_eq!(admitted["status"], "ADMITTED");
        assert_eq!(app.ticket_json("w", &a).await["status"], "ADMITTED");
        ws.close(None).await.unwrap();
        app.stop().await;
    }
}

#[tokio::test]
async fn a_reconnecting_event_source_resumes_at_its_current_place() {
    let app = spawn_app_with(Backend::Memory, config(1, Duration::from_secs(60))).await;
    app.create("r").await;
    let mut tickets = Vec::new();
    for _ in 0..6 {
        tickets.push(ticket_id(&app.join_ok("r").await));
    }
    let url = app.url(&events_path("r", &tickets[5]));
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
    assert_eq!(resumed.data, app.ticket_json("r", &tickets[5]).await);
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
        let mut tickets = Vec::new();
        let mut streams = Vec::new();
        for _ in 0..4 {
            let t = ticket_id(&app.join_ok("l").await);
            let mut sse =
                SseReader::connect(&app.client, &app.url(&events_path("l", &t)), None).await;
            sse.next(WAIT).await.unwrap();
            tickets.push(t);
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
async fn shutdown_ends_every_stream_cleanly() {
    let app = spawn_app_with(Backend::Memory, config(1, Duration::from_secs(60))).await;
    app.create("x").await;
    let t = ticket_id(&app.join_ok("x").await);
    let mut sse = SseReader::connect(&app.client, &app.url(&events_path("x", &t)), None).await;
    sse.next(WAIT).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(format!(
        "ws://{}/orders/waiting-room/x/tickets/{t}/ws",
        app.addr
    ))
    .await
    .unwrap();
    ws.next().await.unwrap().unwrap();
    let stopping = tokio::spawn(app.stop());
    assert!(sse.next(WAIT).await.is_none(), "SSE ends");
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return true,
                Some(Ok(_)) => {}
            }
        }
    })
    .await
    .unwrap();
    assert!(closed);
    stopping.await.unwrap();
}

/// Latest pushed state per fan, polled state per fan, compared in the quiet middle of a second.
async fn assert_pushed_equals_polled(
    client: &Client,
    poll_base: &str,
    show: &str,
    fans: &mut [(String, SseReader, Value)],
) {
    mid_second().await;
    for (ticket, sse, latest) in fans.iter_mut() {
        if let Some(last) = sse.drain(Duration::from_millis(20)).await.pop() {
            *latest = last.data;
        }
        let polled: Value = client
            .get(format!(
                "{poll_base}/orders/waiting-room/{show}/tickets/{ticket}"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if polled["status"] == "WAITING" || latest["status"] == "WAITING" {
            assert_eq!(*latest, polled, "pushed and polled differ for {ticket}");
        }
    }
}

#[tokio::test]
async fn fans_on_one_instance_follow_the_admitter_on_another() {
    let redis = RedisServer::start().await;
    let b = ServerProcess::start(&redis.url(), 3, &[]).await;
    let client = Client::new();
    // Let B take the lease before A exists.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if leads(&metrics_text(&client, &b.base()).await) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "B never led");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let a = ServerProcess::start(&redis.url(), 3, &[]).await;
    let base = format!("http://{}", a.addr);
    let made = client
        .put(a.url("/orders/waiting-room/x"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let mut fans = Vec::new();
    for _ in 0..24 {
        let j: Value = client
            .post(a.url("/orders/waiting-room/x/join"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let t = ticket_id(&j);
        let mut sse = SseReader::connect(&client, &a.url(&events_path("x", &t)), None).await;
        let first = sse.next(WAIT).await.unwrap().data;
        fans.push((t, sse, first));
    }
    // Leaves before anything opens.
    for i in [2, 7, 8] {
        assert_eq!(
            client
                .delete(a.url(&format!("/orders/waiting-room/x/tickets/{}", fans[i].0)))
                .send()
                .await
                .unwrap()
                .status(),
            204
        );
    }
    assert_pushed_equals_polled(&client, &base, "x", &mut fans).await;
    client
        .post(b.url("/orders/waiting-room/x/open"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    for round in 0..3 {
        assert_pushed_equals_polled(&client, &base, "x", &mut fans).await;
        // A leave between ticks, on the instance that does not admit.
        let leaver = 12 + round * 3;
        client
            .delete(a.url(&format!(
                "/orders/waiting-room/x/tickets/{}",
                fans[leaver].0
            )))
            .send()
            .await
            .unwrap();
    }
    assert_pushed_equals_polled(&client, &base, "x", &mut fans).await;
    let admitted = fans.iter().filter(|f| f.2["status"] == "ADMITTED").count();
    assert!(
        admitted >= 9,
        "ticks of B reached fans on A: {admitted} admitted"
    );
    let m = metrics_text(&client, &a.base()).await;
    assert!(
        m.lines().any(|l| l == "waiting_room_admitter_leader 0"),
        "A never led: {m}"
    );
    assert!(
        !m.contains("waiting_room_admissions_total"),
        "A never admitted: {m}"
    );
}

async fn total_commands(redis: &RedisServer) -> u64 {
    let mut conn = redis.conn().await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| l.split("calls=").nth(1))
        .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .sum()
}

async fn reset_stats(redis: &RedisServer) {
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// Redis commands during `secs` whole seconds while `fans` follow over SSE; asserts every
/// fan was pushed something meanwhile.
async fn commands_while_following(redis: &RedisServer, fans: &mut [SseReader], secs: u64) -> u64 {
    mid_second().await;
    for f in fans.iter_mut() {
        f.drain(Duration::from_millis(5)).await;
    }
    reset_stats(redis).await;
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let total = total_commands(redis).await;
    for f in fans.iter_mut() {
        assert!(
            !f.drain(Duration::from_millis(50)).await.is_empty(),
            "every fan was pushed a tick"
        );
    }
    total
}

#[tokio::test]
async fn redis_commands_per_tick_do_not_grow_with_connected_fans() {
    let app = spawn_app_with(Backend::Redis, config(1, Duration::from_secs(60))).await;
    app.create("c").await;
    let redis = app.redis.as_ref().unwrap().server();
    let mut tickets = Vec::new();
    for _ in 0..210 {
        tickets.push(ticket_id(&app.join_ok("c").await));
    }
    let mut fans = Vec::new();
    for t in &tickets[10..30] {
        fans.push(SseReader::connect(&app.client, &app.url(&events_path("c", t)), None).await);
    }
    app.open("c").await;
    let with_20 = commands_while_following(redis, &mut fans, 3).await;
    for t in &tickets[30..210] {
        fans.push(SseReader::connect(&app.client, &app.url(&events_path("c", t)), None).await);
    }
    let with_200 = commands_while_following(redis, &mut fans, 3).await;
    // Per second, for one show: the lease renewal, the open shows and the admission script
    // with the commands it runs inside, the pace check, the watchdog's check, and one status
    // read confirming the fan admitted that tick; the hub adds nothing per waiting fan.
    assert!(with_20 <= 3 * 60, "with 20 fans: {with_20} commands in 3 s");
    assert!(
        with_200 <= with_20 + 6,
        "20 fans: {with_20}, 200 fans: {with_200}"
    );
    app.stop().await;
}

#[tokio::test]
async fn streams_survive_the_pubsub_connection_being_killed() {
    let app = spawn_app_with(Backend::Redis, config(1, Duration::from_secs(60))).await;
    app.create("k").await;
    let redis = app.redis.as_ref().unwrap().server();
    let mut tickets = Vec::new();
    for _ in 0..8 {
        tickets.push(ticket_id(&app.join_ok("k").await));
    }
    let mut fan =
        SseReader::connect(&app.client, &app.url(&events_path("k", &tickets[7])), None).await;
    assert_eq!(fan.next(WAIT).await.unwrap().data["position"], 8);
    app.open("k").await;
    let opened = fan.next(WAIT).await.unwrap();
    assert!(opened.data.get("paused").is_none(), "{opened:?}");
    let moved = if opened.data["position"] == 8 {
        fan.next(WAIT).await.unwrap()
    } else {
        opened
    };
    assert_eq!(moved.data["position"], 7);
    let mut conn = redis.conn().await;
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(killed, 1, "the hub's one subscription");
    // Leaves while the hub is away still reach the fan after it resynchronises.
    app.leave("k", &tickets[6]).await;
    let mut positions = Vec::new();
    while positions.len() < 3 {
        let e = fan.next(WAIT).await.expect("the stream stays open");
        positions.push(e.data["position"].as_u64().unwrap());
        assert_eq!(e.data, app.ticket_json("k", &tickets[7]).await);
    }
    assert!(
        positions.windows(2).all(|w| w[1] < w[0]),
        "positions keep falling: {positions:?}"
    );
}

/// An SSE stream read straight off a socket: what arrived, and whether the body ended.
async fn raw_stream(addr: std::net::SocketAddr, path: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n");
    socket.write_all(head.as_bytes()).await.unwrap();
    socket
}

/// Reads until `within` passes or the chunked body ends; the text read and whether it ended.
async fn read_raw(socket: &mut tokio::net::TcpStream, within: Duration) -> (String, bool) {
    use tokio::io::AsyncReadExt;
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
    for _ in 0..9 {
        app.join_ok("t").await;
    }
    let ticket = ticket_id(&app.join_ok("t").await);
    let path = events_path("t", &ticket);
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
    app.set_rate("t", 7).await;
    for live in &mut streams[2..] {
        let (pushed, ended) = read_raw(live, Duration::from_millis(500)).await;
        assert!(pushed.contains("\"etaSeconds\":2") && !ended, "{pushed}");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_burst_of_leaves_reaches_the_fans_behind_as_one_update() {
    let app = spawn_app_with(Backend::Redis, config(1, Duration::from_secs(60))).await;
    app.create("b").await;
    let mut tickets = Vec::new();
    for _ in 0..61 {
        tickets.push(ticket_id(&app.join_ok("b").await));
    }
    let last = tickets.pop().unwrap();
    let mut fan = SseReader::connect(&app.client, &app.url(&events_path("b", &last)), None).await;
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
