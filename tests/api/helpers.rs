//! Test fixtures: a real redis-server per test, the app in-process on port 0, and the app as
//! real server processes for multi-instance tests.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;
use waiting_room::config::Config;
use waiting_room::model::ShowId;
use waiting_room::server::{Application, Running};
use waiting_room::store::{MemoryStore, QueueStore, RedisStore, StoreSettings};

pub const TOKEN: &str = "test-token";

/// A free TCP port on loopback (released before use; the caller retries on a clash).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

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
        Command::new("redis-server")
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

    /// Whether the server answers within two seconds (false if it exited: port taken).
    async fn ready(&mut self) -> bool {
        for _ in 0..100 {
            if self.ping().await {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
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

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn ping(&self) -> bool {
        let Ok(client) = redis::Client::open(self.url()) else {
            return false;
        };
        let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
            return false;
        };
        let pong: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut conn).await;
        pong.is_ok()
    }

    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
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
    dir: std::path::PathBuf,
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

    /// Every node, comma-separated, as `REDIS_URL` takes it with `REDIS_CLUSTER`.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(RedisServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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
    async fn start(backend: Backend) -> Option<RedisBehind> {
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
        Some(RedisBehind::Cluster(cluster)) => {
            let nodes: Vec<String> = cluster.urls().split(',').map(str::to_owned).collect();
            Arc::new(RedisStore::connect_cluster(&nodes, settings).await.unwrap())
        }
    };
    (store, behind)
}

pub fn show(name: &str) -> ShowId {
    name.parse().unwrap()
}

/// The app running in-process, with one method per endpoint.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: Client,
    pub redis: Option<RedisBehind>,
    server: Running,
}

/// Starts the app on 127.0.0.1:0 with `config` (its store as the backend says).
pub async fn spawn_app_with(backend: Backend, mut config: Config) -> TestApp {
    let redis = RedisBehind::start(backend).await;
    config.redis_url = redis.as_ref().map(|r| match r {
        RedisBehind::Server(s) => s.url(),
        RedisBehind::Cluster(c) => c.urls(),
    });
    config.redis_cluster = matches!(backend, Backend::Cluster);
    let mut app = spawn_app_configured(config).await;
    app.redis = redis;
    app
}

/// Starts the app on `config` exactly as given, `redis_url` included (say, a proxy in front of
/// a Redis the test keeps alive itself).
pub async fn spawn_app_configured(config: Config) -> TestApp {
    let server = Application::build(config)
        .await
        .expect("app builds")
        .spawn();
    TestApp {
        addr: server.addr(),
        client: Client::new(),
        redis: None,
        server,
    }
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, Config::for_tests()).await
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn operator(&self, show: &str, action: &str) -> Response {
        self.client
            .post(self.url(&format!("/orders/waiting-room/{show}/{action}")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
    }

    /// Creates a show with the server's default settings (its on-sale stays closed).
    pub async fn create(&self, show: &str) {
        let r = self
            .client
            .put(self.url(&format!("/orders/waiting-room/{show}")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "create {show}: {}", r.status());
    }

    pub async fn open(&self, show: &str) {
        assert_eq!(
            self.operator(show, "open").await.status(),
            StatusCode::NO_CONTENT
        );
    }

    pub async fn join(&self, show: &str) -> Response {
        self.client
            .post(self.url(&format!("/orders/waiting-room/{show}/join")))
            .send()
            .await
            .unwrap()
    }

    /// Joins and returns the ticket JSON (asserting 202).
    pub async fn join_ok(&self, show: &str) -> Value {
        let r = self.join(show).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        r.json().await.unwrap()
    }

    pub async fn ticket(&self, show: &str, ticket: &str) -> Response {
        self.client
            .get(self.url(&format!("/orders/waiting-room/{show}/tickets/{ticket}")))
            .send()
            .await
            .unwrap()
    }

    pub async fn ticket_json(&self, show: &str, ticket: &str) -> Value {
        self.ticket(show, ticket).await.json().await.unwrap()
    }

    pub async fn leave(&self, show: &str, ticket: &str) -> Response {
        self.client
            .delete(self.url(&format!("/orders/waiting-room/{show}/tickets/{ticket}")))
            .send()
            .await
            .unwrap()
    }

    /// The operator's figures for a show.
    pub async fn stats(&self, show: &str) -> Value {
        self.client
            .get(self.url(&format!("/orders/waiting-room/{show}/stats")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn set_rate(&self, show: &str, rate: u32) -> Response {
        self.client
            .put(self.url(&format!("/orders/waiting-room/{show}/config")))
            .bearer_auth(TOKEN)
            .json(&json!({ "admitPerSecond": rate }))
            .send()
            .await
            .unwrap()
    }

    pub async fn order(&self, show: &str, hold: &str, ticket: Option<&str>) -> Response {
        let mut req = self.client.post(self.url("/orders")).json(&json!({
            "showId": show, "holdId": hold, "customerEmail": "caio@example.com", "amount": 350.00
        }));
        if let Some(t) = ticket {
            req = req.header("X-Admission-Ticket", t);
        }
        req.send().await.unwrap()
    }

    /// Polls until the ticket is admitted, or panics after `within`.
    pub async fn wait_admitted(&self, show: &str, ticket: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let t = self.ticket_json(show, ticket).await;
            if t["status"] == "ADMITTED" {
                return t;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not admitted in {within:?}: {t}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn stop(self) {
        tokio::time::timeout(Duration::from_secs(10), self.server.stop())
            .await
            .expect("server stops within 10 s")
            .expect("server stops cleanly");
    }
}

/// The Prometheus text of a server at `base` (`http://host:port`).
pub async fn metrics_text(client: &Client, base: &str) -> String {
    client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Whether metrics text says this instance holds the admitter lease.
pub fn leads(metrics: &str) -> bool {
    metrics
        .lines()
        .any(|l| l == "waiting_room_admitter_leader 1")
}

pub fn ticket_id(v: &Value) -> String {
    let id = v["ticketId"].as_str().expect("ticketId").to_owned();
    Uuid::parse_str(&id).expect("ticketId is a UUID");
    id
}

/// A real `waiting-room` server process, killed when dropped.
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    pub async fn start(redis_url: &str, rate: u32, extra_env: &[(&str, &str)]) -> ServerProcess {
        for _ in 0..5 {
            let port = free_port();
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_waiting-room"));
            cmd.env("BIND", addr.to_string())
                .env("REDIS_URL", redis_url)
                .env("ADMIT_PER_SECOND", rate.to_string())
                .env("ADMIN_TOKEN", TOKEN)
                .env("JOIN_RATE_LIMIT", "0")
                .env("MAX_STREAMS_PER_CLIENT", "0")
                .env(
                    "RUST_LOG",
                    std::env::var("WR_TEST_LOG").unwrap_or_else(|_| "warn".into()),
                );
            if std::env::var_os("WR_TEST_LOG").is_none() {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
            for (k, v) in extra_env {
                cmd.env(k, v);
            }
            let child = cmd.spawn().expect("server binary starts");
            let mut process = ServerProcess { child, addr };
            let client = Client::new();
            for _ in 0..200 {
                let ready = client.get(format!("http://{addr}/readyz")).send().await;
                if ready.is_ok_and(|r| r.status() == StatusCode::OK) {
                    return process;
                }
                if let Ok(Some(_)) = process.child.try_wait() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            let _ = process.child.kill();
        }
        panic!("server process did not become ready");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// SIGKILL: no graceful hand-over, the lease must run out.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One Server-Sent Event as a test sees it.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// A minimal SSE reader over a real HTTP response: enough of the format for our server's
/// events (named events, ids, one-line JSON data, comments).
pub struct SseReader {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl SseReader {
    pub async fn connect(client: &Client, url: &str, last_event_id: Option<&str>) -> SseReader {
        let mut req = client.get(url).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        SseReader {
            stream: futures::StreamExt::boxed(r.bytes_stream()),
            buf: String::new(),
        }
    }

    /// The next event, `None` when the stream ended; panics after `within`.
    pub async fn next(&mut self, within: Duration) -> Option<SseEvent> {
        tokio::time::timeout(within, self.next_inner())
            .await
            .unwrap_or_else(|_| panic!("no SSE event within {within:?}"))
    }

    async fn next_inner(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let (mut event, mut id, mut data) = (None, None, None);
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data = Some(serde_json::from_str(v.trim()).unwrap());
                    }
                }
                match (event, data) {
                    (Some(event), Some(data)) => return Some(SseEvent { event, id, data }),
                    _ => continue, // a keep-alive comment or a bare retry
                }
            }
            match futures::StreamExt::next(&mut self.stream).await {
                Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }

    /// Everything already received, without waiting for more than `quiet`.
    pub async fn drain(&mut self, quiet: Duration) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout(quiet, self.next_inner()).await {
            out.push(e);
        }
        out
    }
}

/// The SSE URL of a ticket.
pub fn events_path(show: &str, ticket: &str) -> String {
    format!("/orders/waiting-room/{show}/tickets/{ticket}/events")
}
