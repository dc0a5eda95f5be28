//! Presence: how many fans follow each show live, on every instance together, and which
//! waiting fans are here (docs/presence.md).
//!
//! Each instance's hub knows only its own connections. Once a second every instance reports
//! its counts (one write, however many fans it holds), kept a few seconds unless reported
//! again, so an instance that died drops out by itself; the console reads the sum. In the
//! same beat it reports, per show, the tickets whose first live stream here opened, whose
//! last one closed, and those polled here ([`Attendance`]): one call per show a second, never
//! one per fan.

mod calls;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;

use uuid::Uuid;

use super::Result;
use crate::model::ShowId;

/// One instance's news of one show's waiting fans since its last report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attendance {
    /// Tickets this instance now holds a first live stream of.
    pub came: Vec<Uuid>,
    /// Tickets whose last live stream on this instance ended.
    pub went: Vec<Uuid>,
    /// Tickets polled on this instance.
    pub polled: Vec<Uuid>,
    /// Whether this instance holds any live stream of the show: its report must be renewed.
    pub streaming: bool,
}

impl Attendance {
    /// Whether there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.came.is_empty() && self.went.is_empty() && self.polled.is_empty() && !self.streaming
    }
}

/// Fans following shows live, counted where every instance sees it.
#[async_trait]
pub trait Presence: Send + Sync {
    /// This instance's counts of fans following each show live (shows without any may be
    /// left out), replacing its previous report; kept for `ttl` unless reported again.
    async fn report_fans(
        &self,
        instance: &str,
        fans: &[(ShowId, u64)],
        ttl: Duration,
    ) -> Result<()>;
    /// Every instance's latest report that has not run out, summed per show.
    async fn fans_everywhere(&self) -> Result<HashMap<ShowId, u64>>;
    /// Reports this instance's `news` of `show`'s fans, its streams held for `ttl` unless
    /// reported again; answers how many parked fans came back.
    async fn attend(
        &self,
        show: &ShowId,
        instance: &str,
        news: Attendance,
        ttl: Duration,
    ) -> Result<u64>;
}
