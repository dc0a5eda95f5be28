//! Presence across real server processes on one Redis: fans follow on three instances (SSE,
//! and polling); one instance is killed (SIGKILL, no goodbye), and its fans become away once
//! its report runs out and the grace passes: passed over, not admitted, their places kept. A
//! fan of the dead instance that comes back on another is let in ahead of a later arrival.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use waiting_room::protocol::routes;

use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

/// The ticket's status as the operator sees it (a fan's own poll would be a sign of life).
async fn seen_by_operator(server: &ServerProcess, show: &str, ticket: &str) -> String {
    let r = server
        .as_operator(Method::GET, &format!("/admin/tickets/{ticket}?show={show}"))
        .send()
        .await
        .unwrap();
    let found: Value = r.json().await.unwrap_or_default();
    found["ticket"]["status"]
        .as_str()
        .unwrap_or("UNKNOWN")
        .to_owned()
}

/// Polls `ticket` on `server` every 300 ms until `done` is cancelled: a fan that polls.
fn keep_polling(server_url: String, show: String, ticket: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let client = reqwest::Client::new();
        let url = format!("{server_url}/orders/waiting-room/{show}/tickets/{ticket}");
        loop {
            let _ = client.get(&url).send().await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
}

async fn until_status(server: &ServerProcess, show: &str, ticket: &str, want: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if seen_by_operator(server, show, ticket).await == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{ticket} never became {want}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn fans_of_a_killed_instance_are_passed_over_and_one_back_elsewhere_goes_first() {
    let redis = RedisServer::start().await;
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(ServerProcess::start(&redis.url(), 1, &[]).await);
    }
    let show = "killed";
    servers[0].create(show).await;
    let r = servers[0]
        .put_config(
            show,
            &json!({"admitPerSecond": 1, "presenceGraceSeconds": 3, "awayHoldSeconds": 120}),
        )
        .await;
    assert_eq!(r.status(), 200);
    // Arrivals 1 and 4 follow on instance 0 (to be killed), 2 on instance 1, 3 polls
    // instance 2.
    let t = servers[0].join_many(show, 4).await;
    let mut on_dead = vec![
        servers[0].events(show, &t[0]).await,
        servers[0].events(show, &t[3]).await,
    ];
    let mut alive = servers[1].events(show, &t[1]).await;
    let poller = keep_polling(servers[2].base(), show.to_owned(), t[2].clone());
    // Every instance has reported its streams.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    servers[0].kill();
    for s in on_dead.iter_mut() {
        s.drain(Duration::from_millis(10)).await;
    }
    drop(on_dead);
    // Past its report (5 s) and the grace (3 s): its fans are away when the ticks begin.
    tokio::time::sleep(Duration::from_secs(9)).await;
    servers[1].open(show).await;
    // Arrivals 2 and 3 (present) are let in, one a second; 1 and 4 are passed over.
    until_status(&servers[1], show, &t[1], "ADMITTED").await;
    until_status(&servers[1], show, &t[2], "ADMITTED").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    for away in [&t[0], &t[3]] {
        assert_eq!(
            seen_by_operator(&servers[1], show, away).await,
            "WAITING",
            "an away fan is not admitted, its place is kept"
        );
    }
    let stats = servers[1].stats(show).await;
    assert_eq!(stats["presence"]["passedOver"], 2, "{stats}");
    // Paused, so that no tick falls in between: a later arrival, present, on instance 1, and
    // arrival 1 back on instance 2. Reopened, the first tick lets arrival 1 in: its place
    // counts from its arrival.
    let r = servers[1].operator(routes::PAUSE, show).await;
    assert_eq!(r.status(), 204);
    let late = servers[1].join_many(show, 1).await.remove(0);
    let mut late_stream = servers[1].events(show, &late).await;
    let mut back = servers[2].events(show, &t[0]).await;
    let first = back
        .next(Duration::from_secs(10))
        .await
        .expect("its state at once");
    assert_eq!(
        first.data["position"], 1,
        "back, it stands first: {:?}",
        first.data
    );
    // Both instances have reported.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    servers[1].open(show).await;
    until_status(&servers[1], show, &t[0], "ADMITTED").await;
    assert_eq!(
        seen_by_operator(&servers[1], show, &late).await,
        "WAITING",
        "the later arrival waits behind the fan who came back"
    );
    until_status(&servers[1], show, &late, "ADMITTED").await;
    assert_eq!(seen_by_operator(&servers[1], show, &t[3]).await, "WAITING");
    poller.abort();
    alive.drain(Duration::from_millis(10)).await;
    late_stream.drain(Duration::from_millis(10)).await;
}
