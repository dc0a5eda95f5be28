//! The admitter's lease in Redis: one key for the holder, a counter for fencing tokens, both
//! outside every show's slot.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;

use super::RedisStore;
use super::reply::{LeaseReply, ReleaseReply, decode_plain};
use crate::store::{AdmitterLease, Result};

const LEASE: &str = "wr:{admitter}:lease";
const FENCE_COUNTER: &str = "wr:{admitter}:fence";

static LEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../lua/lease.lua")));
static RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../lua/release.lua")));

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> AdmitterLease for RedisStore<C> {
    async fn lease(&self, instance: &str, ttl: Duration, fenced: u64) -> Result<Option<u64>> {
        let mut conn = self.conn.clone();
        let text: String = LEASE_SCRIPT
            .key(LEASE)
            .key(FENCE_COUNTER)
            .arg(instance)
            .arg(ttl.as_millis() as u64)
            .arg(fenced)
            .invoke_async(&mut conn)
            .await?;
        Ok(decode_plain::<LeaseReply>("lease", &text)?.token)
    }

    async fn release_lease(&self, instance: &str) -> Result<()> {
        let mut conn = self.conn.clone();
        let text: String = RELEASE_SCRIPT
            .key(LEASE)
            .arg(instance)
            .invoke_async(&mut conn)
            .await?;
        decode_plain::<ReleaseReply>("release", &text)?;
        Ok(())
    }
}
