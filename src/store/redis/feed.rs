//! The feed a hub mirrors, from Redis: a snapshot script, and a pub/sub subscription kept
//! honest by PINGs (plain pub/sub here; sharded pub/sub on a cluster in `sharded.rs`).

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use redis::Script;
use redis::aio::{ConnectionLike, PubSubSink};
use tokio_util::sync::CancellationToken;

use super::{EVENTS_CHANNEL, PACE_FIGURES, RedisStore, ScriptArgs, pace, protocol, show_script};
use crate::draw::Permutation;
use crate::model::ShowId;
use crate::store::{DrawPhase, Feed, Result, ShowEvent, ShowSnapshot, StoreError};

static SNAPSHOT: LazyLock<Script> = show_script!("snapshot.lua");

/// How often a subscription is PINGed, and how long its PONG may take.
pub(super) const PUBSUB_PING_EVERY: Duration = Duration::from_secs(5);
pub(super) const PUBSUB_PONG_WITHIN: Duration = Duration::from_secs(3);

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
        let r: Vec<i64> = self.run(&SNAPSHOT, show, ScriptArgs::none()).await?;
        if r.len() < 3 + PACE_FIGURES {
            return Err(protocol("snapshot", &r));
        }
        let (&[epoch, version, head], rest) = r.split_first_chunk::<3>().expect("checked");
        let (figures, rest) = rest.split_at(PACE_FIGURES);
        let (draw, left) = match rest {
            [] => (DrawPhase::None, rest),
            [opens_at, closed, words @ ..] if words.len() >= 8 => {
                let (key, left) = words.split_at(8);
                (draw_phase(*opens_at, *closed, key), left)
            }
            _ => return Err(protocol("snapshot", &r)),
        };
        Ok(ShowSnapshot {
            epoch: epoch as u64,
            version: version as u64,
            head: head as u64,
            left: left.iter().map(|&s| s as u64).collect(),
            pace: self
                .with_reason(show, pace(figures).ok_or_else(|| protocol("snapshot", &r))?)
                .await?,
            ttl_ms: self.ttl_ms(),
            draw,
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
        tokio::spawn(keep_alive(sink, dead.clone(), dropped.clone()));
        let dropped = dropped.drop_guard();
        Ok(messages
            .take_until(dead.cancelled_owned())
            .filter_map(move |msg| {
                let _stops_the_pings_when_dropped = &dropped;
                async move {
                    let parsed = serde_json::from_slice::<ShowEvent>(msg.get_payload_bytes());
                    if let Err(e) = &parsed {
                        tracing::warn!(error = %e, "ignoring a malformed event on {EVENTS_CHANNEL}");
                    }
                    parsed.ok()
                }
            })
            .boxed())
    }
}

/// The draw's phase from `snapshot.lua`'s figures: the opening time (-1: not scheduled), the
/// pre-queue's size once closed (-1: open), the draw key's eight words (-1: not drawn).
fn draw_phase(opens_at: i64, closed: i64, key: &[i64]) -> DrawPhase {
    if opens_at < 0 {
        return DrawPhase::None;
    }
    if closed < 0 {
        return DrawPhase::PreQueue {
            opens_at_ms: opens_at as u64,
        };
    }
    let participants = closed as u64;
    if key.iter().any(|&w| w < 0) {
        return DrawPhase::Closed { participants };
    }
    let hex: String = key.iter().map(|w| format!("{:08x}", *w as u32)).collect();
    match Permutation::new(&hex, participants) {
        Some(p) => DrawPhase::Drawn(p),
        None => DrawPhase::Closed { participants },
    }
}
