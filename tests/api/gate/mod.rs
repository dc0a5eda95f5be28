//! The gate holds (issue "The gate holds…"): every hole an attacker found through HTTP, shut,
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

async fn json_of(r: Response) -> Value {
    assert_eq!(r.headers()["content-type"], "application/json");
    r.json().await.unwrap()
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
