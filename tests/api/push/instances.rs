//! Fans on one server process follow the admitter running on another.

use std::time::Duration;

use serde_json::Value;

use super::{WAIT, mid_second};
use crate::support::api::Api;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;
use crate::support::sse::SseReader;

/// Latest pushed state per fan, polled state per fan, compared in the quiet middle of a second.
/// A push still on its way when the poll answers (a loaded machine can take longer than the
/// quiet part of a second to deliver a tick's pushes) is waited for, up to a few seconds: a
/// push that never comes, or says something else, still fails.
async fn assert_pushed_equals_polled(
    polled_on: &Api,
    show: &str,
    fans: &mut [(String, SseReader, Value)],
) {
    mid_second().await;
    for (ticket, sse, latest) in fans.iter_mut() {
        let mut tries = 0;
        loop {
            if let Some(last) = sse.drain(Duration::from_millis(20)).await.pop() {
                *latest = last.data;
            }
            let polled = polled_on.ticket_json(show, ticket).await;
            let waits = polled["status"] == "WAITING" || latest["status"] == "WAITING";
            if !waits || *latest == polled {
                break;
            }
            tries += 1;
            assert!(
                tries < 5,
                "pushed and polled differ for {ticket}: pushed {latest}, polled {polled}"
            );
            mid_second().await;
        }
    }
}

#[tokio::test]
async fn fans_on_one_instance_follow_the_admitter_on_another() {
    let redis = RedisServer::start().await;
    let b = ServerProcess::start(&redis.url(), 3, &[]).await;
    // Let B take the lease before A exists.
    let deadline = tokio::time::Instant::now() + WAIT;
    while !b.leads().await {
        assert!(tokio::time::Instant::now() < deadline, "B never led");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let a = ServerProcess::start(&redis.url(), 3, &[]).await;
    a.create("x").await;
    let mut fans = Vec::new();
    for t in a.join_many("x", 24).await {
        let mut sse = a.events("x", &t).await;
        let first = sse.next(WAIT).await.unwrap().data;
        fans.push((t, sse, first));
    }
    // Leaves before anything opens.
    for i in [2, 7, 8] {
        assert_eq!(a.leave("x", &fans[i].0).await.status(), 204);
    }
    assert_pushed_equals_polled(&a, "x", &mut fans).await;
    b.open("x").await;
    for round in 0..3 {
        assert_pushed_equals_polled(&a, "x", &mut fans).await;
        // A leave between ticks, on the instance that does not admit.
        let leaver = 12 + round * 3;
        a.leave("x", &fans[leaver].0).await;
    }
    assert_pushed_equals_polled(&a, "x", &mut fans).await;
    let admitted = fans.iter().filter(|f| f.2["status"] == "ADMITTED").count();
    assert!(
        admitted >= 9,
        "ticks of B reached fans on A: {admitted} admitted"
    );
    let m = a.metrics().await;
    assert!(
        m.lines().any(|l| l == "waiting_room_admitter_leader 0"),
        "A never led: {m}"
    );
    assert!(
        !m.contains("waiting_room_admissions_total"),
        "A never admitted: {m}"
    );
}
