//! Every spelling of a guarded path (`tests/support/spellings.tsv`), sent as raw bytes (an
//! HTTP client library would make most of them canonical before sending) through gateway
//! mode to two real origins: nginx, which decodes escapes, resolves dot segments, merges
//! slashes and here routes `/checkout` whatever its letter case (as Express does), and the
//! echo origin, which shows the path it was sent. Without a pass none reaches a guarded
//! location: each is sent to the queue or refused, and what does go on is the canonical path.

use std::net::SocketAddr;

use serde_json::Value;

use crate::support::nginx::Nginx;
use crate::support::origin::Origin;
use crate::support::process::ServerProcess;

/// A shop whose checkout answers `reached-checkout …` for any letter case.
const SHOP: &str = r#"
events { worker_connections 64; }
http {
  access_log off;
  server {
    listen LISTEN;
    location ~* ^/checkout(/|$) { return 200 "reached-checkout $uri"; }
    location / { return 200 "reached-open $uri"; }
  }
}
"#;

const PROTECT: &str = "/checkout=a,purchase=/checkout/pay,/checkout/vip=b";

/// One request with exactly `target` as its request target: the status and the whole answer.
async fn raw_get(addr: SocketAddr, target: &str) -> (u16, String) {
    crate::support::raw_get(addr, target, &["Host: shop.example"]).await
}

/// The body of an answer read by [`raw_get`] (no chunked encoding: both origins send a length).
fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

fn spellings() -> Vec<(String, String, String)> {
    include_str!("../../support/spellings.tsv")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let row: Vec<&str> = l.split('\t').collect();
            (row[0].into(), row[1].into(), row[2].into())
        })
        .collect()
}

/// What the gateway must answer a request for a path the table says `show` guards (or not).
fn assert_judged(raw: &str, show: &str, status: u16, answer: &str) {
    match show {
        "400" => assert_eq!(status, 400, "{raw}: {answer}"),
        "-" => assert_eq!(status, 200, "{raw}: {answer}"),
        guarded => {
            let show = guarded.trim_end_matches("+buy");
            assert_eq!(status, 303, "{raw}: {answer}");
            assert!(
                answer.contains(&format!("location: /wait/{show}?return=")),
                "{raw}: {answer}"
            );
        }
    }
}

#[tokio::test]
async fn no_spelling_of_a_guarded_path_reaches_the_origin_without_a_pass() {
    let nginx = Nginx::start_config(SHOP).await;
    let shop = format!("http://{}", nginx.addr);
    let echo = Origin::start();
    let echo_url = echo.url();
    let to_nginx = ServerProcess::start(
        "",
        10,
        &[("UPSTREAM_URL", shop.as_str()), ("PROTECT", PROTECT)],
    )
    .await;
    let to_echo = ServerProcess::start(
        "",
        10,
        &[("UPSTREAM_URL", echo_url.as_str()), ("PROTECT", PROTECT)],
    )
    .await;
    let rows = spellings();
    assert!(rows.len() >= 20);
    for (raw, show, forward) in &rows {
        // nginx: the checkout answers nobody without a pass, however the path is spelled.
        let (status, answer) = raw_get(to_nginx.addr, raw).await;
        assert!(
            !answer.contains("reached-checkout"),
            "{raw} reached the checkout: {answer}"
        );
        assert_judged(raw, show, status, &answer);
        if show == "-" {
            assert!(
                body(&answer).starts_with("reached-open /"),
                "{raw}: {answer}"
            );
        }
        // The echo origin: what goes on is the canonical path.
        let (status, answer) = raw_get(to_echo.addr, raw).await;
        assert_judged(raw, show, status, &answer);
        if show == "-" {
            let echoed: Value = serde_json::from_str(body(&answer)).unwrap();
            assert_eq!(echoed["path"], forward.as_str(), "{raw}");
        }
    }
    // Only the unguarded ones reached it, each once, canonical.
    let seen = echo.seen().await;
    let unguarded: Vec<&str> = rows
        .iter()
        .filter(|(_, show, _)| show == "-")
        .map(|(_, _, forward)| forward.as_str())
        .collect();
    assert_eq!(seen, unguarded);
}
