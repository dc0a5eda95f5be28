//! The admitter's lease in the embedded store: one holder, a fencing counter that only grows.

use std::time::Duration;

use async_trait::async_trait;

use super::MemoryStore;
use crate::store::{AdmitterLease, Result};

/// Who holds the lease, with which token, until when (ms).
pub(super) struct Lease {
    holder: String,
    token: u64,
    until_ms: u64,
}

#[async_trait]
impl AdmitterLease for MemoryStore {
    async fn lease(&self, instance: &str, ttl: Duration, fenced: u64) -> Result<Option<u64>> {
        let now = self.now_ms();
        let until_ms = now + ttl.as_millis() as u64;
        let mut inner = self.lock();
        match &mut inner.lease {
            Some(lease) if lease.until_ms > now && lease.holder != instance => Ok(None),
            Some(lease) if lease.until_ms > now && lease.token > fenced => {
                lease.until_ms = until_ms;
                Ok(Some(lease.token))
            }
            _ => {
                inner.fence_counter = inner.fence_counter.max(fenced) + 1;
                let token = inner.fence_counter;
                inner.lease = Some(Lease {
                    holder: instance.to_owned(),
                    token,
                    until_ms,
                });
                Ok(Some(token))
            }
        }
    }

    async fn release_lease(&self, instance: &str) -> Result<()> {
        let mut inner = self.lock();
        if inner.lease.as_ref().is_some_and(|l| l.holder == instance) {
            inner.lease = None;
        }
        Ok(())
    }
}
