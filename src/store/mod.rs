//! The queue store: one trait, two backends that behave alike.
//!
//! [`RedisStore`] is the production store many instances share; [`MemoryStore`] runs one
//! instance with nothing to install. The model is the seed's: per show a sorted set scored by
//! an arrival counter, admission marks with a TTL, a set of open shows. On top of it each show
//! keeps a little more, so that the hub can work out every fan's position without asking:
//!
//! - `head`: the highest sequence ever admitted. Every ticket at or below it has left the queue.
//! - `left`: the sequences above `head` that left the queue early (`DELETE` on a ticket).
//! - `version`: bumped by every change that moves positions or ETAs, and published with it.
//!
//! A waiting ticket with sequence `s` then stands at `s - head - |left ∩ (head, s)|`, which is
//! exactly its rank + 1 in the sorted set.

mod memory;
mod redis;

use std::net::IpAddr;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{NewOrder, Order, ShowId, ShowStats, TicketState};

pub use self::memory::MemoryStore;
pub use self::redis::RedisStore;

/// What can go wrong talking to a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    #[error("store answered something unexpected: {0}")]
    Protocol(String),
}

/// Result alias for store calls.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Settings every backend needs to answer alike.
#[derive(Clone, Copy, Debug)]
pub struct StoreSettings {
    /// Admissions a second for a show that has no rate of its own.
    pub default_rate: u32,
    /// How long an admission lasts.
    pub admission_ttl: Duration,
    /// Most fans admitted and not yet done buying at once, for a show without a cap of its
    /// own; 0: no cap (admit the rate every second).
    pub max_active_buyers: u32,
}

/// A ticket's state plus what a stream needs to follow it from there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub state: TicketState,
    /// The ticket's arrival sequence while it waits.
    pub seq: Option<u64>,
    /// The show's admission rate, for the ETA.
    pub rate: u32,
    /// The show's version this answer was read at.
    pub version: u64,
}

/// A fresh ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Joined {
    pub ticket: Uuid,
    pub seq: u64,
    pub status: Status,
}

/// What one admission step did for one show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmitOutcome {
    /// Admitted `count` tickets (maybe 0); the event that was published, if anything moved.
    Admitted {
        count: u64,
        event: Option<ShowEvent>,
    },
    /// This show already had its admission in the current second (another admitter was first).
    AlreadyThisSecond,
    /// The fencing token is older than one this show has seen: a newer leader exists.
    Fenced,
}

/// Why a show's state moved; carried by every published [`ShowEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Tick,
    Leave,
    Rate,
}

/// One message per change of a show, published to every instance's hub.
///
/// It carries the whole small state (head, rate), so a hub that holds the `left` set can
/// derive every position from it alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowEvent {
    pub show: ShowId,
    pub version: u64,
    pub kind: EventKind,
    pub head: u64,
    /// The sequence that left, for [`EventKind::Leave`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<u64>,
    pub rate: u32,
    /// Tickets admitted by this tick.
    #[serde(default)]
    pub admitted: u64,
    /// Admission lifetime of the tickets this tick admitted.
    pub ttl_ms: u64,
    /// The store's clock when it happened (ms since the epoch).
    pub at_ms: u64,
}

/// Everything a hub needs to compute positions of a show, read atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowSnapshot {
    pub version: u64,
    pub head: u64,
    pub left: Vec<u64>,
    pub rate: u32,
    pub ttl_ms: u64,
}

/// The queue store. Both backends pass the same conformance suite (`tests/api/store.rs`).
#[async_trait]
pub trait QueueStore: Send + Sync + 'static {
    /// Marks the show's on-sale open: the admitter serves it and the gate closes.
    async fn open(&self, show: &ShowId) -> Result<()>;
    /// Ends the on-sale: no admissions, no gate.
    async fn close(&self, show: &ShowId) -> Result<()>;
    /// Whether the show's on-sale is open.
    async fn is_open(&self, show: &ShowId) -> Result<bool>;
    /// Every open show.
    async fn open_shows(&self) -> Result<Vec<ShowId>>;

    /// Takes the next sequence and enqueues a new ticket, atomically.
    async fn join(&self, show: &ShowId) -> Result<Joined>;
    /// Where a ticket stands now.
    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status>;
    /// Takes a ticket out: out of the queue if waiting, its admission back if admitted.
    /// False when the ticket is unknown.
    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;
    /// Whether the ticket holds a valid admission for the show (the gate's question).
    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;

    /// One admission step for one show: pops the show's rate of tickets and admits them,
    /// unless `fence` is stale or the show was already served this second.
    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome>;
    /// Sets a show's own admission rate; takes effect at the next tick and is published.
    async fn set_rate(&self, show: &ShowId, rate: u32) -> Result<()>;
    /// Sets a show's own cap on active buyers (0: no cap); takes effect at the next tick.
    async fn set_max_active_buyers(&self, show: &ShowId, cap: u32) -> Result<()>;
    /// The fan holding `ticket` placed an order: it stops counting as an active buyer, so the
    /// next tick may admit someone in its place. The admission itself stays valid.
    async fn bought(&self, show: &ShowId, ticket: Uuid) -> Result<()>;
    /// What an operator sees of a show.
    async fn stats(&self, show: &ShowId) -> Result<ShowStats>;
    /// The state the hub derives positions from.
    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot>;
    /// The stream of every show's events. It ends when the connection behind it drops; the
    /// caller subscribes again and resynchronises from snapshots.
    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>>;

    /// Acquires or renews the admitter lease for `instance`; the fencing token while held.
    async fn lease(&self, instance: &str, ttl: Duration) -> Result<Option<u64>>;
    /// Gives the lease up if `instance` holds it, so another takes over at once.
    async fn release_lease(&self, instance: &str) -> Result<()>;

    /// Counts a join by `client` against a limit of `per_second` (bursts of twice that),
    /// shared by every instance on the store. `Some(wait)` when the client must wait.
    async fn limit_join(&self, client: IpAddr, per_second: u32) -> Result<Option<Duration>>;

    /// Stores an order unless its hold was ordered already; `true` when newly created.
    async fn place_order(&self, order: &NewOrder) -> Result<(Order, bool)>;
    /// An order by id.
    async fn get_order(&self, id: Uuid) -> Result<Option<Order>>;

    /// Whether the store answers (readiness).
    async fn ping(&self) -> Result<()>;
}

/// Milliseconds since the Unix epoch by the wall clock.
pub(crate) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
