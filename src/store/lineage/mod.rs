//! What a failover that lost writes leaves behind, and how the store is mended.
//!
//! Replication is asynchronous: a replica promoted after its primary died may lack the last
//! writes, so a show's arrival counter can come back lower than the numbers instances already
//! handed out, and tickets fans were given are simply gone. The watchdog (`crate::loss_witness`)
//! notices it from what this instance saw; the store then raises the counter past every number
//! handed out (so none is handed out twice), marks the tickets it knew and lost (so their fans
//! are told, not answered a bare UNKNOWN: the store's status read answers
//! [`crate::model::TicketState::Lost`] for them), and writes the event in the show's audit.
//!
//! The embedded store never loses a write it answered: it keeps the defaults (nothing to
//! read, nothing to mend).

mod calls;

use async_trait::async_trait;
use uuid::Uuid;

use super::Result;
use crate::model::ShowId;

/// A show's arrival counter as the store holds it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrivals {
    /// The show's incarnation the counter belongs to.
    pub epoch: u64,
    /// The last arrival number handed out.
    pub counter: u64,
    /// How many times an instance mended the show under this epoch, and the lowest counter
    /// a mend found: the numbers above it may have been lost (another instance's tickets
    /// among them).
    pub mends: u64,
    /// The lowest counter a mend found (0: never mended).
    pub mended_from: u64,
}

/// What mending a show did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mended {
    /// The counter as found (0 when the show's epoch had moved on: nothing was done).
    pub found: u64,
    /// Whether the counter was raised (the first instance to notice raises it).
    pub raised: bool,
    /// The tickets named that are neither waiting nor admitted: marked lost.
    pub lost: Vec<Uuid>,
}

/// Reading and mending a show's arrivals after a failover that lost writes.
#[async_trait]
pub trait Lineage: Send + Sync {
    /// The show's epoch and arrival counter; `None` for a show the store does not hold, or a
    /// store that cannot lose an answered write.
    async fn arrivals(&self, _show: &ShowId) -> Result<Option<Arrivals>> {
        Ok(None)
    }

    /// Under `epoch` only: raises the arrival counter to `high` if it is lower, and marks
    /// every ticket of `tickets` that is neither waiting nor admitted as lost (its fan is told
    /// so). A raise is written in the audit (kind `lost`, `arrival` the counter raised to).
    async fn mend(
        &self,
        _show: &ShowId,
        _epoch: u64,
        _high: u64,
        _tickets: &[Uuid],
    ) -> Result<Mended> {
        Ok(Mended::default())
    }
}
