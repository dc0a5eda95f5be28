//! The pass verified at an edge by stock means: `deploy/edge/verify-pass.mjs` (WebCrypto, as
//! a CDN worker runs it) in a real Node, with the JWKS the server publishes; and the claims
//! `deploy/envoy.yaml` asks of it (issuer, audience, where the pass is), which Envoy's
//! `jwt_authn` checks. Envoy itself is not run: no package source here carries it.

use std::process::Command;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use waiting_room::protocol::{ADMISSION_HEADER, PASS_COOKIE, routes};

use crate::support::app::spawn_app;
use crate::support::backend::Backend;
use crate::support::ticket_id;

/// What `verifyPass(pass, jwks, show, now)` says in a real Node: the admission, or `{error}`.
fn node_verify(pass: &str, jwks: &str, show: &str, now: u64) -> Value {
    let module = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/edge/verify-pass.mjs");
    let script = format!(
        "import {{ verifyPass }} from 'file://{module}';\n\
         const [pass, jwks, show, now] = process.argv.slice(1);\n\
         try {{ console.log(JSON.stringify(await verifyPass(pass, JSON.parse(jwks), show, Number(now)))); }}\n\
         catch (e) {{ console.log(JSON.stringify({{ error: e.message }})); }}"
    );
    let out = Command::new("node")
        .args(["--no-warnings", "--input-type=module", "-e", &script])
        .args([pass, jwks, show, &now.to_string()])
        .output()
        .expect("node runs (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn a_cdn_worker_verifies_the_pass_with_the_jwks_alone() {
    let app = spawn_app(Backend::Memory).await;
    app.open("s1").await;
    let fan = ticket_id(&app.join_ok("s1").await);
    let t = app.wait_admitted("s1", &fan, Duration::from_secs(3)).await;
    let pass = t["pass"].as_str().unwrap();
    let jwks = app.get(routes::JWKS).await.text().await.unwrap();
    let now = waiting_room::clock::wall_ms() / 1000;
    let ok = node_verify(pass, &jwks, "s1", now);
    assert_eq!(ok["ticket"], fan.as_str(), "{ok}");
    assert_eq!(ok["show"], "s1");
    // Refused: another show, run out, claims changed, another algorithm, garbage.
    assert_eq!(
        node_verify(pass, &jwks, "s2", now)["error"],
        "a pass for another show"
    );
    let exp = ok["expiresAt"].as_u64().unwrap();
    assert_eq!(
        node_verify(pass, &jwks, "s1", exp)["error"],
        "the pass ran out"
    );
    let parts: Vec<&str> = pass.split('.').collect();
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    claims["sub"] = "00000000-0000-0000-0000-000000000000".into();
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        parts[2]
    );
    assert_eq!(
        node_verify(&forged, &jwks, "s1", now)["error"],
        "bad signature"
    );
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
        parts[1]
    );
    assert_eq!(
        node_verify(&none, &jwks, "s1", now)["error"],
        "unexpected algorithm"
    );
    assert_eq!(
        node_verify("x", &jwks, "s1", now)["error"],
        "malformed pass"
    );
    app.stop().await;
}

#[test]
fn the_envoy_example_asks_what_the_pass_carries() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/envoy.yaml")).unwrap();
    let doc: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let filters = &doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        ["http_filters"];
    let jwt = &filters[0]["typed_config"]["providers"]["waiting_room"];
    assert_eq!(
        jwt["issuer"].as_str(),
        Some(waiting_room::pass::PASS_ISSUER)
    );
    assert_eq!(
        jwt["from_headers"][0]["name"].as_str(),
        Some(ADMISSION_HEADER)
    );
    assert_eq!(jwt["from_cookies"][0].as_str(), Some(PASS_COOKIE));
    let uri = jwt["remote_jwks"]["http_uri"]["uri"].as_str().unwrap();
    assert!(uri.ends_with(routes::JWKS), "{uri}");
    assert_eq!(
        jwt["remote_jwks"]["cache_duration"].as_str(),
        Some(format!("{}s", waiting_room::protocol::JWKS_MAX_AGE_SECONDS).as_str())
    );
    assert_eq!(jwt["audiences"][0].as_str(), Some("show-42"));
}
