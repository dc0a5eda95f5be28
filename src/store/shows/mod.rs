//! Shows: what operators make, open, close and delete, and what they see of them; and the
//! pace, the rate in force while a show follows its checkout.

mod calls;
mod reply;

use async_trait::async_trait;

use super::{Result, StoreError};
use crate::model::{EndReason, Phase, ShowId, ShowSettings, ShowStats};

/// A show's life as operators and the watchdog see it.
#[async_trait]
pub trait Shows: Send + Sync {
    /// Creates the show if nobody did yet, and applies `settings`; a new rate is published.
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured>;
    /// Creates the show if needed and opens its on-sale: the admitter serves it and the gate
    /// closes. A lost show starts again from nothing, under a new epoch.
    async fn open(&self, show: &ShowId) -> Result<Configured>;
    /// Lifts the gate (the original's close): no admissions, orders need no admission, fans still
    /// queued are told the waiting room stepped aside (their places kept for a re-open).
    async fn close(&self, show: &ShowId) -> Result<()>;
    /// Pauses an on-sale that runs: no admissions, the gate stays shut, every place is
    /// kept; [`Shows::open`] resumes. [`StoreError::Conflict`] before it opened or once ended.
    async fn pause(&self, show: &ShowId) -> Result<()>;
    /// Ends the on-sale (`reason`: why): no admissions, joins refused
    /// ([`StoreError::Ended`]), the gate stays shut; admissions running may still buy.
    async fn end(&self, show: &ShowId, reason: Option<EndReason>) -> Result<()>;
    /// Removes the show and all its state; false if there was none.
    async fn delete(&self, show: &ShowId) -> Result<bool>;
    /// The shows whose schedule of events changes something by `now_ms`.
    async fn events_due(&self, now_ms: u64) -> Result<Vec<ShowId>>;
    /// Applies `show`'s due changes of its schedule under the admitter's `fence` (the phase an
    /// event starts included), and lists it again for its next change; `None` when the
    /// fence is older than the show's (another leader served it).
    async fn apply_due_events(&self, show: &ShowId, fence: u64) -> Result<Option<bool>>;
    /// The show, if an operator made it (a lost show included).
    async fn show(&self, show: &ShowId) -> Result<Option<ShowMeta>>;
    /// Every show an operator made, open or not, in id order.
    async fn shows(&self) -> Result<Vec<ShowId>>;
    /// Every open show.
    async fn open_shows(&self) -> Result<Vec<ShowId>>;
    /// The watchdog's question about a show this instance knew at `known_epoch`: its state
    /// now. If the store has forgotten it without an operator deleting it, it is marked
    /// lost first (under a new epoch), so every instance refuses it alike. `indexed` says
    /// where the lists of shows (read once a pass) have it; a list that disagrees with the
    /// show is mended (on a cluster they live on other nodes, and may lose it alone).
    async fn check_show(
        &self,
        show: &ShowId,
        known_epoch: u64,
        indexed: Indexed,
    ) -> Result<Option<ShowMeta>>;
    /// What an operator sees of a show.
    async fn stats(&self, show: &ShowId) -> Result<ShowStats>;
    /// The leading zero bits a join's proof of work must have now (0: none asked); one
    /// store call, what minting a challenge costs.
    async fn challenge_bits(&self, show: &ShowId) -> Result<u32>;
}

/// The rate in force of a show whose pace follows its checkout (see `crate::throttle`).
#[async_trait]
pub trait Throttling: Send + Sync {
    /// Whether and how the show's pace follows its checkout.
    async fn throttle_control(&self, show: &ShowId) -> Result<ThrottleControl>;
    /// Puts `rate`, measured at the health URL `url`, in force (the checkout struggles, or
    /// recovered); published when it changed. True when it changed. A show that no longer
    /// follows `url` (the operator cleared or changed it while the check ran) keeps its pace.
    async fn set_throttled(&self, show: &ShowId, rate: u32, url: &str) -> Result<bool>;
}

/// What the admitter needs to let a show's pace follow its checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleControl {
    /// Where the checkout says how it is; `None`: the pace is the configured rate.
    pub health_url: Option<String>,
    /// The lowest rate in force.
    pub lowest: u32,
    /// The operator's rate, the most in force.
    pub configured: u32,
    /// The rate in force now.
    pub current: u32,
}

/// What the store knows of a show's existence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowMeta {
    /// Changes whenever the show's state is created anew.
    pub epoch: u64,
    /// The on-sale is open: the admitter serves it and the gate is shut.
    pub open: bool,
    /// The store lost the show's state; it serves nothing until re-opened.
    pub lost: bool,
    /// The settings in force list lanes an access code joins (docs/lanes.md).
    pub lanes: bool,
    /// The version of the show's own waiting page, when it has one ([`crate::store::Pages`]).
    pub page: Option<String>,
}

/// What [`Shows::configure`] and [`Shows::open`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Configured {
    /// The show did not exist before.
    pub created: bool,
    /// The show had been lost and now starts again from nothing (a new epoch).
    pub recovered: bool,
    /// The show's incarnation now.
    pub epoch: u64,
}

/// Where the lists of shows have a show, as the watchdog read them this pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Indexed {
    /// In the list of every show made.
    pub listed: bool,
    /// In the list of open shows.
    pub open: bool,
}

/// Why a show in `phase` (`None`: a code the store should not answer) cannot pause.
pub fn not_running(show: &ShowId, phase: Option<Phase>) -> StoreError {
    StoreError::Conflict(match phase {
        Some(Phase::Ended) => format!("the on-sale of {show} has ended: nothing to pause"),
        _ => format!("the on-sale of {show} has not opened yet: nothing to pause"),
    })
}
