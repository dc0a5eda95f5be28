//! The document and the server cannot drift apart: Schemathesis, an API fuzzer, reads
//! `/openapi.json` of a real server process (on the embedded store, and on a redis-server of
//! the test's own), calls every operation with what the document allows and with what it does
//! not, as the operator, and checks each answer: its status documented, its content type and
//! its schema as documented, no 5xx, what the document refuses refused. How it runs (a fixed
//! seed and number of examples, the few checks turned off where they cannot hold, and why) is
//! `schemathesis.toml` beside this file; `scripts/test.sh` installs the pinned Schemathesis
//! under `target/schemathesis`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use waiting_room::protocol::routes;

use crate::support::TOKEN;
use crate::support::backend::{Backend, RedisBehind};
use crate::support::process::ServerProcess;

both_stores!(schemathesis_finds_the_server_as_its_document_says);

/// The longest a run may take: a few tens of seconds on a busy machine; past this it hangs.
const RUN_BOUND: Duration = Duration::from_secs(110);

/// The Schemathesis command: `$SCHEMATHESIS`, else the one `scripts/test.sh` installs.
fn schemathesis() -> PathBuf {
    let installed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/schemathesis/bin/st");
    let st = std::env::var_os("SCHEMATHESIS").map_or(installed, PathBuf::from);
    assert!(
        st.exists(),
        "Schemathesis is not installed at {}: scripts/test.sh installs it (or set SCHEMATHESIS \
         to its `st`)",
        st.display()
    );
    st
}

async fn schemathesis_finds_the_server_as_its_document_says(backend: Backend) {
    let st = schemathesis();
    let redis = RedisBehind::start(backend).await;
    let url = redis.as_ref().map(RedisBehind::url).unwrap_or_default();
    // The fuzzer sends operator calls without the token and with tokens it was not given, on
    // purpose: unbounded, so that they are answered 401 and the rest still gets through.
    let env = [("OPERATOR_TOKEN_GUESSES", "0")];
    let server = ServerProcess::start_logged(&url, 20, &env).await;
    let config =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/api/openapi/schemathesis.toml");
    // Hypothesis keeps caches in the working directory: one of the run's own, removed after.
    let work = std::env::temp_dir().join(format!("wr-fuzz-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&work).unwrap();
    let run = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(server.url(routes::OPENAPI))
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--no-color", "--output-truncate", "false"])
        .current_dir(&work)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(RUN_BOUND, run).await;
    let _ = std::fs::remove_dir_all(&work);
    let out = out
        .unwrap_or_else(|_| panic!("Schemathesis ran past {RUN_BOUND:?}"))
        .expect("Schemathesis runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Schemathesis found the server and its document apart ({}):\n{report}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // It did test: every operation but the WebSocket's (see schemathesis.toml).
    assert!(report.contains("Tested: 45"), "{report}");
    // Whatever it sent, nothing the server did was its own failure.
    assert_eq!(server.logged("ERROR"), Vec::<String>::new(), "{report}");
}
