//! Streams per client address, over either transport.

use std::time::Duration;

use reqwest::{Client, StatusCode};
use tokio::time::Instant;
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use super::spawn;
use crate::support::sse::SseReader;
use crate::support::ticket_id;

#[tokio::test]
async fn streams_beyond_the_limit_per_client_get_429_until_one_closes() {
    let app = spawn(Config {
        max_streams_per_client: 2,
        ..Config::for_tests()
    })
    .await;
    app.open("greedy").await;
    let ticket = ticket_id(&app.join_ok("greedy").await);
    let sse_url = app.url(&routes::ticket(routes::EVENTS, "greedy", &ticket));
    let ws_url = app.ws_url("greedy", &ticket);

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
