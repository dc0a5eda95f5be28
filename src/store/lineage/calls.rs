//! [`Lineage`] as the store calls it: reading a show's arrival counter, and mending it after a
//! failover lost writes (`mend.lua`, a per-show script as every other).

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use serde::Deserialize;
use uuid::Uuid;

use super::{Arrivals, Lineage, Mended};
use crate::model::ShowId;
use crate::store::Result;
use crate::store::redis::reply::list;
use crate::store::redis::{RedisStore, ShowScript, show_script};

static MEND: LazyLock<ShowScript> = show_script!("mend");

/// `mend.lua`'s own arguments: the show's epoch the loss witness saw, the highest arrival it
/// saw, and the tickets it saw join that the show no longer holds.
#[derive(serde::Serialize)]
struct MendArgs<'a> {
    epoch: String,
    high: u64,
    tickets: &'a [Uuid],
}

/// `mend.lua`'s answer.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum MendReply {
    /// The show was re-opened or deleted meanwhile: nothing mended.
    Stale {
        #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
        stale: bool,
    },
    Mended {
        found: u64,
        raised: bool,
        #[serde(deserialize_with = "list")]
        lost: Vec<Uuid>,
    },
}

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
        let args = MendArgs {
            epoch: epoch.to_string(),
            high,
            tickets,
        };
        let MendReply::Mended {
            found,
            raised,
            lost,
        } = self.run(&MEND, show, &args).await?
        else {
            return Ok(Mended::default());
        };
        Ok(Mended {
            found,
            raised,
            lost,
        })
    }
}
