//! What a held stream costs the server process, with a generous bound: 2,000 waiting fans
//! holding SSE or WebSocket streams grow its resident memory by less than 8 KiB each
//! (measured on a release build: about 3 KB and 4.4 KB, BENCHMARKS.md §1; hyper's buffers
//! alone made an SSE stream cost 15 KB before). The fans are bare sockets in this process, so
//! only the server's side is counted.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use waiting_room::protocol::routes;

use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

const FANS: usize = 2_000;
const BOUND_PER_STREAM: u64 = 8 * 1024;

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kib * 1024
}

/// Opens a stream at `path` and reads its head (and whatever came with it).
async fn hold(server: &ServerProcess, path: &str, websocket: bool) -> TcpStream {
    let mut socket = TcpStream::connect(server.addr).await.unwrap();
    let upgrade = if websocket {
        "connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n\
         sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    } else {
        "accept: text/event-stream\r\n"
    };
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {}\r\n{upgrade}\r\n",
        server.addr
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut head))
        .await
        .expect("the server answers")
        .unwrap();
    let expected: &[u8] = if websocket {
        b"HTTP/1.1 101"
    } else {
        b"HTTP/1.1 200"
    };
    assert!(
        head[..n].starts_with(expected),
        "{:?}",
        String::from_utf8_lossy(&head[..n])
    );
    socket
}

async fn growth_per_stream(websocket: bool) -> u64 {
    let redis = RedisServer::start().await;
    let server = ServerProcess::start(&redis.url(), 1, &[]).await;
    server.create("held").await;
    let tickets = server.join_many("held", FANS).await;
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_bytes(pid);
    let mut streams = Vec::with_capacity(FANS);
    for ticket in &tickets {
        let template = if websocket {
            routes::WS
        } else {
            routes::EVENTS
        };
        let path = routes::ticket(template, "held", ticket);
        streams.push(hold(&server, &path, websocket).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_bytes(pid);
    assert_eq!(streams.len(), FANS);
    after.saturating_sub(before) / FANS as u64
}

#[tokio::test]
async fn a_held_sse_stream_costs_the_server_under_8_kib() {
    let each = growth_per_stream(false).await;
    assert!(each < BOUND_PER_STREAM, "{each} bytes per SSE stream");
}

#[tokio::test]
async fn a_held_websocket_costs_the_server_under_8_kib() {
    let each = growth_per_stream(true).await;
    assert!(each < BOUND_PER_STREAM, "{each} bytes per WebSocket");
}
