//! What one connection sees: the state updates of one ticket, as a stream that ends when the
//! ticket's journey does.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::FanGuard;
use crate::model::ShowId;
use crate::protocol::EventName;
use crate::shown::Shown;
use crate::store::{Queue, StoreError, Touched};

/// How often a live stream of an admitted ticket says its fan is still there: well inside the
/// shortest arrival window ([`crate::store::MIN_ARRIVAL_WINDOW`]).
pub(super) const TOUCH_EVERY: Duration = Duration::from_secs(4);

pub(super) struct Follow {
    /// Where to say the fan is still there while its admission runs.
    pub(super) store: Arc<dyn Queue>,
    pub(super) show: ShowId,
    pub(super) current: Shown,
    pub(super) rx: Option<watch::Receiver<Shown>>,
    pub(super) _guard: Option<FanGuard>,
    pub(super) first: bool,
}

pub(super) async fn next_update(mut f: Follow) -> Option<(Shown, Follow)> {
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
            f.current = Shown::expired(f.current.view.ticket_id, f.current.version);
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
