//! The app as a real `waiting-room` server process, for tests of several instances.

use std::net::SocketAddr;
use std::ops::Deref;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use waiting_room::protocol::routes;

use super::api::Api;
use super::{TOKEN, free_port};

/// A real `waiting-room` server process, killed when dropped. It derefs to its [`Api`].
pub struct ServerProcess {
    pub child: Child,
    api: Api,
    /// Where its logs go, when a test reads them ([`ServerProcess::start_logged`]).
    log: Option<PathBuf>,
}

impl Deref for ServerProcess {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

impl ServerProcess {
    /// A server on `redis_url` (none when empty: `extra_env` says where the store is)
    /// admitting `rate` a second, with `extra_env` on top of ours.
    pub async fn start(redis_url: &str, rate: u32, extra_env: &[(&str, &str)]) -> ServerProcess {
        Self::spawn(redis_url, rate, extra_env, None).await
    }

    /// As [`ServerProcess::start`], its warnings and errors kept as JSON lines for
    /// [`ServerProcess::logs`].
    pub async fn start_logged(
        redis_url: &str,
        rate: u32,
        extra_env: &[(&str, &str)],
    ) -> ServerProcess {
        let log = std::env::temp_dir().join(format!("wr-log-{}.jsonl", uuid::Uuid::new_v4()));
        Self::spawn(redis_url, rate, extra_env, Some(log)).await
    }

    /// What the process logged so far.
    pub fn logs(&self) -> String {
        let log = self.log.as_ref().expect("started with start_logged");
        std::fs::read_to_string(log).unwrap_or_default()
    }

    /// The lines it logged at `level` (`ERROR`, `WARN`).
    pub fn logged(&self, level: &str) -> Vec<String> {
        let level = format!("\"level\":\"{level}\"");
        self.logs()
            .lines()
            .filter(|l| l.contains(&level))
            .map(str::to_owned)
            .collect()
    }

    async fn spawn(
        redis_url: &str,
        rate: u32,
        extra_env: &[(&str, &str)],
        log: Option<PathBuf>,
    ) -> ServerProcess {
        for _ in 0..5 {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
            // Set for the server package's tests; the client package's share this module
            // but start no server process.
            let Some(server) = option_env!("CARGO_BIN_EXE_waiting-room") else {
                panic!("only the server package's tests start server processes");
            };
            let mut cmd = Command::new(server);
            if !redis_url.is_empty() {
                cmd.env("REDIS_URL", redis_url);
            }
            cmd.env("BIND", addr.to_string())
                .env("ADMIT_PER_SECOND", rate.to_string())
                .env("ADMIN_TOKEN", TOKEN)
                .env("JOIN_RATE_LIMIT", "0")
                .env("MAX_STREAMS_PER_CLIENT", "0")
                .env("MAX_CONNECTIONS_PER_CLIENT", "0")
                .env(
                    "RUST_LOG",
                    std::env::var("WR_TEST_LOG").unwrap_or_else(|_| "warn".into()),
                );
            if let Some(log) = &log {
                let file = std::fs::File::create(log).expect("a log file");
                cmd.env("LOG_FORMAT", "json")
                    .env("RUST_LOG", "warn")
                    .stdout(file.try_clone().unwrap())
                    .stderr(file);
            } else if std::env::var_os("WR_TEST_LOG").is_none() {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
            for (k, v) in extra_env {
                cmd.env(k, v);
            }
            let child = cmd.spawn().expect("server binary starts");
            let mut process = ServerProcess {
                child,
                api: Api::new(addr, TOKEN),
                log: log.clone(),
            };
            for _ in 0..200 {
                let ready = process.client.get(process.url(routes::READYZ)).send().await;
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

    /// SIGKILL: no graceful hand-over, the lease must run out.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait for a clean exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(log) = &self.log {
            let _ = std::fs::remove_file(log);
        }
    }
}
