//! A place a failover lost, as the store's one status read says it.

use std::time::Duration;

use waiting_room::model::TicketState;
use waiting_room::store::OrderOutcome;

use super::{open_with_fans, order, position};
use crate::support::backend::{Backend, settings, store};

all_stores!(
    a_ticket_a_mend_marked_lost_is_lost_to_the_status_read_alone,
    an_admission_ordered_or_redeemed_is_never_marked_lost,
);

/// What a failover that lost writes leaves, made through the store: tickets gone from the
/// queue, then a mend naming them. The status read says `Lost` for those the mend marked (one
/// script, in the show's slot on a cluster); a ticket gone but not named stays `Unknown`, a
/// kept one waits. The embedded store never loses an answered write: it marks nothing.
async fn a_ticket_a_mend_marked_lost_is_lost_to_the_status_read_alone(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (sh, tickets) = open_with_fans(s.as_ref(), "lost", 3).await;
    let epoch = s.status(&sh, tickets[0]).await.unwrap().epoch;
    for t in &tickets[1..] {
        assert!(s.leave(&sh, *t).await.unwrap());
    }
    let mended = s.mend(&sh, epoch, 3, &tickets[..2]).await.unwrap();
    let (lost, named_lost) = if matches!(backend, Backend::Memory) {
        (TicketState::Unknown, vec![])
    } else {
        (TicketState::Lost, vec![tickets[1]])
    };
    assert_eq!(
        mended.lost, named_lost,
        "only a named ticket no longer live"
    );
    assert_eq!(
        position(s.as_ref(), "lost", tickets[0]).await,
        TicketState::Waiting {
            position: 1,
            arrival: 1
        }
    );
    assert_eq!(position(s.as_ref(), "lost", tickets[1]).await, lost);
    assert_eq!(
        position(s.as_ref(), "lost", tickets[2]).await,
        TicketState::Unknown,
        "not named by the mend: gone, not lost"
    );
    // Another show does not hold it.
    s.open(&crate::support::show("other")).await.unwrap();
    assert_eq!(
        position(s.as_ref(), "other", tickets[1]).await,
        TicketState::Unknown
    );
}

/// After a failover an instance names every ticket it handed out lately; one whose admission
/// was spent on purpose (an order, a redemption) left the queue and its admission too, but
/// was not lost: the mend must not mark it, or its buyer would be told to join again.
async fn an_admission_ordered_or_redeemed_is_never_marked_lost(backend: Backend) {
    let (s, _redis) = store(backend, settings(3, Duration::from_secs(60))).await;
    let (sh, tickets) = open_with_fans(s.as_ref(), "spent", 3).await;
    let epoch = s.status(&sh, tickets[0]).await.unwrap().epoch;
    s.admit(&sh, 1).await.unwrap();
    let placed = s
        .place_order(
            &order("spent", "hold-0100", "caio@example.com"),
            Some(tickets[0]),
        )
        .await
        .unwrap();
    assert!(matches!(placed, OrderOutcome::Created(_)), "{placed:?}");
    s.redeem(&sh, tickets[1]).await.unwrap();
    assert!(s.leave(&sh, tickets[2]).await.unwrap());
    let mended = s.mend(&sh, epoch, 3, &tickets).await.unwrap();
    let named_lost = if matches!(backend, Backend::Memory) {
        vec![]
    } else {
        vec![tickets[2]]
    };
    assert_eq!(mended.lost, named_lost, "the spent admissions are not lost");
    for spent in &tickets[..2] {
        assert_ne!(
            position(s.as_ref(), "spent", *spent).await,
            TicketState::Lost
        );
    }
}
