//! What else a hostile client tries on gateway mode: headers spelled with `_` that a CGI-style
//! origin reads as the gateway's own, a client that stops reading to pin an origin
//! connection, and a spent pass presented after the store lost its show.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use waiting_room::protocol::{ADMISSION_HEADER, CHECKED_HEADER};

use super::{admitted_pass, open_gateway};
use crate::support::origin::Origin;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

/// wsgiref folds `_` into `-`: `X_Admission_Ticket` would be read as the gateway's vouched
/// `X-Admission-Ticket`, `X_Forwarded_For` as the client's address. Neither reaches it.
#[tokio::test]
async fn headers_with_underscores_never_reach_a_cgi_style_origin() {
    let origin = Origin::start_wsgi();
    let gw = open_gateway("", &origin, &[]).await;
    let forged = "eyJforged.forged.forged";
    let seen: Value = gw
        .client
        .get(gw.url("/open"))
        .header("X_Admission_Ticket", forged)
        .header("X_Forwarded_For", "203.0.113.9")
        .header("X_Real_IP", "203.0.113.9")
        .header("Accept_Language", "fr")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(seen.get("HTTP_X_ADMISSION_TICKET").is_none(), "{seen}");
    assert_eq!(seen["HTTP_X_FORWARDED_FOR"], "127.0.0.1", "{seen}");
    assert!(seen.get("HTTP_X_REAL_IP").is_none(), "{seen}");
    assert!(seen.get("HTTP_ACCEPT_LANGUAGE").is_none(), "{seen}");
    // On a guarded path with a real pass, the origin reads that pass and only it.
    let pass = admitted_pass(&gw, "gw").await;
    let seen: Value = gw
        .client
        .get(gw.url("/checkout/cart"))
        .header("cookie", format!("wr_pass={pass}"))
        .header("X_Admission_Ticket", forged)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["HTTP_X_ADMISSION_TICKET"], pass.as_str(), "{seen}");
    assert_eq!(seen["PATH_INFO"], "/checkout/cart");
}

/// A client that asks for a large answer and stops reading is cut after
/// `UPSTREAM_IDLE_TIMEOUT`, and the origin's connection with it: the origin's write fails
/// instead of waiting as long as the client keeps its socket open.
#[tokio::test]
async fn a_client_that_stops_reading_pins_no_origin_connection() {
    let origin = Origin::start();
    let url = origin.url();
    let gw = ServerProcess::start(
        "",
        20,
        &[
            ("UPSTREAM_URL", url.as_str()),
            ("UPSTREAM_IDLE_TIMEOUT", "2s"),
            ("HEADER_TIMEOUT", "2s"),
        ],
    )
    .await;
    let mut stalled = TcpStream::connect(gw.addr).await.unwrap();
    stalled
        .write_all(b"GET /big HTTP/1.1\r\nHost: shop\r\n\r\n")
        .await
        .unwrap();
    // The socket stays open and unread; the origin's stream must end by itself.
    let outcome = async {
        loop {
            let big: Vec<String> = reqwest::get(format!("{url}/big-outcome"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if let Some(outcome) = big.first() {
                return outcome.clone();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(120), outcome)
        .await
        .expect("the origin's connection was let go while the client kept its socket");
    assert_eq!(outcome, "aborted");
    drop(stalled);
}

/// Redis restarted without persistence: the show is lost. A pass of it, spent before or not,
/// opens nothing, at the pass route and the gateway alike; only a store that cannot be
/// reached at all leaves the signature to decide.
#[tokio::test]
async fn after_the_store_lost_a_show_its_passes_let_nobody_in() {
    let mut redis = RedisServer::start().await;
    let origin = Origin::start();
    let gw = open_gateway(&redis.url(), &origin, &[]).await;
    let spent = admitted_pass(&gw, "gw").await;
    let unspent = admitted_pass(&gw, "gw").await;
    assert_eq!(gw.redeem("gw", Some(&spent)).await.status(), StatusCode::OK);
    assert_eq!(
        gw.check_pass("gw", &unspent).await.status(),
        StatusCode::NO_CONTENT
    );
    redis.restart().await;
    // The watchdog marks the show lost; joins say so.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = gw.join("gw").await;
        let status = r.status();
        let body = r.text().await.unwrap();
        if status == StatusCode::SERVICE_UNAVAILABLE && body.contains("lost the queue") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the show was not marked lost: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for pass in [&spent, &unspent] {
        let r = gw.check_pass("gw", pass).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert!(r.headers().get(CHECKED_HEADER).is_none());
        let r = gw
            .client
            .get(gw.url("/checkout/cart"))
            .header(ADMISSION_HEADER, pass.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    }
    assert!(
        origin
            .seen()
            .await
            .iter()
            .all(|p| !p.starts_with("/checkout"))
    );
    // A store that does not answer at all leaves the signature to decide, but what this
    // instance learnt stays: the lost incarnation's pass opens nothing.
    redis.stop();
    let r = gw.check_pass("gw", &unspent).await;
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "a lost show stays refused"
    );
}
