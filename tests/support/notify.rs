//! The far ends of a call as real processes, written against independent implementations
//! (`push_service.py` and `webhook_receiver.py` beside this file): a push service that
//! verifies VAPID and decrypts what it is sent, and an operator's webhook that verifies its
//! token with the JWKS. They run on the Python of `target/notify-python`, which
//! `scripts/test.sh` installs (or `$NOTIFY_PYTHON`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The Python with the libraries the stand-ins check against.
fn python() -> PathBuf {
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/notify-python/bin/python3");
    let python = std::env::var_os("NOTIFY_PYTHON").map_or(installed, PathBuf::from);
    assert!(
        python.exists(),
        "the notification tests' Python is not installed at {}: scripts/test.sh installs it \
         (or set NOTIFY_PYTHON to a python3 with http-ece, PyJWT and cryptography)",
        python.display()
    );
    python
}

/// A stand-in process on a free loopback port, killed when dropped.
pub struct StandIn {
    child: Child,
    /// Its base URL, `http://127.0.0.1:<port>`.
    pub url: String,
    /// What it printed first, as JSON.
    pub hello: Value,
}

impl StandIn {
    /// `push_service.py`: its `hello` holds `subscription`, a browser's subscription JSON.
    pub fn push_service() -> StandIn {
        StandIn::start("push_service.py", &[])
    }

    /// `webhook_receiver.py`, verifying tokens with the JWK Set `jwks`.
    pub fn webhook(jwks: &Value) -> StandIn {
        StandIn::start("webhook_receiver.py", &[jwks.to_string()])
    }

    fn start(script: &str, args: &[String]) -> StandIn {
        let path = format!("{}/tests/support/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new(python())
            .arg(path)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the stand-in starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the stand-in says where it listens");
        let hello: Value = serde_json::from_str(line.trim()).expect("JSON");
        let port = hello
            .get("port")
            .unwrap_or(&hello)
            .as_u64()
            .expect("a port");
        StandIn {
            child,
            url: format!("http://127.0.0.1:{port}"),
            hello,
        }
    }

    /// What it was sent so far, one record a request.
    pub async fn received(&self) -> Vec<Value> {
        reqwest::get(format!("{}/received", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Its records once `done` holds of them (polled; a bound only against a hang).
    pub async fn received_when(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.received().await;
            if done(&got) {
                return got;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the stand-in never got what was expected: {got:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
