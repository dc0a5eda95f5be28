//! Presence in the embedded store: one instance, so its own latest report is the sum.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;

use super::MemoryStore;
use crate::model::ShowId;
use crate::store::{Presence, Result};

/// One instance's report: its counts, kept until `until_ms` (the store's clock).
#[derive(Debug, Default)]
pub(super) struct Report {
    until_ms: u64,
    fans: Vec<(ShowId, u64)>,
}

#[async_trait]
impl Presence for MemoryStore {
    async fn report_fans(
        &self,
        instance: &str,
        fans: &[(ShowId, u64)],
        ttl: Duration,
    ) -> Result<()> {
        let until_ms = self.now_ms() + ttl.as_millis() as u64;
        self.lock().presence.insert(
            instance.to_owned(),
            Report {
                until_ms,
                fans: fans.to_vec(),
            },
        );
        Ok(())
    }

    async fn fans_everywhere(&self) -> Result<HashMap<ShowId, u64>> {
        let now = self.now_ms();
        let mut inner = self.lock();
        inner.presence.retain(|_, r| r.until_ms > now);
        let mut sum = HashMap::new();
        for (show, n) in inner.presence.values().flat_map(|r| &r.fans) {
            *sum.entry(show.clone()).or_default() += n;
        }
        Ok(sum)
    }
}
