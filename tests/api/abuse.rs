//! Slow and greedy clients: header and idle timeouts, the connection cap and its reserve,
//! streams per client address, and the join form's cross-site and cookie rules.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::redirect::Policy;
use reqwest::{Client, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use waiting_room::config::Config;

use crate::helpers::{Backend, SseReader, TOKEN, TestApp, events_path, spawn_app_with, ticket_id};

/// A request on a connection of its own, as a raw client writes it.
fn request(method: &str, path: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\n{extra}Content-Length: 0\r\n\
         Connection: close\r\n\r\n"
    )
}

fn get(path: &str, extra: &str) -> String {
    request("GET", path, extra)
}

fn bearer() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

/// The status line's code, the head and the body of an answer read to its end.
struct RawResponse {
    status: u16,
    head: String,
    body: String,
}

/// Sends `request` on a fresh connection and reads until the server closes it.
async fn raw(addr: SocketAddr, request: &str) -> RawResponse {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    timeout(Duration::from_secs(5), stream.read_to_end(&mut bytes))
        .await
        .expect("the server answers and closes within 5 s")
        .unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    RawResponse {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

/// Whether the server closed `stream` (end of file or a reset) within `within`; whatever it
/// wrote before is read and dropped.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// A kept-alive connection that has been served once, so the server has surely accepted it.
async fn held_connection(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !seen.ends_with(b"\r\n\r\nok") {
        let n = timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("healthz answers")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    stream
}

fn no_redirects() -> Client {
    Client::builder().redirect(Policy::none()).build().unwrap()
}

async fn spawn(config: Config) -> TestApp {
    spawn_app_with(Backend::Memory, config).await
}

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
                &events_path("slow", &ticket),
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
    let status = format!("/orders/waiting-room/ws/tickets/{ticket}");

    let url = format!("ws://{}{status}/ws", app.addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
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
async fn streams_beyond_the_limit_per_client_get_429_until_one_closes() {
    let app = spawn(Config {
        max_streams_per_client: 2,
        ..Config::for_tests()
    })
    .await;
    app.open("greedy").await;
    let ticket = ticket_id(&app.join_ok("greedy").await);
    let sse_url = app.url(&events_path("greedy", &ticket));
    let ws_url = format!(
        "ws://{}/orders/waiting-room/greedy/tickets/{ticket}/ws",
        app.addr
    );

    // Two streams, over either transport, are this address's share.
    let first = SseReader::connect(&app.client, &sse_url, None).await;
    let (ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();

    let refused = app.client.get(&sse_url).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers()["retry-after"], "5");
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["status"], 429);
    assert!(
        body["message"].as_str().unwrap().contains("streams"),
        "{body}"
    );
    match tokio_tungstenite::connect_async(&ws_url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS)
        }
        other => panic!("a third stream over WebSocket: {:?}", other.map(|_| ())),
    }
    // Polling is not a stream: still answered.
    assert_eq!(app.ticket("greedy", &ticket).await.status(), StatusCode::OK);

    // A closed stream gives its slot back, whichever transport it was.
    drop(first);
    let _third = stream_once_a_slot_is_free(&app.client, &sse_url, "SSE").await;
    let r = app.client.get(&sse_url).send().await.unwrap();
    assert_eq!(
        r.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "both slots are taken again"
    );
    drop(ws);
    let _fourth = stream_once_a_slot_is_free(&app.client, &sse_url, "WebSocket").await;
    // Open streams end on shutdown; they do not hold the drain up.
    let stopping = Instant::now();
    app.stop().await;
    assert!(
        stopping.elapsed() < Duration::from_secs(2),
        "{:?}",
        stopping.elapsed()
    );
}

/// Opens `url` as soon as the server has counted the `closed` stream out (429 until then).
async fn stream_once_a_slot_is_free(client: &Client, url: &str, closed: &str) -> reqwest::Response {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let r = client.get(url).send().await.unwrap();
        if r.status() == StatusCode::OK {
            return r;
        }
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(
            Instant::now() < deadline,
            "the closed {closed} stream kept its slot"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_join_form_refuses_posts_from_other_sites() {
    let app = spawn(Config::for_tests()).await;
    app.open("csrf").await;
    let client = no_redirects();
    let url = app.url("/wait/csrf/join");
    let ours = format!("http://{}", app.addr);

    for (header, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "http://evil.example"),
        ("origin", "null"),
    ] {
        let r = client
            .post(&url)
            .header(header, value)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{header}: {value}");
        assert!(r.headers().get("set-cookie").is_none());
        let page = r.text().await.unwrap();
        assert!(page.contains("another website"), "{page}");
    }
    let stats = app.stats("csrf").await;
    assert_eq!(stats["queueLength"], 0, "a refused post joined: {stats}");

    // The page's own form, as a browser sends it, and a client that names no origin.
    let same_origin = client
        .post(&url)
        .header("sec-fetch-site", "same-origin")
        .header("origin", &ours)
        .send()
        .await
        .unwrap();
    assert_eq!(same_origin.status(), StatusCode::SEE_OTHER);
    let origin_only = client
        .post(&url)
        .header("origin", &ours)
        .send()
        .await
        .unwrap();
    assert_eq!(origin_only.status(), StatusCode::SEE_OTHER);
    let curl = client.post(&url).send().await.unwrap();
    assert_eq!(curl.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.stats("csrf").await["queueLength"], 3);
    app.stop().await;
}

#[tokio::test]
async fn the_ticket_cookie_is_http_only_and_lax_and_secure_behind_https() {
    let app = spawn(Config::for_tests()).await;
    app.open("cookie").await;
    let r = no_redirects()
        .post(app.url("/wait/cookie/join"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("wr_ticket="), "{cookie}");
    assert!(cookie.contains("; HttpOnly"), "{cookie}");
    assert!(cookie.contains("; SameSite=Lax"), "{cookie}");
    assert!(
        !cookie.contains("Secure"),
        "plain http cannot keep a Secure cookie: {cookie}"
    );
    app.stop().await;

    let app = spawn(Config {
        public_url: Some("https://tickets.example".parse().unwrap()),
        ..Config::for_tests()
    })
    .await;
    app.open("cookie").await;
    let r = no_redirects()
        .post(app.url("/wait/cookie/join"))
        .header("origin", "https://tickets.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("; HttpOnly"), "{cookie}");
    assert!(cookie.ends_with("; Secure"), "{cookie}");
    // With a public URL, that is the only origin: the host the request names is not.
    let r = no_redirects()
        .post(app.url("/wait/cookie/join"))
        .header("origin", format!("http://{}", app.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    app.stop().await;
}

/// A join as from `client`, as our one trusted proxy reports it.
async fn join_from(app: &TestApp, show: &str, client: &str) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/orders/waiting-room/{show}/join")))
        .header("x-forwarded-for", client)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn ipv6_joins_are_limited_per_64_while_other_prefixes_and_ipv4_join_on() {
    for backend in [Backend::Memory, Backend::Redis] {
        let app = spawn_app_with(
            backend,
            Config {
                join_rate_limit: 2,
                trusted_proxy_hops: 1,
                ..Config::for_tests()
            },
        )
        .await;
        app.create("v6").await;
        app.open("v6").await;

        // Every join from another address of one /64: one client, whose burst (twice the
        // rate) passes and no more, however many addresses it rotates through.
        let started = Instant::now();
        let mut statuses = Vec::new();
        let mut refused = None;
        for n in 1..=12 {
            let r = join_from(&app, "v6", &format!("2001:db8:1:2::{n:x}")).await;
            statuses.push(r.status());
            if r.status() == StatusCode::TOO_MANY_REQUESTS && refused.is_none() {
                refused = Some(r);
            }
        }
        let elapsed = started.elapsed();
        assert!(
            statuses[..4].iter().all(|s| *s == StatusCode::ACCEPTED),
            "{backend:?}: the burst passes: {statuses:?}"
        );
        let accepted = statuses
            .iter()
            .filter(|s| **s == StatusCode::ACCEPTED)
            .count();
        // One more join every 500 ms as the bucket refills, if the requests were that slow.
        let refills = (elapsed.as_millis() / 500) as usize + 1;
        assert!(
            accepted <= 4 + refills,
            "{backend:?}: {accepted} joins from one /64 passed in {elapsed:?}: {statuses:?}"
        );
        let refused = refused.unwrap_or_else(|| {
            panic!("{backend:?}: rotating addresses in one /64 dodged the limit: {statuses:?}")
        });
        assert!(refused.headers().contains_key("retry-after"));
        assert_eq!(
            app.stats("v6").await["queueLength"],
            accepted as u64,
            "{backend:?}: a refused join queues nothing"
        );

        // Another /64 and an IPv4 client are other clients, each with its own burst.
        for client in ["2001:db8:1:3::1", "203.0.113.7"] {
            for i in 0..4 {
                assert_eq!(
                    join_from(&app, "v6", client).await.status(),
                    StatusCode::ACCEPTED,
                    "{backend:?}: join {i} from {client}"
                );
            }
        }
        app.stop().await;
    }
}
