//! Which store a test runs on, and that store with the Redis behind it.

use std::sync::Arc;
use std::time::Duration;

use waiting_room::store::{MemoryStore, QueueStore, RedisStore, StoreSettings};

use super::redis::{RedisCluster, RedisServer};

/// Which store a test runs on.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Memory,
    Redis,
    Cluster,
}

/// The Redis behind a test, kept alive as long as the test needs it.
pub enum RedisBehind {
    Server(RedisServer),
    Cluster(RedisCluster),
}

impl RedisBehind {
    pub async fn start(backend: Backend) -> Option<RedisBehind> {
        match backend {
            Backend::Memory => None,
            Backend::Redis => Some(RedisBehind::Server(RedisServer::start().await)),
            Backend::Cluster => Some(RedisBehind::Cluster(RedisCluster::start().await)),
        }
    }

    /// The single server (panics on a cluster).
    pub fn server(&self) -> &RedisServer {
        match self {
            RedisBehind::Server(s) => s,
            RedisBehind::Cluster(_) => panic!("this test needs a single Redis"),
        }
    }

    /// The cluster (panics on a single Redis).
    pub fn cluster(&self) -> &RedisCluster {
        match self {
            RedisBehind::Cluster(c) => c,
            RedisBehind::Server(_) => panic!("this test needs a Redis Cluster"),
        }
    }

    /// The single server, to restart it (panics on a cluster).
    pub fn server_mut(&mut self) -> &mut RedisServer {
        match self {
            RedisBehind::Server(s) => s,
            RedisBehind::Cluster(_) => panic!("this test needs a single Redis"),
        }
    }

    /// What `REDIS_URL` says to reach it.
    pub fn url(&self) -> String {
        match self {
            RedisBehind::Server(s) => s.url(),
            RedisBehind::Cluster(c) => c.urls(),
        }
    }
}

pub fn settings(rate: u32, ttl: Duration) -> StoreSettings {
    StoreSettings {
        default_rate: rate,
        admission_ttl: ttl,
        max_active_buyers: 0,
        arrival_window: Duration::from_secs(60),
    }
}

/// A store of the given kind, with the redis-server behind it kept alive as long as needed.
pub async fn store(
    backend: Backend,
    settings: StoreSettings,
) -> (Arc<dyn QueueStore>, Option<RedisBehind>) {
    let behind = RedisBehind::start(backend).await;
    let store: Arc<dyn QueueStore> = match &behind {
        None => Arc::new(MemoryStore::new(settings)),
        Some(RedisBehind::Server(redis)) => {
            Arc::new(RedisStore::connect(&redis.url(), settings).await.unwrap())
        }
        Some(RedisBehind::Cluster(cluster)) => Arc::new(
            RedisStore::connect_cluster(&cluster.nodes(), settings)
                .await
                .unwrap(),
        ),
    };
    (store, behind)
}
