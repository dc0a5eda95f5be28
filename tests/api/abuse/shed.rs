//! The crowd's requests past `MAX_STORE_CALLS` at work are told at once to come back: 503
//! with a `Retry-After`, nothing written, while the operator and health routes still answer.

use std::time::Duration;

use reqwest::StatusCode;
use waiting_room::config::Config;
use waiting_room::protocol::{IDEMPOTENCY_KEY, PROBLEM_JSON, routes};

use crate::support::app::spawn_app_with;
use crate::support::backend::Backend;

/// The gauge `waiting_room_crowd_requests_at_work` as `/metrics` says it now.
async fn at_work(app: &crate::support::app::TestApp) -> u64 {
    let text = app.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix("waiting_room_crowd_requests_at_work "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the gauge is exported")
}

#[tokio::test]
async fn past_max_store_calls_the_crowd_is_told_to_come_back_and_nothing_is_lost() {
    let app = spawn_app_with(
        Backend::Redis,
        Config {
            max_store_calls: 2,
            ..Config::for_tests()
        },
    )
    .await;
    let redis = app.redis.as_ref().unwrap().server();
    // Every write waits in Redis: two joins go to work and stay there, until the store's 2 s
    // timeout. On a machine so slow that they time out before the third request is answered,
    // the attempt says nothing: it is made again (the stuck ones keep their places either way).
    let mut attempts = 0;
    let (stuck, show) = loop {
        attempts += 1;
        // A show of the attempt's own: what an attempt that said nothing left is not counted.
        let show = format!("busy-{attempts}");
        app.create(&show).await;
        redis.pause_writes(20_000).await;
        let stuck: Vec<_> = (0..2)
            .map(|i| {
                let client = app.client.clone();
                let url = app.url(&routes::show(routes::JOIN, &show));
                tokio::spawn(async move {
                    let sent = client
                        .post(url)
                        .header(IDEMPOTENCY_KEY, format!("stuck-{i}"));
                    sent.send().await.unwrap()
                })
            })
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while at_work(&app).await < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the joins never went to work"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A third join, a poll and the waiting page: answered at once, without the store.
        let answers = [
            app.join(&show).await,
            app.ticket(&show, &uuid::Uuid::new_v4().to_string()).await,
            app.get(&routes::show(routes::WAIT_PAGE, &show)).await,
        ];
        if stuck.iter().any(|j| j.is_finished()) && attempts < 5 {
            redis.unpause().await;
            for join in stuck {
                join.await.unwrap();
            }
            continue;
        }
        // Told when to come back.
        for response in answers {
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            let retry: u64 = response.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=5).contains(&retry), "Retry-After {retry}");
            // A problem, even for the page: as its document says.
            assert_eq!(response.headers()["content-type"], PROBLEM_JSON);
            let body: serde_json::Value = response.json().await.unwrap();
            assert!(body["message"].as_str().unwrap().contains("busy"), "{body}");
        }
        break (stuck, show);
    };
    // The page's document says so.
    let doc: serde_json::Value = app.get(routes::OPENAPI).await.json().await.unwrap();
    let page = &doc["paths"]["/wait/{showId}"]["get"]["responses"]["503"]["content"];
    assert!(page.get(PROBLEM_JSON).is_some(), "{page}");
    // The people running the on-sale are never shed.
    assert_eq!(app.get(routes::HEALTHZ).await.status(), StatusCode::OK);
    let metrics = app.metrics().await;
    let shed: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("waiting_room_shed_requests_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the counter is exported");
    assert!(
        (3..=3 * attempts).contains(&shed),
        "all three counted: {metrics}"
    );

    // Redis goes on, and the bound is free again.
    redis.unpause().await;
    // A join held past the store's timeout was answered 503 (its write may still have
    // landed): its retry with the same key gets the one place it holds, never a second.
    for (i, join) in stuck.into_iter().enumerate() {
        let first = join.await.unwrap().status();
        assert!(
            [StatusCode::ACCEPTED, StatusCode::SERVICE_UNAVAILABLE].contains(&first),
            "{first}"
        );
        let again = app
            .client
            .post(app.url(&routes::show(routes::JOIN, &show)))
            .header(IDEMPOTENCY_KEY, format!("stuck-{i}"))
            .send()
            .await
            .unwrap();
        assert!(again.status().is_success(), "{}", again.status());
    }
    assert_eq!(app.join(&show).await.status(), StatusCode::ACCEPTED);
    assert_eq!(app.stats(&show).await["queueLength"], 3);
    app.stop().await;
}
