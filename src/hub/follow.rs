//! What one connection sees: the state updates of one ticket, as a stream that ends when the
//! ticket's journey does.

use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use super::FanGuard;
use std::sync::Arc;

use crate::model::{Pace, ShowId, TicketState, TicketStatus, TicketView};
pub use crate::protocol::EventName;
use crate::store::{QueueStore, StoreError, Touched};

/// How often a live stream of an admitted ticket says its fan is still there: well inside the
/// shortest arrival window ([`crate::store::MIN_ARRIVAL_WINDOW`]).
pub(super) const TOUCH_EVERY: Duration = Duration::from_secs(4);

/// One state pushed to one fan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub event: EventName,
    /// The same JSON the poll endpoint answers.
    pub view: TicketView,
    /// The show version this state holds at; SSE sends it as the event `id`.
    pub version: u64,
    /// When the admission runs out, to the millisecond (the JSON rounds to seconds, and
    /// `expired` must not come before the gate starts refusing).
    pub expires_at: Option<tokio::time::Instant>,
    /// The show's incarnation the state belongs to (an admission's pass names it).
    pub epoch: u64,
}

impl Update {
    pub(super) fn new(ticket: Uuid, state: TicketState, pace: &Pace, version: u64) -> Update {
        let view = state.view(ticket, pace);
        let event = match view.status {
            TicketStatus::Waiting => EventName::Waiting,
            TicketStatus::Admitted => EventName::Admitted,
            TicketStatus::Unknown => EventName::Unknown,
            TicketStatus::Closed => EventName::Closed,
            TicketStatus::Ended => EventName::Ended,
        };
        let expires_at = match state {
            TicketState::Admitted { expires_in_ms } => {
                Some(tokio::time::Instant::now() + Duration::from_millis(expires_in_ms))
            }
            _ => None,
        };
        Update {
            event,
            view,
            version,
            expires_at,
            epoch: 0,
        }
    }

    /// The update, of the show's incarnation `epoch`.
    pub(super) fn of_epoch(mut self, epoch: u64) -> Update {
        self.epoch = epoch;
        self
    }
}

pub(super) struct Follow {
    /// Where to say the fan is still there while its admission runs.
    pub(super) store: Arc<dyn QueueStore>,
    pub(super) show: ShowId,
    pub(super) current: Update,
    pub(super) rx: Option<watch::Receiver<Update>>,
    pub(super) _guard: Option<FanGuard>,
    pub(super) first: bool,
}

pub(super) async fn next_update(mut f: Follow) -> Option<(Update, Follow)> {
    if f.first {
        f.first = false;
        return Some((f.current.clone(), f));
    }
    match f.current.event {
        EventName::Unknown | EventName::Expired | EventName::Closed | EventName::Ended => None,
        EventName::Admitted => {
            // The admission runs out on its own; nothing is published for it. Until then a
            // live stream tells the store now and then that its fan is there to buy, so the
            // admission is not released as untaken after the arrival window.
            if let Some(at) = f.current.expires_at {
                let mut over = false;
                while !over && tokio::time::Instant::now() + TOUCH_EVERY < at {
                    tokio::time::sleep(TOUCH_EVERY).await;
                    let ticket = f.current.view.ticket_id;
                    match f.store.touch(&f.show, ticket).await {
                        // Released, given back, or the show is gone: the admission is over.
                        Ok(Touched::Over)
                        | Err(StoreError::NoSuchShow(_) | StoreError::ShowLost(_)) => {
                            over = true;
                        }
                        Ok(Touched::Kept) => {}
                        // No cap: nothing is ever released untaken; wait for the end.
                        Ok(Touched::NotNeeded) => break,
                        Err(e) => tracing::debug!(error = %e, "could not touch an admission"),
                    }
                }
                if !over {
                    tokio::time::sleep_until(at).await;
                }
            }
            f.current = Update {
                event: EventName::Expired,
                view: TicketState::Unknown.view(f.current.view.ticket_id, &Pace::default()),
                version: f.current.version,
                expires_at: None,
                epoch: f.current.epoch,
            };
            Some((f.current.clone(), f))
        }
        EventName::Waiting => {
            let rx = f.rx.as_mut()?;
            rx.changed().await.ok()?;
            f.current = rx.borrow_and_update().clone();
            if f.current.event != EventName::Waiting {
                // The hub lets go of finished fans; so do we.
                f.rx = None;
                f._guard = None;
            }
            Some((f.current.clone(), f))
        }
    }
}
