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

/// The page's solver.
const WORKER: &str = "/static/pow-worker.js";

/// Solves `runs` fresh challenges of `bits` with the page's own solver, in its Web Worker or
/// (`main_thread`) on the page's main thread: the median milliseconds one took, and the
/// hashes a second over all of them (total hashes over total time, which the luck of any one
/// challenge does not skew).
async fn solve_ms(client: &Client, bits: u32, runs: u32, main_thread: bool) -> (f64, f64) {
    let script = r#"
        const [bits, runs, mainThread, url, done] = arguments;
        const source = mainThread ? await (await fetch(url)).text() : null;
        const one = () => new Promise((resolve) => {
          const challenge = 'c1.bench.' + Math.random().toString(36).slice(2);
          const t0 = performance.now();
          const finish = (data) => {
            if (data.nonce === undefined) return false;
            resolve([performance.now() - t0, data.hashes]);
            return true;
          };
          if (mainThread) {
            // The same solver, run where CPU throttling applies (it does not reach workers);
            // on a page without the waiting page's CSP, which forbids eval.
            const self = { postMessage: finish };
            new Function('self', source)(self);
            self.onmessage({ data: { challenge, bits } });
            return;
          }
          const w = new Worker(url);
          w.onmessage = ({ data }) => { if (finish(data)) w.terminate(); };
          w.postMessage({ challenge, bits });
        });
        const times = [];
        let hashes = 0;
        for (let i = 0; i < runs; i++) {
          const [ms, h] = await one();
          times.push(ms);
          hashes += h;
          await new Promise((r) => setTimeout(r, 0));
        }
        const total = times.reduce((a, b) => a + b, 0);
        times.sort((a, b) => a - b);
        done([times[Math.floor(times.length / 2)], hashes / total * 1000]);
    "#;
    let script = format!("(async () => {{ {script} }})();");
    let r = client
        .execute_async(
            &script,
            vec![json!(bits), json!(runs), json!(main_thread), json!(WORKER)],
        )
        .await
        .expect("the benchmark ran");
    (r[0].as_f64().unwrap(), r[1].as_f64().unwrap())
}

/// The README's table of time to solve, run by `scripts/solve-bench.sh [phone]`.
/// Figures, not assertions: they depend on the machine.
/// Desktop: the Web Worker at full speed. Phone-class: the same solver on the main thread
/// with `Emulation.setCPUThrottlingRate` 4x and 6x (Chromium throttles the page's main
/// thread only, not its workers).
#[tokio::test]
#[ignore = "a measurement for the README, not a test; run it by name"]
async fn time_to_solve_in_chromium() {
    let app = spawn_app().await;
    let show = unique_show("bench");
    app.create(&show).await;
    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        // The main-thread runs eval the solver: a page the waiting page's CSP does not cover.
        if std::env::var("WR_SOLVE_PLAN").is_ok() {
            client.goto(&app.url(WORKER)).await.unwrap();
        }
        client
            .update_timeouts(fantoccini::wd::TimeoutConfiguration::new(
                Some(Duration::from_secs(600)),
                None,
                None,
            ))
            .await
            .unwrap();
        let plan: Vec<(&str, f64, [u32; 4])> = match std::env::var("WR_SOLVE_PLAN").as_deref() {
            Ok("main") => vec![("main-thread", 1.0, [10, 4, 2, 0])],
            Ok("phone") => vec![
                ("main-thread", 4.0, [10, 4, 3, 2]),
                ("main-thread", 6.0, [10, 4, 2, 1]),
            ],
            _ => vec![("worker", 1.0, [30, 20, 12, 8])],
        };
        for (where_, throttle, runs) in plan {
            client
                .issue_cmd(Cdp(
                    "Emulation.setCPUThrottlingRate",
                    json!({"rate": throttle}),
                ))
                .await
                .expect("chromedriver passes CDP through");
            for (bits, runs) in [12, 16, 18, 20].into_iter().zip(runs) {
                if runs == 0 {
                    continue;
                }
                let (median, rate) = solve_ms(&client, bits, runs, where_ == "main-thread").await;
                let mean = 2f64.powi(bits as i32) / rate * 1000.0;
                println!(
                    "chromium {where_} cpu-throttle={throttle}x bits={bits} runs={runs} \
                     median_ms={median:.0} hashes_per_s={rate:.0} mean_ms_at_that_rate={mean:.0}"
                );
            }
        }
    })
    .await;
}
