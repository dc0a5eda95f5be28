//! Join limits in Redis: one GCRA key per client, so every instance counts the same joins.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;

use super::RedisStore;
use super::reply::{LimitReply, decode_plain};
use crate::store::{JoinLimits, Result};

static LIMIT_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../lua/limit.lua")));

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
