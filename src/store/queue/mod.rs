//! The queue: fans join it, ask where they stand, leave it; the admitter takes them from its
//! head; the gate asks whether a ticket was let in.

mod calls;
mod position;
mod reply;

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use super::Result;
use crate::model::{AccessCode, BypassKind, Pace, Sale, ShowId, TicketState};
use crate::pass::Proof;
use crate::pass::SignedLink;

pub use self::position::position;

/// A show's queue of tickets and its admissions.
#[async_trait]
pub trait Queue: Send + Sync {
    /// Takes the next sequence and enqueues a new ticket, atomically.
    async fn join(&self, show: &ShowId) -> Result<Joined>;
    /// A join under the client's `Idempotency-Key`: while the ticket it got lives (waiting or
    /// admitted, in this epoch), the same key answers that ticket (`true`), never a second
    /// place; otherwise a fresh ticket, kept under the key for a day.
    async fn join_once(&self, show: &ShowId, key: &str) -> Result<(Joined, bool)>;
    /// A join as the HTTP face makes it: under the client's `Idempotency-Key` if any (as
    /// [`Queue::join_once`]), and with the proof of work the show may ask for, judged and
    /// spent in the join's own step: `ProofRequired`, `ProofTooWeak`
    /// or `ProofSpent` ([`super::StoreError`]) when it does not do. A replayed key answers its ticket
    /// without spending a proof (it gives no new place).
    async fn join_proven(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
    ) -> Result<(Joined, bool)> {
        self.join_coded(show, key, proof, None).await
    }
    /// A join as [`Queue::join_proven`], with the access code its fan brought, if any
    /// (docs/lanes.md): a code known, with a use left, for a lane the show lists, joins that
    /// lane and spends a use; otherwise `CodeRefused` ([`super::StoreError`]), or the general
    /// queue when the fan asked to fall back. A show that takes codes only refuses a join
    /// without one.
    async fn join_coded(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
        code: Option<&AccessCode>,
    ) -> Result<(Joined, bool)>;
    /// Where a ticket stands now.
    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status>;
    /// A fan let through without queueing, by a bypass rule of the show (`asked.via`,
    /// matched by the caller): `ticket` admitted at once under a fresh arrival, while the
    /// on-sale is open, a seat is left (`Conflict` otherwise) and fewer than `asked.most`
    /// bypass admissions run (`NotNow`), and audited; or, under the same Idempotency-Key,
    /// the admission it made while that runs. A link goes through once.
    async fn bypass(&self, show: &ShowId, ticket: Uuid, asked: &BypassAsked) -> Result<Bypassed>;
    /// Takes a ticket out: out of the queue if waiting, its admission back if admitted.
    /// False when the ticket is unknown.
    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;
    /// Whether the ticket holds a valid admission of the show's current epoch.
    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool>;
    /// A sign of life from an admitted fan following its ticket live: it keeps its admission
    /// past the arrival window.
    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<Touched>;
    /// One admission step for one show: pops the show's rate of tickets and admits them,
    /// unless `fence` is stale or the show was already served this second.
    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome>;
    /// A waiting fan asks to be called when its turn is near, over `channel` (JSON text, as
    /// [`DueCall::channel`]); the newest channel a ticket asked for is kept. False when the
    /// ticket is not waiting.
    async fn ask_call(&self, show: &ShowId, ticket: Uuid, channel: String) -> Result<bool>;
}

/// A ticket's state plus what a stream needs to follow it from there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// Where the ticket stands.
    pub state: TicketState,
    /// The show's epoch this answer belongs to.
    pub epoch: u64,
    /// The ticket's arrival sequence while it waits.
    pub arrival: Option<u64>,
    /// How fast the show's queue moves, for the ETA.
    pub pace: Pace,
    /// Where the show's on-sale stands: its phase, the seats left.
    pub sale: Sale,
    /// The show's version this answer was read at.
    pub version: u64,
}

/// What a bypass asks of the store.
#[derive(Clone, Debug)]
pub struct BypassAsked {
    /// The kind of rule that let it through.
    pub via: BypassKind,
    /// The caller's `Idempotency-Key`, if any.
    pub idem_key: Option<String>,
    /// The signed link that let it through, if one did.
    pub link: Option<SignedLink>,
    /// The most bypass admissions the show may have running at once.
    pub most: u32,
}

/// What a bypass came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bypassed {
    /// Admitted: the ticket (a new one, or the one its key made, `replayed`) and its arrival.
    Admitted {
        /// The admitted ticket.
        ticket: Uuid,
        /// Its arrival number.
        arrival: u64,
        /// The same key's admission, still running.
        replayed: bool,
    },
    /// The link was used before, or signed before the show last took links on.
    LinkRefused(&'static str),
}

/// A fresh ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Joined {
    /// The ticket handed out (or the one an `Idempotency-Key` already held).
    pub ticket: Uuid,
    /// Its arrival sequence in the show's queue.
    pub arrival: u64,
    /// Where it stands right after the join.
    pub status: Status,
}

/// What a sign of life from an admitted fan did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touched {
    /// Noted: the admission is kept past the arrival window.
    Kept,
    /// The show has no cap (or no arrival window): admissions are never released untaken, so
    /// signs of life need not be sent (one call saved per admitted fan every few seconds).
    NotNeeded,
    /// The ticket holds no admission any more (released, given back, run out).
    Over,
}

/// The "your turn" calls one tick made due (`admit.lua`), each at most once a fan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DueCalls {
    /// The calls, in no particular order.
    pub calls: Vec<DueCall>,
    /// The show's `notifyUrl` when the tick made any due.
    pub notify_url: Option<String>,
    /// The show's `pushServices` when the tick made any due (`None`: the default).
    pub push_services: Option<Vec<String>>,
}

/// One call due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueCall {
    /// The fan's ticket.
    pub ticket: Uuid,
    /// `true`: it was let in; `false`: its turn is near (`soon`).
    pub admitted: bool,
    /// Its place (0 once admitted).
    pub position: u64,
    /// Its expected wait, for `soon`.
    pub eta_seconds: Option<u64>,
    /// How it asked to be called, as it asked (JSON text: a Web Push subscription, or
    /// `{"webhook":true}`).
    pub channel: String,
}

/// What one admission step did for one show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmitOutcome {
    /// Admitted `count` tickets (maybe 0); the tick was published at `version`, with the
    /// queue's `head` after it.
    Admitted {
        /// Fans let in by this tick.
        count: u64,
        /// The highest arrival sequence admitted after it.
        head: u64,
        /// The show's version the tick was published at.
        version: u64,
        /// The "your turn" calls this tick made due, for the admitter to send.
        calls: DueCalls,
    },
    /// This show already had its admission in the current second of the store's clock
    /// (another admitter was first, or our clock runs ahead); that second ends in `next_in`.
    AlreadyThisSecond {
        /// How long until the store's next second begins.
        next_in: Duration,
    },
    /// The fencing token is older than `fence`, the newest this show has seen: a newer
    /// leader exists, or the lease's counter fell behind.
    Fenced {
        /// The newest fencing token the show has seen.
        fence: u64,
    },
    /// The show is not served: closed, deleted or lost since the list of open shows was read.
    NotServed,
}
