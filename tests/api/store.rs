//! The store conformance suite: every test runs against the embedded store, a real
//! redis-server and a real three-node Redis Cluster, so the backends cannot drift apart
//! unnoticed.

use std::time::Duration;

use futures::StreamExt;
use rust_decimal::Decimal;
use waiting_room::model::{OrderRequest, TicketState};
use waiting_room::store::{
    AdmitOutcome, EventKind, OrderOutcome, QueueStore, ShowSettings, StoreError,
};

use crate::helpers::{Backend, settings, show, store};

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $( #[tokio::test] async fn $name() { super::$name(crate::helpers::Backend::Memory).await } )*
        }
        mod redis {
            $( #[tokio::test] async fn $name() { super::$name(crate::helpers::Backend::Redis).await } )*
        }
        mod cluster {
            $( #[tokio::test] async fn $name() { super::$name(crate::helpers::Backend::Cluster).await } )*
        }
    };
}

conformance!(
    joins_get_dense_sequences_and_positions,
    admission_takes_the_rate_in_arrival_order_once_a_second,
    admission_runs_out_to_unknown,
    a_stale_fencing_token_is_refused,
    open_and_close,
    the_gate_knows_admitted_tickets_of_that_show_only,
    orders_are_idempotent_per_hold,
    leaving_moves_everyone_behind_up,
    snapshot_positions_equal_ranks,
    every_change_is_published_with_consecutive_versions,
    one_lease_holder_at_a_time,
    stats_count_what_operators_see,
    a_rate_of_its_own_changes_admissions_and_eta,
    joins_are_limited_per_client,
    a_buyer_cap_admits_only_into_free_places,
    holds_belong_to_their_show_and_one_admission_buys_once,
    a_deleted_show_is_gone_and_a_new_one_starts_afresh,
    a_lease_heals_past_a_fence_it_met,
);

fn rate(admit_per_second: u32) -> ShowSettings {
    ShowSettings {
        admit_per_second: Some(admit_per_second),
        max_active_buyers: None,
        ..ShowSettings::default()
    }
}

fn cap(max_active_buyers: u32) -> ShowSettings {
    ShowSettings {
        admit_per_second: None,
        max_active_buyers: Some(max_active_buyers),
        ..ShowSettings::default()
    }
}

/// Sleeps until just after the start of a wall-clock second, so two admissions that must
/// share (or not share) a second do.
async fn start_of_second() {
    let ms = waiting_room_wall_ms() % 1000;
    tokio::time::sleep(Duration::from_millis(1000 - ms + 20)).await;
}

async fn next_second() {
    tokio::time::sleep(Duration::from_millis(1000)).await;
}

fn waiting_room_wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

async fn position(s: &dyn QueueStore, show_name: &str, t: uuid::Uuid) -> TicketState {
    s.status(&show(show_name), t).await.unwrap().state
}

async fn joins_get_dense_sequences_and_positions(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut tickets = Vec::new();
    for expected in 1..=5u64 {
        let j = s.join(&sh).await.unwrap();
        assert_eq!(j.seq, expected, "sequences are dense and start at 1");
        assert_eq!(j.status.state, TicketState::Waiting { position: expected });
        tickets.push(j.ticket);
    }
    for (i, t) in tickets.iter().enumerate() {
        let st = s.status(&sh, *t).await.unwrap();
        assert_eq!(
            st.state,
            TicketState::Waiting {
                position: i as u64 + 1
            }
        );
        assert_eq!(st.seq, Some(i as u64 + 1));
        assert_eq!(st.pace.rate, 2);
        // ETA = ceil(position / rate): 1, 1, 2, 2, 3
        let view = st.state.view(*t, &st.pace);
        assert_eq!(view.eta_seconds, Some((i as u64 + 2) / 2));
    }
    // Another show has its own queue.
    s.open(&show("s2")).await.unwrap();
    let other = s.join(&show("s2")).await.unwrap();
    assert_eq!(other.seq, 1);
    assert_eq!(
        position(s.as_ref(), "s1", other.ticket).await,
        TicketState::Unknown
    );
}

async fn admission_takes_the_rate_in_arrival_order_once_a_second(backend: Backend) {
    let (s, _redis) = store(backend, settings(3, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut tickets = Vec::new();
    for _ in 0..5 {
        tickets.push(s.join(&sh).await.unwrap().ticket);
    }
    start_of_second().await;
    let first = s.admit(&sh, 1).await.unwrap();
    assert!(
        matches!(first, AdmitOutcome::Admitted { count: 3, .. }),
        "{first:?}"
    );
    for t in &tickets[..3] {
        assert!(matches!(
            position(s.as_ref(), "s1", *t).await,
            TicketState::Admitted { .. }
        ));
    }
    assert_eq!(
        position(s.as_ref(), "s1", tickets[3]).await,
        TicketState::Waiting { position: 1 }
    );
    assert_eq!(
        position(s.as_ref(), "s1", tickets[4]).await,
        TicketState::Waiting { position: 2 }
    );

    // A second admission in the same second admits nobody, whoever asks.
    assert!(matches!(
        s.admit(&sh, 1).await.unwrap(),
        AdmitOutcome::AlreadyThisSecond { .. }
    ));
    assert!(matches!(
        s.admit(&sh, 2).await.unwrap(),
        AdmitOutcome::AlreadyThisSecond { .. }
    ));
    assert_eq!(
        position(s.as_ref(), "s1", tickets[3]).await,
        TicketState::Waiting { position: 1 }
    );

    next_second().await;
    let second = s.admit(&sh, 2).await.unwrap();
    assert!(
        matches!(second, AdmitOutcome::Admitted { count: 2, .. }),
        "{second:?}"
    );
    next_second().await;
    assert!(matches!(
        s.admit(&sh, 2).await.unwrap(),
        AdmitOutcome::Admitted { count: 0, .. }
    ));
}

async fn admission_runs_out_to_unknown(backend: Backend) {
    let (s, _redis) = store(backend, settings(5, Duration::from_millis(400))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let t = s.join(&sh).await.unwrap().ticket;
    s.admit(&sh, 1).await.unwrap();
    match position(s.as_ref(), "s1", t).await {
        TicketState::Admitted { expires_in_ms } => assert!((1..=400).contains(&expires_in_ms)),
        other => panic!("expected admitted, got {other:?}"),
    }
    assert!(s.is_admitted(&sh, t).await.unwrap());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(position(s.as_ref(), "s1", t).await, TicketState::Unknown);
    assert!(!s.is_admitted(&sh, t).await.unwrap());
}

async fn a_stale_fencing_token_is_refused(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    for _ in 0..3 {
        s.join(&sh).await.unwrap();
    }
    assert!(matches!(
        s.admit(&sh, 5).await.unwrap(),
        AdmitOutcome::Admitted { count: 1, .. }
    ));
    next_second().await;
    assert_eq!(
        s.admit(&sh, 4).await.unwrap(),
        AdmitOutcome::Fenced { fence: 5 },
        "the refusal names the fence to beat"
    );
    assert!(matches!(
        s.admit(&sh, 5).await.unwrap(),
        AdmitOutcome::Admitted { count: 1, .. }
    ));
    assert_eq!(s.stats(&sh).await.unwrap().queue_length, 1);
}

async fn open_and_close(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (a, b) = (show("a"), show("b"));
    assert_eq!(s.show(&a).await.unwrap(), None);
    assert!(matches!(s.close(&a).await, Err(StoreError::NoSuchShow(_))));
    let made = s.open(&a).await.unwrap();
    assert!(made.created && !made.recovered);
    s.open(&b).await.unwrap();
    let again = s.open(&a).await.unwrap();
    assert!(!again.created);
    assert_eq!(
        again.epoch, made.epoch,
        "opening again keeps the show's state"
    );
    assert!(s.show(&a).await.unwrap().unwrap().open);
    assert_eq!(s.open_shows().await.unwrap(), vec![a.clone(), b.clone()]);
    s.close(&a).await.unwrap();
    assert!(!s.show(&a).await.unwrap().unwrap().open);
    assert_eq!(s.open_shows().await.unwrap(), vec![b.clone()]);
    assert_eq!(s.shows().await.unwrap(), vec![a.clone(), b]);
    // A closed show is not served by the admitter.
    s.join(&a).await.unwrap();
    assert_eq!(s.admit(&a, 1).await.unwrap(), AdmitOutcome::NotServed);
}

async fn the_gate_knows_admitted_tickets_of_that_show_only(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (a, b) = (show("a"), show("b"));
    s.open(&a).await.unwrap();
    s.open(&b).await.unwrap();
    let first = s.join(&a).await.unwrap().ticket;
    let second = s.join(&a).await.unwrap().ticket;
    assert!(
        !s.is_admitted(&a, first).await.unwrap(),
        "waiting is not admitted"
    );
    s.admit(&a, 1).await.unwrap();
    assert!(s.is_admitted(&a, first).await.unwrap());
    assert!(!s.is_admitted(&a, second).await.unwrap());
    assert!(
        !s.is_admitted(&b, first).await.unwrap(),
        "a ticket opens its own show only"
    );
    assert!(
        !s.is_admitted(&a, uuid::Uuid::new_v4()).await.unwrap(),
        "forged tickets fail"
    );
}

fn order(show_id: &str, hold: &str, email: &str) -> waiting_room::model::NewOrder {
    OrderRequest {
        show_id: show_id.into(),
        hold_id: hold.into(),
        customer_email: email.into(),
        amount: Decimal::new(35000, 2),
    }
    .validate()
    .unwrap()
}

async fn orders_are_idempotent_per_hold(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let sh = show("show-42");
    // Closed: no gate, but the show must exist.
    let req = order("show-42", "hold-0100", "caio@example.com");
    assert!(matches!(
        s.place_order(&req, None).await,
        Err(StoreError::NoSuchShow(_))
    ));
    s.configure(&sh, ShowSettings::default()).await.unwrap();
    let OrderOutcome::Created(order_1) = s.place_order(&req, None).await.unwrap() else {
        panic!("a new hold is a new order")
    };
    assert_eq!(order_1.hold_id, "hold-0100");
    assert_eq!(order_1.amount, Decimal::new(350, 0));
    assert_eq!(
        s.place_order(&req, None).await.unwrap(),
        OrderOutcome::Repeated(order_1.clone()),
        "the same request again answers the same order"
    );
    let other = order("show-42", "hold-0100", "mallory@example.com");
    assert_eq!(
        s.place_order(&other, None).await.unwrap(),
        OrderOutcome::Conflict("hold")
    );
    assert_eq!(s.get_order(order_1.id).await.unwrap(), Some(order_1));
    assert_eq!(s.get_order(uuid::Uuid::new_v4()).await.unwrap(), None);
}

async fn holds_belong_to_their_show_and_one_admission_buys_once(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (gated, free) = (show("show-42"), show("side"));
    s.open(&gated).await.unwrap();
    s.configure(&free, ShowSettings::default()).await.unwrap();
    let fan = s.join(&gated).await.unwrap().ticket;
    let next = s.join(&gated).await.unwrap().ticket;
    s.admit(&gated, 1).await.unwrap();
    // An attacker orders hold-0100 on another show first: that hold is the other show's.
    let theirs = order("side", "hold-0100", "mallory@example.com");
    assert!(matches!(
        s.place_order(&theirs, None).await.unwrap(),
        OrderOutcome::Created(_)
    ));
    let mine = order("show-42", "hold-0100", "caio@example.com");
    let OrderOutcome::Created(placed) = s.place_order(&mine, Some(fan)).await.unwrap() else {
        panic!("the admitted fan's hold on its own show is new")
    };
    assert_eq!(placed.customer_email, "caio@example.com");
    // A retry is the same order; the same admission for another hold is refused.
    assert_eq!(
        s.place_order(&mine, Some(fan)).await.unwrap(),
        OrderOutcome::Repeated(placed)
    );
    let more = order("show-42", "hold-0101", "caio@example.com");
    assert_eq!(
        s.place_order(&more, Some(fan)).await.unwrap(),
        OrderOutcome::Conflict("admission")
    );
    // Another admitted fan may not take over the hold either.
    assert_eq!(
        s.place_order(&mine, Some(next)).await.unwrap(),
        OrderOutcome::Conflict("hold")
    );
    // Without an admission the gate refuses, and a forged one too.
    assert_eq!(
        s.place_order(&more, None).await.unwrap(),
        OrderOutcome::Forbidden
    );
    assert_eq!(
        s.place_order(&more, Some(uuid::Uuid::new_v4()))
            .await
            .unwrap(),
        OrderOutcome::Forbidden
    );
    assert!(matches!(
        s.place_order(&more, Some(next)).await.unwrap(),
        OrderOutcome::Created(_)
    ));
}

async fn a_deleted_show_is_gone_and_a_new_one_starts_afresh(backend: Backend) {
    let (s, _redis) = store(backend, settings(5, Duration::from_secs(60))).await;
    let sh = show("gone");
    assert!(matches!(s.join(&sh).await, Err(StoreError::NoSuchShow(_))));
    let made = s.open(&sh).await.unwrap();
    let admitted = s.join(&sh).await.unwrap().ticket;
    s.admit(&sh, 1).await.unwrap();
    let waiting = s.join(&sh).await.unwrap().ticket;
    assert!(s.is_admitted(&sh, admitted).await.unwrap());
    let mut events = s.subscribe().await.unwrap();
    assert!(s.delete(&sh).await.unwrap());
    assert!(!s.delete(&sh).await.unwrap(), "nothing left to delete");
    // (On a cluster, the tick published just before subscribing may still be on its way.)
    let reset = loop {
        let e = tokio::time::timeout(Duration::from_secs(2), events.next())
            .await
            .expect("fans are told")
            .unwrap();
        if e.kind != EventKind::Tick {
            break e;
        }
    };
    assert_eq!((reset.kind, reset.epoch), (EventKind::Reset, 0));
    assert_eq!(s.show(&sh).await.unwrap(), None);
    assert!(s.shows().await.unwrap().is_empty());
    assert!(s.open_shows().await.unwrap().is_empty());
    for call in [
        s.status(&sh, waiting).await.err(),
        s.stats(&sh).await.err(),
        s.leave(&sh, waiting).await.err(),
    ] {
        assert!(matches!(call, Some(StoreError::NoSuchShow(_))), "{call:?}");
    }
    assert_eq!(s.snapshot(&sh).await.unwrap().epoch, 0);
    // Made again: a new epoch, nothing of the old one is valid.
    let again = s.open(&sh).await.unwrap();
    assert!(again.created);
    assert_ne!(again.epoch, made.epoch);
    assert!(!s.is_admitted(&sh, admitted).await.unwrap());
    assert_eq!(
        s.status(&sh, waiting).await.unwrap().state,
        TicketState::Unknown
    );
    assert_eq!(s.join(&sh).await.unwrap().seq, 1);
}

async fn a_lease_heals_past_a_fence_it_met(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let ttl = Duration::from_secs(5);
    let token = s.lease("a", ttl, 0).await.unwrap().unwrap();
    // A show fenced far above the counter (the counter's keys were lost, say).
    let healed = s.lease("a", ttl, token + 40).await.unwrap().unwrap();
    assert!(
        healed > token + 40,
        "{healed} must pass the fence {}",
        token + 40
    );
    assert_eq!(
        s.lease("a", ttl, token + 40).await.unwrap(),
        Some(healed),
        "a token past the floor is simply renewed"
    );
    assert_eq!(
        s.lease("b", ttl, healed + 10).await.unwrap(),
        None,
        "a floor never takes another holder's lease"
    );
}

async fn leaving_moves_everyone_behind_up(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut t = Vec::new();
    for _ in 0..4 {
        t.push(s.join(&sh).await.unwrap().ticket);
    }
    assert!(s.leave(&sh, t[1]).await.unwrap());
    assert_eq!(position(s.as_ref(), "s1", t[1]).await, TicketState::Unknown);
    assert_eq!(
        position(s.as_ref(), "s1", t[0]).await,
        TicketState::Waiting { position: 1 }
    );
    assert_eq!(
        position(s.as_ref(), "s1", t[2]).await,
        TicketState::Waiting { position: 2 }
    );
    assert_eq!(
        position(s.as_ref(), "s1", t[3]).await,
        TicketState::Waiting { position: 3 }
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
        joined.push((j.seq, j.ticket));
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
        if let TicketState::Waiting { position } = st.state {
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
    assert_eq!(got[2].rate, 7);
    let versions: Vec<u64> = got.iter().map(|e| e.version).collect();
    // Opening was the first change (version 1), before the subscription.
    assert_eq!(versions, vec![2, 3, 4]);
    assert!(got.iter().all(|e| e.show == sh));
    assert_eq!(s.status(&sh, t[3]).await.unwrap().version, 4);
}

async fn one_lease_holder_at_a_time(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let ttl = Duration::from_millis(300);
    let a = s
        .lease("a", ttl, 0)
        .await
        .unwrap()
        .expect("a free lease is taken");
    assert_eq!(s.lease("b", ttl, 0).await.unwrap(), None);
    assert_eq!(
        s.lease("a", ttl, 0).await.unwrap(),
        Some(a),
        "renewal keeps the token"
    );
    s.release_lease("b").await.unwrap(); // not b's to release
    assert_eq!(s.lease("b", ttl, 0).await.unwrap(), None);
    s.release_lease("a").await.unwrap();
    let b = s
        .lease("b", ttl, 0)
        .await
        .unwrap()
        .expect("a released lease is free");
    assert!(b > a, "each new holder gets a larger fencing token");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let c = s
        .lease("a", ttl, 0)
        .await
        .unwrap()
        .expect("an expired lease is free");
    assert!(c > b);
}

async fn stats_count_what_operators_see(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    for _ in 0..5 {
        s.join(&sh).await.unwrap();
    }
    s.admit(&sh, 1).await.unwrap();
    let stats = s.stats(&sh).await.unwrap();
    assert!(stats.open);
    assert_eq!(stats.queue_length, 3);
    assert_eq!(stats.admitted_valid, 2);
    assert_eq!(stats.admit_per_second, 2);
    assert_eq!(stats.joined, 5);
}

async fn a_rate_of_its_own_changes_admissions_and_eta(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let sh = show("s1");
    s.open(&sh).await.unwrap();
    let mut t = Vec::new();
    for _ in 0..10 {
        t.push(s.join(&sh).await.unwrap().ticket);
    }
    s.configure(&sh, rate(4)).await.unwrap();
    let st = s.status(&sh, t[9]).await.unwrap();
    assert_eq!(st.pace.rate, 4);
    assert_eq!(st.state.view(t[9], &st.pace).eta_seconds, Some(3));
    assert!(matches!(
        s.admit(&sh, 1).await.unwrap(),
        AdmitOutcome::Admitted { count: 4, .. }
    ));
    // Other shows keep the default.
    s.configure(&show("other"), ShowSettings::default())
        .await
        .unwrap();
    assert_eq!(s.stats(&show("other")).await.unwrap().admit_per_second, 1);
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

async fn a_buyer_cap_admits_only_into_free_places(backend: Backend) {
    let (s, _redis) = store(backend, settings(5, Duration::from_secs(60))).await;
    let sh = show("cap");
    s.open(&sh).await.unwrap();
    let mut t = Vec::new();
    for _ in 0..10 {
        t.push(s.join(&sh).await.unwrap().ticket);
    }
    s.configure(&sh, cap(3)).await.unwrap();
    start_of_second().await;
    assert!(matches!(
        s.admit(&sh, 1).await.unwrap(),
        AdmitOutcome::Admitted { count: 3, .. }
    ));
    next_second().await;
    assert!(
        matches!(
            s.admit(&sh, 1).await.unwrap(),
            AdmitOutcome::Admitted { count: 0, .. }
        ),
        "three buyers are busy: no free place"
    );
    // One buys, one gives up: two places free up.
    let bought = order("cap", "hold-1", "caio@example.com");
    assert!(matches!(
        s.place_order(&bought, Some(t[0])).await.unwrap(),
        OrderOutcome::Created(_)
    ));
    assert!(
        s.is_admitted(&sh, t[0]).await.unwrap(),
        "a buyer's admission stays valid for retries"
    );
    s.leave(&sh, t[1]).await.unwrap();
    let stats = s.stats(&sh).await.unwrap();
    assert_eq!((stats.admitted_valid, stats.max_active_buyers), (1, 3));
    next_second().await;
    assert!(matches!(
        s.admit(&sh, 1).await.unwrap(),
        AdmitOutcome::Admitted { count: 2, .. }
    ));
    assert!(matches!(
        position(s.as_ref(), "cap", t[4]).await,
        TicketState::Admitted { .. }
    ));
    assert_eq!(
        position(s.as_ref(), "cap", t[5]).await,
        TicketState::Waiting { position: 1 }
    );
    // No cap: the rate again.
    s.configure(&sh, cap(0)).await.unwrap();
    next_second().await;
    assert!(matches!(
        s.admit(&sh, 1).await.unwrap(),
        AdmitOutcome::Admitted { count: 5, .. }
    ));
}
