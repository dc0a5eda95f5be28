//! The report's samples (docs/report.md): every admission tick of a show leaves one
//! (`sample` in `prelude.lua`, called by `admit.lua`), at most one a second, so the report can
//! draw the on-sale over time without a store call per fan: arrivals, the queue, admissions,
//! buyers behind the gate, fans away, and the pace every ETA was worked out from.

mod calls;

use async_trait::async_trait;

use super::{PaceFigures, Result};
use crate::model::{RecordId, ShowId};

/// The most samples a show keeps (older ones are trimmed): a day of ticks.
pub const SAMPLES_MAX: u64 = 86_400;

/// One tick's sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Its id in the show's samples (page on with `after`).
    pub id: RecordId,
    /// The store's clock at the tick (ms since the epoch).
    pub at_ms: u64,
    /// The show's incarnation.
    pub epoch: u64,
    /// The general queue's arrival counter: tickets handed out to it so far.
    pub arrivals: u64,
    /// Tickets handed out to the lanes so far, together.
    pub laned: u64,
    /// Tickets waiting after the tick, every lane's included.
    pub queued: u64,
    /// Fans the tick let in.
    pub admitted: u64,
    /// Admitted fans not yet done buying: the buyers behind the gate.
    pub active: u64,
    /// Queued fans away: no live stream or poll seen within the presence grace (the passed
    /// over not counted, they are no longer queued).
    pub away: u64,
    /// The highest arrival of the general queue let in so far (after the tick).
    pub head: u64,
    /// The pace and sale the tick published: what every ETA was worked out from.
    pub pace: PaceFigures,
}

/// The report's samples.
#[async_trait]
pub trait Samples: Send + Sync {
    /// Up to `limit` samples of `show` after the sample `after` (from the first when
    /// `None`), oldest first.
    async fn samples(
        &self,
        show: &ShowId,
        after: Option<RecordId>,
        limit: usize,
    ) -> Result<Vec<Sample>>;
}
