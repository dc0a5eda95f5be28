//! The join challenge in a real browser: the waiting page solves it in a Web Worker, says so
//! while it works, and reaches admission; and (on request) how long solving takes at each
//! difficulty, at full speed and with the CPU throttled like a phone's.

use std::time::Duration;

use fantoccini::Client;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::support::unique_show;

#[tokio::test]
async fn the_page_solves_the_challenge_while_saying_so_and_is_admitted() {
    let app = spawn_app().await;
    let show = unique_show("pow");
    // 20 bits: about a million hashes, long enough for the status line to be seen.
    app.configure(&show, json!({"joinChallengeBits": 20})).await;
    app.open(&show).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        // While it works, the page says what it does, in a status region.
        eventually("the status line of the challenge", SHORT, || async {
            client.visible("#pow-status").await.then_some(())
        })
        .await;
        assert_eq!(
            client.attr_of("#pow-status", "role").await.as_deref(),
            Some("status")
        );
        let said = client.text_of("#pow-text").await.unwrap_or_default();
        assert!(
            said.contains("not a bot") || said.contains("Check done"),
            "{said}"
        );
        screenshot(&client, "waiting-solving-challenge").await;
        // Solved, joined, and admitted (one fan, two a second).
        wait_for_state(&client, "admitted", Duration::from_secs(60)).await;
        assert_eq!(
            client.attr_of("#wait", "data-pow-bits").await.as_deref(),
            Some("20")
        );
        let stats = app.stats(&show).await;
        assert_eq!(stats["joined"], 1, "one proof, one place");
        assert_eq!(stats["joinChallengeBits"], 20);
        // The admission came with a pass, which the checkout presents.
        client.fill("#email", "ana@example.com").await;
        client.fill("#amount", "35.00").await;
        client.click_on("#place-order").await;
        wait_for_state(&client, "ordered", SHORT).await;
    })
    .await;
}

/// chromedriver's passthrough to the DevTools protocol: `POST …/goog/cdp/execute`.
#[derive(Debug)]
struct Cdp(&'static str, Value);

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http_types_1::Method, Option<String>) {
        let body = json!({"cmd": self.0, "params": self.1}).to_string();
        (http_types_1::Method::POST, Some(body))
    }
}

/// Median milliseconds the page's worker takes to solve `runs` fresh challenges of `bits`.
async fn solve_ms(client: &Client, bits: u32, runs: u32) -> (f64, f64) {
    let script = r#"
        const [bits, runs, done] = arguments;
        const url = document.getElementById('wait').dataset.powWorker;
        const times = [];
        const one = () => new Promise((resolve) => {
          const w = new Worker(url);
          const t0 = performance.now();
          w.onmessage = ({ data }) => {
            if (data.nonce !== undefined) { w.terminate(); resolve([performance.now() - t0, data.hashes]); }
          };
          w.postMessage({ challenge: 'c1.bench.' + Math.random().toString(36).slice(2), bits });
        });
        (async () => {
          let hashes = 0;
          for (let i = 0; i < runs; i++) { const [ms, h] = await one(); times.push(ms); hashes += h; }
          times.sort((a, b) => a - b);
          done([times[Math.floor(times.length / 2)], hashes / times.reduce((a, b) => a + b, 0) * 1000]);
        })();
    "#;
    let r = client
        .execute_async(script, vec![json!(bits), json!(runs)])
        .await
        .expect("the benchmark ran");
    (r[0].as_f64().unwrap(), r[1].as_f64().unwrap())
}

/// The README's table of time to solve: `cargo test --test browser -- --ignored
/// time_to_solve --nocapture`. Figures, not assertions: they depend on the machine.
#[tokio::test]
#[ignore = "a measurement for the README, not a test; run it by name"]
async fn time_to_solve_in_chromium() {
    let app = spawn_app().await;
    let show = unique_show("bench");
    app.create(&show).await;
    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        client
            .update_timeouts(fantoccini::wd::TimeoutConfiguration::new(
                Some(Duration::from_secs(600)),
                None,
                None,
            ))
            .await
            .unwrap();
        for rate in [1.0, 4.0, 6.0] {
            client
                .issue_cmd(Cdp("Emulation.setCPUThrottlingRate", json!({"rate": rate})))
                .await
                .expect("chromedriver passes CDP through");
            for bits in [12, 16, 18, 20] {
                let runs = if bits >= 18 { 7 } else { 15 };
                let (median, rate_hps) = solve_ms(&client, bits, runs).await;
                println!(
                    "chromium cpu-throttle={rate}x bits={bits} runs={runs} median_ms={median:.0} hashes_per_s={rate_hps:.0}"
                );
            }
        }
    })
    .await;
}
