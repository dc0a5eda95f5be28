//! Joins and status reads gathered into one call (group commit,
//! `src/store/redis/gather.rs`): the joins (or reads) of one show that arrive while the
//! instance's call of that kind for it is out go together in the next call. Every join still
//! gets its own answer: a dense sequence number handed out once, its position as rank + 1, one
//! ticket per `Idempotency-Key`, its own refusal; every read its own ticket's state. The
//! embedded store, which has no calls to gather, answers alike.
//!
//! "At once" below means every join was started (its future polled once, which queues it for
//! its show's call) before any could be answered: on the test's one thread the Redis store's
//! task for the show runs only after that, so they all go in one call. The tests on a real
//! redis-server check that they did (`FCALL`s counted by `INFO commandstats`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::future::BoxFuture;
use uuid::Uuid;
use waiting_room::model::{ShowId, TicketState};
use waiting_room::pass::Proof;
use waiting_room::store::{
    Durability, Joined, Queue, QueueStore, RedisStore, ShowSettings, Shows, StoreError,
};

use crate::support::backend::{Backend, RedisBehind, settings, store};
use crate::support::redis::RedisServer;
use crate::support::show;

all_stores!(
    joins_at_once_take_dense_sequences_and_their_ranks,
    concurrent_joins_with_and_without_keys_each_get_one_place,
    a_spent_proof_is_refused_and_the_others_of_its_call_go_in,
    a_key_replayed_in_the_call_of_its_first_use_gets_that_ticket,
    joins_at_once_into_a_pre_queue_are_each_told_when_it_opens,
    status_reads_at_once_each_get_their_own_answer,
    status_reads_at_once_of_a_show_nobody_made_are_each_refused,
    keys_replay_across_calls_from_one_hash_that_goes_with_the_show,
);

pub(super) type Answer = Result<(Joined, bool), StoreError>;

/// Starts every call of `calls` (joins, or status reads) before any is answered (see the
/// module's note), then waits for them all; their answers in the same order.
pub(super) async fn at_once<T>(calls: Vec<BoxFuture<'_, T>>) -> Vec<T> {
    let mut started = Vec::new();
    for mut call in calls {
        started.push(match futures::poll!(&mut call) {
            Poll::Ready(answer) => Err(answer),
            Poll::Pending => Ok(call),
        });
    }
    let mut answers = Vec::new();
    for call in started {
        answers.push(match call {
            Ok(pending) => pending.await,
            Err(answer) => answer,
        });
    }
    answers
}

/// The `FCALL`s the store made since the last call (none counted on the embedded store or a
/// cluster: `None`).
async fn calls(redis: &Option<RedisBehind>) -> Option<u64> {
    let Some(RedisBehind::Server(server)) = redis else {
        return None;
    };
    Some(server.calls_of("fcall").await)
}

fn waiting(j: &Joined) -> (u64, u64) {
    match j.status.state {
        TicketState::Waiting { position, arrival } => (position, arrival),
        other => panic!("a fresh ticket waits, not {other:?}"),
    }
}

async fn joins_at_once_take_dense_sequences_and_their_ranks(backend: Backend) {
    let (s, redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (sh, first) = super::open_with_fans(s.as_ref(), "g1", 5).await;
    // Two leave: ranks no longer equal arrivals.
    assert!(s.leave(&sh, first[1]).await.unwrap());
    assert!(s.leave(&sh, first[3]).await.unwrap());
    calls(&redis).await;

    let joins = (0..100)
        .map(|_| s.join_proven(&sh, None, None))
        .collect::<Vec<_>>();
    let answers = at_once(joins).await;
    if let Some(n) = calls(&redis).await {
        assert_eq!(n, 1, "the hundred joins went in one call");
    }
    let joined: Vec<Joined> = answers.into_iter().map(|a| a.unwrap().0).collect();
    // Sequences handed out once each, dense after the first five, in the order of the joins.
    let seqs: Vec<u64> = joined.iter().map(|j| j.arrival).collect();
    assert_eq!(seqs, (6..=105).collect::<Vec<_>>());
    for j in &joined {
        let (position, arrival) = waiting(j);
        assert_eq!(arrival, j.arrival);
        // Three of the first five still wait ahead: rank + 1 in the queue.
        assert_eq!(position, j.arrival - 2, "seq {}", j.arrival);
        assert_eq!(s.status(&sh, j.ticket).await.unwrap().state, j.status.state);
    }
    let tickets: std::collections::HashSet<Uuid> = joined.iter().map(|j| j.ticket).collect();
    assert_eq!(tickets.len(), 100);
}

async fn concurrent_joins_with_and_without_keys_each_get_one_place(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("g2");
    s.open(&sh).await.unwrap();
    // 300 joins without a key and 150 keys tried three times each, all in flight together:
    // more than one call's worth, so several calls, each gathering what arrived meanwhile.
    let mut fans = tokio::task::JoinSet::new();
    for _round in 0..3 {
        for i in 0..250 {
            let (s, sh): (Arc<dyn QueueStore>, ShowId) = (s.clone(), sh.clone());
            let key = (i < 150).then(|| format!("fan-{i}"));
            fans.spawn(async move {
                let answer = s.join_proven(&sh, key.as_deref(), None).await;
                (key, answer)
            });
        }
    }
    let mut by_key: HashMap<String, Vec<(Joined, bool)>> = HashMap::new();
    let mut unkeyed = Vec::new();
    while let Some(done) = fans.join_next().await {
        let (key, answer) = done.unwrap();
        let answer = answer.unwrap();
        match key {
            Some(key) => by_key.entry(key).or_default().push(answer),
            None => unkeyed.push(answer.0),
        }
    }
    assert_eq!(by_key.len(), 150);
    let mut places: BTreeMap<u64, Uuid> = BTreeMap::new();
    for (key, answers) in &by_key {
        assert_eq!(answers.len(), 3);
        let fresh: Vec<_> = answers.iter().filter(|(_, replayed)| !replayed).collect();
        assert_eq!(
            fresh.len(),
            1,
            "{key}: one join got the place, the others its ticket"
        );
        let (first, _) = fresh[0];
        for (j, _) in answers {
            assert_eq!(j.ticket, first.ticket, "{key}: one ticket");
            assert_eq!(j.arrival, first.arrival, "{key}: one place");
        }
        assert!(places.insert(first.arrival, first.ticket).is_none());
    }
    assert_eq!(unkeyed.len(), 300);
    for j in &unkeyed {
        assert!(
            places.insert(j.arrival, j.ticket).is_none(),
            "seq {} twice",
            j.arrival
        );
    }
    let n = places.len() as u64;
    assert_eq!(n, 150 + 300);
    assert_eq!(
        places.keys().copied().collect::<Vec<_>>(),
        (1..=n).collect::<Vec<_>>(),
        "sequences are dense and each handed out once"
    );
    // Nobody left or was admitted: every place is its arrival, as each join answered it.
    for answers in by_key.values() {
        for (j, _) in answers {
            assert_eq!(waiting(j), (j.arrival, j.arrival));
        }
    }
    for j in &unkeyed {
        assert_eq!(waiting(j), (j.arrival, j.arrival));
    }
    for (&seq, &ticket) in places.iter().step_by(7) {
        assert_eq!(
            s.status(&sh, ticket).await.unwrap().state,
            TicketState::Waiting {
                position: seq,
                arrival: seq
            }
        );
    }
}

fn proof(id: &str, bits: u32) -> Proof {
    Proof {
        id: id.to_owned(),
        ttl_ms: 60_000,
        bits,
    }
}

async fn a_spent_proof_is_refused_and_the_others_of_its_call_go_in(backend: Backend) {
    let (s, redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("g3");
    s.open(&sh).await.unwrap();
    let hard = ShowSettings {
        join_challenge_bits: Some(8),
        ..ShowSettings::default()
    };
    s.configure(&sh, hard).await.unwrap();
    let spent = proof("spent", 9);
    s.join_proven(&sh, None, Some(&spent)).await.unwrap();
    calls(&redis).await;

    let (p1, p2, p3, weak) = (
        proof("p1", 8),
        proof("p2", 12),
        proof("p3", 8),
        proof("w", 7),
    );
    let answers = at_once(vec![
        s.join_proven(&sh, None, Some(&p1)),
        s.join_proven(&sh, None, Some(&spent)),
        s.join_proven(&sh, None, Some(&p2)),
        s.join_proven(&sh, None, Some(&p3)),
        // The same challenge twice in one call: the first spends it.
        s.join_proven(&sh, None, Some(&p3)),
        s.join_proven(&sh, None, None),
        s.join_proven(&sh, None, Some(&weak)),
    ])
    .await;
    if let Some(n) = calls(&redis).await {
        assert_eq!(n, 1, "the seven joins went in one call");
    }
    let seq = |a: &Answer| a.as_ref().map(|(j, _)| j.arrival).ok();
    assert_eq!(seq(&answers[0]), Some(2));
    assert!(
        matches!(answers[1], Err(StoreError::ProofSpent)),
        "{:?}",
        answers[1]
    );
    assert_eq!(seq(&answers[2]), Some(3));
    assert_eq!(seq(&answers[3]), Some(4));
    assert!(
        matches!(answers[4], Err(StoreError::ProofSpent)),
        "{:?}",
        answers[4]
    );
    assert!(
        matches!(answers[5], Err(StoreError::ProofRequired(8))),
        "{:?}",
        answers[5]
    );
    assert!(
        matches!(answers[6], Err(StoreError::ProofTooWeak(8))),
        "{:?}",
        answers[6]
    );
    for a in [&answers[0], &answers[2], &answers[3]] {
        let (j, replayed) = a.as_ref().unwrap();
        assert!(!replayed);
        assert_eq!(waiting(j), (j.arrival, j.arrival));
    }
    // The refused ones took no number: the next join is the fifth.
    assert_eq!(
        s.join_proven(&sh, None, Some(&proof("p4", 8)))
            .await
            .unwrap()
            .0
            .arrival,
        5
    );
}

async fn a_key_replayed_in_the_call_of_its_first_use_gets_that_ticket(backend: Backend) {
    let (s, redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("g4");
    s.open(&sh).await.unwrap();
    let (old, fresh) = s.join_once(&sh, "old").await.unwrap();
    assert!(!fresh);
    calls(&redis).await;

    let answers = at_once(vec![
        s.join_proven(&sh, Some("k"), None),
        s.join_proven(&sh, None, None),
        s.join_proven(&sh, Some("k"), None),
        s.join_proven(&sh, Some("old"), None),
        s.join_proven(&sh, Some("other"), None),
        s.join_proven(&sh, Some("k"), None),
    ])
    .await;
    if let Some(n) = calls(&redis).await {
        assert_eq!(n, 1, "the six joins went in one call");
    }
    let answers: Vec<(Joined, bool)> = answers.into_iter().map(Result::unwrap).collect();
    let replayed: Vec<bool> = answers.iter().map(|(_, r)| *r).collect();
    assert_eq!(replayed, [false, false, true, true, false, true]);
    let k = &answers[0].0;
    assert_eq!(k.arrival, 2);
    assert_eq!(waiting(k), (2, 2));
    for (j, _) in [&answers[2], &answers[5]] {
        assert_eq!(
            (j.ticket, j.arrival),
            (k.ticket, k.arrival),
            "the key's one ticket"
        );
        assert_eq!(j.status.state, k.status.state);
    }
    assert_eq!(answers[1].0.arrival, 3);
    assert_eq!(answers[4].0.arrival, 4);
    // The key kept before this call: its ticket, where it stands; no new place.
    assert_eq!(answers[3].0.ticket, old.ticket);
    assert_eq!(waiting(&answers[3].0), (1, 1));
    // And afterwards, alone.
    let (again, replayed) = s.join_once(&sh, "k").await.unwrap();
    assert!(replayed);
    assert_eq!(again.ticket, k.ticket);
    assert_eq!(s.join(&sh).await.unwrap().arrival, 5);
}

async fn joins_at_once_into_a_pre_queue_are_each_told_when_it_opens(backend: Backend) {
    let (s, redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("g7");
    s.configure(&sh, Default::default()).await.unwrap();
    let opens = waiting_room::clock::wall_ms() + 3_600_000;
    let schedule = waiting_room::store::Schedule {
        opens_at_ms: Some(opens),
        ..Default::default()
    };
    s.schedule(&sh, schedule).await.unwrap();
    let before = s.join(&sh).await.unwrap();
    calls(&redis).await;

    let answers = at_once(vec![
        s.join_proven(&sh, Some("k"), None),
        s.join_proven(&sh, None, None),
        s.join_proven(&sh, Some("k"), None),
        s.join_proven(&sh, None, None),
    ])
    .await;
    if let Some(n) = calls(&redis).await {
        assert_eq!(n, 1, "the four joins went in one call");
    }
    let answers: Vec<(Joined, bool)> = answers.into_iter().map(Result::unwrap).collect();
    let replayed: Vec<bool> = answers.iter().map(|(_, r)| *r).collect();
    assert_eq!(replayed, [false, false, true, false]);
    // Each new ticket in the pre-queue at its own arrival, told the hour until the opening.
    for ((j, _), arrival) in answers.iter().zip([2, 3, 2, 4]) {
        match j.status.state {
            TicketState::PreQueue {
                arrival: a,
                opens_in_ms,
            } => {
                assert_eq!((a, j.arrival), (arrival, arrival), "{j:?}");
                // The store's clock (wall time at its start, then a monotonic clock's
                // whole milliseconds) can read a millisecond behind the test's.
                assert!(
                    (3_500_000..=3_600_001).contains(&opens_in_ms),
                    "{opens_in_ms}"
                );
            }
            other => panic!("a pre-queue, not {other:?}"),
        }
    }
    assert_eq!(
        answers[2].0.ticket, answers[0].0.ticket,
        "the key's one ticket"
    );
    // As a read of each says.
    assert_eq!(
        s.status(&sh, answers[3].0.ticket).await.unwrap().arrival,
        Some(4)
    );
    assert!(matches!(
        before.status.state,
        TicketState::PreQueue { arrival: 1, .. }
    ));
}

async fn status_reads_at_once_each_get_their_own_answer(backend: Backend) {
    let (s, redis) = store(backend, settings(3, Duration::from_secs(60))).await;
    let (sh, fans) = super::open_with_fans(s.as_ref(), "g8", 7).await;
    // Three admitted (the rate), one of those waiting leaves, and one ticket nobody knows.
    assert!(matches!(
        s.admit(&sh, 1).await.unwrap(),
        waiting_room::store::AdmitOutcome::Admitted { count: 3, .. }
    ));
    assert!(s.leave(&sh, fans[4]).await.unwrap());
    let stranger = Uuid::new_v4();
    let asked: Vec<Uuid> = fans.iter().copied().chain([stranger, fans[5]]).collect();
    calls(&redis).await;

    let answers = at_once(asked.iter().map(|&t| s.status(&sh, t)).collect()).await;
    if let Some(n) = calls(&redis).await {
        assert_eq!(n, 1, "the nine reads went in one call");
    }
    let states: Vec<TicketState> = answers.iter().map(|a| a.as_ref().unwrap().state).collect();
    for (i, state) in states[..3].iter().enumerate() {
        assert!(
            matches!(state, TicketState::Admitted { expires_in_ms } if *expires_in_ms > 0),
            "fan {i}: {state:?}"
        );
    }
    let waiting = |position, arrival| TicketState::Waiting { position, arrival };
    assert_eq!(
        states[3..],
        [
            waiting(1, 4),
            TicketState::Unknown,
            waiting(2, 6),
            waiting(3, 7),
            TicketState::Unknown,
            waiting(2, 6),
        ]
    );
    // Each read tells its own arrival and the show's epoch and version, as a read alone does.
    let alone = s.status(&sh, fans[6]).await.unwrap();
    for answer in &answers {
        let status = answer.as_ref().unwrap();
        assert_eq!((status.epoch, status.version), (alone.epoch, alone.version));
    }
    assert_eq!(answers[6].as_ref().unwrap().arrival, Some(7));
    assert_eq!(answers[0].as_ref().unwrap().arrival, None);
    assert_eq!(alone.state, states[6]);
}

async fn status_reads_at_once_of_a_show_nobody_made_are_each_refused(backend: Backend) {
    let (s, _redis) = store(backend, settings(3, Duration::from_secs(60))).await;
    let sh = show("g9");
    let answers = at_once((0..5).map(|_| s.status(&sh, Uuid::new_v4())).collect()).await;
    for answer in answers {
        assert!(
            matches!(answer, Err(StoreError::NoSuchShow(ref name)) if *name == sh),
            "{answer:?}"
        );
    }
    // The show made afterwards answers at once: nothing of the refused call lingers.
    s.open(&sh).await.unwrap();
    let ticket = s.join(&sh).await.unwrap().ticket;
    assert_eq!(
        s.status(&sh, ticket).await.unwrap().state,
        TicketState::Waiting {
            position: 1,
            arrival: 1
        }
    );
}

/// A connection to the Redis node that holds the show `name`'s keys (`None` on the embedded
/// store).
async fn show_node(
    redis: &Option<RedisBehind>,
    name: &str,
) -> Option<::redis::aio::MultiplexedConnection> {
    Some(match redis.as_ref()? {
        RedisBehind::Server(server) => server.conn().await,
        // The show's every key is in one slot: the node that owns one holds them all.
        RedisBehind::Cluster(cluster) => {
            cluster
                .owner(&format!("wr:{{{name}}}:idem"))
                .await
                .conn()
                .await
        }
    })
}

/// What Redis holds of the show `name`'s idempotency keys (`None` on the embedded store): the
/// fields of `wr:{name}:idem`, its time to live (ms; -2: no such key), and any other key
/// under `wr:{name}:idem` (a key of its own per `Idempotency-Key`, as before the hash).
async fn idem_in_redis(
    redis: &Option<RedisBehind>,
    name: &str,
) -> Option<(Vec<String>, i64, Vec<String>)> {
    let hash = format!("wr:{{{name}}}:idem");
    let mut conn = show_node(redis, name).await?;
    let mut fields: Vec<String> = ::redis::cmd("HKEYS")
        .arg(&hash)
        .query_async(&mut conn)
        .await
        .unwrap();
    fields.sort();
    let ttl: i64 = ::redis::cmd("PTTL")
        .arg(&hash)
        .query_async(&mut conn)
        .await
        .unwrap();
    let others: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{hash}*"))
        .query_async::<Vec<String>>(&mut conn)
        .await
        .unwrap()
        .into_iter()
        .filter(|k| *k != hash)
        .collect();
    Some((fields, ttl, others))
}

/// A key's ticket is found again in later calls, among other keys written meanwhile (in one
/// call and alone), whether it waits or was admitted; a key whose ticket left joins anew and
/// keeps the new one. On Redis every key is a field of the show's one hash, which lives a day
/// and goes when the show is deleted.
async fn keys_replay_across_calls_from_one_hash_that_goes_with_the_show(backend: Backend) {
    let (s, redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("g6");
    s.open(&sh).await.unwrap();
    let fresh = |a: &Answer| {
        let (j, replayed) = a.as_ref().unwrap();
        assert!(!replayed, "{j:?} is a new place");
        j.clone()
    };
    // First call: three keys and one fan without.
    let first = at_once(vec![
        s.join_proven(&sh, Some("a"), None),
        s.join_proven(&sh, Some("b"), None),
        s.join_proven(&sh, None, None),
        s.join_proven(&sh, Some("c"), None),
    ])
    .await;
    let (a, b, c) = (fresh(&first[0]), fresh(&first[1]), fresh(&first[3]));
    assert_eq!((a.arrival, b.arrival, c.arrival), (1, 2, 4));
    // Second call: new keys around replays of the first call's.
    let second = at_once(vec![
        s.join_proven(&sh, Some("d"), None),
        s.join_proven(&sh, Some("b"), None),
        s.join_proven(&sh, Some("e"), None),
        s.join_proven(&sh, Some("a"), None),
    ])
    .await;
    let (d, e) = (fresh(&second[0]), fresh(&second[2]));
    assert_eq!((d.arrival, e.arrival), (5, 6));
    for (answer, kept) in [(&second[1], &b), (&second[3], &a)] {
        let (j, replayed) = answer.as_ref().unwrap();
        assert!(replayed);
        assert_eq!((j.ticket, j.arrival), (kept.ticket, kept.arrival));
        assert_eq!(waiting(j), (kept.arrival, kept.arrival));
    }
    // Alone, later: a new key, then every earlier one.
    let (f, replayed) = s.join_once(&sh, "f").await.unwrap();
    assert!(!replayed);
    assert_eq!(f.arrival, 7);
    for (key, kept) in [
        ("a", &a),
        ("b", &b),
        ("c", &c),
        ("d", &d),
        ("e", &e),
        ("f", &f),
    ] {
        let (j, replayed) = s.join_once(&sh, key).await.unwrap();
        assert!(replayed, "{key}");
        assert_eq!((j.ticket, j.arrival), (kept.ticket, kept.arrival), "{key}");
    }
    // a and b are let through (two a second): their keys answer the admission.
    s.admit(&sh, 1).await.unwrap();
    let (j, replayed) = s.join_once(&sh, "b").await.unwrap();
    assert!(replayed);
    assert_eq!(j.ticket, b.ticket);
    assert!(
        matches!(j.status.state, TicketState::Admitted { .. }),
        "{:?}",
        j.status.state
    );
    // c leaves: its key gets a new place, and that one from then on.
    assert!(s.leave(&sh, c.ticket).await.unwrap());
    let (c2, replayed) = s.join_once(&sh, "c").await.unwrap();
    assert!(!replayed);
    assert_ne!(c2.ticket, c.ticket);
    assert_eq!(c2.arrival, 8);
    let (j, replayed) = s.join_once(&sh, "c").await.unwrap();
    assert!(replayed);
    assert_eq!(j.ticket, c2.ticket);
    assert_eq!(
        s.join(&sh).await.unwrap().arrival,
        9,
        "no replay took a number"
    );

    if let Some((fields, ttl, others)) = idem_in_redis(&redis, "g6").await {
        assert_eq!(fields, ["a", "b", "c", "d", "e", "f"]);
        assert!(0 < ttl && ttl <= 86_400_000, "the hash lives a day: {ttl}");
        assert!(others.is_empty(), "{others:?}");
    }
    // Deleted, the show takes its keys with it; made again, a key is a stranger.
    assert!(s.delete(&sh).await.unwrap());
    if let Some((fields, ttl, _)) = idem_in_redis(&redis, "g6").await {
        assert!(fields.is_empty(), "{fields:?}");
        assert_eq!(ttl, -2, "no hash left");
    }
    s.open(&sh).await.unwrap();
    let (j, replayed) = s.join_once(&sh, "a").await.unwrap();
    assert!(!replayed);
    assert_eq!(j.arrival, 1);
    assert_ne!(j.ticket, a.ticket);
    // A key that names a ticket of the show's earlier incarnation (as an older build, which
    // knows no hash, would leave it when it re-creates the show) is a stranger too, though
    // that ticket's admission has not run out: it was admitted under the old epoch.
    if let Some(mut conn) = show_node(&redis, "g6").await {
        let () = ::redis::cmd("HSET")
            .arg("wr:{g6}:idem")
            .arg("b")
            .arg(b.ticket.to_string())
            .query_async(&mut conn)
            .await
            .unwrap();
        let (j, replayed) = s.join_once(&sh, "b").await.unwrap();
        assert!(!replayed, "{j:?}");
        assert_eq!(j.arrival, 2);
    }
}

/// A replica that is online behind `primary`.
async fn replica_of(primary: &RedisServer) -> RedisServer {
    let replica =
        RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]).await;
    let mut conn = primary.conn().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let info: String = ::redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await
            .unwrap();
        if info.contains("state=online") {
            return replica;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the replica never came online"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// With `REDIS_WAIT_REPLICAS`, a call that gathered joins is confirmed by `WAIT` before any
/// of its fans is answered, and when the replicas do not confirm, every one of them is told.
#[tokio::test]
async fn gathered_joins_are_confirmed_by_the_replicas_first() {
    let primary = RedisServer::start().await;
    let mut replica = replica_of(&primary).await;
    let durability = Durability {
        replicas: 1,
        timeout: Duration::from_secs(5),
    };
    let s = RedisStore::connect(&primary.url(), settings(2, Duration::from_secs(60)))
        .await
        .unwrap()
        .with_durability(durability);
    let sh = show("g5");
    s.open(&sh).await.unwrap();
    let behind = Some(RedisBehind::Server(primary));
    calls(&behind).await;

    let answers = at_once((0..50).map(|_| s.join_proven(&sh, None, None)).collect()).await;
    assert_eq!(
        calls(&behind).await,
        Some(1),
        "the fifty joins went in one call"
    );
    let seqs: Vec<u64> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().0.arrival)
        .collect();
    assert_eq!(seqs, (1..=50).collect::<Vec<_>>());
    // Confirmed: the replica holds every place already.
    let mut on_replica = replica.conn().await;
    let queued: u64 = ::redis::cmd("ZCARD")
        .arg("wr:{g5}:queue")
        .query_async(&mut on_replica)
        .await
        .unwrap();
    assert_eq!(queued, 50);

    // No replica to confirm: every join of the call is answered so (after the timeout).
    replica.stop();
    let s = s.with_durability(Durability {
        replicas: 1,
        timeout: Duration::from_millis(200),
    });
    let answers = at_once((0..20).map(|_| s.join_proven(&sh, None, None)).collect()).await;
    for a in &answers {
        assert!(
            matches!(
                a,
                Err(StoreError::NotReplicated {
                    acked: 0,
                    wanted: 1
                })
            ),
            "{a:?}"
        );
    }
}

/// Status reads gathered into a call that Redis holds past the store's response timeout (a
/// primary that cannot keep up, or one gone mid-failover) are each told so, none left
/// waiting, and the show's next reads are answered: its gathering starts afresh.
#[tokio::test]
async fn status_reads_held_past_the_timeout_each_fail_and_the_next_are_answered() {
    let redis = RedisServer::start().await;
    let s = RedisStore::connect(&redis.url(), settings(2, Duration::from_secs(60)))
        .await
        .unwrap();
    let (sh, fans) = super::open_with_fans(&s, "g10", 20).await;
    redis.pause_writes(30_000).await;
    let held = at_once(fans.iter().map(|&t| s.status(&sh, t)).collect());
    // The store gives up after 2 s; a read still waiting long after that was never told.
    let answers = tokio::time::timeout(Duration::from_secs(20), held)
        .await
        .expect("every held read is answered");
    for answer in &answers {
        assert!(matches!(answer, Err(StoreError::Redis(_))), "{answer:?}");
    }
    redis.unpause().await;
    let answers = at_once(fans.iter().map(|&t| s.status(&sh, t)).collect()).await;
    for (i, answer) in answers.into_iter().enumerate() {
        let arrival = i as u64 + 1;
        assert_eq!(
            answer.unwrap().state,
            TicketState::Waiting {
                position: arrival,
                arrival
            }
        );
    }
}

/// `REDIS_GATHER_WINDOW`: after a call that carried more than one join, the show's next call
/// starts no sooner than a window after it, carrying every join that arrived meanwhile; a
/// show whose calls carry one join each (no company) never waits, nor does a join through a
/// store set otherwise. With no window the same joins go in a call each. (Windows of seconds, so no machine is too slow for them; every
/// bound on time below is a lower one, or the window itself.)
#[tokio::test]
async fn a_busy_shows_joins_wait_a_window_for_company_and_a_quiet_ones_do_not() {
    let redis = RedisServer::start().await;
    let connect = |window: Duration| {
        let url = redis.url();
        async move {
            RedisStore::connect(&url, settings(2, Duration::from_secs(60)))
                .await
                .unwrap()
                .with_gather_window(window)
        }
    };
    // Joins C and D, D started a moment after C's call could have gone out: how long after
    // `since` both were answered.
    async fn c_then_d(s: &RedisStore, sh: &ShowId, since: std::time::Instant) -> Duration {
        let mut c = s.join_proven(sh, None, None);
        assert!(futures::poll!(&mut c).is_pending(), "C waits for its call");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let d = s.join_proven(sh, None, None);
        let (c, d) = tokio::join!(c, d);
        let took = since.elapsed();
        assert_eq!(
            d.unwrap().0.arrival,
            c.unwrap().0.arrival + 1,
            "D joined after C"
        );
        took
    }

    let window = Duration::from_secs(3);
    let s = connect(window).await;
    let sh = show("g11");
    s.open(&sh).await.unwrap();
    redis.calls_of("fcall").await;
    // A and B together: a busy call.
    let since = std::time::Instant::now();
    let ab = at_once(vec![
        s.join_proven(&sh, None, None),
        s.join_proven(&sh, None, None),
    ])
    .await;
    assert!(ab.iter().all(Result::is_ok), "{ab:?}");
    let took = c_then_d(&s, &sh, since).await;
    assert_eq!(
        redis.calls_of("fcall").await,
        2,
        "A and B in one call, C and D in the next"
    );
    assert!(
        took >= window,
        "C waited for the window after A and B's call: {took:?}"
    );

    // A store set otherwise (here: no window) gathers its own calls: its join does not wait
    // in the call the first store's task holds back for its window.
    let busy = show("g14");
    s.open(&busy).await.unwrap();
    let ab = at_once(vec![
        s.join_proven(&busy, None, None),
        s.join_proven(&busy, None, None),
    ])
    .await;
    assert!(ab.iter().all(Result::is_ok), "{ab:?}");
    let since = std::time::Instant::now();
    let other = s.clone().with_gather_window(Duration::ZERO);
    other.join(&busy).await.unwrap();
    assert!(
        since.elapsed() < window,
        "the other store's join went at once: {:?}",
        since.elapsed()
    );
    redis.calls_of("fcall").await;

    // A quiet show: one join at a time never waits for the window.
    let quiet = show("g12");
    s.open(&quiet).await.unwrap();
    let since = std::time::Instant::now();
    for _ in 0..3 {
        s.join(&quiet).await.unwrap();
    }
    assert!(
        since.elapsed() < window,
        "three lone joins, each at once: {:?}",
        since.elapsed()
    );

    // No window: C goes as soon as A and B are answered, alone, and D after it.
    let s = connect(Duration::ZERO).await;
    let sh = show("g13");
    s.open(&sh).await.unwrap();
    redis.calls_of("fcall").await;
    let since = std::time::Instant::now();
    at_once(vec![
        s.join_proven(&sh, None, None),
        s.join_proven(&sh, None, None),
    ])
    .await;
    c_then_d(&s, &sh, since).await;
    assert_eq!(redis.calls_of("fcall").await, 3, "A and B, then C, then D");
}
