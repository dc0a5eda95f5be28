//! `deploy/nginx-shop.conf` in a real nginx: two real instances on one Redis, and a real
//! origin as the shop's checkout behind `auth_request` and the pass route. A fan without a
//! running admission is sent to queue and the checkout never sees it; the pass (header or
//! the cookie the waiting page sets) opens it until the shop redeems it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use waiting_room::protocol::{ADMISSION_HEADER, routes};

use crate::support::nginx::Nginx;
use crate::support::origin::Origin;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;
use crate::support::ticket_id;

#[tokio::test]
async fn the_checkout_behind_nginx_takes_admitted_fans_only() {
    let redis = RedisServer::start().await;
    let env = [("TRUSTED_PROXY_HOPS", "1")];
    let a = ServerProcess::start(&redis.url(), 20, &env).await;
    let b = ServerProcess::start(&redis.url(), 20, &env).await;
    let shop = Origin::start();
    let edge = Nginx::start_file(
        "nginx-shop.conf",
        &[a.addr, b.addr],
        &[
            ("server shop:8000;", format!("server {};", shop.addr)),
            ("show-42", "sale".to_owned()),
        ],
    )
    .await;
    a.open("sale").await;
    a.open("other").await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str, pass: Option<(&str, &str)>| {
        let mut r = client.get(edge.url(path));
        if let Some((name, value)) = pass {
            r = r.header(name, value);
        }
        r.send()
    };
    // No admission: to the queue, and the checkout never sees the request.
    let r = get("/checkout/pay", None).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/wait/sale?return=/checkout/pay");
    assert!(shop.seen().await.is_empty());
    // A fan joins through the edge and is admitted; its pass opens the checkout (header or
    // cookie), and the checkout gets the pass to redeem.
    let joined: Value = client
        .post(edge.url(&routes::show(routes::JOIN, "sale")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let fan = ticket_id(&joined);
    let t = b.wait_admitted("sale", &fan, Duration::from_secs(5)).await;
    let pass = t["pass"].as_str().unwrap().to_owned();
    let cookie = format!("wr_pass={pass}");
    for how in [
        (ADMISSION_HEADER, pass.as_str()),
        ("cookie", cookie.as_str()),
    ] {
        let r = get("/checkout/pay", Some(how)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{how:?}");
        let echo: Value = r.json().await.unwrap();
        assert_eq!(echo["path"], "/checkout/pay");
        assert_eq!(echo["headers"]["x-admission-ticket"], pass.as_str());
    }
    // Another show's pass, or a ticket id, is no admission to this checkout.
    let other = ticket_id(&a.join_ok("other").await);
    let other = a
        .wait_admitted("other", &other, Duration::from_secs(5))
        .await;
    for bad in [other["pass"].as_str().unwrap(), fan.as_str()] {
        let r = get("/checkout/pay", Some((ADMISSION_HEADER, bad)))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    }
    // The shop redeems through the edge: once; then the pass opens nothing.
    let redeem = |pass: String| {
        client
            .post(edge.url(&routes::show(routes::REDEEM, "sale")))
            .header(ADMISSION_HEADER, pass)
            .send()
    };
    assert_eq!(redeem(pass.clone()).await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        redeem(pass.clone()).await.unwrap().status(),
        StatusCode::CONFLICT
    );
    let r = get("/checkout/pay", Some(("cookie", &cookie)))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        shop.seen().await.len(),
        2,
        "only the two admitted requests reached the shop"
    );
}
