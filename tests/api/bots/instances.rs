//! Two real server processes on one real Redis, sharing `PASS_KEYS` or, without it, the key
//! the first of them kept in Redis: one place per Idempotency-Key, one join per challenge,
//! and passes, whichever instance a request reaches.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use waiting_room::pass::solve;
use waiting_room::protocol::{ADMISSION_HEADER, JOIN_PROOF_HEADER, routes};

use super::pass_keys;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;
use crate::support::ticket_id;

#[tokio::test]
async fn keys_challenges_and_passes_hold_across_instances() {
    let redis = RedisServer::start().await;
    let keys = pass_keys(&[("k1", 7)]);
    let env = [("PASS_KEYS", keys.as_str())];
    let a = ServerProcess::start(&redis.url(), 1, &env).await;
    let b = ServerProcess::start(&redis.url(), 1, &env).await;
    one_place_one_join_one_pass_across(&a, &b).await;
}

#[tokio::test]
async fn without_pass_keys_instances_on_one_redis_share_a_key_and_put_it_back() {
    let redis = RedisServer::start().await;
    let a = ServerProcess::start(&redis.url(), 1, &[]).await;
    let b = ServerProcess::start(&redis.url(), 1, &[]).await;
    one_place_one_join_one_pass_across(&a, &b).await;
    // The store forgets the key (a restart without persistence): it is put back, the same,
    // so an instance started later signs as these two do.
    let mut conn = redis.conn().await;
    let kept = shared_keys(&mut conn).await;
    assert_eq!(kept.len(), 1, "one key, no rotation due");
    let _: i64 = ::redis::cmd("DEL")
        .arg("wr:passkeys")
        .query_async(&mut conn)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = shared_keys(&mut conn).await;
        if !now.is_empty() {
            assert_eq!(now, kept, "the same key is put back");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pass key was never put back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let c = ServerProcess::start(&redis.url(), 1, &[]).await;
    a.open("later").await;
    let fan = ticket_id(&a.join_ok("later").await);
    let t = a.wait_admitted("later", &fan, Duration::from_secs(4)).await;
    let checked = c
        .client
        .get(c.url(&routes::show(routes::PASS_CHECK, "later")))
        .header(ADMISSION_HEADER, t["pass"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(
        checked.status(),
        StatusCode::NO_CONTENT,
        "the later instance agrees"
    );
}

/// The shared pass keys Redis holds.
async fn shared_keys(conn: &mut ::redis::aio::MultiplexedConnection) -> Vec<String> {
    ::redis::cmd("ZRANGE")
        .arg("wr:passkeys")
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .unwrap()
}

/// One place per Idempotency-Key, one join per challenge and a pass that opens both gates,
/// whichever of `a` and `b` each request reaches.
async fn one_place_one_join_one_pass_across(a: &ServerProcess, b: &ServerProcess) {
    a.create("x").await;
    let join = |api: &ServerProcess, key: &'static str| {
        api.client
            .post(api.url(&routes::show(routes::JOIN, "x")))
            .header("Idempotency-Key", key)
            .send()
    };
    // One key, two instances: one ticket, the second answer says it is the same.
    let first = join(a, "fan-1").await.unwrap();
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let first = ticket_id(&first.json().await.unwrap());
    let again = join(b, "fan-1").await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(ticket_id(&again.json().await.unwrap()), first);
    assert_eq!(b.stats("x").await["joined"], 1);

    // A challenge minted by one instance is spent by another, once.
    a.configure("x", json!({"joinChallengeBits": 8})).await;
    let c: serde_json::Value = a
        .client
        .post(a.url(&routes::show(routes::CHALLENGE, "x")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = c["challenge"].as_str().unwrap();
    let (n, _) = solve(text, 8);
    let proof = format!("{text}:{n}");
    let proven = |api: &ServerProcess| {
        api.client
            .post(api.url(&routes::show(routes::JOIN, "x")))
            .header(JOIN_PROOF_HEADER, proof.clone())
            .send()
    };
    assert_eq!(proven(b).await.unwrap().status(), StatusCode::ACCEPTED);
    assert_eq!(proven(a).await.unwrap().status(), StatusCode::CONFLICT);

    // A pass handed out by one instance opens the other's gate.
    a.open("x").await;
    let t = b.wait_admitted("x", &first, Duration::from_secs(4)).await;
    let pass = t["pass"].as_str().unwrap();
    let checked = a
        .client
        .get(a.url(&routes::show(routes::PASS_CHECK, "x")))
        .header(ADMISSION_HEADER, pass)
        .send()
        .await
        .unwrap();
    assert_eq!(checked.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        a.order("x", "hold-1", Some(pass)).await.status(),
        StatusCode::CREATED
    );

    // An admission redeemed through one instance is spent on every other.
    a.configure("x", json!({"joinChallengeBits": 0})).await;
    let fan = ticket_id(&a.join_ok("x").await);
    let t = a.wait_admitted("x", &fan, Duration::from_secs(4)).await;
    let pass = t["pass"].as_str().unwrap();
    assert_eq!(b.redeem("x", Some(pass)).await.status(), StatusCode::OK);
    assert_eq!(
        a.redeem("x", Some(pass)).await.status(),
        StatusCode::CONFLICT
    );
    assert_eq!(
        b.redeem("x", Some(&fan)).await.status(),
        StatusCode::CONFLICT
    );
    assert_eq!(
        a.check_pass("x", pass).await.status(),
        StatusCode::FORBIDDEN
    );
}

/// The kid a pass names (in its JWT header).
fn kid_of(pass: &str) -> String {
    jsonwebtoken::decode_header(pass).unwrap().kid.unwrap()
}

#[tokio::test]
async fn the_shared_key_rotates_and_the_old_one_verifies_while_its_passes_live() {
    let redis = RedisServer::start().await;
    let env = [("PASS_KEY_ROTATION", "2s")];
    let a = ServerProcess::start(&redis.url(), 5, &env).await;
    let b = ServerProcess::start(&redis.url(), 5, &env).await;
    a.open("rot").await;
    let check = |api: &ServerProcess, pass: String| {
        api.client
            .get(api.url(&routes::show(routes::PASS_CHECK, "rot")))
            .header(ADMISSION_HEADER, pass)
            .send()
    };
    let admitted_pass = || async {
        let fan = ticket_id(&a.join_ok("rot").await);
        let t = a.wait_admitted("rot", &fan, Duration::from_secs(4)).await;
        t["pass"].as_str().unwrap().to_owned()
    };
    let first = admitted_pass().await;
    // A new key signs once every instance has had time to read it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let later = loop {
        let p = admitted_pass().await;
        if kid_of(&p) != kid_of(&first) {
            break p;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the key never rotated"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    for api in [&a, &b] {
        // Both keys are published to edges, each as one public key.
        let jwks: serde_json::Value = api.get(routes::JWKS).await.json().await.unwrap();
        let kids: Vec<&str> = jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["kid"].as_str().unwrap())
            .collect();
        assert!(
            kids.contains(&&*kid_of(&first)) && kids.contains(&&*kid_of(&later)),
            "{jwks}"
        );
        assert_eq!(
            check(api, first.clone()).await.unwrap().status(),
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            check(api, later.clone()).await.unwrap().status(),
            StatusCode::NO_CONTENT
        );
    }
}
