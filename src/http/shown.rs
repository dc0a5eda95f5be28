//! What a fan is shown of its ticket: the one place that turns a ticket's state (the store's
//! answer, or the hub's update of it) into the ticket JSON, the push event it goes out as
//! and, while admitted, the signed pass. The join answer, the poll, SSE and the WebSocket all
//! render what they send with [`Shown::of`] here at the edge, so a fan reads the same thing
//! whichever way it asks; the hub below hands over state and holds no keys.

use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use crate::clock::wall_ms;
use crate::hub::Update;
use crate::model::{Pace, Sale, ShowId, TicketState, TicketStatus, TicketView};
use crate::pass::Keyring;
use crate::protocol::EventName;
use crate::store::Status;

/// One state of one ticket, as its fan is shown it: answered to a poll, pushed on a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shown {
    /// The push event this state goes out as.
    pub event: EventName,
    /// The ticket JSON, the poll's answer; an admission's carries its signed pass.
    pub view: TicketView,
    /// The show version this state holds at; SSE sends it as the event `id`.
    pub version: u64,
    /// When the admission runs out, to the millisecond: the JSON rounds to seconds, and
    /// `expired` must not be pushed before the gate starts refusing.
    pub expires_at: Option<Instant>,
}

impl Shown {
    /// What `status`, the store's answer about `ticket` of `show`, shows its fan. An
    /// admission gets its pass here, signed with `passes`' signing key for the show's
    /// incarnation the answer belongs to, valid as long as the admission runs.
    pub(crate) fn of(passes: &Keyring, show: &ShowId, ticket: Uuid, status: &Status) -> Shown {
        let mut view = status.state.view(ticket, &status.pace, &status.sale);
        let expires_at = match status.state {
            TicketState::Admitted { expires_in_ms } => {
                let now_ms = wall_ms();
                let exp = (now_ms + expires_in_ms) / 1000;
                view.pass = Some(passes.sign_pass(show, ticket, status.epoch, exp, now_ms / 1000));
                Some(Instant::now() + Duration::from_millis(expires_in_ms))
            }
            _ => None,
        };
        Shown {
            event: event_of(view.status),
            view,
            version: status.version,
            expires_at,
        }
    }

    /// What a stream of `ticket` of `show` sends for `update`: [`Shown::of`] its status, or
    /// [`Shown::expired`].
    pub(crate) fn of_update(
        passes: &Keyring,
        show: &ShowId,
        ticket: Uuid,
        update: &Update,
    ) -> Shown {
        match update {
            Update::Now(status) => Shown::of(passes, show, ticket, status),
            Update::Expired { version } => Shown::expired(ticket, *version),
        }
    }

    /// The last state a stream of an admitted ticket pushes: the admission ran out (or was
    /// released or given back), and the ticket is unknown from now on.
    pub(crate) fn expired(ticket: Uuid, version: u64) -> Shown {
        Shown {
            event: EventName::Expired,
            view: TicketState::Unknown.view(ticket, &Pace::default(), &Sale::default()),
            version,
            expires_at: None,
        }
    }
}

/// The statuses the ticket JSON of `event` may hold: every status [`event_of`] sends as it,
/// and `UNKNOWN` for `expired` ([`Shown::expired`]). The document describes each event so.
pub(crate) fn statuses_of(event: EventName) -> Vec<TicketStatus> {
    let mut statuses: Vec<_> = TicketStatus::ALL
        .into_iter()
        .filter(|s| event_of(*s) == event)
        .collect();
    if event == EventName::Expired {
        statuses.push(TicketStatus::Unknown);
    }
    statuses
}

/// The push event a ticket status goes out as (`expired` is a stream's own, see
/// [`Shown::expired`]).
fn event_of(status: TicketStatus) -> EventName {
    match status {
        TicketStatus::Waiting => EventName::Waiting,
        TicketStatus::Admitted => EventName::Admitted,
        // SPEC's event names are fixed: a place a failover lost goes out as `unknown`, its
        // JSON saying `LOST` (and why).
        TicketStatus::Unknown | TicketStatus::Lost => EventName::Unknown,
        TicketStatus::Closed => EventName::Closed,
        TicketStatus::Ended => EventName::Ended,
        TicketStatus::Expired => EventName::Expired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Phase;

    fn status(state: TicketState, sale: Sale) -> Status {
        Status {
            state,
            epoch: 3,
            arrival: None,
            pace: Pace::at_rate(2),
            sale,
            version: 41,
        }
    }

    fn keys() -> Keyring {
        Keyring::generate()
    }

    #[test]
    fn every_status_goes_out_as_one_event_and_each_event_names_its_statuses() {
        for status in TicketStatus::ALL {
            assert!(
                statuses_of(event_of(status)).contains(&status),
                "{status:?}"
            );
        }
        assert_eq!(
            statuses_of(EventName::Expired),
            [TicketStatus::Expired, TicketStatus::Unknown]
        );
        assert_eq!(
            statuses_of(EventName::Unknown),
            [TicketStatus::Unknown, TicketStatus::Lost]
        );
    }

    #[test]
    fn an_admission_is_shown_with_a_pass_for_its_epoch_that_runs_out_with_it() {
        let keys = keys();
        let show: ShowId = "show-1".parse().unwrap();
        let ticket = Uuid::new_v4();
        let admitted = TicketState::Admitted {
            expires_in_ms: 90_000,
        };
        let shown = Shown::of(&keys, &show, ticket, &status(admitted, Sale::open()));
        assert_eq!(shown.event, EventName::Admitted);
        assert_eq!(shown.version, 41);
        assert_eq!(shown.view.expires_in_seconds, Some(90));
        let left = shown.expires_at.expect("an admission runs out") - Instant::now();
        assert!(left > Duration::from_secs(89) && left <= Duration::from_secs(90));
        let pass = shown.view.pass.expect("an admission carries its pass");
        let proven = keys.verify_pass(&pass, wall_ms() / 1000).unwrap();
        assert_eq!(
            (proven.show, proven.ticket, proven.epoch),
            (show, ticket, Some(3))
        );
        let exp = (wall_ms() + 90_000) / 1000;
        assert!(
            proven.expires_at.abs_diff(exp) <= 1,
            "{} vs {exp}",
            proven.expires_at
        );
    }

    #[test]
    fn a_waiting_fan_is_shown_no_pass_and_a_closed_queue_no_place() {
        let keys = keys();
        let show: ShowId = "show-1".parse().unwrap();
        let waiting = TicketState::Waiting {
            position: 5,
            arrival: 9,
        };
        let shown = Shown::of(&keys, &show, Uuid::nil(), &status(waiting, Sale::open()));
        assert_eq!(shown.event, EventName::Waiting);
        assert_eq!((shown.view.position, shown.view.pass), (Some(5), None));
        assert_eq!(shown.expires_at, None);
        let closed = Sale {
            phase: Phase::Closed,
            ..Sale::open()
        };
        let shown = Shown::of(&keys, &show, Uuid::nil(), &status(waiting, closed));
        assert_eq!(shown.event, EventName::Closed);
        assert_eq!(shown.view.position, None);
    }

    #[test]
    fn a_place_a_failover_lost_is_pushed_as_unknown_saying_lost() {
        let ticket = Uuid::new_v4();
        let show: ShowId = "show-1".parse().unwrap();
        let shown = Shown::of(
            &keys(),
            &show,
            ticket,
            &status(TicketState::Lost, Sale::open()),
        );
        assert_eq!(shown.event, EventName::Unknown);
        assert_eq!(shown.view.status, TicketStatus::Lost);
        assert_eq!(
            serde_json::to_value(&shown.view).unwrap(),
            serde_json::json!({
                "ticketId": ticket,
                "status": "LOST",
                "message": crate::model::LOST_MESSAGE,
            })
        );
        assert_eq!((shown.view.pass, shown.expires_at), (None, None));
        // Whatever the phase: the fan's place is gone either way, and it is told why.
        let ended = Sale {
            phase: crate::model::Phase::Ended,
            ..Sale::open()
        };
        let shown = Shown::of(&keys(), &show, ticket, &status(TicketState::Lost, ended));
        assert_eq!(
            (shown.event, shown.view.status),
            (EventName::Unknown, TicketStatus::Lost)
        );
    }

    #[test]
    fn an_expired_admission_is_shown_unknown() {
        let shown = Shown::expired(Uuid::nil(), 7);
        assert_eq!(shown.event, EventName::Expired);
        assert_eq!(shown.view.status, TicketStatus::Unknown);
        assert_eq!((shown.version, shown.view.pass), (7, None));
    }
}
