//! `deploy/nginx.conf` in a real nginx in front of two real server processes on one Redis, as
//! `docker-compose.yaml` runs them: fans get through, `/metrics` and the console stay on the
//! internal port.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use waiting_room::protocol::routes;

use crate::support::nginx::Nginx;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;
use crate::support::sse::SseReader;
use crate::support::ticket_id;

#[tokio::test]
async fn the_edge_serves_fans_and_keeps_metrics_inside() {
    let redis = RedisServer::start().await;
    let env = [("TRUSTED_PROXY_HOPS", "1")];
    let a = ServerProcess::start(&redis.url(), 5, &env).await;
    let b = ServerProcess::start(&redis.url(), 5, &env).await;
    let edge = Nginx::start(&[a.addr, b.addr]).await;
    a.open("edge").await;
    let client = reqwest::Client::new();
    for _ in 0..4 {
        let r = client
            .post(edge.url(&routes::show(routes::JOIN, "edge")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
    }
    assert_eq!(a.stats("edge").await["joined"], 4);
    let metrics = client.get(edge.url(routes::METRICS)).send().await.unwrap();
    assert_eq!(
        metrics.status(),
        StatusCode::NOT_FOUND,
        "metrics are not public"
    );
    // Prometheus scrapes the instances themselves.
    assert!(a.metrics().await.contains("waiting_room_"));
    let healthy = client.get(edge.url(routes::HEALTHZ)).send().await.unwrap();
    assert_eq!(healthy.status(), StatusCode::OK);
    for path in ["/admin", "/admin/", "/admin/stats/events"] {
        let console = client.get(edge.url(path)).send().await.unwrap();
        assert_eq!(
            console.status(),
            StatusCode::NOT_FOUND,
            "{path}: the console is not public"
        );
    }
    // The internal port serves both, and the console's operator stream behind its token.
    let console = client
        .get(edge.internal_url("/admin"))
        .send()
        .await
        .unwrap();
    assert_eq!(console.status(), StatusCode::OK);
    assert!(console.text().await.unwrap().contains("<html"));
    let metrics = client
        .get(edge.internal_url(routes::METRICS))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), StatusCode::OK);
    assert!(metrics.text().await.unwrap().contains("waiting_room_"));
}

/// What the edge sends compressed: the page and its script when the browser asks, never an
/// event stream (a compressor would hold its events back).
#[tokio::test]
async fn the_edge_gzips_pages_and_never_streams() {
    let redis = RedisServer::start().await;
    let env = [("TRUSTED_PROXY_HOPS", "1")];
    let a = ServerProcess::start(&redis.url(), 5, &env).await;
    let edge = Nginx::start(&[a.addr]).await;
    a.create("zip").await;
    // Plain reqwest (no decompression feature): the bytes as they travel.
    let client = reqwest::Client::new();
    let get = |path: String| {
        client
            .get(edge.url(&path))
            .header("accept-encoding", "gzip")
            .send()
    };
    let page = get("/wait/zip".into()).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-encoding"], "gzip");
    let plain = client.get(edge.url("/wait/zip")).send().await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    assert!(plain.text().await.unwrap().contains(r#"data-show="zip""#));

    let ticket = ticket_id(
        &client
            .post(edge.url(&routes::show(routes::JOIN, "zip")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap(),
    );
    let stream = get(routes::ticket(routes::EVENTS, "zip", &ticket))
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(
        stream.headers().get("content-encoding").is_none(),
        "an event stream is never compressed"
    );
    let mut body = stream.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .expect("the first event at once")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&first).contains("WAITING"));
}

/// The waiting page, SSE and WebSocket through nginx: each change reaches the fan as it
/// happens (no buffering), whichever instance serves the stream.
#[tokio::test]
async fn pages_and_streams_go_through_the_edge_unbuffered() {
    let redis = RedisServer::start().await;
    let env = [("TRUSTED_PROXY_HOPS", "1")];
    let a = ServerProcess::start(&redis.url(), 5, &env).await;
    let b = ServerProcess::start(&redis.url(), 5, &env).await;
    let edge = Nginx::start(&[a.addr, b.addr]).await;
    a.create("live").await;
    let client = reqwest::Client::new();
    let page = client.get(edge.url("/wait/live")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains(r#"data-show="live""#));
    let join = |_: ()| {
        client
            .post(edge.url(&routes::show(routes::JOIN, "live")))
            .send()
    };
    let sse_fan = ticket_id(&join(()).await.unwrap().json().await.unwrap());
    let ws_fan = ticket_id(&join(()).await.unwrap().json().await.unwrap());
    let mut events = SseReader::connect(
        &client,
        &edge.url(&routes::ticket(routes::EVENTS, "live", &sse_fan)),
        None,
    )
    .await;
    let first = events.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.event, "waiting");
    let ws_url = format!(
        "ws://{}{}",
        edge.addr,
        routes::ticket(routes::WS, "live", &ws_fan)
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(frame.into_text().unwrap().contains("WAITING"));
    // The show opens: both fans are told at once, through the edge.
    a.open("live").await;
    let admitted = loop {
        let e = events.next(Duration::from_secs(10)).await.unwrap();
        if e.event != "waiting" {
            break e;
        }
    };
    assert_eq!(admitted.event, "admitted");
    let pushed = loop {
        let f = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a frame through the edge")
            .unwrap()
            .unwrap();
        if let Ok(text) = f.into_text()
            && text.contains("ADMITTED")
        {
            break text;
        }
    };
    assert!(pushed.contains("pass"), "{pushed}");
}
