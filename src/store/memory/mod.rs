//! The embedded store: the Redis model in one process, for a single instance.
//!
//! Not durable: a restart forgets every queue, admission and order. Time runs on tokio's
//! clock, so tests can pause and advance it.
//!
//! One mutex guards everything ([`Inner`]); each show's state and the arithmetic the Lua
//! scripts do on it live in `show.rs`, and each concern of the store is implemented in a file
//! of its own: `shows.rs`, `queue.rs`, `feed.rs`, `lease.rs`, `limits.rs`, `orders.rs`.

mod draws;
mod feed;
mod lease;
mod limits;
mod orders;
mod presence;
mod queue;
mod show;
mod shows;

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::broadcast;
use tokio::time::Instant;
use uuid::Uuid;

use self::lease::Lease;
use self::show::Show;
use super::{Health, Result, ShowEvent, StoreError, StoreSettings, wall_ms};
use crate::model::{Order, ShowId};

/// The in-process store. Cheap to share behind an `Arc`.
pub struct MemoryStore {
    settings: StoreSettings,
    inner: Mutex<Inner>,
    events: broadcast::Sender<ShowEvent>,
    /// Wall clock at `start`, so `now_ms` is epoch-based yet follows tokio's (pausable) clock.
    epoch_ms: u64,
    start: Instant,
}

/// Everything the store holds, behind one lock.
#[derive(Default)]
struct Inner {
    shows: HashMap<ShowId, Show>,
    orders: HashMap<Uuid, Order>,
    lease: Option<Lease>,
    fence_counter: u64,
    /// Per client: the theoretical arrival time of its next join (GCRA, as in `limit.lua`).
    join_tat: HashMap<String, f64>,
    /// Per instance: its latest count of fans following each show (`presence.rs`).
    presence: HashMap<String, presence::Report>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new(settings: StoreSettings) -> Self {
        let (events, _) = broadcast::channel(4096);
        MemoryStore {
            settings,
            inner: Mutex::new(Inner::default()),
            events,
            epoch_ms: wall_ms(),
            start: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch_ms + self.start.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-written in a way that
        // matters more than stopping every request would, so carry on with the data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, event: ShowEvent) {
        // No subscriber is fine: nobody is listening yet.
        let _ = self.events.send(event);
    }
}

impl Inner {
    /// A show an operator made, or [`StoreError::NoSuchShow`].
    fn show(&mut self, show: &ShowId) -> Result<&mut Show> {
        self.shows
            .get_mut(show)
            .ok_or_else(|| StoreError::NoSuchShow(show.clone()))
    }
}

/// The embedded store loses no answered write: nothing to mend.
impl crate::store::Lineage for MemoryStore {}

#[async_trait]
impl Health for MemoryStore {
    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::store::SharedKeys for MemoryStore {
    /// One process, one instance: nothing to share.
    async fn pass_keys(
        &self,
        _ours: &str,
        _fresh: &str,
        _schedule: crate::store::KeySchedule,
    ) -> Result<Option<String>> {
        Ok(None)
    }
}
