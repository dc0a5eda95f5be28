//! The Redis store: the seed's keys, each show's under one hash tag, changed only by the Lua
//! scripts in `lua/` (run by SHA), over one reconnecting multiplexed connection.
//!
//! The same code runs on one Redis (`ConnectionManager`) and on a Redis Cluster
//! (`ClusterConnection`): every script touches the keys of one show, which share a slot, and
//! every other call touches one key. Events are published with plain `PUBLISH`, which a
//! cluster broadcasts to every node, so the hub subscribes to any one node.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use redis::aio::{ConnectionLike, ConnectionManager, PubSubSink};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncCommands, Client, Script};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{
    AdmitOutcome, Configured, Joined, OrderOutcome, PaceControl, QueueStore, Result, ShowEvent,
    ShowMeta, ShowSettings, ShowSnapshot, Status, StoreError, StoreSettings, TOMBSTONE_TTL,
    new_epoch, order_fingerprint, pace_of, wall_ms,
};
use crate::model::{NewOrder, Order, Pace, ShowId, ShowStats, TicketState};

/// The pub/sub channel every show's events go out on; every hub subscribes once.
pub const EVENTS_CHANNEL: &str = "wr:events";
const OPEN_SHOWS: &str = "wr:open";
/// Every show an operator made (the open ones too).
const SHOWS: &str = "wr:shows";
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
static IS_ADMITTED: LazyLock<Script> = show_script!("is_admitted.lua");
static ADMIT: LazyLock<Script> = show_script!("admit.lua");
static CONFIGURE: LazyLock<Script> = show_script!("configure.lua");
static OPEN: LazyLock<Script> = show_script!("open.lua");
static CLOSE: LazyLock<Script> = show_script!("close.lua");
static DELETE: LazyLock<Script> = show_script!("delete.lua");
static CHECK: LazyLock<Script> = show_script!("check.lua");
static META: LazyLock<Script> = show_script!("meta.lua");
static SNAPSHOT: LazyLock<Script> = show_script!("snapshot.lua");
static STATS: LazyLock<Script> = show_script!("stats.lua");
static ORDER: LazyLock<Script> = show_script!("order.lua");
static TOUCH: LazyLock<Script> = show_script!("touch.lua");
static PACE: LazyLock<Script> = show_script!("pace.lua");
static LEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/lease.lua")));
static LIMIT_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/limit.lua")));
static RELEASE_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/release.lua")));

/// Every argument of a per-show script, by name, as `prelude.lua` reads them (JSON in
/// `ARGV[1]`): the show's keys and settings, then each script's own, absent when not given.
/// Epochs travel as text: Lua numbers would not hold every one exactly.
#[derive(Debug, Default, serde::Serialize)]
struct ScriptArgs {
    /// Names `KEYS` in order.
    keys: [&'static str; SHOW_KEYS.len()],
    show: String,
    default_rate: u32,
    ttl_ms: u64,
    admitted_prefix: String,
    channel: &'static str,
    default_cap: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fence: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    new_epoch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    known_epoch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cap: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    health_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    floor: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pace: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tombstone_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hold: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    order: Option<String>,
}

impl ScriptArgs {
    fn ticket(ticket: Uuid) -> Self {
        ScriptArgs {
            ticket: Some(ticket.to_string()),
            ..Default::default()
        }
    }

    fn none() -> Self {
        ScriptArgs::default()
    }
}

/// A show's keys, in the order `ScriptArgs::keys` names them (`wr:{<show>}:<name>`).
const SHOW_KEYS: [&str; 15] = [
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
    "meta",
    "holds",
    "spent",
    "flow",
    "seen",
];

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
        own: ScriptArgs,
    ) -> Result<T> {
        let tag = format!("wr:{{{show}}}");
        let mut invocation = script.prepare_invoke();
        for key in SHOW_KEYS {
            invocation.key(format!("{tag}:{key}"));
        }
        let args = ScriptArgs {
            keys: SHOW_KEYS,
            show: show.as_str().to_owned(),
            default_rate: self.settings.default_rate,
            ttl_ms: self.ttl_ms(),
            admitted_prefix: format!("{tag}:admitted:"),
            channel: EVENTS_CHANNEL,
            default_cap: self.settings.max_active_buyers,
            ..own
        };
        let json = serde_json::to_string(&args).map_err(|e| StoreError::Protocol(e.to_string()))?;
        invocation.arg(json);
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

/// A script's refusal of a show: {-404} nobody made it, {-503} it was lost.
fn refused(show: &ShowId, got: &[i64]) -> Option<StoreError> {
    match got {
        [-404] => Some(StoreError::NoSuchShow(show.clone())),
        [-503] => Some(StoreError::ShowLost(show.clone())),
        _ => None,
    }
}

/// Runs `parse` on a script's integer reply unless the script refused the show.
fn reply<T>(
    show: &ShowId,
    what: &str,
    got: Vec<i64>,
    parse: impl FnOnce(&[i64]) -> Option<T>,
) -> Result<T> {
    if let Some(e) = refused(show, &got) {
        return Err(e);
    }
    parse(&got).ok_or_else(|| protocol(what, &got))
}

/// The five pace figures every script appends with `with_pace`.
fn pace(got: &[i64]) -> Option<Pace> {
    let [rate, flow, spread, open, full] = *got else {
        return None;
    };
    Some(pace_of(
        rate as u32,
        flow.max(0) as u64,
        spread.max(0) as u64,
        open == 1,
        full == 1,
    ))
}

fn meta(got: &[i64]) -> Option<Option<ShowMeta>> {
    match *got {
        [0] => Some(None),
        [1, epoch, open, lost] => Some(Some(ShowMeta {
            epoch: epoch as u64,
            open: open == 1,
            lost: lost == 1,
        })),
        _ => None,
    }
}

/// How often a subscription is PINGed, and how long its PONG may take.
pub const PUBSUB_PING_EVERY: Duration = Duration::from_secs(5);
pub const PUBSUB_PONG_WITHIN: Duration = Duration::from_secs(3);

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

fn order_key(id: Uuid) -> String {
    format!("wr:order:{id}")
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> QueueStore for RedisStore<C> {
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured> {
        let args = ScriptArgs {
            new_epoch: Some(new_epoch().to_string()),
            rate: settings.admit_per_second,
            cap: settings.max_active_buyers,
            window_ms: settings.arrival_window.map(|w| w.as_millis() as u64),
            health_url: settings.checkout_health_url,
            floor: settings.min_admit_per_second,
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&CONFIGURE, show, args).await?;
        let [created, epoch] = r[..] else {
            return Err(protocol("configure", &r));
        };
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
        Ok(Configured {
            created: created == 1,
            recovered: false,
            epoch: epoch as u64,
        })
    }

    async fn open(&self, show: &ShowId) -> Result<Configured> {
        let args = ScriptArgs {
            new_epoch: Some(new_epoch().to_string()),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&OPEN, show, args).await?;
        let [created, recovered, epoch] = r[..] else {
            return Err(protocol("open", &r));
        };
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
        let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
        Ok(Configured {
            created: created == 1,
            recovered: recovered == 1,
            epoch: epoch as u64,
        })
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        let r: Vec<i64> = self.run(&CLOSE, show, ScriptArgs::none()).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        reply(show, "close", r, |r| (r == [1]).then_some(()))
    }

    async fn delete(&self, show: &ShowId) -> Result<bool> {
        let tombstone = TOMBSTONE_TTL.as_millis() as u64;
        let args = ScriptArgs {
            tombstone_ms: Some(tombstone),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&DELETE, show, args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        let _: i64 = conn.srem(SHOWS, show.as_str()).await?;
        Ok(r == [1])
    }

    async fn show(&self, show: &ShowId) -> Result<Option<ShowMeta>> {
        let r: Vec<i64> = self.run(&META, show, ScriptArgs::none()).await?;
        meta(&r).ok_or_else(|| protocol("meta", &r))
    }

    async fn shows(&self) -> Result<Vec<ShowId>> {
        self.members(SHOWS).await
    }

    async fn open_shows(&self) -> Result<Vec<ShowId>> {
        self.members(OPEN_SHOWS).await
    }

    async fn check_show(&self, show: &ShowId, known_epoch: u64) -> Result<Option<ShowMeta>> {
        let args = ScriptArgs {
            known_epoch: Some(known_epoch.to_string()),
            new_epoch: Some(new_epoch().to_string()),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&CHECK, show, args).await?;
        let found = meta(&r).ok_or_else(|| protocol("check", &r))?;
        // Keep the indexes whole: a lost show stays listed, an open one stays served.
        let mut conn = self.conn.clone();
        if let Some(m) = found {
            let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
            if m.open {
                let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
            } else {
                let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
            }
        }
        Ok(found)
    }

    async fn join(&self, show: &ShowId) -> Result<Joined> {
        let ticket = Uuid::new_v4();
        let r: Vec<i64> = self.run(&JOIN, show, ScriptArgs::ticket(ticket)).await?;
        reply(show, "join", r, |r| {
            let [seq, position, version, epoch, ref rest @ ..] = *r else {
                return None;
            };
            Some(Joined {
                ticket,
                seq: seq as u64,
                status: Status {
                    state: TicketState::Waiting {
                        position: position as u64,
                    },
                    epoch: epoch as u64,
                    seq: Some(seq as u64),
                    pace: pace(rest)?,
                    version: version as u64,
                },
            })
        })
    }

    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        let r: Vec<i64> = self.run(&STATUS, show, ScriptArgs::ticket(ticket)).await?;
        reply(show, "status", r, |r| {
            let [kind, value, seq, version, epoch, ref rest @ ..] = *r else {
                return None;
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
            Some(Status {
                state,
                epoch: epoch as u64,
                seq,
                pace: pace(rest)?,
                version: version as u64,
            })
        })
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: Vec<i64> = self.run(&LEAVE, show, ScriptArgs::ticket(ticket)).await?;
        reply(show, "leave", r, |r| match *r {
            [live] => Some(live == 1),
            _ => None,
        })
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: Vec<i64> = self.run(&IS_ADMITTED, show, ScriptArgs::ticket(ticket)).await?;
        reply(show, "is_admitted", r, |r| match *r {
            [yes] => Some(yes == 1),
            _ => None,
        })
    }

    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: Vec<i64> = self.run(&TOUCH, show, ScriptArgs::ticket(ticket)).await?;
        reply(show, "touch", r, |r| match *r {
            [live] => Some(live == 1),
            _ => None,
        })
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let window = self.settings.arrival_window.as_millis() as u64;
        let args = ScriptArgs {
            fence: Some(fence),
            window_ms: Some(window),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&ADMIT, show, args).await?;
        match r[..] {
            [-1, fence] => Ok(AdmitOutcome::Fenced {
                fence: fence as u64,
            }),
            [-2, next_in] => Ok(AdmitOutcome::AlreadyThisSecond {
                next_in: Duration::from_millis(next_in.max(0) as u64),
            }),
            [-3] => Ok(AdmitOutcome::NotServed),
            [count, head, version, ..] if count >= 0 => Ok(AdmitOutcome::Admitted {
                count: count as u64,
                head: head as u64,
                version: version as u64,
            }),
            _ => Err(protocol("admit", &r)),
        }
    }

    async fn stats(&self, show: &ShowId) -> Result<ShowStats> {
        let r: Vec<i64> = self.run(&STATS, show, ScriptArgs::none()).await?;
        reply(show, "stats", r, |r| {
            let [
                queue_length,
                admitted_valid,
                rate,
                joined,
                cap,
                open,
                lost,
                window,
                released,
                configured,
                ref rest @ ..,
            ] = *r
            else {
                return None;
            };
            let pace = pace(rest)?;
            let window = if window < 0 {
                self.settings.arrival_window.as_secs()
            } else {
                window as u64 / 1000
            };
            Some(ShowStats {
                outflow_per_second: pace.flow_milli as f64 / 1000.0,
                paused: pace.paused,
                arrival_window_seconds: window,
                released_untaken: released as u64,
                effective_admit_per_second: rate as u32,
                show_id: show.to_string(),
                open: open == 1,
                lost: lost == 1,
                queue_length: queue_length as u64,
                admitted_valid: admitted_valid as u64,
                admit_per_second: configured as u32,
                max_active_buyers: cap as u32,
                joined: joined as u64,
            })
        })
    }

    async fn pace_control(&self, show: &ShowId) -> Result<PaceControl> {
        let r: Vec<String> = self.run(&PACE, show, ScriptArgs::none()).await?;
        match r.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["-404"] => Err(StoreError::NoSuchShow(show.clone())),
            ["-503"] => Err(StoreError::ShowLost(show.clone())),
            [url, floor, configured, current] => {
                let n = |v: &str| {
                    v.parse::<u32>()
                        .map_err(|_| StoreError::Protocol(format!("pace: {r:?}")))
                };
                Ok(PaceControl {
                    health_url: (!url.is_empty()).then(|| url.to_owned()),
                    floor: n(floor)?,
                    configured: n(configured)?,
                    current: n(current)?,
                })
            }
            _ => Err(StoreError::Protocol(format!("pace: {r:?}"))),
        }
    }

    async fn set_pace(&self, show: &ShowId, rate: u32) -> Result<bool> {
        let args = ScriptArgs {
            pace: Some(rate),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&PACE, show, args).await?;
        reply(show, "set_pace", r, |r| match *r {
            [changed] => Some(changed == 1),
            _ => None,
        })
    }

    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot> {
        let r: Vec<i64> = self.run(&SNAPSHOT, show, ScriptArgs::none()).await?;
        let [
            epoch,
            version,
            head,
            rate,
            flow,
            spread,
            open,
            full,
            ref left @ ..,
        ] = r[..]
        else {
            return Err(protocol("snapshot", &r));
        };
        Ok(ShowSnapshot {
            epoch: epoch as u64,
            version: version as u64,
            head: head as u64,
            left: left.iter().map(|&s| s as u64).collect(),
            pace: pace(&[rate, flow, spread, open, full]).expect("five figures"),
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

    async fn lease(&self, instance: &str, ttl: Duration, floor: u64) -> Result<Option<u64>> {
        let mut conn = self.conn.clone();
        let token: i64 = LEASE_SCRIPT
            .key(LEASE)
            .key(FENCE_COUNTER)
            .arg(instance)
            .arg(ttl.as_millis() as u64)
            .arg(floor)
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

    async fn limit_join(&self, client: &str, per_second: u32) -> Result<Option<Duration>> {
        let mut conn = self.conn.clone();
        let wait_ms: u64 = LIMIT_SCRIPT
            .key(format!("wr:limit:{client}"))
            .arg(per_second)
            .arg(per_second.saturating_mul(2))
            .invoke_async(&mut conn)
            .await?;
        Ok((wait_ms > 0).then(|| Duration::from_millis(wait_ms)))
    }

    async fn place_order(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome> {
        let mut conn = self.conn.clone();
        let created = Order::confirmed(order, wall_ms());
        let json =
            serde_json::to_string(&created).map_err(|e| StoreError::Protocol(e.to_string()))?;
        // The order first, then the step through the gate that claims the hold: a crash in
        // between leaves an order nobody references, never a hold pointing at nothing. The
        // order's key lives outside the show's slot (`GET /orders/{id}` knows no show).
        let _: () = conn.set(order_key(created.id), &json).await?;
        let args = ScriptArgs {
            hold: Some(order.hold_id.clone()),
            ticket: ticket.map(|t| t.to_string()),
            fingerprint: Some(order_fingerprint(order)),
            order: Some(created.id.to_string()),
            ..Default::default()
        };
        let r: Vec<String> = self.run(&ORDER, &order.show_id, args).await?;
        let outcome = match r.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["created", _] => return Ok(OrderOutcome::Created(created)),
            ["repeated", id] => match id.parse() {
                Ok(id) => self.get_order(id).await.and_then(|found| {
                    found.map(OrderOutcome::Repeated).ok_or_else(|| {
                        StoreError::Protocol(format!("hold points at missing order {id}"))
                    })
                }),
                Err(_) => Err(StoreError::Protocol(format!("hold points at {id}"))),
            },
            ["conflict", "hold"] => Ok(OrderOutcome::Conflict("hold")),
            ["conflict", _] => Ok(OrderOutcome::Conflict("admission")),
            ["forbidden"] => Ok(OrderOutcome::Forbidden),
            ["-404"] => Err(StoreError::NoSuchShow(order.show_id.clone())),
            ["-503"] => Err(StoreError::ShowLost(order.show_id.clone())),
            _ => Err(StoreError::Protocol(format!("order: {r:?}"))),
        };
        // Not placed: the order written ahead is nobody's.
        let _: i64 = conn.del(order_key(created.id)).await?;
        outcome
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

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// The valid show ids in a set, sorted.
    async fn members(&self, set: &str) -> Result<Vec<ShowId>> {
        let mut conn = self.conn.clone();
        let names: Vec<String> = conn.smembers(set).await?;
        // Only this program writes the set, but never trust a key to hold a valid id.
        let mut shows: Vec<ShowId> = names.iter().filter_map(|n| n.parse().ok()).collect();
        shows.sort();
        Ok(shows)
    }
}
