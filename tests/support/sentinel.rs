//! A primary, a replica and three Sentinels of the test's own (`redis-server --sentinel`),
//! quick to fail over (the primary is down after 1 s of silence), torn down when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::free_port;
use super::process::ServerProcess;
use super::redis::RedisServer;

/// The name the Sentinels know the primary by.
pub const MASTER: &str = "wr";

pub struct SentinelGroup {
    pub primary: RedisServer,
    pub replica: RedisServer,
    sentinels: Vec<(Child, u16)>,
    dir: PathBuf,
}

impl SentinelGroup {
    pub async fn start() -> SentinelGroup {
        let primary = RedisServer::start().await;
        let replica =
            RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port.to_string()]).await;
        let dir = std::env::temp_dir().join(format!("wr-sentinel-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut group = SentinelGroup {
            primary,
            replica,
            sentinels: Vec::new(),
            dir,
        };
        group.wait_in_sync().await;
        for _ in 0..3 {
            let port = free_port();
            let conf = group.dir.join(format!("sentinel-{port}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\n\
                     sentinel monitor {MASTER} 127.0.0.1 {} 2\n\
                     sentinel down-after-milliseconds {MASTER} 1000\n\
                     sentinel failover-timeout {MASTER} 4000\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    group.dir.display(),
                    group.primary.port
                ),
            )
            .unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server runs as a Sentinel");
            group.sentinels.push((child, port));
        }
        // Every Sentinel knows the primary and its replica, and the others.
        for _ in 0..200 {
            if group.sentinels_agree().await {
                return group;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the Sentinels never agreed on the primary");
    }

    /// `host:port,…` of the Sentinels, as `REDIS_SENTINELS` takes them.
    pub fn addrs(&self) -> String {
        self.sentinels
            .iter()
            .map(|(_, p)| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A server process on this group's primary, through its Sentinels, with every write
    /// confirmed by the replica (`REDIS_WAIT_REPLICAS=1`, 300 ms), admitting `rate` a second.
    pub async fn durable_server(&self, rate: u32) -> ServerProcess {
        let sentinels = self.addrs();
        let env = [
            ("REDIS_SENTINELS", sentinels.as_str()),
            ("REDIS_SENTINEL_MASTER", MASTER),
            ("REDIS_WAIT_REPLICAS", "1"),
            ("REDIS_WAIT_TIMEOUT", "300ms"),
        ];
        ServerProcess::start("", rate, &env).await
    }

    /// The primary's port as the first Sentinel that answers names it.
    pub async fn primary_port(&self) -> Option<u16> {
        for (_, port) in &self.sentinels {
            let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else {
                continue;
            };
            let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
                continue;
            };
            let addr: redis::RedisResult<Vec<String>> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(MASTER)
                .query_async(&mut conn)
                .await;
            if let Ok(addr) = addr {
                return addr.get(1).and_then(|p| p.parse().ok());
            }
        }
        None
    }

    async fn sentinels_agree(&self) -> bool {
        for (_, port) in &self.sentinels {
            let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else {
                return false;
            };
            let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
                return false;
            };
            let info: redis::RedisResult<std::collections::HashMap<String, String>> =
                redis::cmd("SENTINEL")
                    .arg("master")
                    .arg(MASTER)
                    .query_async(&mut conn)
                    .await;
            let Ok(info) = info else { return false };
            let known = |k: &str| info.get(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
            if known("num-slaves") < 1 || known("num-other-sentinels") < 2 {
                return false;
            }
        }
        true
    }

    /// Until the replica has the primary's whole data set.
    async fn wait_in_sync(&self) {
        for _ in 0..200 {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut self.primary.conn().await)
                .await
                .unwrap();
            if info.contains("state=online") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the replica never came in sync");
    }
}

impl Drop for SentinelGroup {
    fn drop(&mut self) {
        for (child, _) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
