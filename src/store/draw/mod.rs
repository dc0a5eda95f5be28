//! The fair start: scheduled openings, the pre-queue's draw, and the audit of every tick.
//!
//! A show given an opening time (`opensAt`) takes fans into a pre-queue until then. At the
//! opening the admitter closes the pre-queue ([`Draws::close_pre_queue`]: its size is fixed,
//! later fans queue behind it), works out the draw key from the committed seed, the
//! participants digest and the beacon ([`crate::draw`]), and draws and opens the show in one
//! step ([`Draws::apply_draw`]). Both steps are fenced like admissions and idempotent, so a
//! leader killed between them leaves the next leader to finish the same draw: nobody is drawn
//! twice or lost.
//!
//! Nothing is reordered in the store: the queue stays scored by arrival, and the admission
//! step walks the drawn places `head + 1, head + 2, …` through the inverse permutation until
//! the pre-queue is through, then pops arrivals as before. Early leavers are kept by their
//! place in the queue (drawn place or arrival), so a position is still `key − head −
//! leavers between` ([`crate::store::position`]).

mod calls;
mod reply;

use async_trait::async_trait;

use super::{Result, StoreError};
use crate::draw::Permutation;
use crate::model::Schedule;
use crate::model::ShowId;
pub use crate::model::{AuditKind, AuditRecord, RecordId, parse_ranges, ranges_text, to_ranges};

/// The fair start's calls.
#[async_trait]
pub trait Draws: Send + Sync {
    /// Schedules the opening, names the beacon, or gives its value (each optional). The
    /// first schedule draws the secret seed and commits to it.
    async fn schedule(&self, show: &ShowId, schedule: Schedule) -> Result<()>;
    /// Scheduled shows not drawn yet whose opening time is at or before `now_ms`.
    async fn due(&self, now_ms: u64) -> Result<Vec<ShowId>>;
    /// Closes the pre-queue of a show whose opening time has come (fenced, idempotent).
    async fn close_pre_queue(&self, show: &ShowId, fence: u64) -> Result<Closing>;
    /// Draws the closed pre-queue under `key` and opens the show (fenced, once). False when
    /// it was drawn already.
    async fn apply_draw(&self, show: &ShowId, fence: u64, digest: &str, key: &str) -> Result<bool>;
    /// The show's draw as `GET …/draw` shows it; `None` when the show was never scheduled.
    async fn draw(&self, show: &ShowId) -> Result<Option<DrawState>>;
    /// Up to `limit` audit records after the record `after` (from the first when `None`).
    async fn audit(
        &self,
        show: &ShowId,
        after: Option<RecordId>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>>;
}

/// What closing the pre-queue found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Closing {
    /// A newer admitter served the show: this one must not.
    Fenced,
    /// Not due yet (by the store's clock), or the show was lost.
    NotDue,
    /// Not scheduled (any more): deleted, or created anew without a schedule.
    NotScheduled,
    /// Drawn already.
    Drawn,
    /// Closed with `participants` arrivals; the draw needs the beacon's value first.
    AwaitingBeacon {
        /// Arrivals in the closed pre-queue.
        participants: u64,
    },
    /// Closed: what the draw key is worked out from.
    Ready {
        /// Arrivals in the closed pre-queue, the permutation's length.
        participants: u64,
        /// The secret committed to when the show was scheduled, revealed now.
        seed: String,
        /// The public beacon's value named at scheduling time.
        beacon_value: String,
    },
}

/// A scheduled show's draw: the commitment from the start, the rest once drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrawState {
    /// When the show opens and its pre-queue is drawn (ms since the Unix epoch).
    pub opens_at_ms: u64,
    /// SHA-256 of the seed.
    pub commitment: String,
    /// The public beacon whose value, unknown at scheduling, goes into the draw's key.
    pub beacon: Option<String>,
    /// Set once the pre-queue closed: how many arrivals it holds.
    pub participants: Option<u64>,
    /// Set once drawn.
    pub drawn: Option<Drawn>,
}

impl DrawState {
    /// The draw as `GET …/{showId}/draw` shows it.
    pub fn view(self, show: &str) -> crate::model::DrawView {
        use crate::clock::rfc3339;
        use crate::model::DrawStage;
        let stage = match (&self.drawn, self.participants) {
            (Some(_), _) => DrawStage::Drawn,
            (None, Some(_)) => DrawStage::Closed,
            (None, None) => DrawStage::Scheduled,
        };
        let drawn = self.drawn;
        crate::model::DrawView {
            show_id: show.to_owned(),
            opens_at: rfc3339(self.opens_at_ms),
            state: stage,
            algorithm: crate::draw::ALGORITHM.to_owned(),
            commitment: self.commitment,
            beacon: self.beacon,
            participants: self.participants,
            participants_digest: drawn.as_ref().map(|x| x.participants_digest.clone()),
            seed: drawn.as_ref().map(|x| x.seed.clone()),
            beacon_value: drawn.as_ref().map(|x| x.beacon_value.clone()),
            draw_key: drawn.as_ref().map(|x| x.key.clone()),
            drawn_at: drawn.as_ref().map(|x| rfc3339(x.at_ms)),
        }
    }
}

/// What a draw reveals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drawn {
    /// The secret behind the commitment (hex), revealed by the draw.
    pub seed: String,
    /// SHA-256 over the pre-queue's arrivals as published (hex): who took part.
    pub participants_digest: String,
    /// The beacon's value the key was made with.
    pub beacon_value: String,
    /// The permutation's key, worked out from seed, digest and beacon value (hex).
    pub key: String,
    /// When the draw was made, by the store's clock (ms since the Unix epoch).
    pub at_ms: u64,
}

/// Where a show's draw stands, as a hub needs it to place fans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DrawPhase {
    /// Not scheduled: fans queue by arrival.
    #[default]
    None,
    /// The pre-queue takes fans until `opens_at_ms`: nobody has a place yet.
    PreQueue {
        /// When the pre-queue closes and is drawn (ms since the Unix epoch).
        opens_at_ms: u64,
    },
    /// The pre-queue closed with `participants` arrivals, not drawn yet: they have no place
    /// yet; later fans queue behind them by arrival.
    Closed {
        /// Arrivals in the closed pre-queue, who will be drawn.
        participants: u64,
    },
    /// Drawn: arrivals up to the permutation's length take their drawn place.
    Drawn(Permutation),
}

impl DrawPhase {
    /// Where `arrival` stands in the queue, or `None` while it waits for the draw.
    pub fn order_key(&self, arrival: u64) -> Option<u64> {
        match self {
            DrawPhase::None => Some(arrival),
            DrawPhase::PreQueue { .. } => None,
            DrawPhase::Closed { participants } => (arrival > *participants).then_some(arrival),
            DrawPhase::Drawn(p) => Some(crate::draw::order_key(arrival, Some(p))),
        }
    }

    /// Milliseconds from `now_ms` until the show opens (0 once due or closed).
    pub fn opens_in_ms(&self, now_ms: u64) -> u64 {
        match self {
            DrawPhase::PreQueue { opens_at_ms } => opens_at_ms.saturating_sub(now_ms),
            _ => 0,
        }
    }
}

/// Why a schedule was refused, as `schedule.lua` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Refused {
    /// The pre-queue closed: the opening cannot move.
    Closed,
    /// Open already.
    Open,
    /// Fans joined already, in arrival order.
    Joined,
    /// No opening scheduled.
    NotScheduled,
    /// A beacon named after the pre-queue closed.
    BeaconLate,
    /// A beacon value out of turn.
    BeaconValue,
}

impl Refused {
    /// The refusal as the operator reads it (a 409).
    pub(crate) fn error(self, show: &ShowId) -> StoreError {
        StoreError::Conflict(match self {
            Refused::Closed => format!("the pre-queue of {show} has closed; opensAt cannot move"),
            Refused::Open => format!("{show} is open already"),
            Refused::Joined => format!(
                "fans have joined {show} already, in arrival order; schedule a show before \
                 anyone joins"
            ),
            Refused::NotScheduled => format!("{show} has no opensAt; schedule its opening first"),
            Refused::BeaconLate => {
                format!("the pre-queue of {show} has closed; its beacon had to be named before")
            }
            Refused::BeaconValue => format!(
                "drawBeaconValue: {show}'s draw takes a beacon value only after its pre-queue \
                 closed and before the draw, and only for a beacon named in advance"
            ),
        })
    }
}

/// Why `open` refuses a scheduled show.
pub(crate) fn opens_by_itself(show: &ShowId) -> StoreError {
    StoreError::Conflict(format!(
        "{show} opens by itself at its opensAt, after its pre-queue is drawn; move opensAt to \
         open it sooner"
    ))
}

/// The most records a show's audit keeps (older ones are trimmed).
pub const AUDIT_MAX_RECORDS: u64 = 1_000_000;
