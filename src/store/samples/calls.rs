//! How the store reads a show's samples: `XRANGE` over `wr:{show}:samples`, which `admit.lua`
//! writes (through `sample` in `prelude.lua`).

use async_trait::async_trait;
use redis::aio::ConnectionLike;

use super::{Sample, Samples};
use crate::model::{RecordId, ShowId};
use crate::store::redis::stream_page;
use crate::store::{RedisStore, Result, ShowEvent, StoreError};

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Samples for RedisStore<C> {
    async fn samples(
        &self,
        show: &ShowId,
        after: Option<RecordId>,
        limit: usize,
    ) -> Result<Vec<Sample>> {
        let key = format!("wr:{{{show}}}:samples");
        let entries = stream_page(&self.conn, &key, after, limit).await?;
        entries
            .into_iter()
            .map(|(id, fields)| sample(&id, &fields))
            .collect()
    }
}

/// A sample from its stream entry.
fn sample(id: &str, fields: &[(String, String)]) -> Result<Sample> {
    let bad = || StoreError::Protocol(format!("sample {id}: {fields:?}"));
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let number = |name: &str| {
        field(name)
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or_else(bad)
    };
    // What the tick published (`publish` in `prelude.lua`), as the hub reads it.
    let published: ShowEvent =
        serde_json::from_str(field("pace").ok_or_else(bad)?).map_err(|_| bad())?;
    Ok(Sample {
        id: id.parse().map_err(|_| bad())?,
        at_ms: number("at_ms")?,
        epoch: number("epoch")?,
        arrivals: number("arrivals")?,
        laned: number("laned")?,
        queued: number("queued")?,
        admitted: number("admitted")?,
        active: number("active")?,
        away: number("away")?,
        head: published.head,
        pace: published.pace,
    })
}
