//! Joining, leaving and what every change publishes.

use std::time::Duration;

use futures::StreamExt;
use waiting_room::model::TicketState;
use waiting_room::store::EventKind;

use super::{open_with_fans, position, rate};
use crate::support::backend::{Backend, settings, store};
use crate::support::show;

all_stores!(
    joins_get_dense_sequences_and_positions,
    leaving_moves_everyone_behind_up,
    snapshot_positions_equal_ranks,
    every_change_is_published_with_consecutive_versions,
    joins_are_limited_per_client,
);

async fn joins_get_dense_sequences_and_positions(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut tickets = Vec::new();
    for expected in 1..=5u64 {
        let j = s.join(&sh).await.unwrap();
        assert_eq!(j.arrival, expected, "sequences are dense and start at 1");
        assert_eq!(
            j.status.state,
            TicketState::Waiting {
                position: expected,
                arrival: expected
            }
        );
        tickets.push(j.ticket);
    }
    for (i, t) in tickets.iter().enumerate() {
        let st = s.status(&sh, *t).await.unwrap();
        assert_eq!(
            st.state,
            TicketState::Waiting {
                position: i as u64 + 1,
                arrival: i as u64 + 1
            }
        );
        assert_eq!(st.arrival, Some(i as u64 + 1));
        assert_eq!(st.pace.rate, 2);
        // ETA = ceil(position / rate): 1, 1, 2, 2, 3
        let view = st.state.view(*t, &st.pace, &st.sale);
        assert_eq!(view.eta_seconds, Some((i as u64 + 2) / 2));
    }
    // Another show has its own queue.
    s.open(&show("s2")).await.unwrap();
    let other = s.join(&show("s2")).await.unwrap();
    assert_eq!(other.arrival, 1);
    assert_eq!(
        position(s.as_ref(), "s1", other.ticket).await,
        TicketState::Unknown
    );
}

async fn leaving_moves_everyone_behind_up(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (sh, t) = open_with_fans(s.as_ref(), "s1", 4).await;
    assert!(s.leave(&sh, t[1]).await.unwrap());
    assert_eq!(position(s.as_ref(), "s1", t[1]).await, TicketState::Unknown);
    assert_eq!(
        position(s.as_ref(), "s1", t[0]).await,
        TicketState::Waiting {
            position: 1,
            arrival: 1
        }
    );
    assert_eq!(
        position(s.as_ref(), "s1", t[2]).await,
        TicketState::Waiting {
            position: 2,
            arrival: 3
        }
    );
    assert_eq!(
        position(s.as_ref(), "s1", t[3]).await,
        TicketState::Waiting {
            position: 3,
            arrival: 4
        }
    );
    assert!(
        !s.leave(&sh, t[1]).await.unwrap(),
        "leaving twice finds nothing"
    );
    assert!(!s.leave(&sh, uuid::Uuid::new_v4()).await.unwrap());
    // An admitted fan who leaves gives the admission back.
    s.admit(&sh, 1).await.unwrap();
    assert!(s.is_admitted(&sh, t[0]).await.unwrap());
    assert!(s.leave(&sh, t[0]).await.unwrap());
    assert!(!s.is_admitted(&sh, t[0]).await.unwrap());
    assert_eq!(s.stats(&sh).await.unwrap().admitted_valid, 0);
}

async fn snapshot_positions_equal_ranks(backend: Backend) {
    let (s, _redis) = store(backend, settings(3, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut joined = Vec::new();
    for _ in 0..12 {
        let j = s.join(&sh).await.unwrap();
        joined.push((j.arrival, j.ticket));
    }
    for i in [1, 4, 5, 9] {
        s.leave(&sh, joined[i].1).await.unwrap();
    }
    s.admit(&sh, 1).await.unwrap(); // pops seqs 1, 3, 4 (2 left early): head = 4
    let snap = s.snapshot(&sh).await.unwrap();
    assert_eq!(snap.head, 4);
    assert_eq!(
        snap.left,
        vec![5, 6, 10],
        "leavers at or below the head are forgotten"
    );
    for (seq, ticket) in &joined {
        let st = s.status(&sh, *ticket).await.unwrap();
        if let TicketState::Waiting { position, .. } = st.state {
            let gone = snap
                .left
                .iter()
                .filter(|&&l| l > snap.head && l < *seq)
                .count() as u64;
            assert_eq!(position, seq - snap.head - gone, "seq {seq}");
            assert_eq!(st.version, snap.version);
        }
    }
}

async fn every_change_is_published_with_consecutive_versions(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut events = s.subscribe().await.unwrap();
    // Sharded pub/sub carries the shows someone listens to (the others carry every show).
    s.listen(&sh).await.unwrap();
    let mut t = Vec::new();
    for _ in 0..4 {
        t.push(s.join(&sh).await.unwrap().ticket);
    }
    s.leave(&sh, t[2]).await.unwrap();
    s.admit(&sh, 1).await.unwrap();
    s.configure(&sh, rate(7)).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let e = tokio::time::timeout(Duration::from_secs(2), events.next())
            .await
            .expect("an event within 2 s")
            .expect("the stream goes on");
        got.push(e);
    }
    assert_eq!(got[0].kind, EventKind::Leave);
    assert_eq!(got[0].left, Some(3));
    assert_eq!(got[1].kind, EventKind::Tick);
    assert_eq!((got[1].head, got[1].admitted), (2, 2));
    assert_eq!(got[2].kind, EventKind::Rate);
    assert_eq!(got[2].pace.rate, 7);
    let versions: Vec<u64> = got.iter().map(|e| e.version).collect();
    // Opening was the first change (version 1), before the subscription.
    assert_eq!(versions, vec![2, 3, 4]);
    assert!(got.iter().all(|e| e.show == sh));
    assert_eq!(s.status(&sh, t[3]).await.unwrap().version, 4);
}

async fn joins_are_limited_per_client(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let bot = "203.0.113.7";
    let fan = "2001:db8::/64";
    // 2 a second, bursts of 4.
    for i in 0..4 {
        assert_eq!(
            s.limit_join(bot, 2).await.unwrap(),
            None,
            "join {i} of the burst"
        );
    }
    let wait = s
        .limit_join(bot, 2)
        .await
        .unwrap()
        .expect("the fifth is refused");
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(500),
        "{wait:?}"
    );
    assert_eq!(
        s.limit_join(fan, 2).await.unwrap(),
        None,
        "other clients are not affected"
    );
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    assert_eq!(
        s.limit_join(bot, 2).await.unwrap(),
        None,
        "allowed again after the wait"
    );
    assert!(s.limit_join(bot, 2).await.unwrap().is_some());
}
