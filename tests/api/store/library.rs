//! The per-show scripts as a library of Redis Functions: loaded when the store connects (on
//! every primary of a cluster), and loaded again when a Redis forgot it (restarted empty, or a
//! node promoted that never had it) without a call failing.

use std::time::Duration;

use waiting_room::store::{Queue, RedisStore, Shows};

use crate::support::backend::settings;
use crate::support::redis::{RedisCluster, RedisServer};
use crate::support::show;

/// The libraries a server holds, by name.
async fn libraries(server: &RedisServer) -> Vec<String> {
    let mut conn = server.conn().await;
    let list: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .query_async(&mut conn)
        .await
        .unwrap();
    let text = format!("{list:?}");
    text.split('"')
        .filter(|s| s.starts_with("waiting_room_"))
        .map(str::to_owned)
        .collect()
}

async fn flush(server: &RedisServer) {
    let mut conn = server.conn().await;
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_redis_that_forgot_the_library_is_given_it_again() {
    let redis = RedisServer::start().await;
    let store = RedisStore::connect(&redis.url(), settings(10, Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(
        libraries(&redis).await.len(),
        1,
        "loaded when the store connects"
    );
    let sh = show("lib");
    store.open(&sh).await.unwrap();
    store.join(&sh).await.unwrap();

    flush(&redis).await;
    assert!(libraries(&redis).await.is_empty());
    let joined = store.join(&sh).await.unwrap();
    assert_eq!(joined.arrival, 2, "the join after the flush ran, once");
    assert_eq!(libraries(&redis).await.len(), 1, "loaded again");
}

#[tokio::test]
async fn every_primary_of_a_cluster_holds_the_library_and_gets_it_back() {
    let cluster = RedisCluster::start().await;
    let store =
        RedisStore::connect_cluster(&cluster.nodes(), settings(10, Duration::from_secs(60)))
            .await
            .unwrap();
    for node in cluster.all() {
        assert_eq!(libraries(node).await.len(), 1, "node {}", node.port);
    }
    // Shows whose slots lie on different nodes, most likely all three.
    let shows: Vec<_> = (0..6).map(|i| show(&format!("lib{i}"))).collect();
    for sh in &shows {
        store.open(sh).await.unwrap();
    }
    for node in cluster.all() {
        flush(node).await;
    }
    for sh in &shows {
        assert_eq!(store.join(sh).await.unwrap().arrival, 1, "{sh}");
    }
    for node in cluster.all() {
        assert_eq!(libraries(node).await.len(), 1, "node {}", node.port);
    }
}

#[tokio::test]
async fn a_redis_out_of_memory_still_answers_the_scripts_that_only_read() {
    let redis = RedisServer::start().await;
    let store = RedisStore::connect(&redis.url(), settings(10, Duration::from_secs(60)))
        .await
        .unwrap();
    let sh = show("oom");
    store.open(&sh).await.unwrap();
    store.join(&sh).await.unwrap();
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(1)
        .query_async(&mut conn)
        .await
        .unwrap();
    // Registered `no-writes`, as a script run by SHA that never writes: Redis runs them.
    assert!(store.show(&sh).await.unwrap().is_some());
    assert_eq!(store.stats(&sh).await.unwrap().queue_length, 1);
    assert!(store.join(&sh).await.is_err(), "a join writes: refused");
}

/// The fallback for a Redis older than 7: every script by SHA with the prelude in front, the
/// join gathered and answering a replayed key alike, loaded again when Redis forgot it.
#[tokio::test]
async fn without_functions_every_script_runs_by_sha_and_joins_are_gathered_alike() {
    let redis = RedisServer::start().await;
    let store = RedisStore::connect(&redis.url(), settings(10, Duration::from_secs(60)))
        .await
        .unwrap()
        .by_sha();
    let sh = show("sha");
    store.open(&sh).await.unwrap();
    let (first, replayed) = store.join_once(&sh, "k").await.unwrap();
    assert_eq!((first.arrival, replayed), (1, false));
    let (again, replayed) = store.join_once(&sh, "k").await.unwrap();
    assert!(replayed);
    assert_eq!(again.ticket, first.ticket);
    redis.calls_of("evalsha").await;

    let answers = super::gathered::at_once(
        (0..20)
            .map(|i| store.join_proven(&sh, (i == 7).then_some("k"), None))
            .collect(),
    )
    .await;
    assert_eq!(redis.calls_of("evalsha").await, 1, "twenty joins, one call");
    let seqs: Vec<u64> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().0.arrival)
        .collect();
    let mut expected: Vec<u64> = (2..=20).collect();
    expected.insert(7, 1);
    assert_eq!(
        seqs, expected,
        "the replayed key answers its place, the others take 2..=20"
    );
    assert_eq!(redis.calls_of("fcall").await, 0);

    let mut conn = redis.conn().await;
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        store.join(&sh).await.unwrap().arrival,
        21,
        "loaded again, run once"
    );
    assert_eq!(
        store.status(&sh, first.ticket).await.unwrap().arrival,
        Some(1)
    );
}
