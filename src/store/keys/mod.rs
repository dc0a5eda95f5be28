//! The admission pass keys instances share when the operator configured none (`PASS_KEYS`
//! unset): made in the store by whichever instance comes first, read by every other, rotated
//! on a schedule with the old keys kept while what they signed still lives.

mod calls;

use std::time::Duration;

use async_trait::async_trait;

use super::Result;

/// When shared keys rotate and how long a superseded one still verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySchedule {
    /// A new key is made once the newest is this old.
    pub rotate_every: Duration,
    /// A superseded key still verifies this long (the longest a pass or challenge lives).
    pub keep_for: Duration,
    /// A new key signs only once this old: every instance has read it, and every edge has
    /// fetched the JWKS that publishes it.
    pub settle: Duration,
    /// How often every instance reads the keys.
    pub read_every: Duration,
}

/// Where instances on one store agree on their pass keys.
#[async_trait]
pub trait SharedKeys: Send + Sync {
    /// The shared keys as `PASS_KEYS` spells them, the signing one first; `None` where
    /// nothing can be shared (the embedded store: one instance). `ours` (the key this
    /// instance signs with) is put back when the store holds none (it forgot them: a restart
    /// without persistence); `fresh` is added when the newest is due for rotation.
    async fn pass_keys(
        &self,
        ours: &str,
        fresh: &str,
        schedule: KeySchedule,
    ) -> Result<Option<String>>;
}
