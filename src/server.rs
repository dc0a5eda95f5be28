//! Wiring: the store, the hub, the admitter and the HTTP server, started and stopped together.

use std::net::SocketAddr;
use std::sync::Arc;

use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::Clock;
use crate::config::Config;
use crate::http::serve::listener::{self, ConnectionLimits};
use crate::http::{
    App, AppState, Gateway, Life, Limits, Passes, Shed, Site, StreamLimits, TokenGuesses,
};
use crate::hub::{Hub, HubParts};
use crate::metrics::Metrics;
use crate::notify::{Notifier, NotifySettings};
use crate::pass::{CHALLENGE_TTL_SECONDS, Keyring, PassCache};
use crate::store::{
    Durability, KeySchedule, MemoryStore, QueueStore, RedisStore, SentinelSettings, StoreSettings,
};
use crate::watchdog::Watchdog;
use crate::{admitter, demo};

/// The shortest operator token accepted: long enough that guessing it, even at the
/// unthrottled rate, takes longer than any on-sale lasts.
pub const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// A built server, bound and ready to serve.
pub struct Application {
    listener: TcpListener,
    state: AppState,
    limits: ConnectionLimits,
    instance: String,
    demo: bool,
    /// The pass keys shared through the store (as `PASS_KEYS` spells them, the signing one
    /// first) and their rotation, read again now and then.
    shared_key: Option<(String, KeySchedule)>,
}

impl Application {
    /// Connects the store and binds the port; nothing runs until [`Application::run_until_stopped`].
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        // Before anything connects: a bad key stops the start, naming the entry, never its
        // secret.
        let configured_keys = config
            .pass_keys
            .as_deref()
            .map(str::parse::<Keyring>)
            .transpose()?;
        let settings = StoreSettings {
            default_rate: config.admit_per_second,
            admission_ttl: config.admission_ttl,
            max_active_buyers: config.max_active_buyers,
            arrival_window: config.arrival_window,
        };
        let metrics = Arc::new(Metrics::default());
        let store = connect_store(&config, settings, &metrics).await?;
        let admin_token = admin_token(&config)?;
        let (passes, shared_key) = pass_keys(&config, configured_keys, store.as_ref()).await?;
        tracing::info!(kids = ?passes.kids(), "admission pass keys (the first signs)");
        // Every task of the server is tracked here and ends with this token.
        let tasks = TaskTracker::new();
        let shutdown = CancellationToken::new();
        let pass_cache = Arc::new(PassCache::new(config.admission_ttl.as_secs()));
        let hub = Hub::new(
            store.clone(),
            store.clone(),
            metrics.clone(),
            HubParts {
                pass_cache: pass_cache.clone(),
                push_front: config.push_front,
                tasks: tasks.clone(),
                shutdown: shutdown.clone(),
            },
        );
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("cannot listen on {}", config.bind))?;
        let gateway = gateway(&config, store.as_ref()).await?;
        let shed = Shed::new(config.max_store_calls, metrics.clone());
        let notifier = Notifier::new(
            passes.clone(),
            NotifySettings::default(),
            &tasks,
            shutdown.clone(),
        );
        let state = AppState::new(App {
            notifier,
            watchdog: Watchdog::new(store.clone(), hub.clone(), metrics.clone()),
            hub,
            store,
            metrics,
            passes: Passes {
                keys: passes,
                cache: pass_cache,
            },
            limits: Limits {
                join_rate: config.join_rate_limit,
                streams: StreamLimits::new(config.max_streams_per_client),
                token_guesses: TokenGuesses::new(config.operator_token_guesses),
                bypass_guesses: TokenGuesses::new(config.operator_token_guesses),
                code_guesses: TokenGuesses::new(config.operator_token_guesses),
                shed,
            },
            site: Site {
                code_key: crate::model::CodeKey::new(
                    config.access_code_key.as_deref(),
                    &admin_token,
                ),
                admin_token,
                public_origin: config.public_url.clone(),
                trusted_proxy_hops: config.trusted_proxy_hops,
                gateway,
            },
            life: Life { shutdown, tasks },
            pages: Default::default(),
        });
        let limits = connection_limits(&config);
        let instance = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
        Ok(Application {
            listener,
            state,
            limits,
            instance,
            demo: config.demo,
            shared_key,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The operator token in force.
    pub fn admin_token(&self) -> &str {
        &self.state.site.admin_token
    }

    /// Serves until `shutdown` is cancelled, then stops the admitter (handing its lease
    /// over), ends every stream and waits for the tasks.
    pub async fn run_until_stopped(self, shutdown: CancellationToken) -> anyhow::Result<()> {
        let state = self.state;
        let tasks = state.life.tasks.clone();
        let store_tasks = state.store.tasks();
        let stop = state.life.shutdown.clone();
        tasks.spawn(state.hub.clone().run());
        // Learn the shows before serving, so a store that already forgot one is noticed.
        if let Err(e) = state.watchdog.check().await {
            tracing::warn!(error = %e, "first show check failed");
        }
        tasks.spawn(state.watchdog.clone().run(stop.clone()));
        // Every instance counts its live fans where the console sums them.
        tasks.spawn(crate::http::report_fans(
            state.clone(),
            self.instance.clone(),
        ));
        tasks.spawn(admitter::run(
            state.store.clone(),
            Some(state.notifier.clone()),
            self.instance,
            state.metrics.clone(),
            Clock::Wall,
            stop.clone(),
        ));
        if self.demo {
            tasks.spawn(demo::run(state.store.clone(), stop.clone()));
        }
        if let Some((keys, schedule)) = self.shared_key {
            tasks.spawn(follow_pass_keys(
                state.store.clone(),
                state.passes.keys.clone(),
                keys,
                schedule,
                stop.clone(),
            ));
        }
        tracing::info!(addr = %self.listener.local_addr()?, "waiting room listening");
        let signal = async {
            shutdown.cancelled().await;
            tracing::info!("shutting down");
            // Streams and the listener watch this token: streams end, the server drains.
            stop.cancel();
        };
        tokio::join!(signal, listener::serve(self.listener, state, self.limits));
        tasks.close();
        tasks.wait().await;
        // The store's own tasks end once the last handle on it is gone (every task above
        // held one): its gathered calls, its write confirmations, its keep-alives.
        store_tasks.close();
        if tokio::time::timeout(crate::http::serve::DRAIN_GRACE, store_tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("the store's tasks did not end in time");
        }
        Ok(())
    }
}

/// The Sentinels and the primary's name, from `REDIS_SENTINELS` (`host:port,…`).
fn sentinel_settings(config: &Config) -> anyhow::Result<SentinelSettings> {
    let list = config.redis_sentinels.as_deref().unwrap_or_default();
    let sentinels = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (host, port) = s
                .rsplit_once(':')
                .ok_or_else(|| anyhow::anyhow!("REDIS_SENTINELS: {s} is not host:port"))?;
            let port: u16 = port
                .parse()
                .map_err(|_| anyhow::anyhow!("REDIS_SENTINELS: {s} is not host:port"))?;
            Ok((host.to_owned(), port))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if sentinels.is_empty() {
        anyhow::bail!("REDIS_SENTINELS names no Sentinel");
    }
    Ok(SentinelSettings {
        sentinels,
        master: config.redis_sentinel_master.clone().unwrap_or_default(),
        password: config.redis_password.clone(),
        sentinel_password: config.redis_sentinel_password.clone(),
    })
}

/// `url` with any password in it replaced by `***`, for an error message.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// How often instances read the shared pass keys: every 10 s, or a quarter of the rotation
/// period when that is shorter. A new key signs only after three of these.
fn key_schedule(config: &Config) -> KeySchedule {
    let every = config.pass_key_rotation;
    let read = (every / 4).min(Duration::from_secs(10));
    KeySchedule {
        rotate_every: every,
        // The longest a pass (the admission) or a challenge lives, and a minute more.
        keep_for: config
            .admission_ttl
            .max(Duration::from_secs(CHALLENGE_TTL_SECONDS))
            + Duration::from_secs(60),
        // Every instance has read a new key three times, and an edge caching the JWKS as
        // long as it may has fetched it, before the key signs (a rotation every few seconds,
        // as tests run it, shortens the second).
        settle: read * 3
            + Duration::from_secs(crate::protocol::JWKS_MAX_AGE_SECONDS).min(every / 8),
        read_every: read,
    }
}

/// Reads the shared pass keys every `read_every`: rotates them when due (whichever instance
/// asks first adds the new key), puts this instance's key back should the store have
/// forgotten them all (a restart without persistence), and puts what the store holds in
/// force here.
async fn follow_pass_keys(
    store: Arc<dyn QueueStore>,
    passes: Arc<Keyring>,
    mut keys: String,
    schedule: KeySchedule,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(schedule.read_every) => {}
            () = stop.cancelled() => return,
        }
        let ours = keys.split(',').next().unwrap_or_default().to_owned();
        match store
            .pass_keys(&ours, &Keyring::new_shared_key(), schedule)
            .await
        {
            Ok(Some(kept)) => match kept.parse::<Keyring>() {
                Ok(ring) => {
                    if passes.replace(ring) {
                        tracing::info!(kids = ?passes.kids(), "pass keys rotated (the first signs)");
                    }
                    keys = kept;
                }
                Err(e) => tracing::error!(error = %e, "the shared pass keys are not keys"),
            },
            Ok(None) => return,
            Err(e) => tracing::debug!(error = %e, "could not read the shared pass keys"),
        }
    }
}

/// A server serving in a background task, as tests and embedders run it.
pub struct Running {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Application {
    /// Serves in a background task until [`Running::stop`] (or the token) says otherwise.
    pub fn spawn(self) -> Running {
        let addr = self.local_addr();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(self.run_until_stopped(shutdown.clone()));
        Running {
            addr,
            shutdown,
            task,
        }
    }
}

impl Running {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The token that stops the server when cancelled (say, from a `Drop`).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Stops the server gracefully and waits until it has.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.task.await.context("the server task panicked")?
    }
}

/// Builds and serves `config` until Ctrl-C or SIGTERM.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let app = Application::build(config).await?;
    let shutdown = CancellationToken::new();
    let served = app.run_until_stopped(shutdown.clone());
    tokio::pin!(served);
    tokio::select! {
        result = &mut served => return result,
        () = shutdown_signal() => shutdown.cancel(),
    }
    served.await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}

/// The store `config` names: Redis through Sentinel, a Redis Cluster, one Redis, or the
/// embedded store.
async fn connect_store(
    config: &Config,
    settings: StoreSettings,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<Arc<dyn QueueStore>> {
    let durability = Durability {
        replicas: config.redis_wait_replicas,
        timeout: config.redis_wait_timeout,
    };
    if durability.replicas > 0
        && (config.redis_cluster || config.redis_url.is_none() && config.redis_sentinels.is_none())
    {
        anyhow::bail!(
            "REDIS_WAIT_REPLICAS needs one Redis with replicas (REDIS_URL or REDIS_SENTINELS), not a cluster or the embedded store"
        );
    }
    let store: Arc<dyn QueueStore> = match &config.redis_url {
        None if config.redis_sentinels.is_some() => {
            let sentinel = sentinel_settings(config)?;
            let failovers = metrics.clone();
            Arc::new(
                RedisStore::connect_sentinel(&sentinel, settings, move |_| {
                    failovers.redis_failover()
                })
                .await
                .with_context(|| {
                    format!(
                        "cannot reach the primary {} through the Sentinels {:?}",
                        sentinel.master, sentinel.sentinels
                    )
                })?
                .with_durability(durability)
                .with_gather_window(config.redis_gather_window),
            )
        }
        Some(urls) if config.redis_cluster => {
            let nodes: Vec<String> = urls.split(',').map(|u| u.trim().to_owned()).collect();
            Arc::new(
                RedisStore::connect_cluster_with(&nodes, settings, config.redis_pubsub)
                    .await
                    .with_context(|| format!("cannot reach the Redis Cluster at {urls}"))?
                    .with_gather_window(config.redis_gather_window),
            )
        }
        Some(url) => Arc::new(
            RedisStore::connect(url, settings)
                .await
                .with_context(|| format!("cannot reach Redis at {}", redacted(url)))?
                .with_durability(durability)
                .with_gather_window(config.redis_gather_window),
        ),
        None => {
            tracing::info!(
                "no REDIS_URL: embedded store (one instance, forgets everything on restart)"
            );
            Arc::new(MemoryStore::new(settings))
        }
    };
    Ok(store)
}

/// The operator token: `ADMIN_TOKEN`, refused when short, or a random one printed once.
fn admin_token(config: &Config) -> anyhow::Result<Arc<str>> {
    let token: Arc<str> = match &config.admin_token {
        Some(t) if !t.trim().is_empty() && t.trim().len() < MIN_ADMIN_TOKEN_LEN => {
            anyhow::bail!(
                "ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_LEN} characters: it guards every \
             operator call (leave it unset and the server makes a random one)"
            )
        }
        Some(t) if !t.trim().is_empty() => t.trim().into(),
        _ => {
            let token = uuid::Uuid::new_v4().simple().to_string();
            // Printed once, on purpose outside the log filter: the operator needs it.
            println!("ADMIN_TOKEN not set; operator token for this run: {token}");
            token.into()
        }
    };
    Ok(token)
}

/// The pass keys: `PASS_KEYS`, else the key every instance on the store shares (and how it
/// rotates), else one of this instance's own.
async fn pass_keys(
    config: &Config,
    configured: Option<Keyring>,
    store: &dyn QueueStore,
) -> anyhow::Result<(Arc<Keyring>, Option<(String, KeySchedule)>)> {
    let mut shared_key = None;
    let passes = Arc::new(match configured {
        Some(keys) => keys,
        None => {
            // Ours is kept only if the store keeps none yet; every instance signs with the
            // one kept.
            let schedule = key_schedule(config);
            let (ours, fresh) = (Keyring::new_shared_key(), Keyring::new_shared_key());
            match store.pass_keys(&ours, &fresh, schedule).await? {
                // Whichever instance came first made the key every other one reads.
                Some(kept) => {
                    let keys: Keyring = kept.parse().map_err(|e| {
                        anyhow::anyhow!("the pass key kept in the store is not one: {e}")
                    })?;
                    tracing::info!(
                        "PASS_KEYS not set: passes and join challenges are signed with the \
                         key every instance on this store shares"
                    );
                    shared_key = Some((kept, schedule));
                    keys
                }
                None => {
                    tracing::warn!(
                        "PASS_KEYS not set: admission passes and join challenges are signed \
                         with a random key of this instance only (the embedded store shares \
                         nothing); edges checking passes need PASS_KEYS"
                    );
                    Keyring::generate()
                }
            }
        }
    });
    Ok((passes, shared_key))
}

/// Gateway mode, when `UPSTREAM_URL` is set; the shows it guards are listened to.
async fn gateway(config: &Config, store: &dyn QueueStore) -> anyhow::Result<Option<Arc<Gateway>>> {
    Ok(match &config.upstream_url {
        Some(url) => {
            let g = Gateway::new(
                url,
                config.protect.as_deref().unwrap_or(""),
                config.protect_case,
                config.upstream_timeout,
            )?;
            tracing::info!(upstream = %url, "gateway mode: other requests go on to the origin");
            // The hub hears every admission of a guarded show that ends, so that its
            // passes are refused here at once (on a sharded cluster, only shows listened
            // to are heard).
            for show in g.shows() {
                store.listen(show).await?;
            }
            Some(Arc::new(g))
        }
        None => None,
    })
}

/// The bounds on connections `config` sets.
fn connection_limits(config: &Config) -> ConnectionLimits {
    ConnectionLimits {
        header_timeout: config.header_timeout,
        write_idle: config.upstream_idle_timeout,
        threads: usize::from(config.serve_threads),
        max_connections: config.max_connections as usize,
        reserve_connections: config.reserve_connections as usize,
        max_per_client: if config.trusted_proxy_hops > 0 {
            0
        } else {
            config
                .max_connections_per_client
                .unwrap_or(config.max_connections / 2) as usize
        },
    }
}
