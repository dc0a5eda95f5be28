//! A redis-server, or a Redis Cluster (three masters, with or without a replica each), of the
//! test's own.

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

    /// How many times `command` ran since the last reset (`INFO commandstats`; a script's
    /// nested commands count too), and resets the counts (`CONFIG RESETSTAT`).
    pub async fn calls_of(&self, command: &str) -> u64 {
        let mut conn = self.conn().await;
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut conn)
            .await
            .unwrap();
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .and_then(|v| v.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    }

    /// Holds every write for `ms` milliseconds (`CLIENT PAUSE ms WRITE`): scripts that write
    /// wait in Redis, as behind a primary that cannot keep up.
    pub async fn pause_writes(&self, ms: u64) {
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(ms)
            .arg("WRITE")
            .query_async(&mut self.conn().await)
            .await
            .unwrap();
    }

    /// Lets the writes a [`RedisServer::pause_writes`] holds go on at once.
    pub async fn unpause(&self) {
        let _: () = redis::cmd("CLIENT")
            .arg("UNPAUSE")
            .query_async(&mut self.conn().await)
            .await
            .unwrap();
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

/// A three-master Redis Cluster of our own, torn down when dropped.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    dir: PathBuf,
}

impl RedisCluster {
    /// Three masters, no replicas.
    pub async fn start() -> RedisCluster {
        RedisCluster::start_with_replicas(0).await
    }

    /// Three masters with `replicas` replicas each (`--cluster-replicas`). Each node keeps its
    /// own directory: a replica's full sync writes dump.rdb there, and two nodes sharing one
    /// would load each other's data on a restart. With replicas, a master silent for a second
    /// is failed over (`cluster-node-timeout 1000`), and any replica may be promoted however
    /// long it was cut off (`cluster-replica-validity-factor 0`).
    pub async fn start_with_replicas(replicas: usize) -> RedisCluster {
        let dir = std::env::temp_dir().join(format!("wr-cluster-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut nodes = Vec::new();
        for _ in 0..3 * (1 + replicas) {
            let mut args = vec!["--cluster-enabled", "yes"];
            if replicas == 0 {
                let dir = dir.to_str().unwrap();
                nodes.push(RedisServer::start_with(&[&args[..], &["--dir", dir]].concat()).await);
                continue;
            }
            args.extend([
                "--cluster-node-timeout",
                "1000",
                "--cluster-replica-validity-factor",
                "0",
            ]);
            nodes.push(RedisServer::start_with(&args).await);
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = create
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli must be on PATH (it comes with redis-server)");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = RedisCluster { nodes, dir };
        // Every node must agree the cluster is up (and every replica be in sync) before the
        // tests start.
        for _ in 0..400 {
            if cluster.ready(replicas).await {
                return cluster;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the cluster never became ready");
    }

    /// Whether every live node says the cluster is ok, and every master has `replicas`
    /// replicas online.
    async fn ready(&self, replicas: usize) -> bool {
        let mut masters = 0;
        for n in &self.nodes {
            let mut conn = n.conn().await;
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query_async(&mut conn)
                .await
                .unwrap();
            if !info.contains("cluster_state:ok") {
                return false;
            }
            let repl: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut conn)
                .await
                .unwrap();
            if repl.contains("role:master") {
                masters += 1;
                if repl.matches("state=online").count() < replicas {
                    return false;
                }
            }
        }
        masters == 3
    }

    /// SIGKILLs the master that owns `key`'s slot and holds its port (a parallel test's
    /// redis-server taking it would be met by the cluster's gossip as the dead node coming
    /// back): the port and its holder, to be dropped once the test is done with the cluster.
    pub async fn kill_owner(&mut self, key: &str) -> (u16, std::net::TcpListener) {
        let port = self.owner(key).await.port;
        let node = self.nodes.iter_mut().find(|n| n.port == port).unwrap();
        node.stop();
        let held = std::net::TcpListener::bind(("127.0.0.1", port)).expect("the dead node's port");
        (port, held)
    }

    /// Until a live node other than `dead` owns `key`'s slot and every live node says the
    /// cluster is ok again; panics after `within`.
    pub async fn wait_promoted(&self, key: &str, dead: u16, within: Duration) -> u16 {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let mut ok = true;
            let mut owner = None;
            for n in self.nodes_except(dead) {
                let mut conn = n.conn().await;
                let info: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                ok &= info.contains("cluster_state:ok");
                if owns(&mut conn, key).await {
                    owner = Some(n.port);
                }
            }
            if let (true, Some(owner)) = (ok, owner) {
                return owner;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no replica took over {key}'s slot"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
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
            if owns(&mut conn, key).await {
                return node;
            }
        }
        panic!("no node owns {key}");
    }
}

/// Whether the node behind `conn` answers for `key` (of any type) instead of `MOVED`.
async fn owns(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {
    let answer: redis::RedisResult<String> = redis::cmd("TYPE").arg(key).query_async(conn).await;
    answer.is_ok()
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
