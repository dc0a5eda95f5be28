//! What a draw costs at the opening, for a pre-queue of a million arrivals (BENCHMARKS.md,
//! "The draw"). `cargo bench --bench draw`; with `REDIS_URL` set, also on that Redis: the
//! opening end to end (close, digest, draw script) and the first admission ticks, which walk
//! drawn places through the inverse permutation in Lua.

use std::time::{Duration, Instant};

use waiting_room::admitter::open_scheduled;
use waiting_room::draw::{Permutation, draw_key, new_seed, participants_digest};
use waiting_room::model::ShowId;
use waiting_room::store::{
    AdmitOutcome, MemoryStore, QueueStore, RedisStore, Schedule, StoreSettings,
};

const N: u64 = 1_000_000;

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let times = |f: &mut dyn FnMut()| {
        let mut all: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        all.sort();
        all[2]
    };
    let digest = participants_digest(N);
    println!(
        "participants digest of 1..={N}: {:?} (median of 5)",
        times(&mut || {
            participants_digest(N);
        })
    );
    let key = draw_key(&new_seed(), &digest, "");
    println!(
        "permutation from the key: {:?}",
        times(&mut || {
            Permutation::new(&key, N).unwrap();
        })
    );
    let p = Permutation::new(&key, N).unwrap();
    let t = Instant::now();
    let mut check = 0u64;
    for place in 1..=N {
        check ^= p.arrival_at(place);
    }
    let all = t.elapsed();
    println!(
        "every drawn place's arrival (the whole sale's walk): {all:?}, {:.0} ns a fan ({check})",
        all.as_nanos() as f64 / N as f64
    );
    runtime.block_on(opening(MemoryStore::new(settings()), "embedded"));
    if let Ok(url) = std::env::var("REDIS_URL") {
        let store = runtime
            .block_on(RedisStore::connect(&url, settings()))
            .expect("REDIS_URL answers");
        runtime.block_on(opening(store, "Redis"));
    }
}

fn settings() -> StoreSettings {
    StoreSettings {
        default_rate: 10_000,
        admission_ttl: Duration::from_secs(300),
        max_active_buyers: 0,
        arrival_window: Duration::from_secs(60),
    }
}

/// A pre-queue of a million arrivals opened: the draw end to end, then admission ticks of
/// 10,000 drawn places each.
async fn opening(store: impl QueueStore, name: &str) {
    let show: ShowId = format!("bench-{}", rand_suffix()).parse().unwrap();
    store.configure(&show, Default::default()).await.unwrap();
    let opens = waiting_room::clock::wall_ms() + 300_000;
    let schedule = Schedule {
        opens_at_ms: Some(opens),
        ..Default::default()
    };
    store.schedule(&show, schedule.clone()).await.unwrap();
    let t = Instant::now();
    let joins = 100_000;
    for _ in 0..joins {
        store.join(&show).await.unwrap();
    }
    let joined = t.elapsed();
    println!("{name}: {joins} joins into the pre-queue: {joined:?}");
    // The rest of the million, written straight into the queue on Redis (a million joins
    // through the script would take most of a minute and measure joins, not the draw).
    pad_to_a_million(&store, &show).await;
    store
        .schedule(
            &show,
            Schedule {
                opens_at_ms: Some(waiting_room::clock::wall_ms() + 50),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    assert!(open_scheduled(&store, &show, 1).await.unwrap());
    println!(
        "{name}: the opening of a pre-queue of {N} (close, digest, draw): {:?}",
        t.elapsed()
    );
    for tick in 0..3 {
        let t = Instant::now();
        let outcome = store.admit(&show, 1).await.unwrap();
        let AdmitOutcome::Admitted { count, .. } = outcome else {
            panic!("{outcome:?}");
        };
        println!(
            "{name}: admission tick {tick}: {count} admitted through the drawn order in {:?}",
            t.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(1001)).await;
    }
    store.delete(&show).await.unwrap();
}

fn rand_suffix() -> u32 {
    rand::random()
}

/// Queues arrivals up to a million: on Redis as the join script would (a member in the queue
/// scored by its arrival, the counter at a million), elsewhere by joining.
async fn pad_to_a_million(store: &impl QueueStore, show: &ShowId) {
    if let Ok(url) = std::env::var("REDIS_URL")
        && std::any::type_name_of_val(store).contains("Redis")
    {
        let client = redis::Client::open(url).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let queue = format!("wr:{{{show}}}:queue");
        for chunk in (100_001..=N).collect::<Vec<_>>().chunks(10_000) {
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(&queue);
            for &a in chunk {
                zadd.arg(a).arg(uuid::Uuid::new_v4().to_string());
            }
            let _: i64 = zadd.query_async(&mut conn).await.unwrap();
        }
        let _: () = redis::cmd("SET")
            .arg(format!("wr:{{{show}}}:seq"))
            .arg(N)
            .query_async(&mut conn)
            .await
            .unwrap();
    } else {
        for _ in 100_000..N {
            store.join(show).await.unwrap();
        }
    }
}
