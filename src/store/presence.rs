//! Presence: how many fans follow each show live, on every instance together.
//!
//! Each instance's hub knows only its own connections. Once a second every instance reports
//! its counts (one write, however many fans it holds), kept a few seconds unless reported
//! again, so an instance that died drops out by itself; the console reads the sum.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;

use super::Result;
use crate::model::ShowId;

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
}
