//! Redis behind Sentinel (`REDIS_SENTINELS`, `REDIS_SENTINEL_MASTER`): [`SentinelConnection`]
//! is a connection to whichever node the Sentinels say is the primary. A command that finds
//! the primary gone (the connection refused or dropped, a timeout) or demoted (`READONLY`:
//! the old primary came back as a replica) asks the Sentinels again and reconnects to the new
//! primary; a watcher asks them every second as well, so a failover is followed even while
//! nothing is sent. The command that met the failover fails (its caller answers 503 and the
//! client retries); the next one goes to the new primary. The pub/sub feed subscribes to the
//! current primary each time it (re)subscribes.
//!
//! Once a command met the primary gone, the connection is no longer trusted: nothing is sent
//! on it (every command fails at once, 503) until the Sentinels name a node that says it is
//! the primary (`ROLE`), the same address included. The connection would otherwise reconnect
//! by itself to the old address, where the dead primary may be back as an empty replica, or a
//! paused one demoted: its reads would answer from nothing or from the past (the chaos run saw
//! fans told `unknown` whose places were kept).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{Client, Cmd, ConnectionAddr, ErrorKind, Pipeline, RedisError, RedisFuture, Value};
use tokio_util::task::TaskTracker;

/// How often the watcher asks the Sentinels where the primary is.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// How to reach the Sentinels and the primary they name.
#[derive(Clone)]
pub struct SentinelSettings {
    /// `host:port` of each Sentinel.
    pub sentinels: Vec<(String, u16)>,
    /// The primary's name in the Sentinels' configuration.
    pub master: String,
    /// The data nodes' password (`requirepass`), if any.
    pub password: Option<String>,
    /// The Sentinels' own password, if any.
    pub sentinel_password: Option<String>,
}

impl std::fmt::Debug for SentinelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never a password.
        f.debug_struct("SentinelSettings")
            .field("sentinels", &self.sentinels)
            .field("master", &self.master)
            .finish_non_exhaustive()
    }
}

/// A connection to the current primary, following failovers. Cheap to clone; every clone
/// follows the same primary.
#[derive(Clone)]
pub struct SentinelConnection {
    inner: Arc<Inner>,
}

struct Inner {
    sentinel: tokio::sync::Mutex<SentinelClient>,
    current: Mutex<Primary>,
    /// False from a command that found the primary gone until a node is confirmed primary.
    trusted: std::sync::atomic::AtomicBool,
    /// Called with the new primary's address on every failover followed.
    on_failover: Box<dyn Fn(&str) + Send + Sync>,
}

#[derive(Clone)]
struct Primary {
    addr: String,
    client: Client,
    conn: ConnectionManager,
}

impl SentinelConnection {
    /// Asks the Sentinels for the primary and connects to it; fails if neither answers.
    pub async fn connect(
        settings: &SentinelSettings,
        on_failover: impl Fn(&str) + Send + Sync + 'static,
        tasks: &TaskTracker,
    ) -> Result<SentinelConnection, RedisError> {
        let addrs = settings
            .sentinels
            .iter()
            .map(|(host, port)| ConnectionAddr::Tcp(host.clone(), *port));
        let mut builder =
            SentinelClientBuilder::new(addrs, &settings.master, SentinelServerType::Master)?;
        if let Some(p) = &settings.password {
            builder = builder.set_client_to_redis_password(p);
        }
        if let Some(p) = &settings.sentinel_password {
            builder = builder.set_client_to_sentinel_password(p);
        }
        let mut sentinel = builder.build()?;
        let primary = resolve(&mut sentinel).await?;
        tracing::info!(primary = %primary.addr, master = %settings.master, "Redis primary found through Sentinel");
        let connection = SentinelConnection {
            inner: Arc::new(Inner {
                sentinel: tokio::sync::Mutex::new(sentinel),
                current: Mutex::new(primary),
                trusted: std::sync::atomic::AtomicBool::new(true),
                on_failover: Box::new(on_failover),
            }),
        };
        tasks.spawn(watch(Arc::downgrade(&connection.inner)));
        Ok(connection)
    }

    fn primary(&self) -> Primary {
        self.inner
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A client of the current primary (for a pub/sub connection).
    pub fn client(&self) -> Client {
        self.primary().client
    }

    /// Asks the Sentinels where the primary is, and reconnects when it moved.
    async fn refresh(inner: &Inner) {
        let mut sentinel = inner.sentinel.lock().await;
        let known = inner
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .addr
            .clone();
        let trusted = inner.trusted.load(std::sync::atomic::Ordering::SeqCst);
        match resolve(&mut sentinel).await {
            Ok(primary) if primary.addr != known => {
                tracing::warn!(from = %known, to = %primary.addr, "Redis failover: following the new primary");
                (inner.on_failover)(&primary.addr);
                *inner
                    .current
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = primary;
                inner
                    .trusted
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Ok(primary) if !trusted => {
                // The same node, confirmed primary again: a fresh connection to it.
                tracing::info!(primary = %primary.addr, "Redis primary confirmed again");
                *inner
                    .current
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = primary;
                inner
                    .trusted
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "the Sentinels name no primary yet"),
        }
    }
}

/// The primary the Sentinels name now, connected, once it says it is one: Sentinels learn a
/// failover one after another, and one that has not yet may still name the old primary,
/// which may be back as a replica (with nothing yet, while it syncs).
async fn resolve(sentinel: &mut SentinelClient) -> Result<Primary, RedisError> {
    let client = sentinel.async_get_client().await?;
    let addr = client.get_connection_info().addr().to_string();
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)))
        .set_number_of_retries(1);
    let mut conn = ConnectionManager::new_with_config(client.clone(), config).await?;
    let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
    match role.first() {
        Some(Value::BulkString(r)) if r.as_slice() == b"master" => {}
        Some(Value::SimpleString(r)) if r == "master" => {}
        _ => {
            return Err(RedisError::from((
                ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
                "the node a Sentinel names is not a primary (yet)",
            )));
        }
    }
    Ok(Primary { addr, client, conn })
}

/// Asks the Sentinels every [`WATCH_EVERY`] until the connection is dropped.
async fn watch(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let Some(inner) = inner.upgrade() else { return };
        SentinelConnection::refresh(&inner).await;
    }
}

/// Whether `e` says the node we talk to is no longer the primary, or gone.
fn primary_lost(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.is_timeout()
        || matches!(
            e.kind(),
            ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
                | ErrorKind::Server(redis::ServerErrorKind::MasterDown)
        )
}

impl SentinelConnection {
    /// The primary's connection if it is trusted; else an error at once (the caller answers
    /// 503), never a wait: the watcher asks the Sentinels every second, and the command that
    /// lost the primary asked them already (commands queueing for the Sentinels behind a
    /// paused primary's timeouts would hang).
    fn trusted(&self) -> Result<ConnectionManager, RedisError> {
        if !self.inner.trusted.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(RedisError::from((
                ErrorKind::Io,
                "no Redis primary confirmed since the last one was lost",
            )));
        }
        Ok(self.primary().conn)
    }

    /// After a command's error: when it says the primary is gone, distrust the connection
    /// and ask the Sentinels.
    async fn after_error(&self, e: &RedisError) {
        if primary_lost(e) {
            self.inner
                .trusted
                .store(false, std::sync::atomic::Ordering::SeqCst);
            SentinelConnection::refresh(&self.inner).await;
        }
    }
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut conn = self.trusted()?;
            let answer = conn.req_packed_command(cmd).await;
            if let Err(e) = &answer {
                self.after_error(e).await;
            }
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut conn = self.trusted()?;
            let answer = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &answer {
                self.after_error(e).await;
            }
            answer
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
