//! Connections: the header and idle timeouts, and the cap with its reserve for the people
//! running the on-sale.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use super::{bearer, closed_within, get, held_connection, raw, request, spawn};
use crate::support::ticket_id;

#[tokio::test]
async fn a_half_sent_request_head_is_closed_after_the_header_timeout() {
    let app = spawn(Config {
        header_timeout: Duration::from_secs(1),
        ..Config::for_tests()
    })
    .await;
    let mut slow = TcpStream::connect(app.addr).await.unwrap();
    let sent = Instant::now();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: ")
        .await
        .unwrap();
    let mut silent = TcpStream::connect(app.addr).await.unwrap();

    // Not before the timeout ...
    assert!(!closed_within(&mut slow, Duration::from_millis(600)).await);
    // ... but soon after it, for a half head and for a connection that never said a word.
    assert!(
        closed_within(&mut slow, Duration::from_secs(3)).await,
        "a half-sent head still open {:?} after it was sent",
        sent.elapsed()
    );
    assert!(sent.elapsed() >= Duration::from_millis(900));
    assert!(closed_within(&mut silent, Duration::from_secs(1)).await);
    app.stop().await;
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_but_a_stream_is_not() {
    let app = spawn(Config {
        header_timeout: Duration::from_secs(1),
        ..Config::for_tests()
    })
    .await;
    let mut idle = held_connection(app.addr).await;
    assert!(!closed_within(&mut idle, Duration::from_millis(600)).await);
    assert!(
        closed_within(&mut idle, Duration::from_secs(3)).await,
        "an idle kept-alive connection outlived the timeout"
    );

    // A stream sends nothing for a while (keep-alives come every 10 s): the timer must not
    // mistake it for an idle connection.
    app.open("slow").await;
    let ticket = ticket_id(&app.join_ok("slow").await);
    let mut stream = TcpStream::connect(app.addr).await.unwrap();
    stream
        .write_all(
            get(
                &routes::ticket(routes::EVENTS, "slow", &ticket),
                "Accept: text/event-stream\r\n",
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut first = [0u8; 64];
    let n = timeout(Duration::from_secs(5), stream.read(&mut first))
        .await
        .unwrap()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&first[..n])
    );
    assert!(
        !closed_within(&mut stream, Duration::from_millis(2500)).await,
        "the header timer cut a stream"
    );
    app.stop().await;
}

#[tokio::test]
async fn beyond_max_connections_only_health_metrics_and_the_operator_are_served() {
    let app = spawn(Config {
        max_connections: 5,
        reserve_connections: 2,
        ..Config::for_tests()
    })
    .await;
    // Not `app.open`: its client would keep a connection, one place of five, in its pool.
    let opened = raw(
        app.addr,
        &request("POST", "/orders/waiting-room/full/open", &bearer()),
    )
    .await;
    assert_eq!(opened.status, 204, "{}", opened.body);
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(held_connection(app.addr).await);
    }

    // A fan's request on a reserve connection: 503 JSON, told when to come back, closed.
    let fan = raw(app.addr, &get("/orders/waiting-room/full/stats", "")).await;
    assert_eq!(fan.status, 503, "{}", fan.body);
    assert!(fan.head.contains("retry-after: 5"), "{}", fan.head);
    assert!(fan.head.contains("connection: close"), "{}", fan.head);
    let body: serde_json::Value = serde_json::from_str(&fan.body).unwrap();
    assert_eq!(body["status"], 503);
    assert_eq!(body["error"], "Service Unavailable");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("connection limit")
    );
    // A made-up bearer token does not make a fan an operator.
    let pretender = raw(
        app.addr,
        &get(
            "/orders/waiting-room/full/stats",
            "Authorization: Bearer guess\r\n",
        ),
    )
    .await;
    assert_eq!(pretender.status, 503);

    // The people running the on-sale still get in.
    assert_eq!(raw(app.addr, &get("/readyz", "")).await.status, 200);
    assert_eq!(raw(app.addr, &get("/healthz", "")).await.status, 200);
    let metrics = raw(app.addr, &get("/metrics", "")).await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.body.contains("waiting_room_"), "{}", metrics.body);
    let operator = raw(app.addr, &get("/orders/waiting-room/full/stats", &bearer())).await;
    assert_eq!(operator.status, 200, "{}", operator.body);
    assert!(
        operator.body.contains("\"queueLength\""),
        "{}",
        operator.body
    );

    // With the reserve taken too, a connection is turned away at once.
    let mut reserve = Vec::new();
    for _ in 0..2 {
        reserve.push(TcpStream::connect(app.addr).await.unwrap());
    }
    // Give the server a moment to take both into the reserve.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut beyond = TcpStream::connect(app.addr).await.unwrap();
    let mut answer = Vec::new();
    timeout(Duration::from_secs(2), beyond.read_to_end(&mut answer))
        .await
        .expect("a connection beyond the reserve is closed at once")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("connection limit"), "{answer}");

    // A connection that leaves gives its place back: fans are served again.
    drop(reserve);
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let r = raw(app.addr, &get("/orders/waiting-room/full/stats", "")).await;
        // The operator route without a token: 401 means it reached the handler.
        if r.status == 401 {
            break;
        }
        assert_eq!(r.status, 503);
        assert!(Instant::now() < deadline, "the freed place never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(held);
    app.stop().await;
}

#[tokio::test]
async fn a_websocket_keeps_its_connections_place_after_the_upgrade() {
    let app = spawn(Config {
        max_connections: 1,
        reserve_connections: 1,
        ..Config::for_tests()
    })
    .await;
    let open = "/orders/waiting-room/ws/open";
    assert_eq!(
        raw(app.addr, &request("POST", open, &bearer()))
            .await
            .status,
        204
    );
    let joined = raw(
        app.addr,
        &request("POST", "/orders/waiting-room/ws/join", ""),
    )
    .await;
    assert_eq!(joined.status, 202, "{}", joined.body);
    let ticket = ticket_id(&serde_json::from_str(&joined.body).unwrap());
    let status = routes::ticket(routes::TICKET, "ws", &ticket);

    let (mut ws, _) = tokio_tungstenite::connect_async(app.ws_url("ws", &ticket))
        .await
        .unwrap();
    // A first frame: the upgrade is done and hyper has handed the socket on.
    timeout(Duration::from_secs(5), futures::StreamExt::next(&mut ws))
        .await
        .expect("a first frame")
        .expect("the socket is open")
        .unwrap();
    assert_eq!(raw(app.addr, &get(&status, "")).await.status, 503);

    drop(ws);
    let deadline = Instant::now() + Duration::from_secs(3);
    while raw(app.addr, &get(&status, "")).await.status != 200 {
        assert!(
            Instant::now() < deadline,
            "the closed socket kept its place"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

#[tokio::test]
async fn a_body_that_never_finishes_is_cut_after_the_header_timeout() {
    let app = spawn(Config {
        header_timeout: Duration::from_secs(1),
        max_connections: 20,
        ..Config::for_tests()
    })
    .await;
    // Twenty heads announcing 1,000 bytes, each sending one: every place taken, for a while.
    let mut slow = Vec::new();
    for _ in 0..20 {
        let mut s = TcpStream::connect(app.addr).await.unwrap();
        s.write_all(
            b"POST /orders HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
              Content-Length: 1000\r\n\r\n{",
        )
        .await
        .unwrap();
        slow.push(s);
    }
    // Each is answered and closed once its body is late; the places come back.
    for s in &mut slow {
        let mut seen = Vec::new();
        timeout(Duration::from_secs(5), s.read_to_end(&mut seen))
            .await
            .expect("a trickled body is cut")
            .unwrap();
        let text = String::from_utf8_lossy(&seen);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    }
    assert_eq!(raw(app.addr, &get("/healthz", "")).await.status, 200);
    app.stop().await;
}

#[tokio::test]
async fn one_client_address_cannot_take_most_of_the_connections() {
    let app = spawn(Config {
        max_connections: 10,
        reserve_connections: 0,
        max_connections_per_client: Some(3),
        ..Config::for_tests()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(held_connection(app.addr).await);
    }
    // A fourth from the same address: turned away at once, before it sends a byte.
    let mut fourth = TcpStream::connect(app.addr).await.unwrap();
    let mut answer = Vec::new();
    timeout(Duration::from_secs(2), fourth.read_to_end(&mut answer))
        .await
        .expect("turned away at once")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    // Another client is served.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut other = socket.connect(app.addr).await.unwrap();
    other
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut seen = Vec::new();
    timeout(Duration::from_secs(5), other.read_to_end(&mut seen))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    // Closing one gives its share back.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut next = TcpStream::connect(app.addr).await.unwrap();
        let mut seen = [0u8; 12];
        next.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .ok();
        let n = timeout(Duration::from_secs(2), next.read(&mut seen))
            .await
            .unwrap()
            .unwrap_or(0);
        if seen[..n].starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed connection kept its share"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}
