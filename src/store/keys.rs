//! The admission pass key instances share when the operator configured none (`PASS_KEYS`
//! unset): created once in the store by whichever instance comes first, read by every other.

use async_trait::async_trait;

use super::Result;

/// Where instances on one store agree on a pass key.
#[async_trait]
pub trait SharedKeys: Send + Sync {
    /// Keeps `ours` (`kid:base64secret`) as the shared pass key unless one is kept already,
    /// and answers the one kept; `None` where nothing can be shared (the embedded store:
    /// one instance). Called again now and then, it puts the key back after the store
    /// forgot it (a restart without persistence), so instances started later agree.
    async fn share_pass_key(&self, ours: &str) -> Result<Option<String>>;
}
