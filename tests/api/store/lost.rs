//! A place a failover lost, as the store's one status read says it.

use std::time::Duration;

use waiting_room::model::TicketState;

use super::{open_with_fans, position};
use crate::support::backend::{Backend, settings, store};

all_stores!(a_ticket_a_mend_marked_lost_is_lost_to_the_status_read_alone);

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
