//! The lean origin leg (src/http/gateway/upstream.rs: a bodiless `GET` or `HEAD` written and
//! read by the serving task, without hyper's client) against a real origin process writing
//! answers byte for byte: every framing RFC 9112 allows is read to its exact end, every
//! malformed one is refused or cut, informational answers are skipped, `HEAD` gets a head
//! alone, and kept-alive origin connections serve request after request in order, also when
//! the origin closes them.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::{admitted_pass, open_gateway, with_cookie};
use crate::support::origin::Origin;
use crate::support::process::ServerProcess;

/// `GET /echo?…` through the gateway answers what the origin saw of that very request.
async fn echoes(gw: &ServerProcess, n: usize) {
    let path = format!("/echo?n={n}");
    let r = gw.get(&path).await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{path}: {text}");
    let echo: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(echo["path"], path.as_str(), "an answer to another request");
}

#[tokio::test]
async fn every_framing_of_the_origins_answer_is_read_to_its_end() {
    let origin = Origin::start();
    let gw = open_gateway("", &origin, &[]).await;
    // (raw answer, status the fan gets, its body)
    for (name, status, body) in [
        ("early-hints", 200, "hints"),
        ("chunked", 200, "hello, chunk"),
        ("until-close", 200, "until the end"),
        ("no-length", 200, "read to the close"),
        ("te-and-length", 200, "first"),
        ("no-content", 204, ""),
        ("not-modified", 304, ""),
        ("then-close", 200, "bye."),
    ] {
        let r = gw.get(&format!("/raw/{name}")).await;
        assert_eq!(r.status().as_u16(), status, "{name}");
        assert!(r.headers().get("x-trailer").is_none(), "{name}");
        if name == "chunked" {
            assert_eq!(r.headers()["x-kind"], "chunked");
        }
        if name == "te-and-length" {
            assert!(r.headers().get("content-length").is_none(), "{name}");
        }
        assert_eq!(r.text().await.unwrap(), body, "{name}");
        // The origin connection it came on is either closed or ready for the next request.
        echoes(&gw, 0).await;
    }
    // A 204 the origin sends a body after anyway: the bytes are not taken for the next answer.
    assert_eq!(gw.get("/status/204").await.status().as_u16(), 204);
    echoes(&gw, 1).await;
    // What hyper's client would refuse is a 502: heads that frame nothing safely, and a
    // protocol switch nobody asked for.
    for name in ["two-lengths", "bad-length", "not-http", "switch"] {
        let r = gw.get(&format!("/raw/{name}")).await;
        assert_eq!(r.status(), StatusCode::BAD_GATEWAY, "{name}");
        echoes(&gw, 2).await;
    }
    // A body that ends early or is not chunked as it says: the fan's answer is cut, not
    // completed with whatever follows.
    for name in ["short", "bad-chunk"] {
        // Cut before the head went out, or after it: never read whole.
        if let Ok(r) = gw.client.get(gw.url(&format!("/raw/{name}"))).send().await {
            assert_eq!(r.status(), StatusCode::OK, "{name}");
            assert!(r.bytes().await.is_err(), "{name}: a cut body read whole");
        }
        echoes(&gw, 3).await;
    }
}

#[tokio::test]
async fn a_head_request_gets_the_head_alone() {
    let origin = Origin::start();
    let gw = open_gateway("", &origin, &[]).await;
    for _ in 0..3 {
        let r = gw.client.head(gw.url("/echo")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-length"], "1234");
        assert!(r.bytes().await.unwrap().is_empty());
        // The origin's connection was not left waiting for 1,234 bytes that never come.
        echoes(&gw, 0).await;
    }
    assert!(origin.seen().await.contains(&"HEAD /echo".to_owned()));
    // An origin that sends a body after a HEAD's head anyway (itself an answer, say a file a
    // fan uploaded): the next fans get their own answers, never those bytes.
    for i in 0..3 {
        let r = gw.client.head(gw.url("/smuggle")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.bytes().await.unwrap().is_empty());
        // Time for those bytes to arrive before the next request (they are refused either way).
        tokio::time::sleep(Duration::from_millis(100)).await;
        echoes(&gw, i).await;
    }
}

#[tokio::test]
async fn kept_alive_origin_connections_answer_in_order() {
    let origin = Origin::start();
    let gw = open_gateway("", &origin, &[]).await;
    // Fans at once, each asking in turn; now and then the origin closes a connection after
    // its answer (as its keep-alive timeout would), which the next request must not notice.
    let fans: Vec<_> = (0..8)
        .map(|fan| {
            let client = gw.client.clone();
            let base = gw.url("");
            tokio::spawn(async move {
                for i in 0..40 {
                    if i % 9 == 4 {
                        let r = client.get(format!("{base}/raw/then-close")).send().await;
                        assert_eq!(r.unwrap().text().await.unwrap(), "bye.");
                        continue;
                    }
                    let path = format!("/echo?fan={fan}&i={i}");
                    let r = client.get(format!("{base}{path}")).send().await.unwrap();
                    assert_eq!(r.status(), StatusCode::OK, "{path}");
                    let echo: Value = r.json().await.unwrap();
                    assert_eq!(echo["path"], path.as_str());
                }
            })
        })
        .collect();
    for fan in fans {
        tokio::time::timeout(Duration::from_secs(60), fan)
            .await
            .expect("every fan answered")
            .unwrap();
    }
}

#[tokio::test]
async fn a_chunked_revoke_is_obeyed_and_hidden_on_the_lean_leg() {
    let origin = Origin::start();
    let gw = open_gateway("", &origin, &[]).await;
    let pass = admitted_pass(&gw, "gw").await;
    let done = with_cookie(
        &gw,
        reqwest::Method::GET,
        "/checkout/raw/revoke-chunked",
        &pass,
    )
    .await;
    assert_eq!(done.status(), StatusCode::OK);
    for hidden in ["x-waiting-room-command", "x-hop", "keep-alive"] {
        assert!(done.headers().get(hidden).is_none(), "{hidden}");
    }
    let cleared = done.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cleared.starts_with("wr_pass=; Path=/; Max-Age=0"),
        "{cleared}"
    );
    assert_eq!(done.text().await.unwrap(), "paid");
    let again = with_cookie(&gw, reqwest::Method::GET, "/checkout/pay", &pass).await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
}
