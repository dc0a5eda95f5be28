//! Join limits as the store keeps them (on Redis and on the embedded store alike): one GCRA
//! key per client (`limit.lua`), so every instance counts the same joins.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;
use serde::Deserialize;

use super::JoinLimits;
use crate::store::Result;
use crate::store::redis::RedisStore;
use crate::store::redis::reply::decode_plain;

static LIMIT_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("limit.lua")));

/// `limit.lua`: how long the client must wait (0: allowed now).
#[derive(Debug, Deserialize)]
struct LimitReply {
    wait_ms: u64,
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> JoinLimits for RedisStore<C> {
    async fn limit_join(&self, client: &str, per_second: u32) -> Result<Option<Duration>> {
        let mut conn = self.conn.clone();
        let text: String = LIMIT_SCRIPT
            .key(format!("wr:limit:{client}"))
            .arg(per_second)
            .arg(per_second.saturating_mul(2))
            .invoke_async(&mut conn)
            .await?;
        let wait_ms = decode_plain::<LimitReply>("limit", &text)?.wait_ms;
        Ok((wait_ms > 0).then(|| Duration::from_millis(wait_ms)))
    }
}
