//! Join limits: how often one client may join, counted where every instance sees it.

mod calls;

use std::time::Duration;

use async_trait::async_trait;

use super::Result;

/// A rate limit on joins per client (GCRA), shared by every instance on the store.
#[async_trait]
pub trait JoinLimits: Send + Sync {
    /// Counts a join by `client` against a limit of `per_second` (bursts of twice that),
    /// shared by every instance on the store. `Some(wait)` when the client must wait.
    async fn limit_join(&self, client: &str, per_second: u32) -> Result<Option<Duration>>;
}
