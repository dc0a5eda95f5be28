//! The join form's cross-site and cookie rules, and joins limited per client.

use reqwest::StatusCode;
use tokio::time::Instant;
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use super::spawn;
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::backend::Backend;

/// Posts to `url` as another site's page would make a browser send it: each is 403 with no
/// cookie; their bodies.
async fn refused_from_other_sites(app: &TestApp, url: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    for (header, value) in [
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
        ("origin", "https://evil.example"),
        ("origin", "null"),
    ] {
        let r = app
            .client
            .post(url)
            .header(header, value)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{header}: {value}");
        assert!(r.headers().get("set-cookie").is_none());
        bodies.push(r.text().await.unwrap());
    }
    bodies
}

#[tokio::test]
async fn the_join_form_refuses_posts_from_other_sites() {
    let app = spawn(Config::for_tests()).await;
    app.open("csrf").await;
    let client = &app.client;
    let url = app.url(&routes::show(routes::WAIT_JOIN, "csrf"));
    let ours = app.base();

    for page in refused_from_other_sites(&app, &url).await {
        assert!(page.contains("another website"), "{page}");
    }
    let stats = app.stats("csrf").await;
    assert_eq!(stats["queueLength"], 0, "a refused post joined: {stats}");

    // The page's own form, as a browser sends it, and a client that names no origin.
    let same_origin = client
        .post(&url)
        .header("sec-fetch-site", "same-origin")
        .header("origin", &ours)
        .send()
        .await
        .unwrap();
    assert_eq!(same_origin.status(), StatusCode::SEE_OTHER);
    let origin_only = client
        .post(&url)
        .header("origin", &ours)
        .send()
        .await
        .unwrap();
    assert_eq!(origin_only.status(), StatusCode::SEE_OTHER);
    let curl = client.post(&url).send().await.unwrap();
    assert_eq!(curl.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.stats("csrf").await["queueLength"], 3);
    app.stop().await;
}

#[tokio::test]
async fn the_json_join_refuses_posts_from_other_sites() {
    let app = spawn(Config::for_tests()).await;
    app.open("csrf-json").await;
    let client = &app.client;
    let url = app.url(&routes::show(routes::JOIN, "csrf-json"));
    for body in refused_from_other_sites(&app, &url).await {
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("another website"),
            "{body}"
        );
    }
    assert_eq!(app.stats("csrf-json").await["queueLength"], 0);
    // The waiting page's own fetch, and a client that is no browser.
    let page = client
        .post(&url)
        .header("sec-fetch-site", "same-origin")
        .header("origin", app.base())
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::ACCEPTED);
    let cli = client.post(&url).send().await.unwrap();
    assert_eq!(cli.status(), StatusCode::ACCEPTED);
    assert_eq!(app.stats("csrf-json").await["queueLength"], 2);
    app.stop().await;
}

#[tokio::test]
async fn the_ticket_cookie_is_http_only_and_lax_and_secure_behind_https() {
    let app = spawn(Config::for_tests()).await;
    app.open("cookie").await;
    let r = app
        .client
        .post(app.url(&routes::show(routes::WAIT_JOIN, "cookie")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("wr_ticket="), "{cookie}");
    assert!(cookie.contains("; HttpOnly"), "{cookie}");
    assert!(cookie.contains("; SameSite=Lax"), "{cookie}");
    assert!(
        !cookie.contains("Secure"),
        "plain http cannot keep a Secure cookie: {cookie}"
    );
    app.stop().await;

    let app = spawn(Config {
        public_url: Some("https://tickets.example".parse().unwrap()),
        ..Config::for_tests()
    })
    .await;
    app.open("cookie").await;
    let r = app
        .client
        .post(app.url(&routes::show(routes::WAIT_JOIN, "cookie")))
        .header("origin", "https://tickets.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("; HttpOnly"), "{cookie}");
    assert!(cookie.ends_with("; Secure"), "{cookie}");
    // With a public URL, that is the only origin: the host the request names is not.
    let r = app
        .client
        .post(app.url(&routes::show(routes::WAIT_JOIN, "cookie")))
        .header("origin", format!("http://{}", app.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    app.stop().await;
}

/// A join as from `client`, as our one trusted proxy reports it.
async fn join_from(app: &TestApp, show: &str, client: &str) -> reqwest::Response {
    app.client
        .post(app.url(&routes::show(routes::JOIN, show)))
        .header("x-forwarded-for", client)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn ipv6_joins_are_limited_per_64_while_other_prefixes_and_ipv4_join_on() {
    for backend in [Backend::Memory, Backend::Redis] {
        let app = spawn_app_with(
            backend,
            Config {
                join_rate_limit: 2,
                trusted_proxy_hops: 1,
                ..Config::for_tests()
            },
        )
        .await;
        app.create("v6").await;
        app.open("v6").await;

        // Every join from another address of one /64: one client, whose burst (twice the
        // rate) passes and no more, however many addresses it rotates through.
        let started = Instant::now();
        let mut statuses = Vec::new();
        let mut refused = None;
        for n in 1..=12 {
            let r = join_from(&app, "v6", &format!("2001:db8:1:2::{n:x}")).await;
            statuses.push(r.status());
            if r.status() == StatusCode::TOO_MANY_REQUESTS && refused.is_none() {
                refused = Some(r);
            }
        }
        let elapsed = started.elapsed();
        assert!(
            statuses[..4].iter().all(|s| *s == StatusCode::ACCEPTED),
            "{backend:?}: the burst passes: {statuses:?}"
        );
        let accepted = statuses
            .iter()
            .filter(|s| **s == StatusCode::ACCEPTED)
            .count();
        // One more join every 500 ms as the bucket refills, if the requests were that slow.
        let refills = (elapsed.as_millis() / 500) as usize + 1;
        assert!(
            accepted <= 4 + refills,
            "{backend:?}: {accepted} joins from one /64 passed in {elapsed:?}: {statuses:?}"
        );
        let refused = refused.unwrap_or_else(|| {
            panic!("{backend:?}: rotating addresses in one /64 dodged the limit: {statuses:?}")
        });
        assert!(refused.headers().contains_key("retry-after"));
        assert_eq!(
            app.stats("v6").await["queueLength"],
            accepted as u64,
            "{backend:?}: a refused join queues nothing"
        );

        // Another /64 and an IPv4 client are other clients, each with its own burst.
        for client in ["2001:db8:1:3::1", "203.0.113.7"] {
            for i in 0..4 {
                assert_eq!(
                    join_from(&app, "v6", client).await.status(),
                    StatusCode::ACCEPTED,
                    "{backend:?}: join {i} from {client}"
                );
            }
        }
        app.stop().await;
    }
}

/// The join limit is counted in Redis: one client address joining through two real instances
/// gets the limit once between them, not once per instance.
#[tokio::test]
async fn the_join_limit_holds_across_instances() {
    use crate::support::process::ServerProcess;
    use crate::support::redis::RedisServer;
    let redis = RedisServer::start().await;
    // One join a second per address, bursts of two.
    let env = [("JOIN_RATE_LIMIT", "1")];
    let a = ServerProcess::start(&redis.url(), 5, &env).await;
    let b = ServerProcess::start(&redis.url(), 5, &env).await;
    a.create("shared").await;
    let started = Instant::now();
    let answers = futures::future::join_all((0..20).map(|i| {
        let api = if i % 2 == 0 { &a } else { &b };
        api.join("shared")
    }))
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    let mut accepted = 0;
    let mut refused = [0, 0];
    for (i, r) in answers.iter().enumerate() {
        match r.status() {
            StatusCode::ACCEPTED => accepted += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(r.headers().contains_key("retry-after"));
                refused[i % 2] += 1;
            }
            other => panic!("join {i}: {other}"),
        }
    }
    // The burst of two, and one more for each second the joins took.
    let allowed = 2 + elapsed.ceil() as usize;
    assert!(
        (1..=allowed).contains(&accepted),
        "{accepted} joins accepted in {elapsed:.2} s"
    );
    assert!(
        refused[0] > 0 && refused[1] > 0,
        "both instances refused: {refused:?}"
    );
    assert_eq!(a.stats("shared").await["joined"], accepted);
}
