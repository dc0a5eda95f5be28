//! Bots slowed down, and passes any edge can check: proof of work before a join,
//! signed admission passes at the gate and at the edge route, across stores and processes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::Response;
use serde_json::Value;
use waiting_room::config::Config;
use waiting_room::pass::Keyring;

mod instances;
mod passes;
mod proof;

/// `PASS_KEYS` with the key ids and secret bytes given (each secret 32 times that byte).
pub fn pass_keys(keys: &[(&str, u8)]) -> String {
    keys.iter()
        .map(|(kid, b)| format!("{kid}:{}", STANDARD.encode([*b; 32])))
        .collect::<Vec<_>>()
        .join(",")
}

pub fn keyring(keys: &[(&str, u8)]) -> Keyring {
    pass_keys(keys).parse().unwrap()
}

/// The test defaults, with the servers' `PASS_KEYS`.
pub fn config_with_keys(keys: &[(&str, u8)]) -> Config {
    Config {
        pass_keys: Some(pass_keys(keys)),
        ..Config::for_tests()
    }
}

/// A refusal: its status, and a JSON body that says why.
async fn refusal(r: Response) -> (u16, String) {
    let status = r.status().as_u16();
    // An RFC 9457 problem, keeping `status`, `error` and `message`.
    assert_eq!(
        r.headers()["content-type"],
        "application/problem+json",
        "{status}"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], status);
    (status, body["message"].as_str().unwrap().to_owned())
}

fn now_s() -> u64 {
    waiting_room::clock::wall_ms() / 1000
}
