//! The admitter's lease: one instance admits at a time, and proves it with a fencing token
//! that every admission step checks.

mod calls;

use std::time::Duration;

use async_trait::async_trait;

use super::Result;

/// Who admits, shared by every instance on the store.
#[async_trait]
pub trait AdmitterLease: Send + Sync {
    /// Acquires or renews the admitter lease for `instance`; the fencing token while held.
    /// A token is always above `fenced`, the highest token the admitter found a show fenced
    /// with: it asks for one past it, and gets one even while it holds the lease.
    async fn lease(&self, instance: &str, ttl: Duration, fenced: u64) -> Result<Option<u64>>;
    /// Gives the lease up if `instance` holds it, so another takes over at once.
    async fn release_lease(&self, instance: &str) -> Result<()>;
}
