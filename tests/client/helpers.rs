//! Fixtures: the server in-process on port 0, a redis-server of our own, an output buffer
//! the test can read while the fan writes to it.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Client, StatusCode, Url};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use waiting_room::config::Config;
use waiting_room::model::ShowId;
use waiting_room::server::{Application, Running};

pub const TOKEN: &str = "test-token";

pub fn show(name: &str) -> ShowId {
    name.parse().unwrap()
}

/// The app running in-process.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: Client,
    shutdown: CancellationToken,
    server: Option<Running>,
}

/// Starts the app on 127.0.0.1:0 with `config`.
pub async fn spawn_app_with(config: Config) -> TestApp {
    let server = Application::build(config)
        .await
        .expect("app builds")
        .spawn();
    TestApp {
        addr: server.addr(),
        client: Client::new(),
        shutdown: server.shutdown_token(),
        server: Some(server),
    }
}

/// The app on the embedded store, operator token "test-token", 20 admissions a second.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(Config::for_tests()).await
}

impl TestApp {
    /// The base URL the clients take as `--url`.
    pub fn base(&self) -> Url {
        format!("http://{}", self.addr).parse().unwrap()
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Creates the show as an operator does (`PUT`, the server's default settings), closed:
    /// fans may join and wait. The show must be new.
    pub async fn create(&self, show: &str) {
        let r = self
            .client
            .put(self.url(&format!("/orders/waiting-room/{show}")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED, "{show} is new");
    }

    /// Whether an operator has created the show: its stats answer 200, or 404 when nobody did.
    pub async fn exists(&self, show: &str) -> bool {
        let r = self
            .client
            .get(self.url(&format!("/orders/waiting-room/{show}/stats")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        match r.status() {
            StatusCode::OK => true,
            StatusCode::NOT_FOUND => false,
            other => panic!("stats of {show} answered {other}"),
        }
    }

    pub async fn open(&self, show: &str) {
        let r = self
            .client
            .post(self.url(&format!("/orders/waiting-room/{show}/open")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }

    /// `PUT …/config` with `body` (the show's settings), as an operator does.
    pub async fn configure(&self, show: &str, body: Value) {
        let r = self
            .client
            .put(self.url(&format!("/orders/waiting-room/{show}/config")))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "config of {show}");
    }

    pub async fn join(&self, show: &str) -> Value {
        let r = self
            .client
            .post(self.url(&format!("/orders/waiting-room/{show}/join")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        r.json().await.unwrap()
    }

    /// The operator's figures of a show that exists.
    pub async fn stats(&self, show: &str) -> Value {
        let r = self
            .client
            .get(self.url(&format!("/orders/waiting-room/{show}/stats")))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "stats of {show}");
        r.json().await.unwrap()
    }

    /// Polls the show's stats until `check` holds, or panics after `within`.
    pub async fn wait_for_stats(
        &self,
        show: &str,
        within: Duration,
        check: impl Fn(&Value) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let stats = self.stats(show).await;
            if check(&stats) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "stats never matched: {stats}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until this instance's admitter holds its lease. It admits at once on taking
    /// the lease, off the once-a-second cadence (at .550 of a second as often as at .050):
    /// a test that measures ETAs against that cadence opens its show only after this.
    pub async fn admitter_ready(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let metrics = self
                .client
                .get(self.url("/metrics"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if metrics
                .lines()
                .any(|l| l.starts_with("waiting_room_admitter_leader") && l.ends_with(" 1"))
            {
                // The lease is taken just before that first tick runs: let it pass.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the admitter never took its lease"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Graceful stop: every stream ends, the admitter hands its lease over.
    pub async fn stop(mut self) {
        let server = self.server.take().expect("stopped once");
        tokio::time::timeout(Duration::from_secs(10), server.stop())
            .await
            .expect("server stops within 10 s")
            .expect("server stops cleanly");
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Waits until the wall clock is between .200 and .800 of a second: far from the admitter's
/// tick at .050, so that what happens now is pushed on its own, not together with a tick's
/// news (a fan's latest state overwrites the one before it if both come at once).
pub async fn between_ticks() {
    loop {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
            % 1000;
        if (200..800).contains(&ms) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(((1200 - ms) % 1000) as u64)).await;
    }
}

/// An address nothing listens on: bound, then let go.
pub fn dead_url() -> Url {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}").parse().unwrap()
}

/// A URL as the fan prints it: without the parser's trailing slash.
pub fn shown(url: &Url) -> &str {
    url.as_str().trim_end_matches('/')
}

/// What the fan writes, readable by the test while the fan still runs.
#[derive(Clone, Default)]
pub struct Output(Arc<Mutex<Vec<u8>>>);

impl Output {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(str::to_owned).collect()
    }

    /// Waits until a line contains `needle`, or panics after `within`.
    pub async fn wait_for(&self, needle: &str, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        while !self.text().contains(needle) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no line with {needle:?} in {within:?}:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The status word of each line (`waiting`, `admitted`, ...), after the time column.
pub fn words(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect()
}

/// The positions of the `waiting` lines, in order.
pub fn waiting_positions(lines: &[String]) -> Vec<u64> {
    lines
        .iter()
        .filter(|l| l.split_whitespace().nth(1) == Some("waiting"))
        .map(|l| {
            let after = l.split("position ").nth(1).expect("a position");
            after
                .split_whitespace()
                .next()
                .unwrap()
                .replace(',', "")
                .parse()
                .unwrap()
        })
        .collect()
}

/// A redis-server of our own on a free port (never the shared one on 6379), killed when
/// dropped.
pub struct RedisServer {
    child: Child,
    pub port: u16,
}

impl RedisServer {
    pub async fn start() -> RedisServer {
        for _ in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server must be on PATH (apt-get install redis-server)");
            let mut server = RedisServer { child, port };
            for _ in 0..100 {
                if tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
                {
                    return server;
                }
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // the port was taken: try another
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("could not start redis-server");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
