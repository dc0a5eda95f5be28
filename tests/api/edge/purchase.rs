//! A purchase path in gateway mode spends the admission before the request goes on: one
//! admission buys once however many requests race with it, on any instance; and passes are
//! answered from the cache of confirmed ones, yet a spent one is refused on every instance
//! by the time that instance hears the next tick.

use std::time::Duration;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;
use waiting_room::protocol::routes;

use super::{admitted_pass, gateway_to, with_cookie};
use crate::support::origin::Origin;
use crate::support::redis::RedisServer;

const PROTECT: &str = "/checkout=gw,purchase=/checkout/pay";

async fn twenty_twins_buy_once(redis_url: &str) {
    let origin = Origin::start();
    let gw = gateway_to(redis_url, &origin, PROTECT, &[]).await;
    gw.open("gw").await;
    let pass = admitted_pass(&gw, "gw").await;
    // Browsing a guarded path spends nothing.
    let cart = with_cookie(&gw, reqwest::Method::GET, "/checkout/cart", &pass).await;
    assert_eq!(cart.status(), StatusCode::OK);
    let answers =
        join_all((0..20).map(|_| with_cookie(&gw, reqwest::Method::POST, "/checkout/pay", &pass)))
            .await;
    let mut statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    statuses.sort();
    let mut expected = vec![200];
    expected.extend([409; 19]);
    assert_eq!(statuses, expected);
    let bought = answers
        .into_iter()
        .find(|r| r.status() == StatusCode::OK)
        .unwrap();
    // The buyer's browser forgets the spent pass.
    let cookie = bought.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.starts_with("wr_pass=; Path=/; Max-Age=0"),
        "{cookie}"
    );
    let echo: Value = bought.json().await.unwrap();
    assert_eq!(echo["method"], "POST");
    let paid = origin.seen().await;
    assert_eq!(
        paid.iter()
            .filter(|p| p.starts_with("/checkout/pay"))
            .count(),
        1,
        "{paid:?}"
    );
    // Spent: no more browsing, no redemption, no order.
    let cart = with_cookie(&gw, reqwest::Method::GET, "/checkout/cart", &pass).await;
    assert_eq!(cart.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        gw.redeem("gw", Some(&pass)).await.status(),
        StatusCode::CONFLICT
    );
    assert_eq!(
        gw.order("gw", "hold-1", Some(&pass)).await.status(),
        StatusCode::CONFLICT
    );
    // The public record holds the spend as a redemption, once.
    let audit: Value = gw
        .get(&routes::show(routes::AUDIT, "gw"))
        .await
        .json()
        .await
        .unwrap();
    let redeemed = audit["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "redeem")
        .count();
    assert_eq!(redeemed, 1, "{audit}");
    let metrics = gw.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_gateway_requests_total{outcome="spent"} 1"#)
            && metrics.contains(r#"waiting_room_gateway_requests_total{outcome="twin"} 19"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn twenty_requests_with_one_admission_buy_once_on_the_embedded_store() {
    twenty_twins_buy_once("").await;
}

#[tokio::test]
async fn twenty_requests_with_one_admission_buy_once_on_redis() {
    let redis = RedisServer::start().await;
    twenty_twins_buy_once(&redis.url()).await;
}

/// Two instances on one Redis: a pass confirmed on B is answered from B's cache (no store
/// read); spent on A, B refuses it once B pushed a tick published after the spend.
#[tokio::test]
async fn a_pass_spent_on_one_instance_is_refused_on_another_by_the_next_tick() {
    let redis = RedisServer::start().await;
    let origin = Origin::start();
    let a = gateway_to(&redis.url(), &origin, PROTECT, &[]).await;
    let b = gateway_to(&redis.url(), &origin, PROTECT, &[]).await;
    a.open("gw").await;
    let pass = admitted_pass(&a, "gw").await;
    // A show of slow ticks whose fan on B hears every one.
    a.open("beat").await;
    assert_eq!(a.set_rate("beat", 1).await.status(), StatusCode::OK);
    let fans = a.join_many("beat", 30).await;
    let mut beat = b.events("beat", &fans[20]).await;

    for _ in 0..3 {
        let r = with_cookie(&b, reqwest::Method::GET, "/checkout/cart", &pass).await;
        assert_eq!(r.status(), StatusCode::OK);
    }
    let metrics = b.metrics().await;
    assert!(
        metrics.contains(r#"waiting_room_pass_checks_total{outcome="valid"} 1"#)
            && metrics.contains(r#"waiting_room_pass_checks_total{outcome="cached"} 2"#),
        "one store read, then the cache: {metrics}"
    );

    let bought = with_cookie(&a, reqwest::Method::POST, "/checkout/pay", &pass).await;
    assert_eq!(bought.status(), StatusCode::OK);
    let spent_second = waiting_room::clock::wall_ms() / 1000;
    // A tick of a later second was published after the spend: B heard the spend first.
    loop {
        let event = beat
            .next(Duration::from_secs(10))
            .await
            .expect("B pushes ticks");
        if event.data["lastTickSecond"]
            .as_u64()
            .is_some_and(|s| s > spent_second)
        {
            break;
        }
    }
    let r = with_cookie(&b, reqwest::Method::GET, "/checkout/cart", &pass).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        b.check_pass("gw", &pass).await.status(),
        StatusCode::FORBIDDEN
    );
}
