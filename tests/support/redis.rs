//! A redis-server, or a three-node Redis Cluster, of the test's own.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use uuid::Uuid;

use super::free_port;

/// A redis-server of our own on a free port, killed when dropped. `REDIS_URL` is not used:
/// tests need a server nobody else writes to (they assert on `wr:open` and the lease).
pub struct RedisServer {
    child: Child,
    pub port: u16,
    extra: Vec<String>,
}

impl RedisServer {
    pub async fn start() -> RedisServer {
        RedisServer::start_with(&[]).await
    }

    /// A server started with `extra` arguments after ours.
    pub async fn start_with(extra: &[&str]) -> RedisServer {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        for _ in 0..10 {
            let port = free_port();
            let mut server = RedisServer {
                child: Self::spawn(port, &extra),
                port,
                extra: extra.clone(),
            };
            if server.ready().await {
                return server;
            }
            let _ = server.child.kill();
        }
        panic!("could not start redis-server");
    }

    fn spawn(port: u16, extra: &[String]) -> Child {
        // A directory of its own: a replica's full sync writes dump.rdb there, and a server
        // started later in the same directory would load it (another test's data).
        let dir = std::env::temp_dir().join(format!("wr-redis-{port}-{}", Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("a directory for redis-server");
        Command::new("redis-server")
            .args(["--dir", dir.to_str().expect("a UTF-8 temp dir")])
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be on PATH (apt-get install redis-server)")
    }

    /// Whether our server answers within two seconds (false if it exited: port taken).
    /// The server on the port must be our process: when another test's redis-server took the
    /// port first, ours exits and theirs would answer the ping, and two tests would share one
    /// Redis (a Sentinel of one would then reconfigure the other's).
    async fn ready(&mut self) -> bool {
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            match self.pid().await {
                Some(pid) if pid == self.child.id() => return true,
                Some(_) => {
                    // Someone else's server: ours cannot bind, and will exit.
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return false;
                }
                None => {}
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// The process id of the server answering on our port, if one does.
    async fn pid(&self) -> Option<u32> {
        let client = redis::Client::open(self.url()).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|p| p.trim().parse().ok())
    }

    /// Kills the server and starts a new one on the same port, as a crash and restart
    /// without persistence would: every key is gone.
    pub async fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for _ in 0..50 {
            self.child = Self::spawn(self.port, &self.extra);
            if self.ready().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("redis-server did not come back on port {}", self.port);
    }

    /// Kills the server and starts it again on the same port with `extra` arguments (say,
    /// `--replicaof`), empty.
    pub async fn restart_with(&mut self, extra: &[&str]) {
        self.extra = extra.iter().map(|s| s.to_string()).collect();
        self.restart().await;
    }

    /// Kills the server (the test's own, by its child handle) and leaves it down.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// Cuts every pub/sub connection of this server (`CLIENT KILL TYPE pubsub`): how many.
    pub async fn kill_pubsub_clients(&self) -> i64 {
        redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("pubsub")
            .query_async(&mut self.conn().await)
            .await
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A three-node Redis Cluster of our own (no replicas), torn down when dropped.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    dir: PathBuf,
}

impl RedisCluster {
    pub async fn start() -> RedisCluster {
        let dir = std::env::temp_dir().join(format!("wr-cluster-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut nodes = Vec::new();
        for _ in 0..3 {
            let dir = dir.to_str().unwrap();
            nodes.push(RedisServer::start_with(&["--cluster-enabled", "yes", "--dir", dir]).await);
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = create
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli must be on PATH (it comes with redis-server)");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = RedisCluster { nodes, dir };
        // Every node must agree the cluster is up before the tests start.
        for _ in 0..200 {
            let mut ok = true;
            for n in &cluster.nodes {
                let mut conn = n.conn().await;
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                ok &= info.contains("cluster_state:ok");
            }
            if ok {
                return cluster;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the cluster never became ready");
    }

    /// Every node's URL.
    pub fn nodes(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// Every node, comma-separated, as `REDIS_URL` takes it with `REDIS_CLUSTER`.
    pub fn urls(&self) -> String {
        self.nodes().join(",")
    }

    /// Every node.
    pub fn all(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter()
    }

    /// Every node but the one on `port`.
    pub fn nodes_except(&self, port: u16) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(move |n| n.port != port)
    }

    /// The node that owns `key`'s slot: the one that answers for it instead of `MOVED`.
    pub async fn owner(&self, key: &str) -> &RedisServer {
        for node in &self.nodes {
            let mut conn = node.conn().await;
            let answer: redis::RedisResult<Option<String>> =
                redis::cmd("GET").arg(key).query_async(&mut conn).await;
            if answer.is_ok() {
                return node;
            }
        }
        panic!("no node owns {key}");
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
