//! The operator's token: guessing it is slowed to a crawl, and a short one is refused at
//! start.

use reqwest::StatusCode;
use waiting_room::config::Config;
use waiting_room::http::TokenGuesses;
use waiting_room::protocol::routes;

use super::spawn;
use crate::support::TOKEN;

#[tokio::test]
async fn wrong_operator_tokens_from_one_address_are_throttled() {
    let app = spawn(Config {
        trusted_proxy_hops: 1,
        ..Config::for_tests()
    })
    .await;
    app.create("guarded").await;
    let stats = app.url(&routes::show(routes::STATS, "guarded"));
    let ask = |token: &str, from: &str| {
        app.client
            .get(&stats)
            .bearer_auth(token)
            .header("x-forwarded-for", from)
            .send()
    };
    for i in 0..TokenGuesses::MAX {
        let r = ask(&format!("guess-{i}"), "203.0.113.7").await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    // Past the budget: 429 with Retry-After, whatever the token, so a guess that hits says
    // nothing either.
    for token in ["guess-more", TOKEN] {
        let r = ask(token, "203.0.113.7").await.unwrap();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS, "{token}");
        let wait: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
        let body: serde_json::Value = r.json().await.unwrap();
        assert!(
            body["message"].as_str().unwrap().contains("operator token"),
            "{body}"
        );
    }
    // The operator elsewhere is not locked out.
    let r = ask(TOKEN, "198.51.100.9").await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    app.stop().await;
}

/// `OPERATOR_TOKEN_GUESSES=0` bounds nothing: a client that sends tokens it was not given
/// (an API fuzzer) is told 401 each time, and the right token still works.
#[tokio::test]
async fn token_guesses_may_be_left_unbounded() {
    let app = spawn(Config {
        operator_token_guesses: 0,
        ..Config::for_tests()
    })
    .await;
    app.create("open-door").await;
    let stats = app.url(&routes::show(routes::STATS, "open-door"));
    for i in 0..TokenGuesses::MAX * 2 {
        let r = app.client.get(&stats).bearer_auth(format!("guess-{i}"));
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
    }
    let r = app.client.get(&stats).bearer_auth(TOKEN).send().await;
    assert_eq!(r.unwrap().status(), StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn a_short_operator_token_is_refused_at_start() {
    let config = Config {
        admin_token: Some("x".into()),
        ..Config::for_tests()
    };
    let err = match waiting_room::server::Application::build(config).await {
        Ok(_) => panic!("ADMIN_TOKEN=x started"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("ADMIN_TOKEN must be at least 16"), "{err}");
}
