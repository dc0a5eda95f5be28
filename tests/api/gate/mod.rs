//! The gate holds: every hole an attacker found through HTTP, shut,
//! on the embedded store and on real Redis. Redis restarts here are real restarts of a real
//! `redis-server`.

use std::time::Duration;

use reqwest::Response;
use serde_json::Value;

use crate::support::app::TestApp;
use crate::support::backend::RedisBehind;
use crate::support::ticket_id;

mod lost;
mod orders;
mod phases;
mod shows;

/// The JSON of an answer: a success's `application/json`, or an error's RFC 9457 problem
/// (`application/problem+json`), which keeps `status`, `error` and `message`.
async fn json_of(r: Response) -> Value {
    let expected = if r.status().is_success() || r.status() == reqwest::StatusCode::NOT_FOUND {
        // 404 may be the original's UNKNOWN ticket, plain JSON; the check below tells.
        None
    } else {
        Some("application/problem+json")
    };
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    match expected {
        Some(media) => assert_eq!(ct, media, "{body}"),
        None if ct == "application/problem+json" => assert_eq!(body["status"], status),
        None => assert_eq!(ct, "application/json", "{body}"),
    }
    body
}

/// Opens `show`, joins one fan and waits for its admission.
async fn admitted_fan(app: &TestApp, show: &str) -> String {
    let id = ticket_id(&app.join_ok(show).await);
    app.wait_admitted(show, &id, Duration::from_secs(3)).await;
    id
}

/// Every key in the store but the admitter's lease and the instances' live-fan counts
/// (`wr:presence`), which the server renews on its own whatever the test does.
async fn keys_but_the_lease(redis: &RedisBehind) -> std::collections::BTreeSet<String> {
    let mut conn = redis.server().conn().await;
    let keys: Vec<String> = ::redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    keys.into_iter()
        .filter(|k| !k.starts_with("wr:{admitter}:"))
        // Every instance's count of its live fans, written each second whatever happens.
        .filter(|k| k != "wr:presence")
        .collect()
}
