//! Proof of work before a join: asked per show, judged and spent with the join.

use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::pass::{leading_zero_bits, solve};
use waiting_room::protocol::{JOIN_PROOF_HEADER, routes};

use super::{config_with_keys, keyring, now_s, refusal};
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::show;

both_stores!(
    joins_bring_a_valid_proof_once,
    the_difficulty_is_the_operators,
);

const KEYS: &[(&str, u8)] = &[("k1", 1)];

async fn challenge(app: &TestApp, show: &str) -> Value {
    let r = app
        .client
        .post(app.url(&routes::show(routes::CHALLENGE, show)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn join_with(app: &TestApp, show: &str, proof: &str) -> reqwest::Response {
    app.client
        .post(app.url(&routes::show(routes::JOIN, show)))
        .header(JOIN_PROOF_HEADER, proof)
        .send()
        .await
        .unwrap()
}

/// A nonce that does NOT give `bits` zero bits.
fn wrong_nonce(challenge: &str, bits: u32) -> u64 {
    (0..)
        .find(|n| leading_zero_bits(format!("{challenge}:{n}").as_bytes()) < bits)
        .unwrap()
}

async fn joins_bring_a_valid_proof_once(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    let stats = app.configure("pow", json!({"joinChallengeBits": 10})).await;
    assert_eq!(stats["joinChallengeBits"], 10);
    app.create("other").await;

    let c = challenge(&app, "pow").await;
    assert_eq!(
        (c["bits"].as_u64(), c["expiresInSeconds"].as_u64()),
        (Some(10), Some(300))
    );
    let text = c["challenge"].as_str().unwrap().to_owned();

    // None: 428, saying what to do.
    let (status, msg) = refusal(app.join("pow").await).await;
    assert_eq!(status, 428);
    assert!(
        msg.contains("10 bits") && msg.contains("X-Join-Proof"),
        "{msg}"
    );
    // Malformed: 400.
    for bad in [
        "",
        "no-colon",
        &format!("{text}:"),
        &format!("{text}:{}", "9".repeat(65)),
    ] {
        let (status, _) = refusal(join_with(&app, "pow", bad).await).await;
        assert_eq!(status, 400, "{bad:?}");
    }
    // Not enough work: 403.
    let weak = wrong_nonce(&text, 10);
    let (status, msg) = refusal(join_with(&app, "pow", &format!("{text}:{weak}")).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("10 zero bits"), "{msg}");
    // Minted for another show: 403, named.
    let theirs = challenge(&app, "other").await["challenge"]
        .as_str()
        .unwrap()
        .to_owned();
    let (n, _) = solve(&theirs, 10);
    let (status, msg) = refusal(join_with(&app, "pow", &format!("{theirs}:{n}")).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("another show"), "{msg}");
    // Minted by someone else (a key the server does not hold), or altered: 403.
    let foreign = keyring(&[("k1", 2)]).mint_challenge(&show("pow"), now_s());
    let (n, _) = solve(&foreign, 10);
    let (status, msg) = refusal(join_with(&app, "pow", &format!("{foreign}:{n}")).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("did not mint"), "{msg}");
    // Expired (minted with the server's own key, ending a second ago): 403.
    let old = keyring(KEYS).mint_challenge_until(&show("pow"), now_s() - 1);
    let (n, _) = solve(&old, 10);
    let (status, msg) = refusal(join_with(&app, "pow", &format!("{old}:{n}")).await).await;
    assert_eq!(status, 403);
    assert!(msg.contains("ran out"), "{msg}");
    assert_eq!(
        app.stats("pow").await["joined"],
        0,
        "no refused proof joined"
    );

    // Solved: a place.
    let (nonce, _) = solve(&text, 10);
    let proof = format!("{text}:{nonce}");
    let ok = join_with(&app, "pow", &proof).await;
    assert_eq!(ok.status(), StatusCode::ACCEPTED);
    // The same proof again, even raced: 409, one place in all.
    let again = futures::future::join_all((0..4).map(|_| join_with(&app, "pow", &proof))).await;
    for r in again {
        let (status, msg) = refusal(r).await;
        assert_eq!(status, 409);
        assert!(msg.contains("used already"), "{msg}");
    }
    assert_eq!(app.stats("pow").await["joined"], 1);
    app.stop().await;
}

async fn the_difficulty_is_the_operators(backend: Backend) {
    let app = spawn_app_with(backend, config_with_keys(KEYS)).await;
    // Nobody made it: 404, no challenge.
    let none = app
        .client
        .post(app.url(&routes::show(routes::CHALLENGE, "nobody")))
        .send()
        .await
        .unwrap();
    assert_eq!(refusal(none).await.0, 404);
    app.create("pow").await;
    // Off by default: a join needs nothing, a challenge says 0.
    assert_eq!(challenge(&app, "pow").await["bits"], 0);
    assert_eq!(app.stats("pow").await["joinChallengeBits"], 0);
    assert_eq!(app.join("pow").await.status(), StatusCode::ACCEPTED);
    // Beyond 32 bits: 400, nothing changed.
    let r = app
        .put_config("pow", &json!({"joinChallengeBits": 33}))
        .await;
    let (status, msg) = refusal(r).await;
    assert_eq!(status, 400);
    assert!(msg.contains("joinChallengeBits"), "{msg}");
    // On: takes effect for the next join at once.
    app.configure("pow", json!({"joinChallengeBits": 4})).await;
    assert_eq!(refusal(app.join("pow").await).await.0, 428);
    // The join form of a page without JavaScript cannot solve it: the page says why.
    let form = app.join_form("pow").await;
    assert_eq!(form.status(), StatusCode::PRECONDITION_REQUIRED);
    let page = form.text().await.unwrap();
    assert!(page.contains("JavaScript"), "{page}");
    // An Idempotency-Key replay gives no new place, so it spends no proof.
    let keyed = |proof: Option<String>| {
        let mut req = app
            .client
            .post(app.url(&routes::show(routes::JOIN, "pow")))
            .header("Idempotency-Key", "fan-1");
        if let Some(p) = proof {
            req = req.header(JOIN_PROOF_HEADER, p);
        }
        req.send()
    };
    let text = challenge(&app, "pow").await["challenge"]
        .as_str()
        .unwrap()
        .to_owned();
    let (n, _) = solve(&text, 4);
    let first = keyed(Some(format!("{text}:{n}"))).await.unwrap();
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    let replay = keyed(None).await.unwrap();
    assert_eq!(replay.status(), StatusCode::OK);
    // Off again: joins need nothing.
    app.configure("pow", json!({"joinChallengeBits": 0})).await;
    assert_eq!(app.join("pow").await.status(), StatusCode::ACCEPTED);
    assert_eq!(app.stats("pow").await["joined"], 3);
    app.stop().await;
}
