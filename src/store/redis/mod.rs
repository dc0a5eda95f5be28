//! The store's engine, which every concern of the store runs on: the Redis store, the
//! original's keys, each show's under one hash tag, changed only by the Lua scripts of the
//! concerns (run as a library of functions, or by SHA), over one reconnecting multiplexed
//! connection. It speaks the Redis protocol to whatever holds the keys: a Redis server, a
//! Redis Cluster, the primary Sentinel names, or the embedded store's in-process Redis.
//!
//! The same code runs on one Redis (`ConnectionManager`) and on a Redis Cluster
//! (`ClusterConnection`): every script touches the keys of one show, which share a slot, and
//! every other call touches one key. Events are published with plain `PUBLISH` on one
//! channel (a cluster broadcasts it to every node, so the hub subscribes to any one node), or,
//! on a cluster of Redis ≥ 7, with sharded `SPUBLISH` on a channel per show that only the
//! instances listening to that show hear (`sharded.rs`; see [`PubSub`]).
//!
//! This file holds the connection and the one way a per-show script is run (`run`: the
//! script's own typed arguments in, in a [`Call`]; one JSON object out, decoded by name with
//! `reply.rs`); beside it the library of every per-show script and `prelude.lua`
//! (`functions.rs`), gathered calls (`gather.rs`), confirmed writes (`durable.rs`), Sentinel
//! (`sentinel.rs`) and sharded pub/sub (`sharded.rs`). Each concern of the store (`queue/`,
//! `shows/`, `draw/`, …, beside this folder) holds its scripts, the arguments each takes, its
//! replies and the calls that run them. The engine imports none of their folders: what it
//! needs of them (the events it carries, the audit's bound) it names through the store's
//! face, and the library lists their script files.

mod durable;
mod functions;
mod gather;
pub(super) mod reply;
mod sentinel;
mod sharded;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Script};
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use self::durable::{Confirmer, Reload};
use self::functions::{LIBRARY, Loader};
pub use self::gather::WINDOW as GATHER_WINDOW;
pub use self::sentinel::{SentinelConnection, SentinelSettings};
use self::sharded::{Sharded, show_channel};
use super::embedded::Embedded;
use super::{Health, Result, StoreError, StoreSettings};
use crate::model::{RecordId, ShowId};

/// How a Redis Cluster carries events (`REDIS_PUBSUB`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PubSub {
    /// Sharded where every node runs Redis 7 or later, plain otherwise.
    #[default]
    Auto,
    /// `SPUBLISH`/`SSUBSCRIBE` per show (Redis ≥ 7).
    Sharded,
    /// `PUBLISH`/`SUBSCRIBE` on one channel, broadcast to every node.
    Plain,
}

/// The pub/sub channel every show's events go out on; every hub subscribes once.
pub(super) const EVENTS_CHANNEL: &str = "wr:events";
/// How often a subscription is PINGed, and how long its PONG may take.
pub(super) const PUBSUB_PING_EVERY: Duration = Duration::from_secs(5);
pub(super) const PUBSUB_PONG_WITHIN: Duration = Duration::from_secs(3);

pub(super) const OPEN_SHOWS: &str = "wr:open";
/// Every show an operator made (the open ones too).
pub(super) const SHOWS: &str = "wr:shows";
/// Scheduled shows not drawn yet, scored by their opening time (ms).
pub(super) const SCHEDULED: &str = "wr:scheduled";
/// Shows with a schedule of events, scored by when it next changes anything (ms): the
/// admitter applies each change when due, whatever the show's phase.
pub(super) const EVENTS_DUE: &str = "wr:events-due";

/// A per-show script, named after its file (`<name>.lua`, beside the Rust of its concern that
/// calls it; the name its reply's errors give).
pub(super) struct ShowScript {
    name: &'static str,
    script: Script,
}

impl ShowScript {
    /// The per-show script `name` of the library (`functions.rs`), to run by SHA where Redis
    /// has no Functions: `prelude.lua` (keys and arguments by name, shared helpers), then the
    /// script's own text as the body of a function whose table is answered as JSON.
    pub(super) fn named(name: &'static str) -> ShowScript {
        let body = functions::body(name)
            .unwrap_or_else(|| panic!("no per-show script {name} in the library"));
        ShowScript {
            name,
            script: Script::new(&format!(
                "{}bind(KEYS, ARGV)\nreturn cjson.encode((function()\n{body}\nend)())\n",
                functions::PRELUDE
            )),
        }
    }
}

/// A per-show script of the library by name, made on first use: `static JOIN:
/// LazyLock<ShowScript> = show_script!("join");`.
macro_rules! show_script {
    ($name:literal) => {
        ::std::sync::LazyLock::new(|| $crate::store::redis::ShowScript::named($name))
    };
}
// The concerns' files name it by path (`crate::store::redis::show_script`).
pub(super) use show_script;

/// The store's settings every per-show script reads, by name, as `prelude.lua` does (JSON in
/// `ARGV[1]`): the same text on every call from one store, so a library of functions decodes
/// it once.
#[derive(Debug, serde::Serialize)]
struct SharedArgs {
    /// Names `KEYS` in order.
    keys: [&'static str; SHOW_KEYS.len()],
    default_rate: u32,
    ttl_ms: u64,
    /// Whether `publish` in `prelude.lua` sends with `SPUBLISH`.
    sharded: bool,
    default_cap: u32,
    /// The arrival window of a show without its own (ms; 0: none).
    default_window_ms: u64,
    /// The most records a show's audit keeps.
    audit_max: u64,
    /// The most samples a show's report keeps.
    samples_max: u64,
}

impl SharedArgs {
    /// The JSON every call of a store with these settings sends.
    fn json(settings: &StoreSettings, sharded: bool) -> Arc<str> {
        let args = SharedArgs {
            keys: SHOW_KEYS,
            default_rate: settings.default_rate,
            ttl_ms: settings.admission_ttl.as_millis() as u64,
            sharded,
            default_cap: settings.max_active_buyers,
            default_window_ms: settings.arrival_window.as_millis() as u64,
            audit_max: super::AUDIT_MAX_RECORDS,
            samples_max: super::SAMPLES_MAX,
        };
        serde_json::to_string(&args)
            .expect("plain fields serialise")
            .into()
    }
}

/// One call of a per-show script, by name, as `prelude.lua` reads it (JSON in `ARGV[2]`):
/// the show's names, then the script's own arguments `A`, a struct of the concern's file
/// beside the script (one per script, [`NoArgs`] and [`TicketArgs`] for the plainest), each
/// field absent when not given. Epochs travel as text: Lua numbers would not hold every one
/// exactly.
#[derive(serde::Serialize)]
struct Call<'a, A> {
    show: &'a str,
    admitted_prefix: String,
    /// Where `publish` in `prelude.lua` sends the show's events.
    channel: String,
    #[serde(flatten)]
    own: &'a A,
}

/// The own arguments of a script that takes none.
#[derive(serde::Serialize)]
pub(super) struct NoArgs {}

/// The own arguments of a script about one ticket (`leave.lua`, `is_admitted.lua`,
/// `redeem.lua`).
#[derive(serde::Serialize)]
pub(super) struct TicketArgs {
    pub ticket: Uuid,
}

/// A show's keys, in the order [`SharedArgs`]' `keys` names them (`wr:{<show>}:<name>`).
const SHOW_KEYS: [&str; 26] = [
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
    "audit",
    // The tickets whose place a failover lost (marked by `mend.lua`, read by
    // `status.lua`).
    "lostfans",
    // The ticket each `Idempotency-Key` got, by key (`join.lua`).
    "idem",
    // How many mends a failover's losses took, and the lowest counter found (`mend.lua`).
    "mended",
    // Presence (`presence.lua`, `admit.lua`; docs/presence.md): when each fan with no live
    // stream was last seen; the fans passed over while away, and those of them back; the
    // instances reporting live streams, until when; the places released after the hold.
    "away",
    "parked",
    "back",
    "instances",
    "expired",
    // The "your turn" call (`notify.lua`, `admit.lua`): each ticket's channel (a Web Push
    // subscription or the operator's webhook), and those not yet called `soon`, by place.
    "calls",
    "callq",
];

/// The Redis-backed store, over one Redis or a Redis Cluster.
#[derive(Clone)]
pub struct RedisStore<C = ConnectionManager> {
    /// Where to subscribe to events, tried in turn: the server, or every cluster seed node;
    /// behind Sentinel, the current primary.
    pub(super) subscribers: Subscribers,
    /// Sharded pub/sub, on a cluster that has it.
    pub(super) sharded: Option<Arc<Sharded>>,
    pub(super) conn: C,
    pub(super) settings: StoreSettings,
    /// `REDIS_WAIT_REPLICAS`: every script's writes are confirmed by replicas (`WAIT`, one
    /// per batch: `durable.rs`) before it answers; `None`: not waited for.
    confirmer: Option<Arc<Confirmer>>,
    /// Where Redis has Functions (≥ 7), how to load the library (`functions.rs`) again when
    /// it is missing; `None`: scripts run by SHA.
    functions: Option<Loader>,
    /// [`SharedArgs`] as every call sends them.
    shared: Arc<str>,
    /// The calls waiting for their show's next call of their kind (group commit: joins and
    /// status reads, `gather.rs`).
    gatherings: Arc<gather::Gatherings>,
    /// The least time between the starts of two gathered calls of a busy show
    /// (`REDIS_GATHER_WINDOW`).
    gather_window: Duration,
    /// The embedded store ([`Embedded`]): one process, which shares its keys with no other
    /// instance and loses no write it answered, so it has no pass keys to share and nothing to
    /// mend after a failover.
    pub(super) in_process: bool,
    /// Every task the store runs (confirming writes, gathered calls, keeping subscriptions
    /// and the Sentinel watch alive), so that a server's stop waits for them.
    pub(super) tasks: TaskTracker,
}

/// How many replicas must confirm a write, and how long they may take.
#[derive(Clone, Copy, Debug, Default)]
pub struct Durability {
    /// Replicas that must confirm every script's writes (`REDIS_WAIT_REPLICAS`; 0: none).
    pub replicas: u32,
    /// How long they may take (`REDIS_WAIT_TIMEOUT`) before the call answers 503.
    pub timeout: Duration,
}

/// Where the feed subscribes.
#[derive(Clone)]
pub(super) enum Subscribers {
    /// These, tried in turn.
    Fixed(Vec<Client>),
    /// The primary the Sentinels name now.
    Sentinel(SentinelConnection),
    /// The embedded store's own pub/sub, in this process.
    InProcess(Embedded),
}

impl Subscribers {
    pub(super) fn clients(&self) -> Vec<Client> {
        match self {
            Subscribers::Fixed(clients) => clients.clone(),
            Subscribers::Sentinel(conn) => vec![conn.client()],
            Subscribers::InProcess(_) => Vec::new(),
        }
    }
}

impl RedisStore<ConnectionManager> {
    /// Connects to `url` (`redis://host:port/db`); fails if Redis does not answer.
    pub async fn connect(url: &str, settings: StoreSettings) -> Result<Self> {
        let client = Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(3);
        let mut conn = ConnectionManager::new_with_config(client.clone(), config).await?;
        let runs_7 = runs_7(&mut conn).await?;
        let functions = load_library(functions::loader(conn.clone()), runs_7).await?;
        Ok(RedisStore::assemble(
            conn,
            settings,
            Subscribers::Fixed(vec![client]),
            functions,
            None,
            TaskTracker::new(),
        ))
    }
}

/// The gather window of the embedded store's busy shows: a call costs the same in-process
/// whatever it carries (its fixed part some 25 µs of Lua and JSON against under 3 µs a join),
/// and the process pays it itself, so it waits a little longer for company than on Redis.
const EMBEDDED_GATHER_WINDOW: Duration = Duration::from_millis(5);

impl RedisStore<Embedded> {
    /// The embedded store: the same store over an in-process Redis ([`Embedded`]), which runs
    /// the same scripts. One instance, nothing to install; a restart forgets everything.
    pub fn new(settings: StoreSettings) -> Self {
        let conn = Embedded::new();
        // Loaded now, as a connecting store loads it; were it refused (it never is: the text
        // is this program's), the first call would load it again and answer the error.
        if let redis::Value::ServerError(e) = conn.execute(&LIBRARY.load()) {
            tracing::error!(error = %e, "the embedded store refused the library");
        }
        let (subscribers, functions) = (
            Subscribers::InProcess(conn.clone()),
            Some(functions::loader(conn.clone())),
        );
        RedisStore {
            gather_window: EMBEDDED_GATHER_WINDOW,
            in_process: true,
            ..RedisStore::assemble(
                conn,
                settings,
                subscribers,
                functions,
                None,
                TaskTracker::new(),
            )
        }
    }
}

impl RedisStore<SentinelConnection> {
    /// Connects to the primary the Sentinels of `sentinel` name, and follows it through
    /// failovers; `on_failover` hears the new primary's address each time.
    pub async fn connect_sentinel(
        sentinel: &SentinelSettings,
        settings: StoreSettings,
        on_failover: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<Self> {
        let tasks = TaskTracker::new();
        let mut conn = SentinelConnection::connect(sentinel, on_failover, &tasks).await?;
        let runs_7 = runs_7(&mut conn).await?;
        let functions = load_library(functions::loader(conn.clone()), runs_7).await?;
        let subscribers = Subscribers::Sentinel(conn.clone());
        Ok(RedisStore::assemble(
            conn,
            settings,
            subscribers,
            functions,
            None,
            tasks,
        ))
    }
}

impl RedisStore<ClusterConnection> {
    /// Connects to a Redis Cluster through any of its `nodes` (`redis://host:port` each),
    /// with sharded pub/sub if every node has it.
    pub async fn connect_cluster(nodes: &[String], settings: StoreSettings) -> Result<Self> {
        Self::connect_cluster_with(nodes, settings, PubSub::Auto).await
    }

    /// Connects to a Redis Cluster, carrying events as `pubsub` says.
    pub async fn connect_cluster_with(
        nodes: &[String],
        settings: StoreSettings,
        pubsub: PubSub,
    ) -> Result<Self> {
        let cluster = ClusterClient::builder(nodes.to_vec())
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(2))
            .build()?;
        let mut conn = cluster.get_async_connection().await?;
        let runs_7 = every_primary_runs_7(&mut conn).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot tell the nodes' versions; taken as older than 7");
            false
        });
        let sharded = match pubsub {
            PubSub::Sharded => true,
            PubSub::Plain => false,
            PubSub::Auto => runs_7,
        };
        tracing::info!(
            sharded,
            "Redis Cluster events: {}",
            if sharded {
                "SPUBLISH per show"
            } else {
                "PUBLISH to every node"
            }
        );
        let subscribers = nodes
            .iter()
            .map(|n| Client::open(n.as_str()))
            .collect::<std::result::Result<_, _>>()?;
        let tasks = TaskTracker::new();
        let functions = load_library(functions::cluster_loader(conn.clone()), runs_7).await?;
        let sharded = sharded.then(|| Arc::new(Sharded::new(nodes, &tasks)));
        Ok(RedisStore::assemble(
            conn,
            settings,
            Subscribers::Fixed(subscribers),
            functions,
            sharded,
            tasks,
        ))
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// A store over `conn`, its events heard through `subscribers`, its scripts loaded by
    /// `functions` (`None`: by SHA), on sharded pub/sub when `sharded`, its tasks on `tasks`;
    /// nothing gathered or confirmed yet.
    fn assemble(
        conn: C,
        settings: StoreSettings,
        subscribers: Subscribers,
        functions: Option<Loader>,
        sharded: Option<Arc<Sharded>>,
        tasks: TaskTracker,
    ) -> Self {
        RedisStore {
            shared: SharedArgs::json(&settings, sharded.is_some()),
            subscribers,
            sharded,
            functions,
            conn,
            settings,
            confirmer: None,
            gatherings: Arc::default(),
            gather_window: gather::WINDOW,
            in_process: false,
            tasks,
        }
    }

    /// Runs a per-show script with the shared key and argument layout of `prelude.lua`, and
    /// decodes its reply (a refusal of the show is its error).
    pub(super) async fn run<A: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        script: &ShowScript,
        show: &ShowId,
        own: &A,
    ) -> Result<T> {
        let text = self.run_script(script, show, own).await?;
        reply::decode(show, script.name, &text)
    }

    /// Runs a per-show script; its reply's text. A library or script Redis no longer holds
    /// (a restart, a failover) is loaded again, and the call made again, once.
    async fn run_script<A: serde::Serialize>(
        &self,
        script: &ShowScript,
        show: &ShowId,
        own: &A,
    ) -> Result<String> {
        let tag = format!("wr:{{{show}}}");
        let keys: Vec<String> = SHOW_KEYS.iter().map(|k| format!("{tag}:{k}")).collect();
        let args = Call {
            show: show.as_str(),
            admitted_prefix: format!("{tag}:admitted:"),
            channel: match self.sharded {
                Some(_) => show_channel(show),
                None => EVENTS_CHANNEL.to_owned(),
            },
            own,
        };
        let own = serde_json::to_string(&args).map_err(|e| StoreError::Protocol(e.to_string()))?;
        let (cmd, reload) = match &self.functions {
            Some(load) => (
                LIBRARY.call(script.name, &keys, &self.shared, &own),
                Reload::Library(load.clone()),
            ),
            None => {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(script.script.get_hash()).arg(keys.len());
                for key in &keys {
                    cmd.arg(key);
                }
                cmd.arg(&*self.shared).arg(&own);
                (cmd, Reload::Script(script.script.clone()))
            }
        };
        if let Some(confirmer) = &self.confirmer {
            let value = confirmer.send(reload, cmd).await?;
            return redis::from_redis_value::<String>(value)
                .map_err(|e| StoreError::Redis(e.into()));
        }
        let mut conn = self.conn.clone();
        match cmd.query_async::<String>(&mut conn).await {
            Err(e) if durable::is_missing(&e) => {
                reload.load(&mut conn).await?;
                Ok(cmd.query_async(&mut conn).await?)
            }
            answered => Ok(answered?),
        }
    }

    /// Runs every per-show script by SHA from now on, as on a Redis older than 7 (which has no
    /// Functions): for tests and comparisons on a newer one.
    pub fn by_sha(mut self) -> Self {
        self.functions = None;
        self.gathering_its_own()
    }

    /// Spaces the calls of a busy show's gathered joins, and of its gathered status reads, at
    /// least `window` apart (`REDIS_GATHER_WINDOW`; zero: each as soon as the previous one is
    /// answered), so each carries more (`gather.rs`).
    pub fn with_gather_window(mut self, window: Duration) -> Self {
        self.gather_window = window;
        self.gathering_its_own()
    }

    /// Confirms every write from now on with `WAIT` on this many replicas.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.confirmer = (durability.replicas > 0)
            .then(|| Confirmer::start(self.conn.clone(), durability, &self.tasks));
        self.gathering_its_own()
    }

    /// A store set otherwise gathers its calls apart from the store it was made from: a show's
    /// gathered calls are made by the store whose caller started them (its scripts, its
    /// confirmer, its window), and the task making them lingers for the window, so callers of
    /// the two must not share it.
    fn gathering_its_own(mut self) -> Self {
        self.gatherings = Arc::default();
        self
    }

    pub(super) fn ttl_ms(&self) -> u64 {
        self.settings.admission_ttl.as_millis() as u64
    }
}

/// Loads the library where Redis has Functions (`runs_7`), and answers how to load it again;
/// `None` on an older Redis, whose scripts run by SHA.
async fn load_library(load: Loader, runs_7: bool) -> Result<Option<Loader>> {
    if !runs_7 {
        tracing::warn!("Redis older than 7 (no Functions): every script runs by SHA");
        return Ok(None);
    }
    load().await?;
    Ok(Some(load))
}

/// Whether the server runs Redis 7 or later (Functions).
async fn runs_7<C: ConnectionLike + Send>(conn: &mut C) -> Result<bool> {
    let info: String = redis::cmd("INFO").arg("server").query_async(conn).await?;
    Ok(major_version(&info).is_some_and(|v| v >= 7))
}

/// Whether every master runs Redis 7 or later (Functions; `SPUBLISH` and `SSUBSCRIBE`).
async fn every_primary_runs_7(conn: &mut ClusterConnection) -> Result<bool> {
    use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
    let mut info = redis::cmd("INFO");
    info.arg("server");
    let routing =
        RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None::<ResponsePolicy>));
    let answers = conn.route_command(info, routing).await?;
    // One INFO text per node (a map of node to text, or the text itself from one node).
    let texts: Vec<String> = match &answers {
        redis::Value::Map(pairs) => pairs
            .iter()
            .filter_map(|(_, v)| redis::from_redis_value_ref(v).ok())
            .collect(),
        other => redis::from_redis_value_ref::<String>(other)
            .into_iter()
            .collect(),
    };
    Ok(!texts.is_empty()
        && texts
            .iter()
            .all(|t| major_version(t).is_some_and(|v| v >= 7)))
}

/// The major version in an `INFO server` text.
fn major_version(info: &str) -> Option<u32> {
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))?;
    version.trim().split('.').next()?.parse().ok()
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Health for RedisStore<C> {
    async fn ping(&self) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: String = redis::cmd("PING").query_async(&mut conn).await?;
        Ok(())
    }

    fn tasks(&self) -> TaskTracker {
        self.tasks.clone()
    }
}

/// An entry of a stream as `XRANGE` answers it: its id, and its fields and values.
pub(in crate::store) type StreamEntry = (String, Vec<(String, String)>);

/// A page of one of a show's streams (its audit, its samples): up to `limit` entries after the
/// entry `after` (from the first when `None`), oldest first.
pub(in crate::store) async fn stream_page<C: ConnectionLike + Clone>(
    conn: &C,
    key: &str,
    after: Option<RecordId>,
    limit: usize,
) -> Result<Vec<StreamEntry>> {
    // From the least id after `after` (inclusive): XRANGE refuses an exclusive start at the
    // last id there can be, and a cursor always has a successor.
    let start = after
        .and_then(RecordId::next)
        .map_or_else(|| "-".to_owned(), |from| from.to_string());
    let mut conn = conn.clone();
    Ok(redis::cmd("XRANGE")
        .arg(key)
        .arg(start)
        .arg("+")
        .arg("COUNT")
        .arg(limit)
        .query_async(&mut conn)
        .await?)
}
