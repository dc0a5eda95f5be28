//! What one connection sees: the states of one ticket, as a stream that ends when the ticket's
//! journey does. The hub hands over state, never a rendered view: the HTTP face words it
//! (and signs an admission's pass) as it sends it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use uuid::Uuid;

use super::FanGuard;
use crate::model::{Pace, Sale, ShowId, TicketState, TicketStatus, TicketView};
use crate::store::{Queue, Status, StoreError, Touched};

/// How often a live stream of an admitted ticket says its fan is still there: well inside the
/// shortest arrival window ([`crate::store::MIN_ARRIVAL_WINDOW`]).
pub(super) const TOUCH_EVERY: Duration = Duration::from_secs(4);

/// One thing a stream of a ticket learns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "nearly every update is a status; boxing it would cost an allocation a push"
)]
pub enum Update {
    /// The ticket's status: as the store answered it, or as the hub worked it out from the
    /// show's events at the status's version.
    Now(Status),
    /// The admission ran out (or was released or given back): the stream's last, after which
    /// the ticket is unknown. `version` is the last status's.
    Expired {
        /// The version of the status this follows.
        version: u64,
    },
}

impl Update {
    /// The status word its fan is shown ([`TicketState::status`]; `expired` shows `UNKNOWN`).
    pub fn shown_as(&self) -> TicketStatus {
        match self {
            Update::Now(status) => status.state.status(&status.sale),
            Update::Expired { .. } => TicketStatus::Unknown,
        }
    }

    /// The ticket JSON of `ticket` it shows, but for an admission's pass, which only the
    /// edge signs.
    pub fn view(&self, ticket: Uuid) -> TicketView {
        match self {
            Update::Now(status) => status.state.view(ticket, &status.pace, &status.sale),
            Update::Expired { .. } => {
                TicketState::Unknown.view(ticket, &Pace::default(), &Sale::default())
            }
        }
    }

    /// The show version it holds at (SSE's event `id`).
    pub fn version(&self) -> u64 {
        match self {
            Update::Now(status) => status.version,
            Update::Expired { version } => *version,
        }
    }
}

pub(super) struct Follow {
    /// Where to say the fan is still there while its admission runs.
    pub(super) store: Arc<dyn Queue>,
    pub(super) show: ShowId,
    pub(super) ticket: Uuid,
    pub(super) current: Update,
    /// When `current` was learnt: an admission runs out counted from there.
    pub(super) since: Instant,
    pub(super) rx: Option<watch::Receiver<Status>>,
    pub(super) _guard: Option<FanGuard>,
    pub(super) first: bool,
}

pub(super) async fn next_update(mut f: Follow) -> Option<(Update, Follow)> {
    if f.first {
        f.first = false;
        return Some((f.current.clone(), f));
    }
    let Update::Now(status) = &f.current else {
        return None; // the admission ran out: nothing follows
    };
    let (state, version) = (status.state, status.version);
    match f.current.shown_as() {
        TicketStatus::Admitted => {
            // The admission runs out on its own; nothing is published for it. Until then a
            // live stream tells the store now and then that its fan is there to buy, so the
            // admission is not released as untaken after the arrival window.
            if let TicketState::Admitted { expires_in_ms } = state {
                let at = f.since + Duration::from_millis(expires_in_ms);
                let mut over = false;
                while !over && Instant::now() + TOUCH_EVERY < at {
                    tokio::time::sleep(TOUCH_EVERY).await;
                    match f.store.touch(&f.show, f.ticket).await {
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
            f.current = Update::Expired { version };
            Some((f.current.clone(), f))
        }
        TicketStatus::Waiting => {
            let rx = f.rx.as_mut()?;
            rx.changed().await.ok()?;
            f.current = Update::Now(rx.borrow_and_update().clone());
            f.since = Instant::now();
            if f.current.shown_as() != TicketStatus::Waiting {
                // The hub lets go of finished fans; so do we.
                f.rx = None;
                f._guard = None;
            }
            Some((f.current.clone(), f))
        }
        TicketStatus::Unknown
        | TicketStatus::Closed
        | TicketStatus::Ended
        | TicketStatus::Expired
        | TicketStatus::Lost => None,
    }
}
