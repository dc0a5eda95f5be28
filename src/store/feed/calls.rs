//! The feed a hub mirrors, as the store serves it: a snapshot script (`snapshot.lua`), and a
//! pub/sub subscription kept honest by PINGs (plain pub/sub here, in-process on the embedded
//! store; sharded pub/sub on a cluster in `redis/sharded.rs`).

use std::sync::LazyLock;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use redis::aio::{ConnectionLike, PubSubSink};
use tokio_util::sync::CancellationToken;

use serde::Deserialize;

use super::{Feed, PaceFigures, ShowEvent, ShowSnapshot};
use crate::draw::Permutation;
use crate::model::{Pace, Sale, ShowId};
use crate::store::redis::reply::{epoch, list};
use crate::store::redis::{
    EVENTS_CHANNEL, NoArgs, PUBSUB_PING_EVERY, PUBSUB_PONG_WITHIN, RedisStore, ShowScript,
    Subscribers, show_script,
};
use crate::store::{DrawPhase, Result, StoreError};

static SNAPSHOT: LazyLock<ShowScript> = show_script!("snapshot");

/// `snapshot.lua`: epoch 0 (and only the pace) when the show does not exist or was lost.
#[derive(Debug, Deserialize)]
struct SnapshotReply {
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
    version: u64,
    head: u64,
    pace: PaceFigures,
    /// Fans passed over while away who hold their places.
    #[serde(default)]
    parked: u64,
    /// The opening time of a scheduled show (ms).
    opens_at: Option<u64>,
    /// The pre-queue's size once it closed.
    closed_n: Option<u64>,
    /// The draw's key (64 hex digits) once drawn.
    draw_key: Option<String>,
    /// The early leavers no head has passed yet.
    #[serde(default, deserialize_with = "list")]
    left: Vec<u64>,
}

/// PINGs a subscription until its stream is dropped; cancels `dead` when one goes
/// unanswered.
async fn keep_alive(mut sink: PubSubSink, dead: CancellationToken, dropped: CancellationToken) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(PUBSUB_PING_EVERY) => {}
            _ = dropped.cancelled() => return,
        }
        let pong = tokio::time::timeout(PUBSUB_PONG_WITHIN, sink.ping::<redis::Value>()).await;
        if !matches!(pong, Ok(Ok(_))) {
            tracing::warn!("the event subscription did not answer a PING; resubscribing");
            dead.cancel();
            return;
        }
    }
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Feed for RedisStore<C> {
    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot> {
        let r: SnapshotReply = self.run(&SNAPSHOT, show, &NoArgs {}).await?;
        Ok(ShowSnapshot {
            draw: draw_phase(r.opens_at, r.closed_n, r.draw_key.as_deref()),
            epoch: r.epoch,
            version: r.version,
            head: r.head,
            left: r.left,
            parked: r.parked,
            pace: Pace::from(&r.pace),
            sale: Sale::from(&r.pace),
            ttl_ms: self.ttl_ms(),
        })
    }

    async fn listen(&self, show: &ShowId) -> Result<()> {
        match &self.sharded {
            Some(sharded) => sharded.listen(show).await,
            None => Ok(()),
        }
    }

    fn unlisten(&self, show: &ShowId) {
        if let Some(sharded) = &self.sharded {
            sharded.unlisten(show);
        }
    }

    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>> {
        if let Some(sharded) = &self.sharded {
            return sharded.subscribe().await;
        }
        if let Subscribers::InProcess(conn) = &self.subscribers {
            // In this process: nothing to keep alive, and it ends only with the store.
            return Ok(conn
                .subscribe(EVENTS_CHANNEL)
                .filter_map(|payload| async move { parse_event(&payload) })
                .boxed());
        }
        // A dedicated connection: a subscribed connection can do nothing else. When it drops,
        // the stream ends and the hub subscribes again, to the next node if this one is gone.
        let mut last_error = None;
        let mut subscribed = None;
        for client in &self.subscribers.clients() {
            let attempt = async {
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(EVENTS_CHANNEL).await?;
                Ok::<_, redis::RedisError>(pubsub)
            };
            // Pub/sub connections have no response timeout of their own: a node that takes
            // the connection and never answers would hold the hub here for good.
            let answered = tokio::time::timeout(PUBSUB_PONG_WITHIN, attempt)
                .await
                .unwrap_or_else(|_| {
                    Err(
                        std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer to SUBSCRIBE")
                            .into(),
                    )
                });
            match answered {
                Ok(pubsub) => {
                    subscribed = Some(pubsub);
                    break;
                }
                Err(e) => last_error = Some(e),
            }
        }
        let Some(pubsub) = subscribed else {
            return Err(last_error
                .map(StoreError::from)
                .unwrap_or_else(|| StoreError::Protocol("no node to subscribe to".into())));
        };
        // A subscription can go silent without the socket closing (a node failed over, a
        // middlebox dropped the flow): PING it, and end the stream when no PONG comes back,
        // so the hub subscribes again and resynchronises.
        let (sink, messages) = pubsub.split();
        let dead = CancellationToken::new();
        let dropped = CancellationToken::new();
        self.tasks
            .spawn(keep_alive(sink, dead.clone(), dropped.clone()));
        let dropped = dropped.drop_guard();
        Ok(messages
            .take_until(dead.cancelled_owned())
            .filter_map(move |msg| {
                let _stops_the_pings_when_dropped = &dropped;
                async move { parse_event(msg.get_payload_bytes()) }
            })
            .boxed())
    }
}

/// An event as published; a malformed one is skipped.
fn parse_event(payload: &[u8]) -> Option<ShowEvent> {
    let parsed = serde_json::from_slice::<ShowEvent>(payload);
    if let Err(e) = &parsed {
        tracing::warn!(error = %e, "ignoring a malformed event on {EVENTS_CHANNEL}");
    }
    parsed.ok()
}

/// The draw's phase from `snapshot.lua`'s fields: the opening time (absent: not scheduled),
/// the pre-queue's size once closed, the draw key once drawn.
fn draw_phase(opens_at: Option<u64>, closed: Option<u64>, key: Option<&str>) -> DrawPhase {
    let Some(opens_at_ms) = opens_at else {
        return DrawPhase::None;
    };
    let Some(participants) = closed else {
        return DrawPhase::PreQueue { opens_at_ms };
    };
    match key.and_then(|k| Permutation::new(k, participants)) {
        Some(p) => DrawPhase::Drawn(p),
        None => DrawPhase::Closed { participants },
    }
}
