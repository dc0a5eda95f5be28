//! The queue store: small traits, one per concern, and two backends that behave alike.
//!
//! [`RedisStore`] is the production store many instances share; [`MemoryStore`] runs one
//! instance with nothing to install: the same store over an in-process Redis ([`Embedded`]),
//! so both run the one Lua script of each rule. Each concern is a trait of its own, so a
//! reader and a test double need only the part they use; [`QueueStore`] is all of them at
//! once, and what the server holds (`Arc<dyn QueueStore>`):
//!
//! - [`Shows`] (`shows/`): what operators make, open, close and delete, and what they see;
//!   [`Throttling`], the rate in force while it follows a checkout.
//! - [`Queue`] (`queue/`): joins, a ticket's state, leaving, the gate's question, and the
//!   admission step; [`position()`].
//! - [`Feed`] (`feed/`): what a hub mirrors, a show's snapshot and every show's events.
//! - [`AdmitterLease`] (`lease/`): which instance admits, with a fencing token.
//! - [`Draws`] (`draw/`): scheduled openings, the pre-queue's draw, the audit of ticks.
//! - [`JoinLimits`] (`limits/`): joins a second per client, shared by every instance.
//! - [`OrderBook`] (`orders/`): orders placed through the gate.
//! - [`SharedKeys`] (`keys/`): the pass key instances share when none is configured.
//! - [`Presence`] (`presence/`): fans following each show live, on every instance together.
//! - [`Lineage`] (`lineage/`): a show's arrival counter, mended after a failover lost writes.
//! - [`Codes`] (`codes/`): a show's access codes, kept hashed, each for a lane.
//! - [`Pages`] (`pages/`): a show's own waiting page, its words and its files.
//! - [`Samples`] (`samples/`): one sample a tick of each show, which the report draws.
//! - [`Health`]: whether the store answers.
//!
//! Each concern is one folder: its `mod.rs` (the trait and its types), its scripts (`*.lua`),
//! `calls.rs` (how the store calls them, each with a typed struct of its own arguments) and
//! the types of what they answer (`reply.rs`, or in `calls.rs` where there are one or two).
//! There is one implementation of each, on [`RedisStore`], which both stores are. What every
//! concern shares is the engine in `redis/`: the connection (one Redis, a Cluster, Sentinel),
//! the one way a per-show script is run, the library of functions and `prelude.lua`, gathered
//! calls, confirmed writes, sharded pub/sub, and the decoding every reply shares. The
//! in-process Redis the embedded store runs on lives in `embedded/` (the commands the store
//! and its scripts send, and Lua 5.1 as Redis runs it). The conformance suite
//! (`tests/api/store/`) runs on both, and on a Redis Cluster.
//!
//! The model is the original's: per show a sorted set scored by an arrival counter, admission
//! marks with a TTL, a set of open shows. On top of it each show keeps a little more, so that
//! the hub can work out every fan's position without asking:
//!
//! - `head`: the highest sequence ever admitted. Every ticket at or below it has left the queue.
//! - `left`: the sequences above `head` that left the queue early (`DELETE` on a ticket).
//! - `version`: bumped by every change that moves positions or ETAs, and published with it.
//!
//! A waiting ticket with sequence `s` then stands at `s - head - |left ∩ (head, s)|`, which is
//! exactly its rank + 1 in the sorted set ([`position()`], the one place that says so).
//!
//! Shows exist because an operator made them ([`Shows::configure`] or [`Shows::open`]); every
//! call a fan can cause about any other show is [`StoreError::NoSuchShow`] and writes nothing.
//! Each show carries an `epoch`, drawn anew whenever its state is (re)created: admissions,
//! snapshots and events carry it, so state of one incarnation is never taken for another's. A
//! show whose state the store lost (Redis restarted empty) is marked lost by the first
//! instance that notices ([`Shows::check_show`]); it refuses everything with
//! [`StoreError::ShowLost`] until an operator opens it again.

mod codes;
mod draw;
mod embedded;
mod feed;
mod keys;
mod lease;
mod limits;
mod lineage;
mod orders;
mod pages;
mod presence;
mod queue;
mod redis;
mod samples;
mod shows;

use std::time::Duration;

use async_trait::async_trait;

use crate::model::ShowId;

pub use self::codes::{Codes, CodesAdded, LaneCodes, MAX_CODES_A_CALL, MAX_CODES_A_SHOW, NewCode};
pub use self::draw::{
    AUDIT_MAX_RECORDS, AuditKind, AuditRecord, Closing, DrawPhase, DrawState, Drawn, Draws,
    RecordId, parse_ranges, ranges_text, to_ranges,
};
pub use self::embedded::Embedded;
pub use self::feed::{EventKind, Feed, PaceFigures, ShowEvent, ShowSnapshot};
pub use self::keys::{KeySchedule, SharedKeys};
pub use self::lease::AdmitterLease;
pub use self::limits::JoinLimits;
pub use self::lineage::{Arrivals, Lineage, Mended};
pub use self::orders::{OrderBook, OrderOutcome, Redeemed, order_fingerprint};
pub use self::pages::{Pages, StoredPage};
pub use self::presence::{Attendance, Presence};
pub use self::queue::position;
pub use self::queue::{
    AdmitOutcome, BypassAsked, Bypassed, DueCall, DueCalls, Joined, Queue, Status, Touched,
};
pub use self::redis::{
    Durability, GATHER_WINDOW, PubSub, RedisStore, SentinelConnection, SentinelSettings,
};
pub use self::samples::{SAMPLES_MAX, Sample, Samples};
pub use self::shows::{
    Configured, Indexed, ShowMeta, Shows, ThrottleControl, Throttling, not_running,
};
pub use crate::model::{AnnouncedRate, MAX_RATE, MIN_ARRIVAL_WINDOW, Schedule, ShowSettings};

/// The embedded store: [`RedisStore`] over an in-process Redis ([`Embedded`]), made with
/// `MemoryStore::new(settings)`. One instance, nothing to install; not durable.
pub type MemoryStore = RedisStore<Embedded>;

/// The whole store: every concern at once. Nothing to implement: any type with all the parts
/// is one. Callers hold `Arc<dyn QueueStore>` and call any part's methods on it.
pub trait QueueStore:
    Shows
    + Throttling
    + Queue
    + Feed
    + Draws
    + AdmitterLease
    + JoinLimits
    + OrderBook
    + SharedKeys
    + Presence
    + Health
    + Lineage
    + Codes
    + Pages
    + Samples
    + 'static
{
}

impl<T> QueueStore for T where
    T: Shows
        + Throttling
        + Queue
        + Feed
        + Draws
        + AdmitterLease
        + JoinLimits
        + OrderBook
        + SharedKeys
        + Presence
        + Health
        + Lineage
        + Codes
        + Pages
        + Samples
        + 'static
{
}

/// Whether the store answers.
#[async_trait]
pub trait Health: Send + Sync {
    /// Whether the store answers (readiness).
    async fn ping(&self) -> Result<()>;
    /// The tasks the store runs for itself; they end once the store is dropped, and a
    /// server's stop waits for them.
    fn tasks(&self) -> tokio_util::task::TaskTracker;
}

/// What can go wrong talking to a store.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis refused the call or could not be reached.
    #[error("redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    /// The store's answer could not be read (a script and the server out of step).
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
    /// The on-sale ended: nobody joins any more.
    #[error("the on-sale of {0} has ended")]
    Ended(ShowId),
    /// The call does not fit the show's state (a schedule change after its draw, say).
    #[error("{0}")]
    Conflict(String),
    /// The show asks a proof of work of `0` bits and the join brought none.
    #[error("this show asks a proof of work of {0} bits and the join brought none")]
    ProofRequired(u32),
    /// The proof has fewer zero bits than the show asks.
    #[error(
        "the proof of work is too weak: SHA-256 of challenge:nonce must start with {0} zero bits"
    )]
    ProofTooWeak(u32),
    /// The challenge was spent on a join already.
    #[error("that join challenge was used already; ask for a new one")]
    ProofSpent,
    /// The join's access code let nobody in (unknown, used up, its lane closed), or the show
    /// takes fans with a code only: why.
    #[error("{0}")]
    CodeRefused(&'static str),
    /// `REDIS_WAIT_REPLICAS`: fewer replicas than asked confirmed the write in time. It may
    /// or may not survive a failover; the client retries (an `Idempotency-Key` keeps one
    /// place).
    #[error("the write was confirmed by {acked} of the {wanted} replicas asked in time")]
    NotReplicated {
        /// Replicas that confirmed in time.
        acked: u32,
        /// Replicas asked for (`REDIS_WAIT_REPLICAS`).
        wanted: u32,
    },
    /// A rule of the show refused the call for now (`unavailable()` in `prelude.lua`): why,
    /// in words a client may read, and when to try again.
    #[error("{why}")]
    NotNow {
        /// Why, as the rule says it.
        why: String,
        /// When to try again.
        retry_after: Duration,
    },
}

impl StoreError {
    /// Whether the store could not be asked at all (unreachable, timed out, failing over,
    /// loading its data): then nothing is known of what it holds. Any other error is an
    /// answer (a show lost, unknown, ended; a reply out of step) and must be taken as one.
    pub fn unreachable(&self) -> bool {
        use ::redis::{ErrorKind, RetryMethod, ServerErrorKind};
        let StoreError::Redis(e) = self else {
            return false;
        };
        e.is_io_error()
            || e.is_timeout()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || matches!(
                e.kind(),
                ErrorKind::Server(
                    ServerErrorKind::ReadOnly
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::BusyLoading
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                )
            )
            || matches!(
                e.retry_method(),
                RetryMethod::Reconnect | RetryMethod::ReconnectFromInitialConnections
            )
    }
}

/// Result alias for store calls.
pub type Result<T> = std::result::Result<T, StoreError>;

/// How long a deleted show's tombstone keeps other instances from taking its vanished state
/// for a loss.
pub const TOMBSTONE_TTL: Duration = Duration::from_secs(24 * 3600);

/// A new epoch: random, from 1 to below 10^13, so that Lua numbers and its JSON encoder (14
/// significant digits) hold it exactly.
pub fn new_epoch() -> u64 {
    rand::random_range(1..10_000_000_000_000)
}

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

pub(crate) use crate::clock::wall_ms;
