//! What a leave costs: 10,000 fans following a show on two server processes on one Redis,
//! every push counted. A leave ahead reaches at once only the pages it would put more than
//! a twentieth off (`model::position_slack`: the front twenty places at every leave); every
//! other page is told within `LAG_REFRESH` (the queue stands still here, so no tick does it).
//! Before, each leave pushed every fan behind it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, stream};
use tokio::time::Instant;
use waiting_room::hub::LAG_REFRESH;
use waiting_room::model::{TicketView, position_slack};

use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

const FANS: usize = 10_000;

/// One fan: its ticket, the instance its stream is on, and every push it heard.
struct Fan {
    ticket: String,
    instance: usize,
    heard: Arc<Mutex<Vec<(Instant, u64)>>>,
}

impl Fan {
    /// The positions pushed after `since`, with when.
    fn pushed_since(&self, since: Instant) -> Vec<(Instant, u64)> {
        let heard = self.heard.lock().unwrap();
        heard.iter().filter(|h| h.0 > since).copied().collect()
    }

    fn last(&self) -> Option<u64> {
        self.heard.lock().unwrap().last().map(|h| h.1)
    }
}

/// Waits until `done` holds, checking every 100 ms, for at most `within`.
async fn until(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_pushes_only_the_pages_it_puts_past_their_bound() {
    let redis = RedisServer::start().await;
    let servers = [
        ServerProcess::start(&redis.url(), 10, &[]).await,
        ServerProcess::start(&redis.url(), 10, &[]).await,
    ];
    let servers = &servers;
    let show = "leaves";
    servers[0].create(show).await; // closed: nobody is admitted, no tick moves anyone
    let mut tickets: Vec<(u64, String, usize)> = stream::iter(0..FANS)
        .map(|i| async move {
            let joined = servers[i % 2].join_ok(show).await;
            let ticket = joined["ticketId"].as_str().unwrap().to_owned();
            (joined["arrival"].as_u64().unwrap(), ticket, i % 2)
        })
        .buffered(32)
        .collect()
        .await;
    // Fan i is the i-th to arrive: its place is i + 1.
    tickets.sort();
    let fans: Vec<Fan> = stream::iter(tickets)
        .map(|(_, ticket, instance)| async move {
            let mut sse = servers[instance].events(show, &ticket).await;
            let heard: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::default();
            let into = heard.clone();
            tokio::spawn(async move {
                while let Some(e) = sse.next(Duration::from_secs(600)).await {
                    let view: TicketView = serde_json::from_value(e.data).unwrap();
                    let position = view.position.unwrap_or(0);
                    into.lock().unwrap().push((Instant::now(), position));
                }
            });
            Fan {
                ticket,
                instance,
                heard,
            }
        })
        .buffered(64)
        .collect()
        .await;
    until(Duration::from_secs(120), "every first state", || {
        fans.iter().all(|f| f.last().is_some())
    })
    .await;
    for (i, fan) in fans.iter().enumerate() {
        assert_eq!(fan.last(), Some(i as u64 + 1), "fan {i}'s first state");
    }

    // One leave at the very front. Each page behind it shows one place too many: within its
    // bound but in the front twenty places. Those nineteen are pushed at once; the 9,980
    // further back are told by the refresh, not before.
    let sent = Instant::now();
    assert_eq!(servers[1].leave(show, &fans[0].ticket).await.status(), 204);
    let mut places: BTreeMap<usize, u64> = (1..FANS).map(|i| (i, i as u64)).collect();
    let front: Vec<usize> = places.iter().filter(|p| *p.1 < 20).map(|p| *p.0).collect();
    assert_eq!(front.len(), 19);
    until(Duration::from_secs(60), "the front told", || {
        front.iter().all(|&i| fans[i].last() == Some(places[&i]))
    })
    .await;
    until(Duration::from_secs(120), "every page told", || {
        places.iter().all(|(&i, &p)| fans[i].last() == Some(p))
    })
    .await;
    let mut told_late = [0; 2];
    for (&i, &place) in &places {
        let pushes = fans[i].pushed_since(sent);
        assert_eq!(pushes.len(), 1, "fan {i}: {pushes:?}");
        if place >= 20 {
            told_late[fans[i].instance] += 1;
            assert!(
                pushes[0].0 >= sent + LAG_REFRESH,
                "fan {i} at {place} pushed {:?} after the leave, before the refresh",
                pushes[0].0 - sent
            );
        }
    }
    assert_eq!(told_late[0] + told_late[1], FANS - 20);
    assert!(
        told_late.iter().all(|&n| n > 4_000),
        "on both instances: {told_late:?}"
    );

    // A hundred leaves at once: ten together near the front, the rest spread over the queue
    // by a seeded walk. The pages pushed before the refresh are exactly those the leaves put
    // past their bound.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut leavers: Vec<usize> = (31..=40).collect();
    while leavers.len() < 100 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let i = 1_000 + (seed % (FANS as u64 - 1_000)) as usize;
        if !leavers.contains(&i) {
            leavers.push(i);
        }
    }
    let told: BTreeMap<usize, u64> = places.clone();
    for i in &leavers {
        places.remove(i);
    }
    for (place, p) in places.values_mut().enumerate() {
        *p = place as u64 + 1;
    }
    let past_bound: Vec<usize> = places
        .iter()
        .filter(|(i, p)| told[i] - **p > position_slack(**p))
        .map(|(i, _)| *i)
        .collect();
    // Behind each leave, everyone: what each leave cost before.
    let behind_each: usize = leavers.iter().map(|l| places.range(l..).count()).sum();
    let sent = Instant::now();
    let leaves = leavers
        .iter()
        .map(|&i| servers[i % 2].leave(show, &fans[i].ticket));
    for r in futures::future::join_all(leaves).await {
        assert_eq!(r.status(), 204);
    }
    until(
        Duration::from_secs(60),
        "the pages past their bound told",
        || {
            past_bound
                .iter()
                .all(|&i| fans[i].last() == Some(places[&i]))
        },
    )
    .await;
    until(Duration::from_secs(120), "every page told", || {
        places.iter().all(|(&i, &p)| fans[i].last() == Some(p))
    })
    .await;
    // No page within its bound is pushed before the refresh could come (a slow machine only
    // makes pushes later); those past it are told, each at most a few times (the hundred
    // leaves may fold into a few recomputes) and once more at most by the refresh.
    let mut early = 0;
    for &i in places.keys() {
        let pushes = fans[i].pushed_since(sent);
        let before_refresh = pushes.iter().filter(|p| p.0 < sent + LAG_REFRESH).count();
        if !past_bound.contains(&i) {
            assert_eq!(
                before_refresh, 0,
                "fan {i} pushed before the refresh: {pushes:?}"
            );
        }
        assert!(pushes.len() <= 5, "fan {i}: {pushes:?}");
        early += before_refresh;
    }
    assert!(
        !past_bound.is_empty() && past_bound.len() * 100 < behind_each,
        "{} pages past their bound; {behind_each} fans behind the leaves",
        past_bound.len()
    );
    assert!(early <= 4 * past_bound.len(), "{early} pushes at once");
    // The poll agrees with what every page was finally told.
    for &i in places.keys().step_by(97) {
        let polled = servers[1 - fans[i].instance]
            .ticket_json(show, &fans[i].ticket)
            .await;
        assert_eq!(polled["position"], places[&i], "fan {i}");
    }
}
