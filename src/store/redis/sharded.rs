//! Sharded pub/sub on a Redis Cluster (Redis ≥ 7): a show's events go out with `SPUBLISH` on a
//! channel under the show's own hash tag ([`show_channel`]), which only the node owning that
//! slot relays, to the instances that asked for that show. Plain `PUBLISH` on a cluster goes
//! to every node and every subscriber, whatever they follow.
//!
//! So a subscription carries only the shows someone here listens to ([`Feed::listen`]): the
//! hub, for the shows its fans wait for. Each `subscribe` is a cluster connection of its own
//! (RESP3, pushes to a channel) that `SSUBSCRIBE`s every listened show, and follows the
//! listens and unlistens made while it lives. What today's feed guarantees holds here too: the
//! stream ends (and the hub subscribes again and reads every show afresh) when
//!
//! - a node's connection drops (redis-rs would resubscribe by itself, but events published
//!   meanwhile are lost: we start over instead, with a resync);
//! - a node tells us it dropped a show's channel (`sunsubscribe` pushed on a slot migration
//!   or failover) while we still listen to it;
//! - any master leaves a PING unanswered for [`PUBSUB_PONG_WITHIN`] (a silent node);
//! - a channel cannot be subscribed.
//!
//! [`Feed::listen`]: crate::store::Feed::listen

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::{Msg, ProtocolVersion, PushInfo, PushKind};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{PUBSUB_PING_EVERY, PUBSUB_PONG_WITHIN};
use crate::model::ShowId;
use crate::store::{Result, ShowEvent, StoreError};

/// The channel a show's events go out on with sharded pub/sub: the show's hash tag, so that
/// the scripts, which touch only that slot, may `SPUBLISH` to it.
pub(super) fn show_channel(show: &ShowId) -> String {
    format!("wr:{{{show}}}:events")
}

/// The show a sharded channel belongs to.
fn channel_show(channel: &str) -> Option<ShowId> {
    let tagged = channel.strip_prefix("wr:{")?.strip_suffix("}:events")?;
    tagged.parse().ok()
}

/// The sharded feed of one store: who listens to what, and the subscriptions alive.
pub(in crate::store) struct Sharded {
    /// The store's tasks: each subscription's keep-alive runs on them.
    tasks: TaskTracker,
    nodes: Vec<String>,
    /// How many listens each show has (the hub's, the console's).
    listened: Mutex<HashMap<ShowId, usize>>,
    subscriptions: Mutex<Vec<Weak<Subscription>>>,
}

/// One live subscription: its connection, and the shows it carries.
struct Subscription {
    conn: ClusterConnection,
    carried: tokio::sync::Mutex<HashSet<ShowId>>,
    /// Cancelled when the subscription can no longer be trusted: its stream ends.
    dead: CancellationToken,
}

impl Sharded {
    pub(super) fn new(nodes: &[String], tasks: &TaskTracker) -> Self {
        Sharded {
            tasks: tasks.clone(),
            nodes: nodes.to_vec(),
            listened: Mutex::default(),
            subscriptions: Mutex::default(),
        }
    }

    fn listened(&self) -> std::sync::MutexGuard<'_, HashMap<ShowId, usize>> {
        self.listened.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn alive(&self) -> Vec<Arc<Subscription>> {
        let mut subs = self.subscriptions.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|s| s.strong_count() > 0);
        subs.iter().filter_map(Weak::upgrade).collect()
    }

    /// One more listener of `show`; returns once every live subscription carries it.
    pub(in crate::store) async fn listen(&self, show: &ShowId) -> Result<()> {
        *self.listened().entry(show.clone()).or_default() += 1;
        self.reconcile(show).await
    }

    /// One listener of `show` fewer; the subscriptions drop it once nobody listens any more.
    pub(in crate::store) fn unlisten(self: &Arc<Self>, show: &ShowId) {
        {
            let mut listened = self.listened();
            match listened.get_mut(show) {
                Some(n) if *n > 1 => *n -= 1,
                Some(_) => {
                    listened.remove(show);
                }
                None => return,
            }
        }
        // Called from drops: with no runtime (it is shutting down) there is nothing to tidy.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let me = self.clone();
        let show = show.clone();
        runtime.spawn(async move {
            let _ = me.reconcile(&show).await;
        });
    }

    /// Makes every live subscription carry `show` exactly when someone listens to it. Each
    /// subscription changes under its own lock, after reading who listens, so listens and
    /// unlistens made in any order end in the state of the last one.
    async fn reconcile(&self, show: &ShowId) -> Result<()> {
        let mut outcome = Ok(());
        // A subscription already given up is about to be replaced by one carrying every show.
        for sub in self.alive().into_iter().filter(|s| !s.dead.is_cancelled()) {
            let mut carried = sub.carried.lock().await;
            let wanted = self.listened().contains_key(show);
            let mut conn = sub.conn.clone();
            let channel = show_channel(show);
            if wanted && !carried.contains(show) {
                match tokio::time::timeout(PUBSUB_PONG_WITHIN, conn.ssubscribe(&channel)).await {
                    Ok(Ok(())) => {
                        carried.insert(show.clone());
                    }
                    failed => {
                        tracing::warn!(%show, ?failed, "cannot SSUBSCRIBE; resubscribing");
                        sub.dead.cancel();
                        outcome = Err(StoreError::Protocol(format!("SSUBSCRIBE {channel}")));
                    }
                }
            } else if !wanted && carried.remove(show) {
                let _ = tokio::time::timeout(PUBSUB_PONG_WITHIN, conn.sunsubscribe(&channel)).await;
            }
        }
        outcome
    }

    /// A new subscription carrying every show listened to now (and later, until it ends).
    pub(in crate::store) async fn subscribe(
        self: &Arc<Self>,
    ) -> Result<BoxStream<'static, ShowEvent>> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<PushInfo>();
        let client = ClusterClient::builder(self.nodes.clone())
            .use_protocol(ProtocolVersion::RESP3)
            .push_sender(tx)
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(PUBSUB_PONG_WITHIN)
            .build()?;
        let conn = tokio::time::timeout(PUBSUB_PONG_WITHIN, client.get_async_connection())
            .await
            .map_err(|_| StoreError::Protocol("no answer from the cluster".into()))??;
        let sub = Arc::new(Subscription {
            conn,
            carried: tokio::sync::Mutex::default(),
            dead: CancellationToken::new(),
        });
        {
            // Registered before reading who listens: a listen from now on reconciles it too.
            let mut carried = sub.carried.lock().await;
            self.subscriptions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::downgrade(&sub));
            let shows: Vec<ShowId> = self.listened().keys().cloned().collect();
            for show in shows {
                let mut conn = sub.conn.clone();
                tokio::time::timeout(PUBSUB_PONG_WITHIN, conn.ssubscribe(show_channel(&show)))
                    .await
                    .map_err(|_| StoreError::Protocol("no answer to SSUBSCRIBE".into()))??;
                carried.insert(show);
            }
        }
        self.tasks.spawn(keep_alive(Arc::downgrade(&sub)));
        let dead = sub.dead.clone();
        let me = self.clone();
        Ok(UnboundedReceiverStream::new(rx)
            .take_until(dead.cancelled_owned())
            .filter_map(move |push| {
                // The stream owns the subscription: dropping it ends the connection and PINGs.
                let event = me.on_push(&sub, push);
                async move { event }
            })
            .boxed())
    }
}

impl Sharded {
    /// What a push means for the stream: an event, nothing, or (by cancelling the
    /// subscription) its end.
    fn on_push(&self, sub: &Subscription, push: PushInfo) -> Option<ShowEvent> {
        match push.kind {
            PushKind::SMessage => {
                let msg = Msg::from_push_info(push)?;
                let parsed = serde_json::from_slice::<ShowEvent>(msg.get_payload_bytes());
                if let Err(e) = &parsed {
                    let channel = msg.get_channel_name();
                    tracing::warn!(error = %e, channel, "ignoring a malformed event");
                }
                parsed.ok()
            }
            PushKind::Disconnection => {
                tracing::warn!("a node of the event subscription disconnected; resubscribing");
                sub.dead.cancel();
                None
            }
            PushKind::SUnsubscribe => {
                // We drop a channel only once nobody listens to its show: a show still
                // listened to was dropped by the node (its slot moved, a failover).
                let show = push
                    .data
                    .first()
                    .and_then(|c| redis::from_redis_value_ref::<String>(c).ok())
                    .and_then(|c| channel_show(&c));
                if show.is_some_and(|show| self.listened().contains_key(&show)) {
                    tracing::warn!("a node dropped a listened show's channel; resubscribing");
                    sub.dead.cancel();
                }
                None
            }
            _ => None,
        }
    }
}

/// PINGs every master while the subscription lives; cancels it when one goes unanswered.
async fn keep_alive(sub: Weak<Subscription>) {
    loop {
        tokio::time::sleep(PUBSUB_PING_EVERY).await;
        let Some(live) = sub.upgrade() else { return };
        if live.dead.is_cancelled() {
            return;
        }
        let mut conn = live.conn.clone();
        let ping = redis::cmd("PING");
        let routing = RoutingInfo::MultiNode((
            MultipleNodeRoutingInfo::AllMasters,
            Some(ResponsePolicy::AllSucceeded),
        ));
        let pong =
            tokio::time::timeout(PUBSUB_PONG_WITHIN, conn.route_command(ping, routing)).await;
        if !matches!(pong, Ok(Ok(_))) {
            tracing::warn!("the event subscription did not answer a PING; resubscribing");
            live.dead.cancel();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_show_channel_carries_the_show_hash_tag_and_names_it_back() {
        let show: ShowId = "rock-night".parse().unwrap();
        assert_eq!(show_channel(&show), "wr:{rock-night}:events");
        assert_eq!(channel_show(&show_channel(&show)), Some(show));
        assert_eq!(channel_show("wr:events"), None);
    }
}
