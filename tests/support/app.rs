//! The app in-process on 127.0.0.1:0, on the store a test asks for.

use std::ops::Deref;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use waiting_room::config::Config;
use waiting_room::server::{Application, Running};

use super::api::Api;
use super::backend::{Backend, RedisBehind};

/// The app running in-process, stopped when dropped. It derefs to its [`Api`], so a test
/// calls `app.join_ok(show)` on it directly.
pub struct TestApp {
    api: Api,
    /// The Redis behind the app, when the test started one for it.
    pub redis: Option<RedisBehind>,
    shutdown: CancellationToken,
    server: Option<Running>,
}

impl Deref for TestApp {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl TestApp {
    /// Stops the server gracefully and waits until it let go of its port. With its store
    /// stopped, a background task may be inside a store call that has to run out its
    /// timeouts and retries (2 s each, `RedisStore::connect`) before it sees the stop: on a
    /// loaded machine that took more than 10 s, hence the generous bound.
    pub async fn stop(mut self) {
        let server = self.server.take().expect("the server runs");
        tokio::time::timeout(Duration::from_secs(30), server.stop())
            .await
            .expect("server stops within 30 s")
            .expect("server stops cleanly");
    }
}

/// The app on `Config::for_tests()`, its store as the backend says.
pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_app_with(backend, Config::for_tests()).await
}

/// The app on `config`, its store as the backend says (a Redis of its own, started here).
pub async fn spawn_app_with(backend: Backend, mut config: Config) -> TestApp {
    let redis = RedisBehind::start(backend).await;
    config.redis_url = redis.as_ref().map(RedisBehind::url);
    config.redis_cluster = matches!(backend, Backend::Cluster);
    let mut app = spawn_app_configured(config).await;
    app.redis = redis;
    app
}

/// The app on `config` exactly as given, `redis_url` included (say, a proxy in front of a
/// Redis the test keeps alive itself, or the embedded store on a fixed address).
pub async fn spawn_app_configured(config: Config) -> TestApp {
    let app = Application::build(config).await.expect("app builds");
    let api = Api::new(app.local_addr(), app.admin_token());
    let server = app.spawn();
    TestApp {
        api,
        redis: None,
        shutdown: server.shutdown_token(),
        server: Some(server),
    }
}

/// The test defaults with `rate` admissions a second, each valid for `ttl`.
pub fn config(rate: u32, ttl: Duration) -> Config {
    Config {
        admit_per_second: rate,
        admission_ttl: ttl,
        ..Config::for_tests()
    }
}
