//! The watchdog: notices, within a second, that the store forgot a show.
//!
//! Redis restarted without persistence, or a failover promoted a replica that never had the
//! data: the show's keys are simply gone, `wr:open` with them, and a store that trusted its
//! keys would now run with the gate off. Every instance remembers each show it has seen and
//! the epoch it had; once a second it asks the store about each of them. A show that vanished
//! without an operator deleting it (a delete leaves a tombstone) is marked lost in the store,
//! so that every instance, new ones included, refuses it alike: the gate and joins answer
//! 503, the admitter skips it, `/readyz` and the `show_lost` metric say so, and the console
//! shows it until an operator re-opens the show deliberately.
//!
//! The same pass asks whether a failover lost the show's last writes (a counter gone back:
//! `crate::loss_witness`), and mends the store when it did, telling the hub which of its fans'
//! places were lost.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::hub::Hub;
use crate::loss_witness::LossWitness;
use crate::metrics::{Metrics, StoreCaller};
use crate::model::ShowId;
use crate::store::{Indexed, QueueStore, ShowMeta, Shows};

/// How often every known show is checked.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What this instance knows of the shows, and which of them are lost. Cheap to clone.
#[derive(Clone)]
pub struct Watchdog {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Shows>,
    hub: Hub,
    metrics: Arc<Metrics>,
    /// Show → the epoch last seen, and whether it was lost.
    known: Mutex<BTreeMap<ShowId, (u64, bool)>>,
    /// What this instance saw of each show's arrivals, to notice writes a failover lost.
    witness: LossWitness,
}

impl Watchdog {
    pub fn new(store: Arc<dyn QueueStore>, hub: Hub, metrics: Arc<Metrics>) -> Self {
        Watchdog {
            inner: Arc::new(Inner {
                witness: LossWitness::new(store.clone(), metrics.clone()),
                store,
                hub,
                metrics,
                known: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, BTreeMap<ShowId, (u64, bool)>> {
        self.inner.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An operator made (`open` false) or opened `show` here: it is known at `epoch`, and
    /// whole.
    pub fn remember(&self, show: &ShowId, epoch: u64, open: bool) {
        self.known().insert(show.clone(), (epoch, false));
        // A show only made is not named in the metrics; its next check says what it is.
        if open {
            self.inner.metrics.set_lost(show, false, true);
        }
    }

    /// A join here handed out `ticket` with arrival number `arrival` under `epoch` (remembered for
    /// a while, to tell its fan if a failover loses it; a number handed out again wakes the
    /// check at once).
    pub fn joined(&self, show: &ShowId, epoch: u64, arrival: u64, ticket: uuid::Uuid) {
        let now = std::time::Instant::now();
        self.inner.witness.joined(show, epoch, arrival, ticket, now);
    }

    /// An operator deleted `show`.
    pub fn forget(&self, show: &ShowId) {
        self.inner.witness.forget(show);
        self.known().remove(show);
        self.inner.metrics.forget_lost(show);
    }

    /// Whether admissions of `show`'s incarnation `epoch` are void as far as this instance
    /// last learnt: the show was lost, or made anew under another epoch. Unknown shows and
    /// passes that name no epoch are not judged (false).
    pub fn voids(&self, show: &ShowId, epoch: Option<u64>) -> bool {
        let Some(epoch) = epoch else { return false };
        self.known()
            .get(show)
            .is_some_and(|&(known, lost)| lost || known != epoch)
    }

    /// The shows whose state the store lost, as of the last check.
    pub fn lost(&self) -> Vec<ShowId> {
        self.known()
            .iter()
            .filter(|(_, (_, lost))| *lost)
            .map(|(show, _)| show.clone())
            .collect()
    }

    /// One pass over every show the store lists or this instance knows. A store error ends
    /// the pass (the next one tries again); it never marks anything.
    pub async fn check(&self) -> crate::store::Result<()> {
        let listed: BTreeSet<ShowId> = self.inner.store.shows().await?.into_iter().collect();
        let open: BTreeSet<ShowId> = self.inner.store.open_shows().await?.into_iter().collect();
        let mut shows = listed.clone();
        shows.extend(self.known().keys().cloned());
        for show in shows {
            let known = self.known().get(&show).map(|&(epoch, _)| epoch);
            // A show the store still lists was made by an operator even if this instance
            // never saw it: its meta vanishing is a loss too (on a cluster the list and the
            // show live on different nodes).
            let asked = known.unwrap_or(if listed.contains(&show) { 1 } else { 0 });
            let indexed = Indexed {
                listed: listed.contains(&show),
                open: open.contains(&show),
            };
            let now = self.inner.store.check_show(&show, asked, indexed).await?;
            let whole = now.as_ref().is_some_and(|m| !m.lost);
            self.update(&show, known, now);
            if whole {
                let lost = self.inner.witness.check(&show).await?;
                // Their fans following here are told now, not when the queue reaches them.
                self.inner.hub.lost(&show, &lost);
            }
        }
        Ok(())
    }

    fn update(&self, show: &ShowId, known: Option<u64>, now: Option<ShowMeta>) {
        let Some(meta) = now else {
            // Deleted by an operator (possibly through another instance).
            self.forget(show);
            return;
        };
        if known.is_some_and(|epoch| epoch != meta.epoch) {
            if meta.lost {
                tracing::error!(%show, "the store lost this show's state; it is refused until an operator re-opens it");
            }
            // Every position this instance pushes for the show belongs to the old epoch.
            self.inner.hub.resync(show);
        }
        self.known().insert(show.clone(), (meta.epoch, meta.lost));
        self.inner.metrics.set_lost(show, meta.lost, meta.open);
    }

    /// Checks every [`CHECK_EVERY`] until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut every = tokio::time::interval(CHECK_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                // A join proved a counter went back: mend now, before more joins are handed
                // numbers lost tickets held.
                _ = self.inner.witness.woken() => {}
                _ = shutdown.cancelled() => return,
            }
            let checked = self.check().await;
            self.inner.metrics.set_store_up(checked.is_ok());
            if let Err(e) = checked {
                self.inner.metrics.store_error(StoreCaller::Watchdog);
                tracing::warn!(error = %e, "show check failed; trying again");
            }
        }
    }
}
