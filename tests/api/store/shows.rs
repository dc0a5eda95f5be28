//! Shows: made, opened, closed, counted and deleted.

use std::time::Duration;

use futures::StreamExt;
use waiting_room::model::TicketState;
use waiting_room::store::{AdmitOutcome, EventKind, ShowSettings, StoreError};

use super::open_with_fans;
use crate::support::backend::{Backend, settings, store};
use crate::support::show;

all_stores!(
    open_and_close,
    a_deleted_show_is_gone_and_a_new_one_starts_afresh,
    stats_count_what_operators_see,
    a_check_of_a_health_url_no_longer_followed_changes_no_pace,
);

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
    s.listen(&sh).await.unwrap();
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
    assert_eq!(s.join(&sh).await.unwrap().arrival, 1);
}

async fn stats_count_what_operators_see(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (sh, _) = open_with_fans(s.as_ref(), "s1", 5).await;
    s.admit(&sh, 1).await.unwrap();
    let stats = s.stats(&sh).await.unwrap();
    assert!(stats.open);
    assert_eq!(stats.queue_length, 3);
    assert_eq!(stats.admitted_valid, 2);
    assert_eq!(stats.admit_per_second, 2);
    assert_eq!(stats.joined, 5);
}

/// A check of the checkout that was under way when the operator cleared or changed the show's
/// health URL changes no pace: the show no longer follows what it measured, and with the URL
/// cleared no later check would ever put the rate back.
async fn a_check_of_a_health_url_no_longer_followed_changes_no_pace(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let sh = show("pace");
    let url = "http://127.0.0.1:9/health";
    let follow = |url: &str| ShowSettings {
        checkout_health_url: Some(url.to_owned()),
        ..ShowSettings::default()
    };
    s.configure(
        &sh,
        ShowSettings {
            admit_per_second: Some(40),
            ..follow(url)
        },
    )
    .await
    .unwrap();
    s.open(&sh).await.unwrap();
    let control = s.throttle_control(&sh).await.unwrap();
    assert_eq!(
        (control.health_url.as_deref(), control.current),
        (Some(url), 40)
    );
    assert!(s.set_throttled(&sh, 20, url).await.unwrap());
    assert_eq!(s.throttle_control(&sh).await.unwrap().current, 20);
    // Changed while a check of the old URL ran: its answer is not the new checkout's.
    s.configure(&sh, follow("http://127.0.0.1:8/health"))
        .await
        .unwrap();
    assert!(!s.set_throttled(&sh, 10, url).await.unwrap());
    assert_eq!(s.throttle_control(&sh).await.unwrap().current, 20);
    // Cleared while it ran: the configured rate is in force, and stays.
    s.configure(&sh, follow("")).await.unwrap();
    assert!(!s.set_throttled(&sh, 10, url).await.unwrap());
    let control = s.throttle_control(&sh).await.unwrap();
    assert_eq!((control.health_url, control.current), (None, 40));
}
