//! What the client tests add to the shared support (`tests/support` of the server package):
//! the app on the embedded store, waits on its figures, a dead address, and an output buffer
//! the test can read while the fan writes to it.

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use waiting_room::protocol::routes;

pub use crate::support::api::Api;
pub use crate::support::app::{TestApp, spawn_app_configured};
use crate::support::backend::Backend;
pub use crate::support::{TOKEN, show};

/// The app in-process on the embedded store, operator token "test-operator-token", 20 admissions a
/// second.
pub async fn spawn_app() -> TestApp {
    crate::support::app::spawn_app(Backend::Memory).await
}

/// The base URL the clients take as `--url`.
pub fn base(app: &Api) -> Url {
    app.base().parse().unwrap()
}

/// Whether an operator has created the show: its stats answer 200, or 404 when nobody did.
pub async fn exists(app: &Api, show: &str) -> bool {
    let path = routes::show(routes::STATS, show);
    let r = app.as_operator(Method::GET, &path).send().await.unwrap();
    match r.status() {
        StatusCode::OK => true,
        StatusCode::NOT_FOUND => false,
        other => panic!("stats of {show} answered {other}"),
    }
}

/// Polls the show's stats until `check` holds, or panics after `within`.
pub async fn wait_for_stats(
    app: &Api,
    show: &str,
    within: Duration,
    check: impl Fn(&Value) -> bool,
) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let stats = app.stats(show).await;
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

/// Waits until this instance's admitter holds its lease. It admits at once on taking the
/// lease, off the once-a-second cadence (at .550 of a second as often as at .050): a test that
/// measures ETAs against that cadence opens its show only after this.
pub async fn admitter_ready(app: &Api) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !app.leads().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the admitter never took its lease"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The lease is taken just before that first tick runs: let it pass.
    tokio::time::sleep(Duration::from_millis(100)).await;
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

/// Runs `waiting-room-client SUBCOMMAND ARGS…` to its end: its exit code and output (stdout
/// then stderr).
pub async fn client(subcommand: &str, args: &[&str]) -> (i32, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
        .arg(subcommand)
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}
