//! The fan's pages checked by axe-core (Deque's accessibility engine, as browsers' audit tools
//! run it) inside Chromium: the built-in page about to join and waiting, in English and in
//! Arabic, and the sample shop page (docs/pages/sample/) waiting. Any violation axe rates
//! serious or critical fails the test; every violation is printed.
//!
//! axe-core comes from the npm registry into `target/axe` (`scripts/test.sh` installs it);
//! without it the test fails with the command that installs it, as a browser test never skips.

use std::path::PathBuf;

use fantoccini::Client;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::shop_page::{assert_shop_frame, set_sample_page};
use crate::support::api::Api;

/// axe-core's script: `AXE_CORE`, else `target/axe/node_modules/axe-core/axe.min.js`.
fn axe_source() -> String {
    let path = std::env::var_os("AXE_CORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/axe/node_modules/axe-core/axe.min.js")
        });
    std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "axe-core not found at {} ({e}). The accessibility tests need it: \
             `npm install --prefix target/axe axe-core@4` (scripts/test.sh does it; or set \
             AXE_CORE). They never skip.",
            path.display()
        )
    })
}

/// Runs axe on the page the browser shows and answers its violations, each with its nodes.
async fn axe_violations(client: &Client, axe: &str) -> Vec<Value> {
    // WebDriver's scripts run outside the page's CSP: axe needs no nonce.
    client
        .execute(axe, vec![])
        .await
        .expect("axe-core loads into the page");
    let found = client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             axe.run(document, { resultTypes: ['violations'] }) \
               .then((r) => done(r.violations.map((v) => ({ \
                 id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, \
                 nodes: v.nodes.map((n) => ({ target: n.target, html: n.html, why: n.failureSummary })) })))) \
               .catch((e) => done({ error: String(e) }));",
            vec![],
        )
        .await
        .expect("axe ran");
    match found {
        Value::Array(violations) => violations,
        other => panic!("axe failed: {other}"),
    }
}

/// Fails on any serious or critical violation on the page the browser shows, printing all.
async fn assert_accessible(client: &Client, axe: &str, what: &str) {
    let violations = axe_violations(client, axe).await;
    for v in &violations {
        eprintln!(
            "axe, {what}: {} ({}): {} {}\n{}",
            v["id"],
            v["impact"],
            v["help"],
            v["helpUrl"],
            serde_json::to_string_pretty(&v["nodes"]).unwrap_or_default()
        );
    }
    let blocking: Vec<&Value> = violations
        .iter()
        .filter(|v| v["impact"] == "serious" || v["impact"] == "critical")
        .collect();
    assert!(
        blocking.is_empty(),
        "{what}: {} serious or critical accessibility violations: {}",
        blocking.len(),
        serde_json::to_string_pretty(&blocking).unwrap_or_default()
    );
}

/// A show whose page waits in `new`: it takes access codes, so it joins only when asked.
async fn show_that_waits_to_join(app: &Api) -> String {
    let show = app.queued_show("a11y-new", 0).await;
    app.configure(&show, json!({"lanes": [{"name": "presale", "share": 50}]}))
        .await;
    show
}

#[tokio::test]
async fn the_fan_pages_pass_axe_in_english_and_arabic_built_in_and_the_shops() {
    let axe = axe_source();
    let app = spawn_app().await;
    let joining = show_that_waits_to_join(&app).await;
    let waiting = app.queued_show("a11y-wait", 1233).await;
    let shop = app.queued_show("a11y-shop", 1233).await;
    set_sample_page(&app, &shop).await;
    for show in [&waiting, &shop] {
        // Presence off: the fans queued here never follow their tickets.
        app.configure(show, json!({"admitPerSecond": 5, "awayHoldSeconds": 0}))
            .await;
    }

    with_browser(BrowserOptions::default(), move |client| async move {
        for show in [&waiting, &shop] {
            app.open(show).await;
        }
        for lang in ["en", "ar"] {
            visit_waiting_page(&client, &app, &joining, &format!("?lang={lang}")).await;
            wait_for_state(&client, "new", SHORT).await;
            assert_accessible(&client, &axe, &format!("the built-in page, new, {lang}")).await;

            visit_waiting_page(&client, &app, &waiting, &format!("?lang={lang}")).await;
            wait_until_live(&client).await;
            assert_accessible(
                &client,
                &axe,
                &format!("the built-in page, waiting, {lang}"),
            )
            .await;

            visit_waiting_page(&client, &app, &shop, &format!("?lang={lang}")).await;
            if lang == "en" {
                wait_for_state(&client, "waiting", SHORT).await;
                assert_shop_frame(&client, "axe").await;
            }
            wait_until_live(&client).await;
            assert_accessible(
                &client,
                &axe,
                &format!("the sample shop page, waiting, {lang}"),
            )
            .await;
        }
    })
    .await;
}

/// The page waiting, and following its ticket live: what axe is run on.
async fn wait_until_live(client: &fantoccini::Client) {
    wait_for_state(client, "waiting", SHORT).await;
    eventually("the live indicator", SHORT, || async {
        (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
    })
    .await;
}
