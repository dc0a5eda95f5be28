//! The hub's one Redis subscription: its cost does not grow with the fans, and it survives
//! being killed.

use std::time::Duration;

use super::{WAIT, mid_second};
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::redis::RedisServer;
use crate::support::sse::SseReader;

async fn total_commands(redis: &RedisServer) -> u64 {
    let mut conn = redis.conn().await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| l.split("calls=").nth(1))
        .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .sum()
}

async fn reset_stats(redis: &RedisServer) {
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// Waits until the instances' presence reports hold `streams` live fans: a fan's first stream
/// costs its instance's next report a few commands (docs/presence.md), paid once per connect,
/// which a window measuring the cost per tick must not catch.
async fn wait_reported(redis: &RedisServer, streams: usize) {
    let mut conn = redis.conn().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let sets: Vec<String> = redis::cmd("KEYS")
            .arg("*:on:*")
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut held = 0;
        for set in &sets {
            let n: usize = redis::cmd("SCARD")
                .arg(set)
                .query_async(&mut conn)
                .await
                .unwrap();
            held += n;
        }
        if held >= streams {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reported {held} of {streams} streams"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Redis commands during `secs` whole seconds while `fans` follow over SSE; asserts every
/// fan was pushed something meanwhile.
async fn commands_while_following(redis: &RedisServer, fans: &mut [SseReader], secs: u64) -> u64 {
    mid_second().await;
    for f in fans.iter_mut() {
        f.drain(Duration::from_millis(5)).await;
    }
    reset_stats(redis).await;
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let total = total_commands(redis).await;
    for f in fans.iter_mut() {
        assert!(
            !f.drain(Duration::from_millis(50)).await.is_empty(),
            "every fan was pushed a tick"
        );
    }
    total
}

#[tokio::test]
async fn redis_commands_per_tick_do_not_grow_with_connected_fans() {
    let app = spawn_app_with(Backend::Redis, config(1, Duration::from_secs(60))).await;
    app.create("c").await;
    let redis = app.redis.as_ref().unwrap().server();
    let tickets = app.join_many("c", 210).await;
    let mut fans = Vec::new();
    for t in &tickets[10..30] {
        fans.push(app.events("c", t).await);
    }
    app.open("c").await;
    wait_reported(redis, fans.len()).await;
    let with_20 = commands_while_following(redis, &mut fans, 3).await;
    for t in &tickets[30..210] {
        fans.push(app.events("c", t).await);
    }
    wait_reported(redis, fans.len()).await;
    let with_200 = commands_while_following(redis, &mut fans, 3).await;
    // Per second, for one show: the lease renewal, the open shows and the admission script
    // with the commands it runs inside, the pace check, the watchdog's check, and one status
    // read confirming the fan admitted that tick, and presence (each instance's report and
    // the tick's look at who is away and which instances report, and its away figures for
    // the ETA), and the tick's sample for the report (five commands); the hub adds nothing per
    // waiting fan.
    assert!(with_20 <= 3 * 80, "with 20 fans: {with_20} commands in 3 s");
    // Ten times the fans: were anything per fan, 180 more fans would cost at least 180 more
    // commands. The slack (a quarter) covers timers that land once more in one window than in
    // the other on a busy machine (a lease renewal, a watchdog pass, a late tick's retry).
    assert!(
        with_200 <= with_20 + with_20 / 4,
        "20 fans: {with_20}, 200 fans: {with_200}"
    );
    app.stop().await;
}

#[tokio::test]
async fn streams_survive_the_pubsub_connection_being_killed() {
    let app = spawn_app_with(Backend::Redis, config(1, Duration::from_secs(60))).await;
    app.create("k").await;
    let redis = app.redis.as_ref().unwrap().server();
    let tickets = app.join_many("k", 8).await;
    let mut fan = app.events("k", &tickets[7]).await;
    assert_eq!(fan.next(WAIT).await.unwrap().data["position"], 8);
    app.open("k").await;
    let opened = fan.next(WAIT).await.unwrap();
    assert!(opened.data.get("paused").is_none(), "{opened:?}");
    let moved = if opened.data["position"] == 8 {
        fan.next(WAIT).await.unwrap()
    } else {
        opened
    };
    assert_eq!(moved.data["position"], 7);
    let killed = redis.kill_pubsub_clients().await;
    assert_eq!(killed, 1, "the hub's one subscription");
    // Leaves while the hub is away still reach the fan after it resynchronises.
    app.leave("k", &tickets[6]).await;
    let mut positions = Vec::new();
    while positions.len() < 3 {
        let e = fan.next(WAIT).await.expect("the stream stays open");
        for e in app.agreed("k", &tickets[7], &mut fan, e).await {
            positions.push(e.data["position"].as_u64().unwrap());
        }
    }
    assert!(
        positions.windows(2).all(|w| w[1] < w[0]),
        "positions keep falling: {positions:?}"
    );
}
