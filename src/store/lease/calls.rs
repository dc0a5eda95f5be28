//! The admitter's lease as the store keeps it (on Redis and on the embedded store alike): one
//! key for the holder, a counter for fencing tokens, both outside every show's slot, changed
//! by `lease.lua` and `release.lua`.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;
use serde::Deserialize;

use super::AdmitterLease;
use crate::store::Result;
use crate::store::redis::RedisStore;
use crate::store::redis::reply::decode_plain;

const LEASE: &str = "wr:{admitter}:lease";
const FENCE_COUNTER: &str = "wr:{admitter}:fence";

static LEASE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lease.lua")));
static RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("release.lua")));

/// `lease.lua`: the token while the instance holds the lease; none while another does.
#[derive(Debug, Deserialize)]
struct LeaseReply {
    token: Option<u64>,
}

/// `release.lua`: whether the instance held the lease.
#[derive(Debug, Deserialize)]
struct ReleaseReply {
    #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
    released: bool,
}

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
