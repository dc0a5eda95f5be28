//! The binary as an operator starts it: bad configuration stops the start with a clear
//! message, a missing operator token is generated and printed once, SIGTERM stops it cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use waiting_room::config::Config;

use crate::support::app::spawn_app_with;
use crate::support::backend::Backend;
use crate::support::free_port;

fn server() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_waiting-room"));
    cmd.env_remove("REDIS_URL")
        .env_remove("ADMIN_TOKEN")
        .env("RUST_LOG", "warn");
    cmd
}

#[test]
fn bad_configuration_stops_the_start_with_a_clear_message() {
    for (var, value, hint) in [
        ("ADMISSION_TTL", "forever", "admission-ttl"),
        ("ADMISSION_TTL", "0s", "between 100ms and 24h"),
        ("ADMIT_PER_SECOND", "0", "admit-per-second"),
        ("ADMIT_PER_SECOND", "lots", "admit-per-second"),
        ("BIND", "not-an-address", "bind"),
    ] {
        let out = server().env(var, value).output().unwrap();
        assert!(!out.status.success(), "{var}={value} must not start");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(hint), "{var}={value}: {stderr}");
    }
    // An unreachable Redis is said so, not retried forever.
    let port = free_port();
    let out = server()
        .env("REDIS_URL", format!("redis://127.0.0.1:{port}"))
        .env("BIND", "127.0.0.1:0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach Redis"));
}

/// Secrets reach no log, error or help text; a mistake is one sentence even with
/// `RUST_BACKTRACE=1`; logs carry no colour codes off a terminal, and `LOG_FORMAT=json` writes
/// one JSON object a line.
#[test]
fn secrets_stay_quiet_mistakes_are_one_sentence_and_logs_suit_a_collector() {
    let port = free_port();
    let out = server()
        .env(
            "REDIS_URL",
            format!("redis://default:hunter2@127.0.0.1:{port}"),
        )
        .env("BIND", "127.0.0.1:0")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot reach Redis"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
    let out = server()
        .env("PASS_KEYS", "k1:not-base64!")
        .env("BIND", "127.0.0.1:0")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("PASS_KEYS entry 1"), "{stderr}");
    assert!(
        !stderr.contains("backtrace") && !stderr.contains("stack"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one sentence: {stderr}");
    let help = server()
        .arg("--help")
        .env("ADMIN_TOKEN", "a-long-operator-secret")
        .env("REDIS_URL", "redis://default:hunter2@db:6379")
        .env("REDIS_PASSWORD", "hunter3")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for secret in ["a-long-operator-secret", "hunter2", "hunter3"] {
        assert!(!help.contains(secret), "--help shows {secret}");
    }
    assert!(!help.contains("[`"), "rustdoc markup in --help");
    // Logs: plain text off a terminal; JSON when asked.
    for (format, check) in [("text", false), ("json", true)] {
        let port = free_port();
        let mut child = server()
            .env("LOG_FORMAT", format)
            .env("RUST_LOG", "info")
            .env("ADMIN_TOKEN", "a-long-operator-secret")
            .env("BIND", format!("127.0.0.1:{port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(!first.contains('\u{1b}'), "colour codes: {first:?}");
        if check {
            let v: serde_json::Value = serde_json::from_str(&first).expect("a JSON line");
            assert!(v["fields"]["message"].is_string(), "{v}");
        }
    }
}

#[test]
fn a_missing_operator_token_is_generated_printed_once_and_sigterm_stops_cleanly() {
    let port = free_port();
    let mut child = server()
        .env("BIND", format!("127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let token = first
        .strip_prefix("ADMIN_TOKEN not set; operator token for this run: ")
        .unwrap_or_else(|| panic!("the token line comes first: {first}"))
        .to_owned();
    assert_eq!(token.len(), 32);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let open = format!("http://127.0.0.1:{port}/orders/waiting-room/s/open");
        let mut ready = false;
        for _ in 0..200 {
            if let Ok(r) = client.post(&open).bearer_auth(&token).send().await {
                assert_eq!(r.status(), 204, "the printed token opens a show");
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(ready, "the server came up");
        let wrong = client
            .post(&open)
            .bearer_auth("guess")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401);
    });

    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "SIGTERM is a clean stop: {status:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter().all(|l| !l.contains(&token)),
        "the token is printed once: {rest:?}"
    );
}

#[tokio::test]
async fn the_demo_opens_a_show_full_of_simulated_fans() {
    let config = Config {
        demo: true,
        ..Config::for_tests()
    };
    let app = spawn_app_with(Backend::Memory, config).await;
    let mut stats = serde_json::Value::Null;
    for _ in 0..100 {
        stats = app.stats("demo").await;
        if stats["open"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stats["open"], true, "{stats}");
    assert!(stats["joined"].as_u64().unwrap() >= 3000, "{stats}");
    assert_eq!(stats["admitPerSecond"], 25);
    // A newcomer queues behind the simulated fans and is told an honest wait.
    let mine = app.join_ok("demo").await;
    assert!(mine["position"].as_u64().unwrap() > 2900, "{mine}");
    assert!(mine["etaSeconds"].as_u64().unwrap() > 100, "{mine}");
    app.stop().await;
}
