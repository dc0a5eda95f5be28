//! What every test binary needs, written once: a redis-server (or a three-node cluster) of the
//! test's own, the app in-process on port 0 or as a real server process, one method per
//! endpoint to call either, and an SSE reader.
//!
//! A binary takes it with `#[path = "../support/mod.rs"] mod support;` in its `main.rs`; this
//! folder has no `main.rs`, so cargo builds no test binary of its own from it.

// Each binary compiles this module anew and uses only part of it (the browser tests start no
// redis-server, say), so what one binary leaves unused is not dead code.
#![allow(dead_code)]

pub mod api;
pub mod app;
pub mod backend;
pub mod nginx;
pub mod notify;
pub mod origin;
pub mod process;
pub mod redis;
pub mod sentinel;
pub mod sse;

use std::net::TcpListener;

use serde_json::Value;
use uuid::Uuid;
use waiting_room::model::ShowId;

/// The operator token of `Config::for_tests()` and of every [`process::ServerProcess`].
pub const TOKEN: &str = "test-operator-token";

/// One `GET` with exactly `target` as its request target (a client library would resolve
/// `..` or decode it before sending) and the header lines `headers` (`Host` among them): the
/// status and the whole answer, which the server must end within 30 s.
pub async fn raw_get(addr: std::net::SocketAddr, target: &str, headers: &[&str]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("GET {target} HTTP/1.1\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("answered and closed")
    .unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{target}: no status in {answer:?}"));
    (status, answer)
}

/// A free TCP port on loopback (released before use; the caller retries on a clash).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn show(name: &str) -> ShowId {
    name.parse().unwrap()
}

/// A show id nobody else uses, so tests on one server never see each other's queues.
pub fn unique_show(prefix: &str) -> String {
    format!("{prefix}-{}", &Uuid::new_v4().simple().to_string()[..8])
}

/// The `ticketId` of a ticket's JSON, checked to be a UUID.
pub fn ticket_id(v: &Value) -> String {
    let id = v["ticketId"].as_str().expect("ticketId").to_owned();
    Uuid::parse_str(&id).expect("ticketId is a UUID");
    id
}
