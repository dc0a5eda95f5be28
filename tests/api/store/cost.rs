//! The regression benchmark of Redis's cost: what Redis spends on a join through the store,
//! against the floor of a join (`INCR` + `ZADD`, pipelined) on the same server in the same run,
//! so the machine's speed cancels out. Joins one at a time (a call each) and joins made at once
//! (3,000 tasks: the store gathers them into one call per show while its previous call is out),
//! each with and without an `Idempotency-Key`. It fails when a change makes joins several times
//! dearer, with a bound loose enough for a slow or busy machine, and prints the figures.
//! Status reads, the burst that follows (every fan's page reads its ticket once), are
//! measured the same way against the floor of a read.

use std::collections::HashMap;
use std::time::Duration;

use waiting_room::store::{Draws, Queue, RedisStore, Schedule, Shows};

use crate::support::backend::settings;
use crate::support::redis::RedisServer;
use crate::support::show;

/// Joins measured (each side); enough that the per-call figures settle.
const JOINS: usize = 3000;

/// The most Redis may spend on a join through the store, one at a time, in floors, by the
/// process CPU of Redis's main thread (the test's own redis-server, so nothing else counts).
/// A ratio, so it holds on any machine, with a bound loose enough for a busy one: some twice
/// to three times what it measures. The target is 2.5 with every feature kept; one at a
/// time a join is a whole call of its own and measured 28 to 53 floors (BENCHMARKS.md, "Redis
/// CPU per join against the floor": the floor is about a microsecond, so it swings). What
/// reaches the floor is many joins at once, gathered into one call: [`MOST_FLOORS_AT_ONCE`].
/// Not by commandstats (printed too), which counts the time a command runs, so a call that the
/// kernel preempts on a busy machine counts the time it waited: a keyed row at once once
/// measured 30 floors so, at 1.9 by CPU, and a keyed one at a time 112.
const MOST_FLOORS: f64 = 120.0;

/// The same for joins with an `Idempotency-Key` one at a time (measured 33 to 71 floors).
const MOST_FLOORS_KEYED: f64 = 150.0;

/// The same for joins made at once, gathered into one call per show as they arrive (measured
/// 1.0 to 2.6 floors; 14 to 17 before the joins were gathered).
const MOST_FLOORS_AT_ONCE: f64 = 6.0;

/// The same at once with an `Idempotency-Key` each, by process CPU: a field more a join in
/// one `HMGET` and one `HSET` of the show's hash a call (measured 1.9 to 3.4 floors; with a
/// `GET` and a `SET` a join, as before, 3.0 to 4.7).
const MOST_FLOORS_AT_ONCE_KEYED: f64 = 10.0;

/// `INFO` as a map of field to value.
async fn info(
    conn: &mut redis::aio::MultiplexedConnection,
    section: &str,
) -> HashMap<String, String> {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query_async(conn)
        .await
        .unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// Microseconds Redis spent in `commands` (from `INFO commandstats`, nested calls inside a
/// script included in the script's own), and the main thread's CPU seconds (user + system).
async fn spent(conn: &mut redis::aio::MultiplexedConnection, commands: &[&str]) -> (f64, f64) {
    let stats = info(conn, "commandstats").await;
    let usec = commands
        .iter()
        .filter_map(|c| stats.get(&format!("cmdstat_{c}")))
        .filter_map(|v| v.split(',').find_map(|f| f.strip_prefix("usec=")))
        .map(|u| u.parse::<f64>().unwrap())
        .sum();
    let cpu = info(conn, "cpu").await;
    let seconds = |k: &str| cpu[k].parse::<f64>().unwrap();
    (
        usec,
        seconds("used_cpu_user_main_thread") + seconds("used_cpu_sys_main_thread"),
    )
}

async fn reset(conn: &mut redis::aio::MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(conn)
        .await
        .unwrap();
}

/// What Redis spent on the joins `run` makes: µs in `commands` and µs of the main thread's CPU.
async fn measure<F>(
    conn: &mut redis::aio::MultiplexedConnection,
    commands: &[&str],
    run: F,
) -> (f64, f64)
where
    F: std::future::Future<Output = ()>,
{
    reset(conn).await;
    let (_, cpu_before) = spent(conn, &[]).await;
    run.await;
    let (usec, cpu_after) = spent(conn, commands).await;
    (usec, (cpu_after - cpu_before) * 1e6)
}

/// The commands a join through the store runs: its script, whose time includes the commands
/// it calls (`INFO commandstats` lists those too, so they are not added again). Before issue
/// 21 a join with an `Idempotency-Key` also sent a `GET` of its own; the figures of that
/// time in BENCHMARKS.md count it.
const JOIN_COMMANDS: [&str; 3] = ["evalsha", "eval", "fcall"];

/// `JOINS` joins of `sh` made at once (each fan its own task), under a fresh key each when
/// `keyed`: what an instance sees at the 10:00 burst.
async fn at_once(store: &RedisStore, sh: &waiting_room::model::ShowId, keyed: bool) {
    let mut fans = tokio::task::JoinSet::new();
    for i in 0..JOINS {
        let (store, sh) = (store.clone(), sh.clone());
        fans.spawn(async move {
            if keyed {
                store
                    .join_once(&sh, &format!("at-once-{i}"))
                    .await
                    .map(|_| ())
            } else {
                store.join(&sh).await.map(|_| ())
            }
        });
    }
    while let Some(joined) = fans.join_next().await {
        joined.unwrap().unwrap();
    }
}

/// A redis-server of the test's own, a store on it and the show `name`, open.
async fn open_show(name: &str) -> (RedisServer, RedisStore, waiting_room::model::ShowId) {
    let redis = RedisServer::start().await;
    let store = RedisStore::connect(&redis.url(), settings(10, Duration::from_secs(60)))
        .await
        .unwrap();
    let sh = show(name);
    store.open(&sh).await.unwrap();
    (redis, store, sh)
}

#[tokio::test]
async fn a_join_costs_redis_a_bounded_number_of_floors() {
    let (redis, store, sh) = open_show("cost").await;
    // The script loaded before anything is counted.
    store.join(&sh).await.unwrap();
    let mut conn = redis.conn().await;

    // The floor: the sequence and the sorted set alone, pipelined 100 joins a round trip.
    let (floor_usec, floor_cpu) = measure(&mut conn.clone(), &["incr", "zadd"], async {
        let mut conn = conn.clone();
        for batch in 0..JOINS / 100 {
            let mut pipe = redis::pipe();
            for i in 0..100 {
                let member = format!("t{batch}-{i}");
                pipe.cmd("INCR").arg("floor:seq").ignore();
                pipe.cmd("ZADD")
                    .arg("floor:q")
                    .arg(batch * 100 + i)
                    .arg(member)
                    .ignore();
            }
            let () = pipe.query_async(&mut conn).await.unwrap();
        }
    })
    .await;
    let n = JOINS as f64;
    let floor = floor_usec / n;
    assert!(floor > 0.0, "the floor was not measured");
    println!(
        "floor (INCR + ZADD, pipelined): {floor:.2} µs in commands ({:.2} µs of process CPU)",
        floor_cpu / n
    );

    // A show scheduled to open in an hour: its joins go to its pre-queue (a fair start's).
    let pre = show("cost-pre");
    store.configure(&pre, Default::default()).await.unwrap();
    let opens_at_ms = Some(waiting_room::clock::wall_ms() + 3_600_000);
    let schedule = Schedule {
        opens_at_ms,
        ..Default::default()
    };
    store.schedule(&pre, schedule).await.unwrap();

    // The joins the fans make: one at a time through the store, then all at once; with and
    // without an Idempotency-Key; and at once into the pre-queue.
    let mut ratios = Vec::new();
    for (label, keyed, concurrent, most, sh) in [
        ("one at a time", false, false, MOST_FLOORS, &sh),
        (
            "one at a time, Idempotency-Key",
            true,
            false,
            MOST_FLOORS_KEYED,
            &sh,
        ),
        ("at once", false, true, MOST_FLOORS_AT_ONCE, &sh),
        (
            "at once, Idempotency-Key",
            true,
            true,
            MOST_FLOORS_AT_ONCE_KEYED,
            &sh,
        ),
        (
            "at once, into a pre-queue",
            false,
            true,
            MOST_FLOORS_AT_ONCE,
            &pre,
        ),
    ] {
        let (usec, cpu) = measure(&mut conn, &JOIN_COMMANDS, async {
            if concurrent {
                at_once(&store, sh, keyed).await;
            } else {
                for i in 0..JOINS {
                    if keyed {
                        store.join_once(sh, &format!("{label}-{i}")).await.unwrap();
                    } else {
                        store.join(sh).await.unwrap();
                    }
                }
            }
        })
        .await;
        let (join, join_cpu) = (usec / n, cpu / n);
        let (ratio, ratio_cpu) = (join / floor, cpu / floor_cpu);
        println!(
            "Redis per join, {label}: {join:.1} µs in commands ({join_cpu:.1} µs of process \
             CPU); ratio {ratio:.1} by commandstats, {ratio_cpu:.1} by process CPU"
        );
        ratios.push((label, most, ratio_cpu, join_cpu));
    }
    let floor_cpu = floor_cpu / n;
    for (label, most, ratio, join) in ratios {
        assert!(
            ratio <= most,
            "a join ({label}) costs Redis {ratio:.1} floors ({join:.1} µs of process CPU against \
             {floor_cpu:.2} µs), more than {most}: a script grew dearer"
        );
    }
}

/// The most Redis may spend on a status read made at once with the show's other reads
/// (gathered into one call per show), in floors of a read (`ZSCORE` + `ZRANK` of the ticket,
/// pipelined), by process CPU as joins at once are (see `MOST_FLOORS_AT_ONCE`): measured 1.9
/// to 3.3, against 8.9 to 9.6 before reads were gathered (a call each), so the bound fails if
/// they stop being gathered (BENCHMARKS.md, "Status reads, the second burst").
const MOST_READ_FLOORS_AT_ONCE: f64 = 6.0;

/// The same one at a time (a call each; measured 29 to 40 floors, so it fails only when a
/// read grows several times dearer).
const MOST_READ_FLOORS: f64 = 100.0;

/// The second burst: every fan's page reads its ticket once when it opens
/// its stream. What Redis spends on a status read through the store, one at a time and made
/// at once (the store gathers the reads of one show into one call), against the floor of a
/// read on the same queue in the same run.
#[tokio::test]
async fn a_status_read_costs_redis_a_bounded_number_of_floors() {
    let (redis, store, sh) = open_show("reads").await;
    let mut tickets = Vec::new();
    for _ in 0..JOINS {
        tickets.push(store.join(&sh).await.unwrap().ticket);
    }
    // The script loaded before anything is counted.
    store.status(&sh, tickets[0]).await.unwrap();
    let mut conn = redis.conn().await;

    // The floor: where each ticket is in the show's own queue, pipelined 100 a round trip.
    let queue = format!("wr:{{{sh}}}:queue");
    let (floor_usec, floor_cpu) = measure(&mut conn.clone(), &["zscore", "zrank"], async {
        let mut conn = conn.clone();
        for batch in tickets.chunks(100) {
            let mut pipe = redis::pipe();
            for t in batch {
                pipe.cmd("ZSCORE").arg(&queue).arg(t.to_string()).ignore();
                pipe.cmd("ZRANK").arg(&queue).arg(t.to_string()).ignore();
            }
            let () = pipe.query_async(&mut conn).await.unwrap();
        }
    })
    .await;
    let n = tickets.len() as f64;
    let (floor, floor_cpu) = (floor_usec / n, floor_cpu / n);
    assert!(floor > 0.0, "the floor was not measured");
    println!(
        "floor of a read (ZSCORE + ZRANK, pipelined): {floor:.2} µs in commands ({floor_cpu:.2} \
         µs of process CPU)"
    );

    let mut ratios = Vec::new();
    for (label, concurrent, most) in [
        ("one at a time", false, MOST_READ_FLOORS),
        ("at once", true, MOST_READ_FLOORS_AT_ONCE),
    ] {
        let (usec, cpu) = measure(&mut conn, &JOIN_COMMANDS, async {
            if concurrent {
                let mut fans = tokio::task::JoinSet::new();
                for &t in &tickets {
                    let (store, sh) = (store.clone(), sh.clone());
                    fans.spawn(async move { store.status(&sh, t).await });
                }
                while let Some(read) = fans.join_next().await {
                    read.unwrap().unwrap();
                }
            } else {
                for &t in &tickets {
                    store.status(&sh, t).await.unwrap();
                }
            }
        })
        .await;
        let (read, read_cpu) = (usec / n, cpu / n);
        let (ratio, ratio_cpu) = (read / floor, read_cpu / floor_cpu);
        println!(
            "Redis per status read, {label}: {read:.1} µs in commands ({read_cpu:.1} µs of \
             process CPU); ratio {ratio:.1} by commandstats, {ratio_cpu:.1} by process CPU"
        );
        ratios.push((label, most, ratio_cpu, read_cpu));
    }
    for (label, most, ratio, read) in ratios {
        assert!(
            ratio <= most,
            "a status read ({label}) costs Redis {ratio:.1} floors ({read:.1} µs of process CPU \
             against {floor_cpu:.2} µs), more than {most}: the status script grew dearer, or \
             reads are no longer gathered"
        );
    }
}
