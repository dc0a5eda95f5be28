//! Slow and greedy clients: header and idle timeouts, the connection cap and its reserve,
//! streams per client address, and the join form's cross-site and cookie rules.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};
use waiting_room::config::Config;

use crate::support::TOKEN;
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::backend::Backend;

mod connections;
mod joins;
mod operator;
mod shed;
mod streams;

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

async fn spawn(config: Config) -> TestApp {
    spawn_app_with(Backend::Memory, config).await
}
