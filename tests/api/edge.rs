//! `deploy/nginx.conf` in a real nginx in front of two real server processes on one Redis, as
//! `docker-compose.yaml` runs them: fans get through, `/metrics` stays inside.

use reqwest::StatusCode;
use waiting_room::protocol::routes;

use crate::support::nginx::Nginx;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

#[tokio::test]
async fn the_edge_serves_fans_and_keeps_metrics_inside() {
    let redis = RedisServer::start().await;
    let env = [("TRUSTED_PROXY_HOPS", "1")];
    let a = ServerProcess::start(&redis.url(), 5, &env).await;
    let b = ServerProcess::start(&redis.url(), 5, &env).await;
    let edge = Nginx::start(&[a.addr, b.addr]).await;
    a.open("edge").await;
    let client = reqwest::Client::new();
    for _ in 0..4 {
        let r = client
            .post(edge.url(&routes::show(routes::JOIN, "edge")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
    }
    assert_eq!(a.stats("edge").await["joined"], 4);
    let metrics = client.get(edge.url(routes::METRICS)).send().await.unwrap();
    assert_eq!(
        metrics.status(),
        StatusCode::NOT_FOUND,
        "metrics are not public"
    );
    // Prometheus scrapes the instances themselves.
    assert!(a.metrics().await.contains("waiting_room_"));
    let healthy = client.get(edge.url(routes::HEALTHZ)).send().await.unwrap();
    assert_eq!(healthy.status(), StatusCode::OK);
}
