//! The Redis side of [`Lineage`]: reading a show's arrival counter, and mending it after a
//! failover lost writes (`MEND` below: one script, in the show's slot).
//!
//! The script is self-contained (no `prelude.lua`): it touches only the counter, the queue,
//! the admissions, the audit and the set of tickets whose place was lost
//! (`wr:{show}:lostfans`, kept a day after the last mend), which `status.lua` reads to
//! answer `lost` for them.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;
use uuid::Uuid;

use super::RedisStore;
use crate::model::ShowId;
use crate::store::lineage::{Arrivals, Lineage, Mended};
use crate::store::{Result, StoreError};

/// How long the tickets whose place was lost are remembered (ms): a day, like a join's
/// `Idempotency-Key`.
const LOST_FOR_MS: u64 = 86_400_000;

/// KEYS: seq, meta, queue, audit, lostfans, mended, spent (an admission ordered or redeemed is
/// not lost: its ticket left the queue and its admission on purpose). ARGV: epoch, high,
/// admitted prefix, keep ms, tickets…. Returns {found counter, raised (0/1), lost tickets…},
/// or {-1} when the show's epoch is not ARGV[1] (re-opened or deleted meanwhile: nothing to
/// mend).
static MEND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r#"
local epoch = redis.call('HGET', KEYS[2], 'epoch')
if epoch ~= ARGV[1] or redis.call('HEXISTS', KEYS[2], 'deleted') == 1 then return {-1} end
local found = tonumber(redis.call('GET', KEYS[1]) or '0')
local high = tonumber(ARGV[2])
local out = {found, 0}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if found < high then
  redis.call('SET', KEYS[1], high)
  out[2] = 1
  redis.call('XADD', KEYS[4], '*', 'kind', 'lost', 'at_ms', now, 'epoch', epoch,
    'arrival', high, 'found', found)
  local from = tonumber(redis.call('HGET', KEYS[6], 'from') or '')
  if not from or found < from then redis.call('HSET', KEYS[6], 'from', found) end
  redis.call('HINCRBY', KEYS[6], 'n', 1)
  redis.call('PEXPIRE', KEYS[6], ARGV[4])
end
for i = 5, #ARGV do
  local ticket = ARGV[i]
  if not redis.call('ZSCORE', KEYS[3], ticket)
    and redis.call('EXISTS', ARGV[3] .. ticket) == 0
    and redis.call('HEXISTS', KEYS[7], ticket) == 0 then
    redis.call('SADD', KEYS[5], ticket)
    out[#out + 1] = ticket
  end
end
if #out > 2 then redis.call('PEXPIRE', KEYS[5], ARGV[4]) end
return out
"#,
    )
});

fn key(show: &ShowId, name: &str) -> String {
    format!("wr:{{{show}}}:{name}")
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Lineage for RedisStore<C> {
    async fn arrivals(&self, show: &ShowId) -> Result<Option<Arrivals>> {
        if self.in_process {
            // Nothing it answered is ever lost: nothing to read.
            return Ok(None);
        }
        let mut conn = self.conn.clone();
        // One slot, one round trip: a pipeline of reads is not atomic, but a counter read a
        // moment after the epoch belongs to it unless the show was re-opened in between (the
        // mend then refuses to act on the old epoch).
        type Read = (Option<u64>, Option<u64>, (Option<u64>, Option<u64>));
        let (epoch, counter, (mends, from)): Read = redis::pipe()
            .hget(key(show, "meta"), "epoch")
            .get(key(show, "seq"))
            .cmd("HMGET")
            .arg(key(show, "mended"))
            .arg("n")
            .arg("from")
            .query_async(&mut conn)
            .await?;
        Ok(epoch.map(|epoch| Arrivals {
            epoch,
            counter: counter.unwrap_or(0),
            mends: mends.unwrap_or(0),
            mended_from: from.unwrap_or(0),
        }))
    }

    async fn mend(&self, show: &ShowId, epoch: u64, high: u64, tickets: &[Uuid]) -> Result<Mended> {
        if self.in_process {
            return Ok(Mended::default());
        }
        let mut invocation = MEND.prepare_invoke();
        for name in [
            "seq", "meta", "queue", "audit", "lostfans", "mended", "spent",
        ] {
            invocation.key(key(show, name));
        }
        invocation
            .arg(epoch.to_string())
            .arg(high)
            .arg(key(show, "admitted:"))
            .arg(LOST_FOR_MS);
        for t in tickets {
            invocation.arg(t.to_string());
        }
        let mut conn = self.conn.clone();
        let reply: Vec<redis::Value> = invocation.invoke_async(&mut conn).await?;
        let bad = || StoreError::Protocol(format!("mend: {reply:?}"));
        let number = |v: &redis::Value| redis::from_redis_value_ref::<i64>(v).ok();
        let found = reply.first().and_then(number).ok_or_else(bad)?;
        if found < 0 {
            return Ok(Mended::default());
        }
        let raised = reply.get(1).and_then(number).ok_or_else(bad)? == 1;
        let lost = reply[2..]
            .iter()
            .map(|v| {
                redis::from_redis_value_ref::<String>(v)
                    .ok()
                    .and_then(|s| Uuid::parse_str(&s).ok())
                    .ok_or_else(bad)
            })
            .collect::<Result<_>>()?;
        Ok(Mended {
            found: found as u64,
            raised,
            lost,
        })
    }
}
