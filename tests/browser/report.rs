//! The on-sale's report from the operator console, in a real browser: a small sale run on the
//! server (fans joining over a few ticks, some following over SSE, some ordering), then the
//! show's "Report" opens the HTML the console fetched with the token in a window of its own,
//! its plots drawn, its figures those of the JSON report and of the audit, its stylesheet
//! applied; "JSON" and "CSV" save the report as files. On the embedded store and on Redis.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use waiting_room::config::Config;
use waiting_room::model::{AuditKind, AuditPage};
use waiting_room::protocol::routes;

use crate::console::{open_card, sign_in, watch};
use crate::helpers::*;
use crate::support::app::{TestApp, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::sse::SseReader;

use waiting_room::report::PLOTS;

/// Fans in each batch, one batch a tick or so, and how many of the first admitted order.
const BATCHES: [usize; 3] = [4, 3, 3];
const ORDERS: usize = 3;

/// Each plot's state: `drawn` (a series' line or bars), `empty: …` (its words), else what
/// is wrong with it.
const PLOT_STATES: &str = "return arguments[0].map((id) => {
    const fig = document.getElementById(id);
    const svg = fig && fig.querySelector('svg');
    if (!svg) return [id, fig ? 'no svg' : 'missing'];
    const marks = svg.querySelectorAll('g.series:not(.legend) :is(polyline, path, rect)');
    const empty = svg.querySelector('text.empty');
    return [id, marks.length ? 'drawn' : empty ? `empty: ${empty.textContent}` : 'blank'];
});";

/// The figures table, name to value.
const FIGURES: &str = "const rows = {};
    for (const tr of document.querySelectorAll('table.figures tr')) {
      rows[tr.querySelector('th').textContent.trim()] = tr.querySelector('td').textContent.trim();
    }
    return rows;";

/// Only report.css sets these: the page's width, and the verdict's box.
const STYLED: &str = "const main = getComputedStyle(document.querySelector('main.report'));
    const verdict = getComputedStyle(document.querySelector('#fairness .verdict'));
    return [main.maxWidth, verdict.display, verdict.backgroundColor];";

/// Catches the files the console saves instead of letting them download: each `<a download>`
/// clicked, with the blob behind it read back as text, into `window.saved`.
const CATCH_DOWNLOADS: &str = "window.saved = [];
    const blobs = new Map();
    const create = URL.createObjectURL;
    URL.createObjectURL = (blob) => { const url = create.call(URL, blob); blobs.set(url, blob); return url; };
    document.addEventListener('click', (e) => {
      const a = e.target;
      if (!(a instanceof HTMLAnchorElement) || !a.download) return;
      e.preventDefault();
      const blob = blobs.get(a.href);
      blob.text().then((text) => window.saved.push({ name: a.download, type: blob.type, text }));
    }, true);
    return null;";

#[tokio::test]
async fn the_console_opens_a_sales_report_on_the_embedded_store() {
    report_from_the_console(Backend::Memory, Some("report")).await;
}

#[tokio::test]
async fn the_console_opens_a_sales_report_on_redis() {
    report_from_the_console(Backend::Redis, None).await;
}

/// A row of the report's figures table, as a number.
fn figure(rows: &BTreeMap<String, String>, name: &str) -> u64 {
    let text = rows
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in the figures: {rows:?}"));
    text.replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{name} is no number: {text}"))
}

/// `GET …/report?format=` as the operator, asserted 200.
async fn report_as(app: &TestApp, show: &str, format: &str) -> reqwest::Response {
    let path = format!("{}?format={format}", routes::show(routes::REPORT, show));
    let res = app.as_operator(Method::GET, &path).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "the report as {format}");
    res
}

/// The fans admitted by ticks and the orders placed, as the public audit records them.
async fn audit_counts(app: &TestApp, show: &str) -> (u64, u64) {
    let (mut admitted, mut orders) = (0, 0);
    let mut after: Option<String> = None;
    loop {
        let mut path = format!("{}?limit=1000", routes::show(routes::AUDIT, show));
        if let Some(a) = &after {
            path += &format!("&after={a}");
        }
        let page: AuditPage = app.get(&path).await.json().await.unwrap();
        for r in &page.records {
            match r.kind {
                AuditKind::Tick => {
                    admitted += r.admitted.iter().map(|[a, b]| b - a + 1).sum::<u64>()
                }
                AuditKind::Order => orders += 1,
                _ => {}
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return (admitted, orders),
        }
    }
}

/// A small sale: a show with a rate and a stock, fans joining over a few ticks (the first
/// batch's following over SSE, so pushes are timed), the first admitted ordering; then
/// paused, so its figures hold still. The fans' streams, kept open by the caller.
async fn run_a_sale(app: &TestApp, show: &str) -> Vec<SseReader> {
    app.create(show).await;
    app.configure(show, json!({"admitPerSecond": 2, "stock": 40}))
        .await;
    let first = app.join_many(show, BATCHES[0]).await;
    let mut following = Vec::new();
    for ticket in &first {
        following.push(app.events(show, ticket).await);
    }
    app.open(show).await;
    for &n in &BATCHES[1..] {
        tokio::time::sleep(Duration::from_millis(1100)).await;
        app.join_many(show, n).await;
    }
    for (i, ticket) in first.iter().take(ORDERS).enumerate() {
        app.wait_admitted(show, ticket, Duration::from_secs(20))
            .await;
        let r = app.order(show, &format!("hold-{i}"), Some(ticket)).await;
        assert_eq!(r.status(), StatusCode::CREATED, "order {i}");
    }
    // A few ticks more, so the plots have seconds after the orders too, then still.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = app.operator(routes::PAUSE, show).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT, "pause {show}");
    following
}

async fn report_from_the_console(backend: Backend, picture: Option<&'static str>) {
    let config = Config {
        admit_per_second: 2,
        ..Config::for_tests()
    };
    let app = spawn_app_with(backend, config).await;
    let show = crate::support::unique_show("report");
    let following = run_a_sale(&app, &show).await;
    let arrivals: u64 = BATCHES.iter().sum::<usize>() as u64;

    // What the report says over HTTP with the token, and what the audit says.
    let json: Value = report_as(&app, &show, "json").await.json().await.unwrap();
    let (admitted, orders) = audit_counts(&app, &show).await;
    let f = &json["figures"];
    assert_eq!(f["arrivals"], arrivals, "{json}");
    assert_eq!(f["orders"], ORDERS as u64, "{json}");
    assert_eq!(orders, ORDERS as u64, "the audit's orders");
    assert_eq!(f["admitted"], admitted, "the audit's admissions: {json}");
    assert!(admitted >= ORDERS as u64, "{json}");
    assert!(
        json["pushLatency"]["count"].as_u64().unwrap_or(0) > 0,
        "pushes were timed: {}",
        json["pushLatency"]
    );

    with_browser(BrowserOptions::default(), move |client| async move {
        sign_in(&client, &app).await;
        watch(&client, &show).await;
        let card = open_card(&client, &show, "[data-report=html]").await;
        let console = client.window().await.unwrap();

        // "Report": a new window, the HTML the console fetched written into it.
        client.click_on(&format!("{card} [data-report=html]")).await;
        let report = eventually("the report's window", SHORT, || async {
            let handles = client.windows().await.unwrap();
            handles.into_iter().find(|h| *h != console)
        })
        .await;
        client.switch_to_window(report).await.unwrap();
        eventually("the report written", SHORT, || async {
            client.visible("#fairness").await.then_some(())
        })
        .await;
        let title = client.eval("return document.title").await;
        assert_eq!(title, json!(format!("Report: {show}")));
        assert_eq!(
            client.eval("return document.scripts.length").await,
            json!(0),
            "the report runs no script"
        );

        // Every plot, each drawn, or saying why not.
        let states = client
            .execute(PLOT_STATES, vec![json!(PLOTS)])
            .await
            .unwrap();
        let states: Vec<(String, String)> = serde_json::from_value(states).unwrap();
        for (id, state) in &states {
            assert!(
                state == "drawn" || state.starts_with("empty: "),
                "{id}: {state}"
            );
        }
        // This sale has arrivals, a queue, admissions and orders, pushes and a stock.
        for id in [
            "plot-arrivals",
            "plot-queue",
            "plot-admissions",
            "plot-push",
            "plot-stock",
        ] {
            let state = states.iter().find(|(i, _)| i == id).map(|(_, s)| s);
            assert_eq!(state.map(String::as_str), Some("drawn"), "{id}");
        }

        // The figures are the JSON report's and the audit's.
        let rows: BTreeMap<String, String> =
            serde_json::from_value(client.eval(FIGURES).await).unwrap();
        assert_eq!(figure(&rows, "Arrivals"), arrivals, "{rows:?}");
        assert_eq!(figure(&rows, "Admitted"), admitted, "{rows:?}");
        assert_eq!(figure(&rows, "Orders"), ORDERS as u64, "{rows:?}");
        assert_eq!(figure(&rows, "Stock"), 40, "{rows:?}");

        let verdict = client.text_of("#fairness .verdict").await.unwrap();
        assert_eq!(verdict, "Inversions: 0 (the audit verified)");
        let seconds = client
            .eval("return document.querySelectorAll('table#seconds tbody tr').length")
            .await;
        let seconds = seconds.as_u64().unwrap();
        assert!(seconds >= 3, "a row a sampled second: {seconds}");
        assert!(
            client
                .text_of("table#seconds tbody td[colspan]")
                .await
                .is_none(),
            "seconds, not the words of none"
        );

        // Styled by report.css, under the console's CSP (the window's) and the report's own.
        let styled = client.eval(STYLED).await;
        assert_eq!(
            styled,
            json!(["960px", "inline-block", "rgb(220, 245, 234)"]),
            "report.css applied"
        );
        let csp = client
            .attr_of("meta[http-equiv=Content-Security-Policy]", "content")
            .await
            .unwrap_or_default();
        assert!(csp.starts_with("default-src 'none'"), "{csp}");

        // Its "as JSON" link is saved by the console too, never followed without the token.
        client
            .execute(
                "window.clicked = null;
                 document.addEventListener('click', (e) => {
                   const a = e.target;
                   if (a instanceof HTMLAnchorElement && a.download) {
                     e.preventDefault();
                     window.clicked = [a.download, a.href.slice(0, 5)];
                   }
                 }, true);
                 return null;",
                vec![],
            )
            .await
            .unwrap();
        client.click_on(".formats a[href$='format=json']").await;
        let clicked = eventually("the JSON saved from the report", SHORT, || async {
            let clicked = client.eval("return window.clicked").await;
            (!clicked.is_null()).then_some(clicked)
        })
        .await;
        assert_eq!(clicked, json!([format!("report-{show}.json"), "blob:"]));
        assert!(client.visible("#fairness").await, "the report stayed");

        if let Some(name) = picture {
            // The whole page, 1200 pixels wide.
            client.set_window_size(1200, 1000).await.unwrap();
            let tall = client
                .eval("return document.documentElement.scrollHeight")
                .await;
            let inner = client.eval("return window.innerHeight").await;
            let frame = 1000 - inner.as_u64().unwrap_or(1000).min(1000);
            let tall = tall.as_u64().unwrap_or(1000).min(6000) + frame;
            client.set_window_size(1200, tall as u32).await.unwrap();
            screenshot(&client, name).await;
        }

        // "JSON" and "CSV" in the console: files of the report, named for the show.
        client.switch_to_window(console).await.unwrap();
        client.eval(CATCH_DOWNLOADS).await;
        for format in ["json", "csv"] {
            client
                .click_on(&format!("{card} [data-report={format}]"))
                .await;
            let said = format!("Report saved as report-{show}.{format}.");
            eventually("the file saved", SHORT, || async {
                client
                    .text_of(&format!("{card} .form-message"))
                    .await
                    .filter(|m| *m == said)
            })
            .await;
        }
        let saved = eventually("both files read back", SHORT, || async {
            let saved = client.eval("return window.saved").await;
            (saved.as_array().map_or(0, Vec::len) == 2).then_some(saved)
        })
        .await;
        assert_eq!(saved[0]["name"], json!(format!("report-{show}.json")));
        assert!(
            saved[0]["type"]
                .as_str()
                .unwrap()
                .starts_with("application/json")
        );
        let file: Value = serde_json::from_str(saved[0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(file["figures"]["arrivals"], arrivals);
        assert_eq!(file["figures"]["orders"], ORDERS as u64);
        assert_eq!(saved[1]["name"], json!(format!("report-{show}.csv")));
        assert!(saved[1]["type"].as_str().unwrap().starts_with("text/csv"));
        let csv = saved[1]["text"].as_str().unwrap();
        assert!(csv.starts_with("t,at_ms,arrivals,"), "{csv}");
        // A header and a line a tick, as the JSON has them (the sale is paused: no tick
        // came between the two downloads).
        let ticks = file["seconds"].as_array().unwrap().len();
        assert_eq!(csv.lines().count(), 1 + ticks, "{csv}");
        assert!(
            ticks as u64 >= seconds,
            "{seconds} rows shown, {ticks} ticks"
        );
        drop(following);
    })
    .await;
}
