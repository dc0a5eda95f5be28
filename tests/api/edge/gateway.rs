//! Gateway mode (`UPSTREAM_URL`, `PROTECT`) in front of a real origin process: requests and
//! WebSockets go through as a proxy should pass them, guarded paths only with a running
//! admission, the origin's revoke command ends the pass, and a dead or slow origin is a clear
//! 502 or 504.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use waiting_room::protocol::{ADMISSION_HEADER, routes};

use super::{admitted_pass, open_gateway, with_cookie};
use crate::support::origin::Origin;
use crate::support::redis::RedisServer;
use crate::support::ticket_id;

#[tokio::test]
async fn requests_go_through_to_the_origin_as_a_proxy_passes_them() {
    let redis = RedisServer::start().await;
    let origin = Origin::start();
    let gw = open_gateway(&redis.url(), &origin, &[]).await;
    // Any path the waiting room does not serve, and its home page, are the origin's.
    let r = gw
        .client
        .get(gw.url("/shop/item?id=7&x=%20"))
        .header("connection", "x-hop-secret")
        .header("x-hop-secret", "1")
        .header("x-forwarded-for", "198.51.100.1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers().get("x-origin-hop").is_none(),
        "a hop-by-hop answer header stayed"
    );
    assert!(r.headers().get("keep-alive").is_none());
    let echo: Value = r.json().await.unwrap();
    assert_eq!(echo["path"], "/shop/item?id=7&x=%20");
    let h = &echo["headers"];
    assert_eq!(h["x-forwarded-for"], "198.51.100.1, 127.0.0.1");
    assert_eq!(h["x-forwarded-proto"], "http");
    assert_eq!(h["x-forwarded-host"], gw.addr.to_string());
    assert!(h.get("x-hop-secret").is_none(), "{h}");
    let home: Value = gw.get("/").await.json().await.unwrap();
    assert_eq!(home["path"], "/");
    // What the origin answers goes on as it is: the gateway compresses none of it.
    let asked = gw
        .client
        .get(gw.url("/shop/gz"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert!(asked.headers().get("content-encoding").is_none());
    let echo: Value = asked.json().await.unwrap();
    assert_eq!(echo["headers"]["accept-encoding"], "gzip");
    // A large upload streams through whole.
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let digest = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&body))
    };
    let up: Value = gw
        .client
        .post(gw.url("/upload"))
        .body(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (up["length"].as_u64(), up["sha256"].as_str()),
        (Some(3_000_000), Some(&*digest))
    );
    // The origin's errors are passed on as they are.
    let teapot = gw.get("/status/418").await;
    assert_eq!(teapot.status().as_u16(), 418);
    assert_eq!(teapot.text().await.unwrap(), r#"{"from":"origin"}"#);
    // The waiting room's own routes stay its own.
    assert_eq!(gw.get(routes::HEALTHZ).await.status(), StatusCode::OK);
    assert!(
        !origin
            .seen()
            .await
            .iter()
            .any(|p| p.starts_with("/healthz"))
    );

    // A streamed answer reaches the fan as it comes: the last chunk is sent only once the
    // first two arrived here.
    let mut stream = gw.get("/stream").await.bytes_stream();
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains("second") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("the first chunks come before the last is sent")
            .unwrap()
            .unwrap();
        got.extend_from_slice(&chunk);
    }
    reqwest::get(format!("{}/release", origin.url()))
        .await
        .unwrap();
    while let Some(chunk) = stream.next().await {
        got.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(String::from_utf8(got).unwrap(), "first\nsecond\nlast\n");

    // A WebSocket is spliced through.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", gw.addr))
        .await
        .unwrap();
    ws.send(Message::text("hello")).await.unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(frame.into_text().unwrap().as_str(), "echo:hello");
    let metrics = gw.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_gateway_requests_total{outcome="proxied"}"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn guarded_paths_need_a_running_admission_and_the_origin_ends_it() {
    let redis = RedisServer::start().await;
    let origin = Origin::start();
    let gw = open_gateway(&redis.url(), &origin, &[]).await;
    gw.open("other").await;
    // Without an admission: to the queue, with the way back; the origin never sees it.
    for (path, back) in [
        ("/checkout", "/checkout"),
        (
            "/checkout/pay?seat=A1&n=2",
            "/checkout/pay%3Fseat%3DA1%26n%3D2",
        ),
    ] {
        let r = gw.get(path).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(r.headers()["location"], format!("/wait/gw?return={back}"));
    }
    assert!(
        origin
            .seen()
            .await
            .iter()
            .all(|p| !p.starts_with("/checkout"))
    );
    // `/checkouts` is another path, not guarded.
    assert_eq!(gw.get("/checkouts").await.status(), StatusCode::OK);
    // A pass of another show, a forged one: still the queue.
    let other_fan = ticket_id(&gw.join_ok("other").await);
    let other = gw
        .wait_admitted("other", &other_fan, Duration::from_secs(5))
        .await;
    let pass = admitted_pass(&gw, "gw").await;
    let forged = format!("{}x", &pass[..pass.len() - 1]);
    for bad in [
        other["pass"].as_str().unwrap(),
        forged.as_str(),
        other_fan.as_str(),
    ] {
        let r = gw
            .client
            .get(gw.url("/checkout/pay"))
            .header(ADMISSION_HEADER, bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    }
    // The waiting page turns the pass into the cookie, and the cookie opens the path; the
    // origin gets the pass to redeem, the fan's own header never.
    let kept = gw
        .client
        .post(gw.url(&routes::show(routes::WAIT_PASS, "gw")))
        .header(ADMISSION_HEADER, &pass)
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), StatusCode::NO_CONTENT);
    let cookie = kept.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.starts_with(&format!("wr_pass={pass}; Path=/; Max-Age=")),
        "{cookie}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let through = with_cookie(&gw, reqwest::Method::GET, "/checkout/pay", &pass).await;
    assert_eq!(through.status(), StatusCode::OK);
    let echo: Value = through.json().await.unwrap();
    assert_eq!(echo["headers"]["x-admission-ticket"], pass.as_str());
    // A forged pass in the header never reaches the origin as if it were one.
    let sneaky: Value = gw
        .client
        .get(gw.url("/elsewhere"))
        .header(ADMISSION_HEADER, &forged)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        sneaky["headers"].get("x-admission-ticket").is_none(),
        "{sneaky}"
    );
    // The purchase is done: the origin says revoke; the fan never sees the command, its
    // cookie is cleared, the admission is spent.
    let done = with_cookie(&gw, reqwest::Method::GET, "/checkout/done", &pass).await;
    assert_eq!(done.status(), StatusCode::OK);
    assert!(done.headers().get("x-waiting-room-command").is_none());
    let cleared = done.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cleared.starts_with("wr_pass=; Path=/; Max-Age=0"),
        "{cleared}"
    );
    let again = with_cookie(&gw, reqwest::Method::GET, "/checkout/pay", &pass).await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        gw.redeem("gw", Some(&pass)).await.status(),
        StatusCode::CONFLICT
    );
    // The page sends an admitted fan back to the path it came from, and only to a path of
    // this site.
    let page = gw
        .get("/wait/gw?return=/checkout/pay")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"data-return="/checkout/pay""#));
    for foreign in [
        "//evil.example/x",
        "https://evil.example/",
        "/\\evil.example",
    ] {
        let encoded: String = url::form_urlencoded::byte_serialize(foreign.as_bytes()).collect();
        let page = gw
            .get(&format!("/wait/gw?return={encoded}"))
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains(r#"data-return="""#), "{foreign}");
    }
    let metrics = gw.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_gateway_requests_total{outcome="queued"} 6"#),
        "{metrics}"
    );
    // In every phase the path asks for a running admission: paused, an admitted fan may still
    // buy (as at POST /orders), nobody else; once the show is deleted, its passes open nothing.
    let fresh = admitted_pass(&gw, "gw").await;
    let through = |pass: String| {
        gw.client
            .get(gw.url("/checkout/pay"))
            .header("cookie", format!("wr_pass={pass}"))
            .send()
    };
    assert_eq!(
        gw.operator(routes::PAUSE, "gw").await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        through(fresh.clone()).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        gw.get("/checkout/pay").await.status(),
        StatusCode::SEE_OTHER
    );
    assert_eq!(gw.delete_show("gw").await.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        through(fresh).await.unwrap().status(),
        StatusCode::SEE_OTHER
    );
}

#[tokio::test]
async fn a_dead_or_slow_origin_is_a_clear_502_or_504() {
    let redis = RedisServer::start().await;
    let mut origin = Origin::start();
    let gw = open_gateway(&redis.url(), &origin, &[("UPSTREAM_TIMEOUT", "1s")]).await;
    let slow = gw.get("/slow").await;
    assert_eq!(slow.status(), StatusCode::GATEWAY_TIMEOUT);
    let body: Value = slow.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("did not answer"),
        "{body}"
    );
    origin.stop();
    let dead = gw.get("/anything").await;
    assert_eq!(dead.status(), StatusCode::BAD_GATEWAY);
    let body: Value = dead.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("unreachable"),
        "{body}"
    );
    // The waiting room itself still serves.
    assert_eq!(gw.get(routes::HEALTHZ).await.status(), StatusCode::OK);
    assert!(
        gw.metrics()
            .await
            .contains(r#"waiting_room_gateway_requests_total{outcome="unreachable"} 2"#)
    );
}
