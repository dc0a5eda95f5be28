//! The Redis store: the seed's keys, each show's under one hash tag, changed only by the Lua
//! scripts in `lua/` (run by SHA), over one reconnecting multiplexed connection.
//!
//! The same code runs on one Redis (`ConnectionManager`) and on a Redis Cluster
//! (`ClusterConnection`): every script touches the keys of one show, which share a slot, and
//! every other call touches one key. Events are published with plain `PUBLISH`, which a
//! cluster broadcasts to every node, so the hub subscribes to any one node.

use std::net::IpAddr;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncCommands, Client, Script};
use uuid::Uuid;

use super::{
    AdmitOutcome, EventKind, Joined, QueueStore, Result, ShowEvent, ShowSnapshot, Status,
    StoreError, StoreSettings, wall_ms,
};
use crate::model::{NewOrder, Order, ShowId, ShowStats, TicketState};

/// The pub/sub channel every show's events go out on; every hub subscribes once.
pub const EVENTS_CHANNEL: &str = "wr:events";
const OPEN_SHOWS: &str = "wr:open";
const NO_ARGS: &[&str] = &[];
const LEASE: &str = "wr:{admitter}:lease";
const FENCE_COUNTER: &str = "wr:{admitter}:fence";

macro_rules! show_script {
    ($file:literal) => {
        LazyLock::new(|| {
            Script::new(concat!(
                include_str!("lua/prelude.lua"),
                include_str!(concat!("lua/", $file))
            ))
        })
    };
}

static JOIN: LazyLock<Script> = show_script!("join.lua");
static STATUS: LazyLock<Script> = show_script!("status.lua");
static LEAVE: LazyLock<Script> = show_script!("leave.lua");
static ADMIT: LazyLock<Script> = show_script!("admit.lua");
static RATE: LazyLock<Script> = show_script!("rate.lua");
static SNAPSHOT: LazyLock<Script> = show_script!("snapshot.lua");
static STATS: LazyLock<Script> = show_script!("stats.lua");
static BOUGHT: LazyLock<Script> = show_script!("bought.lua");
static CAPACITY: LazyLock<Script> = show_script!("capacity.lua");
static LEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/lease.lua")));
static LIMIT_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/limit.lua")));
static RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/release.lua")));

/// The Redis-backed store, over one Redis or a Redis Cluster.
#[derive(Clone)]
pub struct RedisStore<C = ConnectionManager> {
    /// Where to subscribe to events, tried in turn: the server, or every cluster seed node.
    subscribers: Vec<Client>,
    conn: C,
    settings: StoreSettings,
}

impl RedisStore<ConnectionManager> {
    /// Connects to `url` (`redis://host:port/db`); fails if Redis does not answer.
    pub async fn connect(url: &str, settings: StoreSettings) -> Result<Self> {
        let client = Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(3);
        let conn = ConnectionManager::new_with_config(client.clone(), config).await?;
        Ok(RedisStore {
            subscribers: vec![client],
            conn,
            settings,
        })
    }
}

impl RedisStore<ClusterConnection> {
    /// Connects to a Redis Cluster through any of its `nodes` (`redis://host:port` each).
    pub async fn connect_cluster(nodes: &[String], settings: StoreSettings) -> Result<Self> {
        let cluster = ClusterClient::builder(nodes.to_vec())
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(2))
            .build()?;
        let conn = cluster.get_async_connection().await?;
        let subscribers = nodes
            .iter()
            .map(|n| Client::open(n.as_str()))
            .collect::<std::result::Result<_, _>>()?;
        Ok(RedisStore {
            subscribers,
            conn,
            settings,
        })
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// Runs a per-show script with the shared key and argument layout of `prelude.lua`.
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        show: &ShowId,
        extra: impl redis::ToRedisArgs,
    ) -> Result<T> {
        let tag = format!("wr:{{{show}}}");
        let mut invocation = script.prepare_invoke();
        for key in [
            "queue",
            "seq",
            "head",
            "left",
            "version",
            "rate",
            "admissions",
            "fence",
            "tick",
            "cap",
        ] {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(show.as_str())
            .arg(self.settings.default_rate)
            .arg(self.ttl_ms())
            .arg(format!("{tag}:admitted:"))
            .arg(EVENTS_CHANNEL)
            .arg(self.settings.max_active_buyers)
            .arg(extra);
        let mut conn = self.conn.clone();
        Ok(invocation.invoke_async(&mut conn).await?)
    }

    fn ttl_ms(&self) -> u64 {
        self.settings.admission_ttl.as_millis() as u64
    }
}

fn protocol(what: &str, got: &[i64]) -> StoreError {
    StoreError::Protocol(format!("{what}: {got:?}"))
}

fn order_key(id: Uuid) -> String {
    format!("wr:order:{id}")
}

fn hold_key(hold: &str) -> String {
    format!("wr:hold:{hold}")
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> QueueStore for RedisStore<C> {
    async fn open(&self, show: &ShowId) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
        Ok(())
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        Ok(())
    }

    async fn is_open(&self, show: &ShowId) -> Result<bool> {
        let mut conn = self.conn.clone();
        Ok(conn.sismember(OPEN_SHOWS, show.as_str()).await?)
    }

    async fn open_shows(&self) -> Result<Vec<ShowId>> {
        let mut conn = self.conn.clone();
        let names: Vec<String> = conn.smembers(OPEN_SHOWS).await?;
        // Only this program writes the set, but never trust a key to hold a valid id.
        let mut shows: Vec<ShowId> = names.iter().filter_map(|n| n.parse().ok()).collect();
        shows.sort();
        Ok(shows)
    }

    async fn join(&self, show: &ShowId) -> Result<Joined> {
        let ticket = Uuid::new_v4();
        let r: Vec<i64> = self.run(&JOIN, show, ticket.to_string()).await?;
        let [seq, position, rate, version] = r[..] else {
            return Err(protocol("join", &r));
        };
        Ok(Joined {
            ticket,
            seq: seq as u64,
            status: Status {
                state: TicketState::Waiting {
                    position: position as u64,
                },
                seq: Some(seq as u64),
                rate: rate as u32,
                version: version as u64,
            },
        })
    }

    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        let r: Vec<i64> = self.run(&STATUS, show, ticket.to_string()).await?;
        let [kind, value, seq, rate, version] = r[..] else {
            return Err(protocol("status", &r));
        };
        let (state, seq) = match kind {
            1 => (
                TicketState::Waiting {
                    position: value as u64,
                },
                Some(seq as u64),
            ),
            2 => (
                TicketState::Admitted {
                    expires_in_ms: value as u64,
                },
                None,
            ),
            _ => (TicketState::Unknown, None),
        };
        Ok(Status {
            state,
            seq,
            rate: rate as u32,
            version: version as u64,
        })
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: i64 = self.run(&LEAVE, show, ticket.to_string()).await?;
        Ok(r == 1)
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let mut conn = self.conn.clone();
        Ok(conn
            .exists(format!("wr:{{{show}}}:admitted:{ticket}"))
            .await?)
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let r: Vec<i64> = self.run(&ADMIT, show, fence).await?;
        match r[..] {
            [-1] => Ok(AdmitOutcome::Fenced),
            [-2] => Ok(AdmitOutcome::AlreadyThisSecond),
            [0, ..] => Ok(AdmitOutcome::Admitted {
                count: 0,
                event: None,
            }),
            [count, head, version, now, rate] => Ok(AdmitOutcome::Admitted {
                count: count as u64,
                event: Some(ShowEvent {
                    show: show.clone(),
                    version: version as u64,
                    kind: EventKind::Tick,
                    head: head as u64,
                    left: None,
                    rate: rate as u32,
                    admitted: count as u64,
                    ttl_ms: self.ttl_ms(),
                    at_ms: now as u64,
                }),
            }),
            _ => Err(protocol("admit", &r)),
        }
    }

    async fn set_rate(&self, show: &ShowId, rate: u32) -> Result<()> {
        let _: i64 = self.run(&RATE, show, rate).await?;
        Ok(())
    }

    async fn set_max_active_buyers(&self, show: &ShowId, cap: u32) -> Result<()> {
        let _: i64 = self.run(&CAPACITY, show, cap).await?;
        Ok(())
    }

    async fn bought(&self, show: &ShowId, ticket: Uuid) -> Result<()> {
        let _: i64 = self.run(&BOUGHT, show, ticket.to_string()).await?;
        Ok(())
    }

    async fn stats(&self, show: &ShowId) -> Result<ShowStats> {
        let open = self.is_open(show).await?;
        let r: Vec<i64> = self.run(&STATS, show, NO_ARGS).await?;
        let [queue_length, admitted_valid, rate, joined, cap] = r[..] else {
            return Err(protocol("stats", &r));
        };
        Ok(ShowStats {
            show_id: show.to_string(),
            open,
            queue_length: queue_length as u64,
            admitted_valid: admitted_valid as u64,
            admit_per_second: rate as u32,
            max_active_buyers: cap as u32,
            joined: joined as u64,
        })
    }

    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot> {
        let r: Vec<i64> = self.run(&SNAPSHOT, show, NO_ARGS).await?;
        let [version, head, rate, ref left @ ..] = r[..] else {
            return Err(protocol("snapshot", &r));
        };
        Ok(ShowSnapshot {
            version: version as u64,
            head: head as u64,
            left: left.iter().map(|&s| s as u64).collect(),
            rate: rate as u32,
            ttl_ms: self.ttl_ms(),
        })
    }

    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>> {
        // A dedicated connection: a subscribed connection can do nothing else. When it drops,
        // the stream ends and the hub subscribes again, to the next node if this one is gone.
        let mut last_error = None;
        let mut subscribed = None;
        for client in &self.subscribers {
            let attempt = async {
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(EVENTS_CHANNEL).await?;
                Ok::<_, redis::RedisError>(pubsub)
            };
            match attempt.await {
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
        Ok(pubsub
            .into_on_message()
            .filter_map(|msg| async move {
                let parsed = serde_json::from_slice::<ShowEvent>(msg.get_payload_bytes());
                if let Err(e) = &parsed {
                    tracing::warn!(error = %e, "ignoring a malformed event on {EVENTS_CHANNEL}");
                }
                parsed.ok()
            })
            .boxed())
    }

    async fn lease(&self, instance: &str, ttl: Duration) -> Result<Option<u64>> {
        let mut conn = self.conn.clone();
        let token: i64 = LEASE_SCRIPT
            .key(LEASE)
            .key(FENCE_COUNTER)
            .arg(instance)
            .arg(ttl.as_millis() as u64)
            .invoke_async(&mut conn)
            .await?;
        Ok((token > 0).then_some(token as u64))
    }

    async fn release_lease(&self, instance: &str) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = RELEASE_SCRIPT
            .key(LEASE)
            .arg(instance)
            .invoke_async(&mut conn)
            .await?;
        Ok(())
    }

    async fn limit_join(&self, client: IpAddr, per_second: u32) -> Result<Option<Duration>> {
        let mut conn = self.conn.clone();
        let wait_ms: u64 = LIMIT_SCRIPT
            .key(format!("wr:limit:{client}"))
            .arg(per_second)
            .arg(per_second.saturating_mul(2))
            .invoke_async(&mut conn)
            .await?;
        Ok((wait_ms > 0).then(|| Duration::from_millis(wait_ms)))
    }

    async fn place_order(&self, order: &NewOrder) -> Result<(Order, bool)> {
        let mut conn = self.conn.clone();
        let created = Order::confirmed(order, wall_ms());
        let json =
            serde_json::to_string(&created).map_err(|e| StoreError::Protocol(e.to_string()))?;
        // The order first, then claim the hold: a crash in between leaves an order nobody
        // references, never a hold pointing at nothing. Two keys, no script: they may live
        // in different cluster slots.
        let _: () = conn.set(order_key(created.id), &json).await?;
        let claimed: bool = conn
            .set_nx(hold_key(&order.hold_id), created.id.to_string())
            .await?;
        if claimed {
            return Ok((created, true));
        }
        let _: i64 = conn.del(order_key(created.id)).await?;
        let existing: String = conn.get(hold_key(&order.hold_id)).await?;
        let id = existing
            .parse()
            .map_err(|_| StoreError::Protocol(format!("hold points at {existing}")))?;
        match self.get_order(id).await? {
            Some(found) => Ok((found, false)),
            None => Err(StoreError::Protocol(format!(
                "hold points at missing order {id}"
            ))),
        }
    }

    async fn get_order(&self, id: Uuid) -> Result<Option<Order>> {
        let mut conn = self.conn.clone();
        let json: Option<String> = conn.get(order_key(id)).await?;
        json.map(|j| serde_json::from_str(&j).map_err(|e| StoreError::Protocol(e.to_string())))
            .transpose()
    }

    async fn ping(&self) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }
}
