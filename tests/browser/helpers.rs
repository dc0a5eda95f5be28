//! What the browser tests need beyond `tests/support`: a chromedriver on a free port, headless
//! Chromium with a fresh profile, polling assertions and screenshots under
//! `target/screenshots/`.
//!
//! Chromium is never optional here: when chromedriver or Chromium is missing the tests fail
//! with the command that installs them, because a browser test that skips proves nothing.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use crate::support::api::Api;
use crate::support::app::{TestApp, spawn_app_configured};
use crate::support::free_port;

/// How long one browser test may take in all before it fails instead of hanging.
const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The default wait for something to show on a page.
pub const SHORT: Duration = Duration::from_secs(10);

/// Browsers run one at a time: two Chromiums on two cores make every timing flaky.
static ONE_BROWSER_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// The app on the test defaults with a slow default rate, so nothing is admitted before a
/// test says.
pub async fn spawn_app() -> TestApp {
    spawn_app_configured(Config {
        admit_per_second: 2,
        ..Config::for_tests()
    })
    .await
}

/// How the browser starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct BrowserOptions {
    /// Tell pages that the system prefers a dark colour scheme.
    pub dark: bool,
}

/// Runs `test` against a fresh headless Chromium, then always quits the browser and its
/// driver, even when the test panics or times out (then the test fails with that).
pub async fn with_browser<F, Fut>(options: BrowserOptions, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;
    let driver = Chromedriver::start();
    let profile = scratch_dir("chromium-profile");
    let client = connect(&driver, &profile, options).await;
    let outcome = tokio::spawn(tokio::time::timeout(TEST_TIMEOUT, test(client.clone()))).await;
    // Closing the session makes chromedriver quit Chromium; killing the driver alone would
    // leave the browser running.
    if let Err(e) = client.close().await {
        eprintln!("closing the browser session failed: {e}");
    }
    drop(driver);
    let _ = std::fs::remove_dir_all(&profile);
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(_)) => panic!("browser test timed out after {TEST_TIMEOUT:?}"),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("browser test task failed: {e}"),
    }
}

/// A chromedriver process on a free port, killed when dropped.
struct Chromedriver {
    child: Child,
    port: u16,
}

impl Chromedriver {
    fn start() -> Chromedriver {
        let path = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        assert!(
            Path::new(&path).exists(),
            "chromedriver not found at {path}. The browser tests need Debian's Chromium and its \
             driver: `apt-get install -y chromium chromium-driver` (or set CHROMEDRIVER). They \
             never skip."
        );
        let port = free_port();
        let log = scratch_dir("chromedriver-logs").join(format!("chromedriver-{port}.log"));
        let child = Command::new(&path)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            // The driver must not hold the test's output pipes: a runner waiting for them to
            // close would wait for the driver too.
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {path}: {e}"));
        Chromedriver { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn connect(driver: &Chromedriver, profile: &Path, options: BrowserOptions) -> Client {
    let binary = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&binary).exists(),
        "Chromium not found at {binary}: `apt-get install -y chromium chromium-driver` (or set CHROMIUM)"
    );
    let mut args = vec![
        "--headless".to_owned(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--no-first-run".into(),
        "--hide-scrollbars".into(),
        "--window-size=1100,1000".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    if options.dark {
        args.push("--force-dark-mode".into());
        args.push("--blink-settings=preferredColorScheme=0".into());
    }
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({ "binary": binary, "args": args }),
    );
    // The driver needs a moment to listen; give it a few seconds before calling it broken.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let attempt = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&driver.url())
            .await;
        match attempt {
            Ok(client) => return client,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cannot start a Chromium session through chromedriver: {e}"),
        }
    }
}

/// A fresh folder under the target directory.
fn scratch_dir(kind: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(kind)
        .join(uuid::Uuid::new_v4().simple().to_string());
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Saves what the browser shows to `target/screenshots/{name}.png` and answers the path.
pub async fn screenshot(client: &Client, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target folder")
        .join("screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshots folder");
    // Let transitions (the progress bar) settle so the picture shows the state, not a blur.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let png = client.screenshot().await.expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a screenshot is a PNG");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).expect("screenshot written");
    path
}

/// Polls `probe` until it answers `Some`, or fails the test naming `what` after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reading a page in one WebDriver round trip each.
pub trait PageExt {
    /// The text of the first element matching `css`, if any.
    fn text_of(&self, css: &str) -> impl Future<Output = Option<String>> + Send;
    /// An attribute of the first element matching `css`, if both exist.
    fn attr_of(&self, css: &str, attr: &str) -> impl Future<Output = Option<String>> + Send;
    /// Whether an element matching `css` exists and is rendered.
    fn visible(&self, css: &str) -> impl Future<Output = bool> + Send;
    /// The result of a script's `return`.
    fn eval(&self, script: &str) -> impl Future<Output = Value> + Send;
    /// Types into the field matching `css`, replacing what it held.
    fn fill(&self, css: &str, text: &str) -> impl Future<Output = ()> + Send;
    /// Clicks the element matching `css`.
    fn click_on(&self, css: &str) -> impl Future<Output = ()> + Send;
}

impl PageExt for Client {
    async fn text_of(&self, css: &str) -> Option<String> {
        let script = "const e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;";
        match self
            .execute(script, vec![json!(css)])
            .await
            .expect("script ran")
        {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    async fn attr_of(&self, css: &str, attr: &str) -> Option<String> {
        let script = "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;";
        match self
            .execute(script, vec![json!(css), json!(attr)])
            .await
            .expect("script ran")
        {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    async fn visible(&self, css: &str) -> bool {
        let script = "const e = document.querySelector(arguments[0]); \
                      return !!e && !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);";
        self.execute(script, vec![json!(css)])
            .await
            .expect("script ran")
            == Value::Bool(true)
    }

    async fn eval(&self, script: &str) -> Value {
        self.execute(script, vec![]).await.expect("script ran")
    }

    async fn fill(&self, css: &str, text: &str) {
        let field = self
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"));
        field.clear().await.expect("field cleared");
        field.send_keys(text).await.expect("typed");
    }

    async fn click_on(&self, css: &str) {
        self.find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
            .click()
            .await
            .unwrap_or_else(|e| panic!("cannot click {css}: {e}"));
    }
}

/// Opens the waiting page of `show` with `query` (`""`, `"?transport=ws"`, …) after its path.
pub async fn visit_waiting_page(client: &Client, app: &Api, show: &str, query: &str) {
    let path = routes::show(routes::WAIT_PAGE, show);
    let url = app.url(&format!("{path}{query}"));
    client.goto(&url).await.expect("the waiting page loads");
}

/// Waits until the waiting page is in `state` (`waiting`, `admitted`, `ordered`, ...).
pub async fn wait_for_state(client: &Client, state: &str, timeout: Duration) {
    let what = format!("the waiting page to show '{state}'");
    eventually(&what, timeout, || async {
        (client.attr_of("#wait", "data-state").await.as_deref() == Some(state)).then_some(())
    })
    .await;
}

/// The position the waiting page shows, as a number.
pub async fn shown_position(client: &Client) -> Option<u64> {
    client
        .text_of("#position")
        .await?
        .replace(',', "")
        .parse()
        .ok()
}

/// What mending a failover that lost writes leaves of a ticket (src/loss_witness.rs): gone
/// from the queue, marked lost. Its poll answers 410 LOST.
pub async fn lose_ticket(redis: &redis::aio::MultiplexedConnection, show: &str, ticket: &str) {
    let mut redis = redis.clone();
    let _: () = ::redis::pipe()
        .cmd("ZREM")
        .arg(format!("wr:{{{show}}}:queue"))
        .arg(ticket)
        .cmd("SADD")
        .arg(format!("wr:{{{show}}}:lostfans"))
        .arg(ticket)
        .query_async(&mut redis)
        .await
        .unwrap();
}
