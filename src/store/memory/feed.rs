//! The feed a hub mirrors, from the embedded store: snapshots, and a broadcast channel.

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_stream::wrappers::BroadcastStream;

use super::MemoryStore;
use crate::model::{Pace, ShowId};
use crate::store::{Feed, Result, ShowEvent, ShowSnapshot};

#[async_trait]
impl Feed for MemoryStore {
    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot> {
        let now = self.now_ms();
        let inner = self.lock();
        let ttl_ms = self.settings.admission_ttl.as_millis() as u64;
        Ok(match inner.shows.get(show) {
            Some(s) => ShowSnapshot {
                epoch: s.epoch,
                version: s.version,
                head: s.head,
                left: s.left.iter().copied().collect(),
                pace: s.pace(&self.settings, now),
                ttl_ms,
                draw: s.phase(),
            },
            None => ShowSnapshot {
                epoch: 0,
                version: 0,
                head: 0,
                left: Vec::new(),
                pace: Pace::at_rate(self.settings.default_rate),
                ttl_ms,
                draw: Default::default(),
            },
        })
    }

    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>> {
        // A lagging receiver skips messages; the hub sees the version gap and resynchronises.
        Ok(BroadcastStream::new(self.events.subscribe())
            .filter_map(|m| async move { m.ok() })
            .boxed())
    }
}
