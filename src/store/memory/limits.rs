//! Join limits in the embedded store: the GCRA of `limit.lua`, per client.

use std::time::Duration;

use async_trait::async_trait;

use super::MemoryStore;
use crate::store::{JoinLimits, Result};

#[async_trait]
impl JoinLimits for MemoryStore {
    async fn limit_join(&self, client: &str, per_second: u32) -> Result<Option<Duration>> {
        let now = self.now_ms() as f64;
        let interval = 1000.0 / f64::from(per_second.max(1));
        let burst = f64::from(per_second.max(1).saturating_mul(2));
        let mut inner = self.lock();
        // Forget clients whose bucket is full again, so the map stays as small as the set of
        // clients joining right now.
        inner.join_tat.retain(|_, tat| *tat > now);
        let tat = inner.join_tat.get(client).copied().unwrap_or(now).max(now);
        let new_tat = tat + interval;
        let allowed_at = new_tat - interval * burst;
        if allowed_at > now {
            return Ok(Some(
                Duration::from_millis((allowed_at - now).ceil() as u64),
            ));
        }
        inner.join_tat.insert(client.to_owned(), new_tat);
        Ok(None)
    }
}
