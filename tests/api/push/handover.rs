//! A held SSE stream is served outside hyper (`src/http/handover.rs`): on the wire it must be
//! what hyper would have sent, whatever came before it on the connection.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use waiting_room::protocol::routes;

use super::WAIT;
use crate::support::api::Api;
use crate::support::app::spawn_app;
use crate::support::backend::Backend;

/// Sends `requests` in one write and reads until `done` holds of what came back, or `within`.
async fn exchange(
    api: &Api,
    requests: &str,
    within: Duration,
    done: impl Fn(&str) -> bool,
) -> String {
    let mut socket = TcpStream::connect(api.addr).await.unwrap();
    socket.write_all(requests.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    let mut buf = [0u8; 4096];
    while !done(&String::from_utf8_lossy(&got)) {
        match tokio::time::timeout_at(deadline, socket.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn the_head_is_hypers_and_the_events_come_chunked() {
    let app = spawn_app(Backend::Memory).await;
    app.create("h").await;
    let ticket = app.join_many("h", 1).await.remove(0);
    let path = routes::ticket(routes::EVENTS, "h", &ticket);
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
    let got = exchange(&app, &request, WAIT, |s| s.contains("\"position\":1")).await;
    let (head, body) = got.split_once("\r\n\r\n").expect("a head");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    for header in [
        "content-type: text/event-stream",
        "cache-control: no-cache",
        "x-accel-buffering: no",
        "transfer-encoding: chunked",
    ] {
        assert!(head.contains(header), "{header} in {head}");
    }
    // One chunk: its size in hex, then the event with its retry, name, id and data.
    let (size, event) = body.split_once("\r\n").unwrap();
    let size = usize::from_str_radix(size, 16).expect("a chunk size");
    assert_eq!(&event[size..size + 2], "\r\n", "the chunk is {size} bytes");
    let event = &event[..size];
    assert!(event.contains("event: waiting\n"), "{event}");
    // The reconnection delay is drawn per stream, so a crowd does not come back at once.
    let retry: u64 = event
        .split_once("retry: ")
        .and_then(|(_, rest)| rest.split_once('\n'))
        .and_then(|(ms, _)| ms.parse().ok())
        .expect("a retry field");
    let (low, high) = waiting_room::http::SSE_RETRY_MS;
    assert!((low..=high).contains(&retry), "retry {retry}");
    assert!(event.contains("\"position\":1"), "{event}");
}

#[tokio::test]
async fn an_answer_pipelined_before_the_stream_arrives_whole_and_no_stand_in_leaks() {
    let app = spawn_app(Backend::Memory).await;
    app.create("p").await;
    let ticket = app.join_many("p", 1).await.remove(0);
    let events = routes::ticket(routes::EVENTS, "p", &ticket);
    let poll = routes::ticket(routes::TICKET, "p", &ticket);
    let requests =
        format!("GET {poll} HTTP/1.1\r\nhost: x\r\n\r\nGET {events} HTTP/1.1\r\nhost: x\r\n\r\n");
    let got = exchange(&app, &requests, WAIT, |s| s.contains("event: waiting")).await;
    assert!(
        !got.contains(" 101 "),
        "the stand-in never reaches the client: {got}"
    );
    let first = got.find("HTTP/1.1 200 OK").expect("the poll's answer");
    let second = got.rfind("HTTP/1.1 200 OK").expect("the stream's head");
    assert!(first < second, "two answers, in order: {got}");
    let poll_answer = &got[first..second];
    assert!(
        poll_answer.contains(&format!("\"ticketId\":\"{ticket}\"")),
        "the poll is answered whole: {poll_answer}"
    );
    assert!(got[second..].contains("event: waiting"), "{got}");
}

#[tokio::test]
async fn a_head_request_gets_the_head_and_no_stream() {
    let app = spawn_app(Backend::Memory).await;
    app.create("hd").await;
    let ticket = app.join_many("hd", 1).await.remove(0);
    let path = routes::ticket(routes::EVENTS, "hd", &ticket);
    let request = format!("HEAD {path} HTTP/1.1\r\nhost: x\r\n\r\n");
    // Read for a second past the head: nothing may follow it.
    let got = exchange(&app, &request, Duration::from_secs(1), |s| {
        s.split_once("\r\n\r\n")
            .is_some_and(|(_, body)| !body.is_empty())
    })
    .await;
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    assert!(got.contains("content-type: text/event-stream"), "{got}");
    let (_, body) = got.split_once("\r\n\r\n").expect("a head");
    assert!(
        body.is_empty(),
        "hyper answered the HEAD, with no stream: {body:?}"
    );
}
