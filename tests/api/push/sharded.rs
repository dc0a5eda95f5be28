//! Sharded pub/sub on the Redis Cluster the tests start (Redis ≥ 7): an instance subscribes
//! to the shows its fans wait for and to no other, every fan still gets every push, and a
//! subscription a node tears down is made again and read afresh.

use std::time::Duration;

use reqwest::Method;
use waiting_room::protocol::routes;

use super::WAIT;
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::process::ServerProcess;
use crate::support::redis::{RedisCluster, RedisServer};
use crate::support::sse::SseReader;

/// A show's sharded channel, as the server names it.
fn channel(show: &str) -> String {
    format!("wr:{{{show}}}:events")
}

/// How many subscribers `show`'s channel has on the node that owns it.
async fn subscribers(cluster: &RedisCluster, show: &str) -> u64 {
    let node = cluster.owner(&channel(show)).await;
    let mut conn = node.conn().await;
    let (_, n): (String, u64) = redis::cmd("PUBSUB")
        .arg("SHARDNUMSUB")
        .arg(channel(show))
        .query_async(&mut conn)
        .await
        .unwrap();
    n
}

/// Two show names whose slots live on different nodes.
async fn shows_on_two_nodes(cluster: &RedisCluster) -> (String, String) {
    let first = "sharded-0".to_owned();
    let first_port = cluster.owner(&channel(&first)).await.port;
    for i in 1..100 {
        let other = format!("sharded-{i}");
        if cluster.owner(&channel(&other)).await.port != first_port {
            return (first, other);
        }
    }
    panic!("every name landed on one node");
}

/// Reads `n` pushes and checks each one against the ticket polled right after it.
async fn positions(
    fan: &mut SseReader,
    api: &crate::support::api::Api,
    show: &str,
    ticket: &str,
    n: usize,
) -> Vec<u64> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let e = fan.next(WAIT).await.expect("every tick is pushed");
        if e.event != "waiting" {
            break;
        }
        assert_eq!(
            e.data,
            api.ticket_json(show, ticket).await,
            "pushed == polled"
        );
        seen.push(e.data["position"].as_u64().unwrap());
    }
    seen
}

#[tokio::test]
async fn fans_on_two_instances_hear_their_own_shows_on_different_nodes() {
    let cluster = RedisCluster::start().await;
    let env = [("REDIS_CLUSTER", "true")];
    let one = ServerProcess::start(&cluster.urls(), 1, &env).await;
    let two = ServerProcess::start(&cluster.urls(), 1, &env).await;
    let (a, b) = shows_on_two_nodes(&cluster).await;
    one.create(&a).await;
    one.create(&b).await;
    let a_tickets = one.join_many(&a, 6).await;
    let b_tickets = two.join_many(&b, 6).await;
    // Each instance follows one show: its fan waits last in line.
    let mut a_fan = one.events(&a, &a_tickets[5]).await;
    let mut b_fan = two.events(&b, &b_tickets[5]).await;
    assert_eq!(a_fan.next(WAIT).await.unwrap().data["position"], 6);
    assert_eq!(b_fan.next(WAIT).await.unwrap().data["position"], 6);
    // One subscriber per show: the instance whose fan waits for it, not the other one.
    assert_eq!(subscribers(&cluster, &a).await, 1);
    assert_eq!(subscribers(&cluster, &b).await, 1);
    // The opening, then a tick a second: every push arrives and says what a poll says.
    one.open(&a).await;
    let a_seen = positions(&mut a_fan, &one, &a, &a_tickets[5], 3).await;
    two.open(&b).await;
    let b_seen = positions(&mut b_fan, &two, &b, &b_tickets[5], 3).await;
    for seen in [&a_seen, &b_seen] {
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[1] <= w[0]), "{seen:?}");
        assert!(seen.last().unwrap() < &6, "the queue moved: {seen:?}");
    }
    // Once its fans are gone, an instance stops hearing the show.
    drop(a_fan);
    for _ in 0..100 {
        if subscribers(&cluster, &a).await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the show's channel is still subscribed with no fan left");
}

#[tokio::test]
async fn a_subscription_the_node_kills_is_made_again_and_read_afresh() {
    let app = spawn_app_with(Backend::Cluster, config(1, Duration::from_secs(60))).await;
    let cluster = app.redis.as_ref().unwrap().cluster();
    app.create("k").await;
    let tickets = app.join_many("k", 8).await;
    let mut fan = app.events("k", &tickets[7]).await;
    assert_eq!(fan.next(WAIT).await.unwrap().data["position"], 8);
    app.open("k").await;
    let mut seen = positions(&mut fan, &app, "k", &tickets[7], 1).await;
    if seen[0] == 8 {
        seen = positions(&mut fan, &app, "k", &tickets[7], 1).await;
    }
    assert_eq!(seen, [7]);
    let node: &RedisServer = cluster.owner(&channel("k")).await;
    let killed = node.kill_pubsub_clients().await;
    assert_eq!(killed, 1, "the hub's subscription on the show's node");
    // A leave while the hub is away still reaches the fan once it resubscribed and read the
    // show afresh; every push says what a poll says.
    app.leave("k", &tickets[6]).await;
    let after = positions(&mut fan, &app, "k", &tickets[7], 3).await;
    assert_eq!(after.len(), 3, "the stream goes on: {after:?}");
    assert!(after.windows(2).all(|w| w[1] < w[0]), "{after:?}");
    assert_eq!(subscribers(cluster, "k").await, 1, "subscribed again");
}

#[tokio::test]
async fn the_operator_feed_counts_admissions_of_a_show_no_fan_follows_here() {
    let app = spawn_app_with(Backend::Cluster, config(5, Duration::from_secs(60))).await;
    app.create("busy").await;
    app.join_many("busy", 30).await;
    app.open("busy").await;
    let cluster = app.redis.as_ref().unwrap().cluster();
    assert_eq!(
        subscribers(cluster, "busy").await,
        0,
        "no fan follows it here"
    );
    let feed = app
        .as_operator(Method::GET, routes::ADMIN_STATS_EVENTS)
        .send()
        .await
        .unwrap();
    let mut feed = SseReader::from_response(feed);
    // The console listens to the shows it reports on, so their ticks reach it.
    let mut admitted = 0;
    for _ in 0..4 {
        let sample = feed.next(WAIT).await.expect("a sample a second").data;
        let busy = sample["shows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["showId"] == "busy")
            .cloned()
            .unwrap_or_else(|| panic!("the open show is reported: {sample}"));
        admitted += busy["admittedSinceLast"].as_u64().expect("counted");
    }
    assert!(admitted > 0, "admissions show up in the feed");
    assert!(
        subscribers(cluster, "busy").await > 0,
        "the console listens"
    );
}

/// The ids of the subscribed clients on `node`.
async fn subscribed_ids(node: &RedisServer) -> Vec<String> {
    let mut conn = node.conn().await;
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut conn)
        .await
        .unwrap();
    list.lines()
        .filter_map(|l| l.split(' ').next()?.strip_prefix("id=").map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_subscription_gone_silent_on_a_node_is_made_again_and_read_afresh() {
    let app = spawn_app_with(Backend::Cluster, config(1, Duration::from_secs(60))).await;
    let cluster = app.redis.as_ref().unwrap().cluster();
    app.create("quiet").await;
    let tickets = app.join_many("quiet", 12).await;
    let mut fan = app.events("quiet", &tickets[11]).await;
    assert_eq!(fan.next(WAIT).await.unwrap().data["position"], 12);
    app.open("quiet").await;
    let node = cluster.owner(&channel("quiet")).await;
    let before = subscribed_ids(node).await;
    assert_eq!(before.len(), 1, "the hub's subscription on the show's node");
    // The node answers nothing for 9 s, its sockets open: longer than a PING's round (every
    // 5 s, answered within 3 s), as a node that hangs or a flow a middlebox dropped.
    let mut conn = node.conn().await;
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(9000)
        .arg("ALL")
        .query_async(&mut conn)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(9)).await;
    // Once the node is back, the hub has let the silent subscription go for a new one, read
    // the show afresh, and the fan's pushes go on saying what a poll says.
    let mut after = Vec::new();
    for _ in 0..100 {
        after = subscribed_ids(node).await;
        if after.len() == 1 && after != before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        after.len() == 1 && after != before,
        "{before:?} → {after:?}"
    );
    fan.drain(Duration::from_millis(300)).await;
    let seen = positions(&mut fan, &app, "quiet", &tickets[11], 2).await;
    assert_eq!(seen.len(), 2, "the stream goes on: {seen:?}");
    assert!(seen.windows(2).all(|w| w[1] < w[0]), "{seen:?}");
}

async fn node_id(node: &RedisServer) -> String {
    let mut conn = node.conn().await;
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Moves `key`'s slot from the node that owns it to another one, keys and all, the way
/// `redis-cli --cluster reshard` does.
async fn move_slot(cluster: &RedisCluster, key: &str) {
    let from = cluster.owner(key).await;
    let to = cluster
        .nodes_except(from.port)
        .next()
        .expect("another node");
    let (from_id, to_id) = (node_id(from).await, node_id(to).await);
    let mut src = from.conn().await;
    let mut dst = to.conn().await;
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(&mut src)
        .await
        .unwrap();
    let setslot = |state: &str, id: &str| {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("SETSLOT").arg(slot).arg(state).arg(id);
        cmd
    };
    let _: () = setslot("IMPORTING", &from_id)
        .query_async(&mut dst)
        .await
        .unwrap();
    let _: () = setslot("MIGRATING", &to_id)
        .query_async(&mut src)
        .await
        .unwrap();
    loop {
        let keys: Vec<String> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(100)
            .query_async(&mut src)
            .await
            .unwrap();
        if keys.is_empty() {
            break;
        }
        let _: () = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(to.port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query_async(&mut src)
            .await
            .unwrap();
    }
    for node in cluster.all() {
        let _: () = setslot("NODE", &to_id)
            .query_async(&mut node.conn().await)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_show_whose_slot_moves_is_subscribed_again_on_its_new_node() {
    let app = spawn_app_with(Backend::Cluster, config(1, Duration::from_secs(60))).await;
    let cluster = app.redis.as_ref().unwrap().cluster();
    app.create("moving").await;
    let tickets = app.join_many("moving", 12).await;
    let mut fan = app.events("moving", &tickets[11]).await;
    assert_eq!(fan.next(WAIT).await.unwrap().data["position"], 12);
    app.open("moving").await;
    let old = cluster.owner(&channel("moving")).await.port;
    move_slot(cluster, &channel("moving")).await;
    let new = cluster.owner(&channel("moving")).await.port;
    assert_ne!(old, new, "the slot moved");
    // The old node told the hub it dropped the channel: the hub subscribed again, on the new
    // node, read the show afresh, and the fan's pushes go on saying what a poll says.
    for _ in 0..100 {
        if subscribers(cluster, "moving").await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        subscribers(cluster, "moving").await,
        1,
        "subscribed on the new node"
    );
    fan.drain(Duration::from_millis(300)).await;
    let seen = positions(&mut fan, &app, "moving", &tickets[11], 2).await;
    assert_eq!(seen.len(), 2, "the stream goes on: {seen:?}");
    assert!(seen.windows(2).all(|w| w[1] < w[0]), "{seen:?}");
}
