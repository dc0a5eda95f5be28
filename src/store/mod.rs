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
//!
//! Shows exist because an operator made them ([`QueueStore::configure`] or
//! [`QueueStore::open`]); every call a fan can cause about any other show is
//! [`StoreError::NoSuchShow`] and writes nothing. Each show carries an `epoch`, drawn anew
//! whenever its state is (re)created: admissions, snapshots and events carry it, so state of
//! one incarnation is never taken for another's. A show whose state the store lost (Redis
//! restarted empty) is marked lost by the first instance that notices
//! ([`QueueStore::check_show`]); it refuses everything with [`StoreError::ShowLost`] until an
//! operator opens it again.

mod memory;
mod redis;

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::model::{NewOrder, Order, Pace, Paused, ShowId, ShowStats, TicketState};

pub use self::memory::MemoryStore;
pub use self::redis::RedisStore;

/// What can go wrong talking to a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    #[error("store answered something unexpected: {0}")]
    Protocol(String),
    /// No operator created this show (or it was deleted).
    #[error("no on-sale named {0}")]
    NoSuchShow(ShowId),
    /// The store lost this show's state; nothing is served until an operator re-opens it.
    #[error(
        "the waiting room lost the queue of {0} (its store restarted empty); \
         nothing is admitted or sold until an operator re-opens it"
    )]
    ShowLost(ShowId),
}

/// The most a show may admit in one tick (one second). One tick is one Lua script that
/// blocks Redis while it runs: 10,000 admissions take about 15 ms there.
pub const MAX_RATE: u32 = 10_000;

/// The shortest arrival window (0 turns it off): a fan following live says it is there every
/// few seconds, and a window must hold several of those.
pub const MIN_ARRIVAL_WINDOW: Duration = Duration::from_secs(10);

/// How long a deleted show's tombstone keeps other instances from taking its vanished state
/// for a loss.
pub const TOMBSTONE_TTL: Duration = Duration::from_secs(24 * 3600);

/// A new epoch: random, from 1 to below 10^13, so that Lua numbers and its JSON encoder (14
/// significant digits) hold it exactly.
pub fn new_epoch() -> u64 {
    rand::random_range(1..10_000_000_000_000)
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
    /// With a cap: how long an admission may go untaken (no poll, no live stream, no order)
    /// before its place goes to the next fan, for a show without its own.
    pub arrival_window: Duration,
}

/// What an operator sets on a show; `None` keeps what it has (or the server's default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShowSettings {
    pub admit_per_second: Option<u32>,
    pub max_active_buyers: Option<u32>,
    pub arrival_window: Option<Duration>,
    /// Follow the checkout's health at this URL (`Some("")` stops following it).
    pub checkout_health_url: Option<String>,
    /// The lowest rate the pace may fall to while it follows the checkout.
    pub min_admit_per_second: Option<u32>,
}

/// What the admitter needs to let a show's pace follow its checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaceControl {
    /// Where the checkout says how it is; `None`: the pace is the configured rate.
    pub health_url: Option<String>,
    /// The lowest rate in force.
    pub floor: u32,
    /// The operator's rate, the most in force.
    pub configured: u32,
    /// The rate in force now.
    pub current: u32,
}

/// What the store knows of a show's existence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShowMeta {
    /// Changes whenever the show's state is created anew.
    pub epoch: u64,
    /// The on-sale is open: the admitter serves it and the gate is shut.
    pub open: bool,
    /// The store lost the show's state; it serves nothing until re-opened.
    pub lost: bool,
}

/// What [`QueueStore::configure`] and [`QueueStore::open`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Configured {
    /// The show did not exist before.
    pub created: bool,
    /// The show had been lost and now starts again from nothing (a new epoch).
    pub recovered: bool,
    pub epoch: u64,
}

/// What the store did with an order.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderOutcome {
    /// A new order.
    Created(Order),
    /// The very same request was placed before: its order.
    Repeated(Order),
    /// The hold was ordered with something else, or the admission already bought.
    Conflict(&'static str),
    /// The gate refused: the show is open and the ticket is not a valid admission of it.
    Forbidden,
}

/// A ticket's state plus what a stream needs to follow it from there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    pub state: TicketState,
    /// The show's epoch this answer belongs to.
    pub epoch: u64,
    /// The ticket's arrival sequence while it waits.
    pub seq: Option<u64>,
    /// How fast the show's queue moves, for the ETA.
    pub pace: Pace,
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
    /// Admitted `count` tickets (maybe 0); the tick was published at `version`, with the
    /// queue's `head` after it.
    Admitted { count: u64, head: u64, version: u64 },
    /// This show already had its admission in the current second of the store's clock
    /// (another admitter was first, or our clock runs ahead); that second ends in `next_in`.
    AlreadyThisSecond { next_in: Duration },
    /// The fencing token is older than `fence`, the newest this show has seen: a newer
    /// leader exists, or the lease's counter fell behind.
    Fenced { fence: u64 },
    /// The show is not served: closed, deleted or lost since the list of open shows was read.
    NotServed,
}

/// Why a show's state moved; carried by every published [`ShowEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    Tick,
    Leave,
    Rate,
    /// The show's state was created anew (re-opened after a loss, or deleted): every
    /// position of the old epoch is void.
    Reset,
}

/// One message per change of a show, published to every instance's hub.
///
/// It carries the whole small state (head, pace), so a hub that holds the `left` set can
/// derive every position and ETA from it alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowEvent {
    pub show: ShowId,
    pub epoch: u64,
    pub version: u64,
    pub kind: EventKind,
    pub head: u64,
    /// The sequence that left, for [`EventKind::Leave`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<u64>,
    pub rate: u32,
    /// Places offered a second, smoothed, in thousandths (see [`Pace`]).
    pub flow_milli: u64,
    pub spread_milli: u64,
    pub open: bool,
    /// The last tick offered no place: every place behind the gate is taken.
    pub full: bool,
    /// Tickets admitted by this tick.
    #[serde(default)]
    pub admitted: u64,
    /// Admission lifetime of the tickets this tick admitted.
    pub ttl_ms: u64,
    /// The store's clock when it happened (ms since the epoch).
    pub at_ms: u64,
}

impl ShowEvent {
    /// The pace this event carries.
    pub fn pace(&self) -> Pace {
        pace_of(
            self.rate,
            self.flow_milli,
            self.spread_milli,
            self.open,
            self.full,
        )
    }
}

/// A [`Pace`] from the figures the stores keep.
pub fn pace_of(rate: u32, flow_milli: u64, spread_milli: u64, open: bool, full: bool) -> Pace {
    Pace {
        rate,
        flow_milli,
        spread_milli,
        paused: if !open {
            Some(Paused::Closed)
        } else if full {
            Some(Paused::Full)
        } else {
            None
        },
    }
}

/// Everything a hub needs to compute positions of a show, read atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowSnapshot {
    /// 0 when the show does not exist (deleted, or never made).
    pub epoch: u64,
    pub version: u64,
    pub head: u64,
    pub left: Vec<u64>,
    pub pace: Pace,
    pub ttl_ms: u64,
}

/// The queue store. Both backends pass the same conformance suite (`tests/api/store.rs`).
#[async_trait]
pub trait QueueStore: Send + Sync + 'static {
    /// Creates the show if nobody did yet, and applies `settings`; a new rate is published.
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured>;
    /// Creates the show if needed and opens its on-sale: the admitter serves it and the gate
    /// closes. A lost show starts again from nothing, under a new epoch.
    async fn open(&self, show: &ShowId) -> Result<Configured>;
    /// Ends the on-sale: no admissions, no gate.
    async fn close(&self, show: &ShowId) -> Result<()>;
    /// Removes the show and all its state; false if there was none.
    async fn delete(&self, show: &ShowId) -> Result<bool>;
    /// The show, if an operator made it (a lost show included).
    async fn show(&self, show: &ShowId) -> Result<Option<ShowMeta>>;
    /// Every show an operator made, open or not, in id order.
    async fn shows(&self) -> Result<Vec<ShowId>>;
    /// Every open show.
    async fn open_shows(&self) -> Result<Vec<ShowId>>;
    /// The watchdog's question about a show this instance knew at `known_epoch`: its state
    /// now. If the store has forgotten it without an operator deleting it, it is marked
    /// lost first (under a new epoch), so every instance refuses it alike.
    async fn check_show(&self, show: &ShowId, known_epoch: u64) -> Result<Option<ShowMeta>>;

    /// Takes the next sequence and enqueues a new ticket, atomically.
    async fn join(&self, show: &ShowId) -> Result<Joined>;
    /// Where a ticket stands now.
    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status>;
    /// Takes a ticket out: out of the queue if waiting, its admission back if admitted.
    /// False when the ticket is unknown.
    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;
    /// Whether the ticket holds a valid admission of the show's current epoch.
    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;
    /// A sign of life from an admitted fan following its ticket live: it keeps its admission
    /// past the arrival window. False when the ticket holds no admission.
    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;

    /// One admission step for one show: pops the show's rate of tickets and admits them,
    /// unless `fence` is stale or the show was already served this second.
    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome>;
    /// What an operator sees of a show.
    async fn stats(&self, show: &ShowId) -> Result<ShowStats>;
    /// Whether and how the show's pace follows its checkout.
    async fn pace_control(&self, show: &ShowId) -> Result<PaceControl>;
    /// Puts `rate` in force (the checkout struggles, or recovered); published when it
    /// changed. True when it changed.
    async fn set_pace(&self, show: &ShowId, rate: u32) -> Result<bool>;
    /// The state the hub derives positions from.
    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot>;
    /// The stream of every show's events. It ends when the connection behind it drops; the
    /// caller subscribes again and resynchronises from snapshots.
    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>>;

    /// Acquires or renews the admitter lease for `instance`; the fencing token while held.
    /// A token is always above `floor`: an admitter that met a show fenced at `floor` asks
    /// for a token past it, and gets one even while it holds the lease.
    async fn lease(&self, instance: &str, ttl: Duration, floor: u64) -> Result<Option<u64>>;
    /// Gives the lease up if `instance` holds it, so another takes over at once.
    async fn release_lease(&self, instance: &str) -> Result<()>;

    /// Counts a join by `client` against a limit of `per_second` (bursts of twice that),
    /// shared by every instance on the store. `Some(wait)` when the client must wait.
    async fn limit_join(&self, client: &str, per_second: u32) -> Result<Option<Duration>>;

    /// Places an order through the gate, in one step: while the show is open, `ticket` must
    /// be an admission of it that has not bought yet (it then stops counting as an active
    /// buyer). A hold belongs to its show; the same request again answers its order.
    async fn place_order(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome>;
    /// An order by id.
    async fn get_order(&self, id: Uuid) -> Result<Option<Order>>;

    /// Whether the store answers (readiness).
    async fn ping(&self) -> Result<()>;
}

/// What makes two order requests "the same request" for a hold: the admission that placed
/// it (when the show was gated), the email and the amount, normalised.
pub fn order_fingerprint(order: &NewOrder) -> String {
    format!("{}|{}", order.customer_email, order.amount.normalize())
}

/// Milliseconds since the Unix epoch by the wall clock.
pub(crate) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
