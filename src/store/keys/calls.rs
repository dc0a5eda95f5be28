//! The pass keys instances share, as the store keeps them (on Redis; the embedded store is one
//! instance and shares nothing): one sorted set outside every show's slot, changed by
//! `pass_keys.lua` alone.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;
use serde::Deserialize;

use super::{KeySchedule, SharedKeys};
use crate::store::redis::RedisStore;
use crate::store::redis::reply::{decode_plain, list};
use crate::store::{Result, StoreError};

/// The pass keys instances share when `PASS_KEYS` is unset (one key, outside every show's
/// slot): a sorted set of `kid:base64secret` by when each was made.
const PASS_KEYS: &str = "wr:passkeys";

static SHARE_KEYS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("pass_keys.lua")));

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> SharedKeys for RedisStore<C> {
    async fn pass_keys(
        &self,
        ours: &str,
        fresh: &str,
        schedule: KeySchedule,
    ) -> Result<Option<String>> {
        if self.in_process {
            // One process, one instance: nothing to share.
            return Ok(None);
        }
        let ms = |d: Duration| d.as_millis() as u64;
        let mut conn = self.conn.clone();
        let text: String = SHARE_KEYS
            .key(PASS_KEYS)
            .arg(ours)
            .arg(fresh)
            .arg(ms(schedule.rotate_every))
            .arg(ms(schedule.keep_for))
            .arg(ms(schedule.settle))
            .invoke_async(&mut conn)
            .await?;
        let keys = decode_plain::<PassKeysReply>("pass_keys", &text)?.keys;
        if keys.is_empty() {
            return Err(StoreError::Protocol(
                "the shared pass keys came back empty".into(),
            ));
        }
        Ok(Some(keys.join(",")))
    }
}

/// `pass_keys.lua`: the signing key first, the rest newest first.
#[derive(Debug, Deserialize)]
struct PassKeysReply {
    #[serde(deserialize_with = "list")]
    keys: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_list_may_come_as_cjsons_empty_object() {
        let r: PassKeysReply = decode_plain("pass_keys", r#"{"keys":{}}"#).unwrap();
        assert!(r.keys.is_empty());
        let r: PassKeysReply = decode_plain("pass_keys", r#"{"keys":["a","b"]}"#).unwrap();
        assert_eq!(r.keys, ["a", "b"]);
        assert!(decode_plain::<PassKeysReply>("pass_keys", r#"{"keys":{"a":1}}"#).is_err());
    }
}
