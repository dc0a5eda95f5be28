//! The operator's report (`GET …/{showId}/report`) of a real sale run through HTTP, on the
//! embedded store and on a real redis-server: its figures are the audit's and the show's, its
//! push latency is what `/metrics` exports, its CSV and page hold the same seconds, and
//! whatever the outside sends gets a clear answer. And a Redis that restarted empty.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use waiting_room::draw;
use waiting_room::model::{AuditKind, AuditRecord, Bucket, PushLatency, RecordId, Report};
use waiting_room::protocol::{BYPASS_TOKEN_HEADER, PROBLEM_JSON, routes};
use waiting_room::report::{Links, Parts, build, html};
use waiting_room::store::{MemoryStore, PaceFigures, Sample, Shows};

use crate::draw::audit_of;
use crate::support::api::Api;
use crate::support::app::{TestApp, config, spawn_app_with};
use crate::support::backend::{Backend, settings};
use crate::support::sse::SseReader;
use crate::support::ticket_id;

both_stores!(
    the_report_of_a_sale_is_what_its_audit_stats_and_metrics_say,
    the_report_answers_as_json_csv_or_a_page_without_script,
    hostile_report_requests_get_a_clear_answer,
    a_show_never_opened_reports_no_seconds_and_nothing_done,
    fans_who_join_after_the_last_tick_count_in_the_arrivals,
);

const WAIT: Duration = Duration::from_secs(5);

/// The bypass token of the sale's monitor.
const MONITOR: &str = "report-monitor-5b1e";

/// The report of `show` as `accept`, `?query` after its path (each when given), as its
/// operator asks it.
async fn report(app: &Api, show: &str, query: Option<&str>, accept: Option<&str>) -> Response {
    let mut path = routes::show(routes::REPORT, show);
    if let Some(q) = query {
        path = format!("{path}?{q}");
    }
    let mut r = app.as_operator(Method::GET, &path);
    if let Some(a) = accept {
        r = r.header("accept", a);
    }
    r.send().await.unwrap()
}

/// The report of `show` as JSON, asserting a 200: as sent, and as the model reads it.
async fn report_json(app: &Api, show: &str) -> (Value, Report) {
    let r = report(app, show, Some("format=json"), None).await;
    assert_eq!(r.status(), StatusCode::OK, "report of {show}");
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: Value = r.json().await.unwrap();
    let typed: Report = serde_json::from_value(v.clone()).expect("the report's shape");
    (v, typed)
}

/// An error's JSON body (RFC 9457), asserting its media type and that it names its status.
async fn problem(r: Response) -> Value {
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.expect("a JSON body");
    assert_eq!(ct, PROBLEM_JSON, "{body}");
    assert_eq!(body["status"], status, "{body}");
    assert!(body["message"].is_string(), "{body}");
    body
}

/// Arrivals a tick record let in.
fn let_in(r: &AuditRecord) -> u64 {
    r.admitted.iter().map(|[a, b]| b - a + 1).sum()
}

/// `hub_lag_milliseconds` as `/metrics` exports it, read the way the report keeps it.
fn hub_lag_of(metrics: &str) -> PushLatency {
    const NAME: &str = "waiting_room_hub_lag_milliseconds";
    let value = |suffix: &str| {
        let prefix = format!("{NAME}_{suffix} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {NAME}_{suffix} in {metrics}"))
            .to_owned()
    };
    let buckets = metrics
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{NAME}_bucket{{le=\"")))
        .map(|rest| {
            let (le, count) = rest.split_once("\"} ").expect("a bucket line");
            Bucket {
                le_ms: (le != "+Inf").then(|| le.parse().expect("a bound")),
                count: count.parse().expect("a count"),
            }
        })
        .collect();
    PushLatency {
        count: value("count").parse().expect("a count"),
        sum_ms: value("sum").parse().expect("a sum"),
        buckets,
    }
}

/// A small sale, run through HTTP: a rate of two, twenty seats, a monitor's bypass token; ten
/// fans over a few ticks (some followed over SSE, so the hub pushes), the bypass, three
/// orders; then paused, so nothing moves while it is read. Its show id.
async fn run_a_sale(app: &TestApp) -> &'static str {
    const SHOW: &str = "sale";
    let made = app
        .as_operator(Method::PUT, &routes::show(routes::SHOW, SHOW))
        .json(&json!({
            "admitPerSecond": 2,
            "stock": 20,
            "bypass": [{"kind": "token", "sha256": draw::sha256_hex(MONITOR.as_bytes())}],
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), StatusCode::CREATED);
    // Four before the opening, three of them followed live.
    let mut fans = app.join_many(SHOW, 4).await;
    let mut followers: Vec<SseReader> = Vec::new();
    for t in &fans[1..] {
        let mut live = app.events(SHOW, t).await;
        assert_eq!(live.next(WAIT).await.unwrap().event, "waiting");
        followers.push(live);
    }
    app.open(SHOW).await;
    app.wait_admitted(SHOW, &fans[0], WAIT).await;
    // More come while the first are let in, and the monitor goes straight through.
    fans.extend(app.join_many(SHOW, 3).await);
    let monitor = app
        .client
        .post(app.url(&routes::show(routes::BYPASS, SHOW)))
        .header(BYPASS_TOKEN_HEADER, MONITOR)
        .send()
        .await
        .unwrap();
    assert_eq!(monitor.status(), StatusCode::OK);
    let monitor: Value = monitor.json().await.unwrap();
    assert_eq!(monitor["status"], "ADMITTED", "{monitor}");
    app.wait_admitted(SHOW, &fans[3], WAIT).await;
    let late = app.join_many(SHOW, 3).await;
    let mut live = app.events(SHOW, &late[2]).await;
    assert_eq!(live.next(WAIT).await.unwrap().event, "waiting");
    followers.push(live);
    fans.extend(late);
    // Everyone is let in: the tick that let the last fan in came after every arrival.
    for t in &fans {
        app.wait_admitted(SHOW, t, WAIT).await;
    }
    for (i, t) in [&fans[0], &fans[4], &fans[9]].into_iter().enumerate() {
        let r = app.order(SHOW, &format!("hold-{i}"), Some(t)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let paused = app.operator(routes::PAUSE, SHOW).await;
    assert!(paused.status().is_success(), "{}", paused.status());
    drop(followers);
    SHOW
}

async fn the_report_of_a_sale_is_what_its_audit_stats_and_metrics_say(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(300))).await;
    let show = run_a_sale(&app).await;

    // The hub may still be pushing the pause: read until `/metrics` holds still around a
    // report, then hold the report to it.
    let deadline = tokio::time::Instant::now() + WAIT;
    let (v, rep, metrics) = loop {
        let before = hub_lag_of(&app.metrics().await);
        let (v, rep) = report_json(&app, show).await;
        let after = hub_lag_of(&app.metrics().await);
        if before == after && rep.push_latency == after {
            break (v, rep, after);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the report's push latency never matched /metrics: {:?} vs {after:?}",
            rep.push_latency
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Paged small, so the walk takes every page.
    let records = audit_of(&app, show, 3).await;
    let stats = app.stats(show).await;
    let f = &rep.figures;

    let ticks: Vec<&AuditRecord> = records
        .iter()
        .filter(|r| r.kind == AuditKind::Tick)
        .collect();
    let count = |kind: AuditKind| records.iter().filter(|r| r.kind == kind).count() as u64;
    let admitted: u64 = ticks.iter().map(|r| let_in(r)).sum();
    assert_eq!(admitted, 10, "every fan of the queue: {records:?}");
    assert_eq!(f.admitted, admitted);
    assert_eq!(f.orders, count(AuditKind::Order));
    assert_eq!(f.orders, 3);
    assert_eq!(f.bypassed, count(AuditKind::Bypass));
    assert_eq!(f.bypassed, 1);
    assert_eq!(
        rep.seconds.iter().map(|s| s.orders).sum::<u64>(),
        f.orders,
        "{:?}",
        rep.seconds
    );
    assert_eq!(
        rep.seconds.iter().map(|s| s.admitted).sum::<u64>(),
        admitted,
        "{:?}",
        rep.seconds
    );
    assert_eq!(
        rep.seconds.iter().map(|s| s.arrivals).sum::<u64>(),
        f.arrivals,
        "every arrival falls in some second"
    );
    assert!(rep.seconds.len() >= ticks.len(), "a sample every tick");
    assert_eq!(Some(f.arrivals), stats["joined"].as_u64(), "{stats}");
    assert_eq!(f.arrivals, 11, "ten fans and the monitor");
    assert_eq!(f.queued, 0);
    assert_eq!(f.stock_left, stats["stockLeft"].as_u64(), "{stats}");
    assert_eq!(rep.stock, Some(20));
    assert_eq!(v["phase"], "paused");
    assert_eq!(v["showId"], show);
    assert_eq!(v["admitPerSecond"], 2);
    assert_eq!(f.started_at_ms, rep.seconds.first().map(|s| s.at_ms));
    assert_eq!(
        f.wait.fans, admitted,
        "every admitted fan's wait is counted"
    );

    let fair = &rep.fairness;
    assert!(fair.verified, "{fair:?}");
    assert_eq!(fair.inversions, Some(0));
    assert_eq!(fair.violation, None);
    assert_eq!(fair.records, records.len() as u64);
    assert_eq!(
        v["fairness"]["bypasses"],
        json!([{"name": "token", "count": 1}])
    );
    assert_eq!(
        v["fairness"]["lanes"],
        json!([{"name": "general", "count": 10}])
    );

    // Push latency: the instance's histogram, as exported.
    assert!(
        metrics.count > 0,
        "the hub pushed every tick to the followers"
    );
    assert_eq!(rep.push_latency.count, metrics.count);
    assert_eq!(rep.push_latency.sum_ms, metrics.sum_ms);
    assert_eq!(rep.push_latency.buckets, metrics.buckets);
    assert_eq!(
        rep.push_latency.buckets.last(),
        Some(&Bucket {
            le_ms: None,
            count: metrics.count
        })
    );
    for key in ["count", "sumMs", "buckets"] {
        assert!(
            !v["pushLatency"][key].is_null(),
            "{key}: {}",
            v["pushLatency"]
        );
    }
    app.stop().await;
}

/// `a_b_c` as the JSON spells its fields: `aBC`.
fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

async fn the_report_answers_as_json_csv_or_a_page_without_script(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(300))).await;
    let show = run_a_sale(&app).await;
    let (v, rep) = report_json(&app, show).await;
    assert!(rep.seconds.len() >= 3, "a few ticks: {:?}", rep.seconds);
    let seconds = v["seconds"].as_array().unwrap();

    // CSV: a header, then one row a second, each cell the JSON's value (empty when absent).
    let r = report(&app, show, Some("format=csv"), None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    let text = r.text().await.unwrap();
    assert!(text.ends_with("\r\n"), "{text:?}");
    let lines: Vec<&str> = text.split_terminator("\r\n").collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        header,
        [
            "t",
            "at_ms",
            "arrivals",
            "queued",
            "away",
            "admitted",
            "orders",
            "active",
            "rate",
            "stock_left",
            "told_no_seat",
            "eta_told",
            "real_wait"
        ]
    );
    assert_eq!(lines.len(), 1 + seconds.len(), "{text}");
    for (line, second) in lines[1..].iter().zip(seconds) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        for (name, cell) in header.iter().zip(cells) {
            let want = match &second[camel(name)] {
                Value::Null => String::new(),
                n => n.to_string(),
            };
            assert_eq!(cell, want, "{name} of {second}");
        }
    }
    // `Accept` says the same when no `format` is given; `format` wins over it.
    let r = report(&app, show, None, Some("text/csv")).await;
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    assert_eq!(r.text().await.unwrap(), text);
    let r = report(&app, show, None, Some("application/json")).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    let negotiated: Report = r.json().await.unwrap();
    assert_eq!(negotiated.seconds, rep.seconds);
    assert_eq!(negotiated.figures, rep.figures);
    let r = report(&app, show, Some("format=csv"), Some("application/json")).await;
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");

    // The page, by default: plots, the seconds as a table, no script, a CSP saying so.
    for accept in [None, Some("text/html,application/xhtml+xml,*/*;q=0.8")] {
        let r = report(&app, show, None, accept).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(!csp.contains("script-src"), "{csp}");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let page = r.text().await.unwrap();
        for id in waiting_room::report::PLOTS {
            assert!(page.contains(&format!("id=\"{id}\"")), "no {id}");
        }
        assert!(!page.to_ascii_lowercase().contains("<script"), "{page}");
        // The table holds every second: its admitted and orders add up to the figures'.
        // (A row a tick is `a_tick_is_a_row_of_its_own_however_close_the_next`.)
        let rows = table_rows(&page);
        assert!(
            (1..=seconds.len()).contains(&rows.len()),
            "{rows:?} for {seconds:?}"
        );
        let column = |i: usize| rows.iter().map(|r| r[i]).sum::<u64>();
        assert_eq!(column(ADMITTED), rep.figures.admitted, "{rows:?}");
        assert_eq!(column(ORDERS), rep.figures.orders, "{rows:?}");
    }
    app.stop().await;
}

/// The page's seconds' table: each row's cells (after its time), numbers only (`–`: 0).
fn table_rows(page: &str) -> Vec<Vec<u64>> {
    let (_, table) = page
        .split_once("<table id=\"seconds\"")
        .expect("the seconds' table");
    let table = &table[..table.find("</table>").expect("the table ends")];
    table
        .split("<tr><th scope=\"row\">")
        .skip(1)
        .map(|row| {
            row.split("<td>")
                .skip(1)
                .map(|cell| {
                    let cell = &cell[..cell.find("</td>").expect("a cell ends")];
                    let digits: String = cell.chars().filter(char::is_ascii_digit).collect();
                    digits.parse().unwrap_or(0)
                })
                .collect()
        })
        .collect()
}

/// The table's columns of admissions and orders.
const ADMITTED: usize = 3;
const ORDERS: usize = 4;

/// One request with exactly `target` as its request target, as the operator: its status and
/// answer (a client library would resolve `..` before sending it).
async fn raw_get(addr: SocketAddr, target: &str, token: &str) -> (u16, String) {
    let auth = format!("Authorization: Bearer {token}");
    crate::support::raw_get(addr, target, &["Host: localhost", &auth]).await
}

async fn hostile_report_requests_get_a_clear_answer(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(300))).await;
    app.create("s").await;
    let path = routes::show(routes::REPORT, "s");

    // No token, a wrong one: 401, whatever the format.
    for query in ["", "?format=json", "?format=csv"] {
        let r = app.get(&format!("{path}{query}")).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{query}");
        problem(r).await;
    }
    let r = app
        .client
        .get(app.url(&path))
        .bearer_auth("not-the-operator-token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    problem(r).await;

    // A format it does not make, a parameter it does not know: 400 saying so.
    for query in [
        "format=xml",
        "format=json&x=1",
        "format=",
        "format=JSON",
        "format=json&format=csv",
    ] {
        let r = report(&app, "s", Some(query), None).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{query}");
        let body = problem(r).await;
        assert!(
            body["message"].as_str().unwrap().contains("report query"),
            "{query}: {body}"
        );
    }

    // Show ids outside the alphabet: 400 naming the show id.
    for bad in [&"x".repeat(65), "a:b", "%7Bx%7D", "admitter"] {
        let r = report(&app, bad, None, None).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body = problem(r).await;
        assert!(
            body["message"].as_str().unwrap().contains("show id"),
            "{bad}: {body}"
        );
    }
    // `.` and `..`, sent as they are and escaped: never a show's report, never a 500.
    for dots in ["..", ".", "%2E%2E", "%2e"] {
        let target = routes::show(routes::REPORT, dots);
        let (status, answer) = raw_get(app.addr, &target, &app.admin_token).await;
        assert_eq!(status, 400, "{target}: {answer}");
        assert!(answer.contains("show id"), "{target}: {answer}");
    }

    // Nobody made it: 404, JSON.
    let r = report(&app, "nobody-made-this", None, None).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    problem(r).await;
    let r = report(&app, "nobody-made-this", Some("format=csv"), None).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    problem(r).await;
    app.stop().await;
}

async fn a_show_never_opened_reports_no_seconds_and_nothing_done(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(300))).await;
    app.create("later").await;
    app.join_many("later", 2).await;
    // However long it stays unopened, the admitter leaves it alone.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let (v, rep) = report_json(&app, "later").await;
    let stats = app.stats("later").await;
    assert_eq!(v["phase"], "pending");
    assert!(rep.seconds.is_empty(), "{:?}", rep.seconds);
    let f = &rep.figures;
    assert_eq!(f.started_at_ms, None);
    assert_eq!(
        (
            f.seconds, f.admitted, f.bypassed, f.orders, f.redeemed, f.released
        ),
        (0, 0, 0, 0, 0, 0)
    );
    assert_eq!(f.admitted_per_second, 0.0);
    assert_eq!(f.wait.fans, 0);
    assert!(f.admitted_by.is_empty());
    // Who waits for the opening is counted all the same.
    assert_eq!(Some(f.arrivals), stats["joined"].as_u64());
    assert_eq!((f.arrivals, f.queued), (2, 2));
    let records = audit_of(&app, "later", 100).await;
    assert!(rep.fairness.verified, "{:?}", rep.fairness);
    assert_eq!(rep.fairness.records, records.len() as u64);
    // Its CSV: the header alone; its page says there were no ticks.
    let r = report(&app, "later", Some("format=csv"), None).await;
    assert_eq!(r.text().await.unwrap().split_terminator("\r\n").count(), 1);
    let page = report(&app, "later", None, None)
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("no ticks yet"), "{page}");
    app.stop().await;
}

/// Redis restarts empty after a sale: the watchdog marks the show lost, and its report says
/// so with a clear answer; re-opened, the report starts afresh.
#[tokio::test]
async fn a_redis_restart_empty_gives_a_clear_report_and_a_fresh_one_after_reopening() {
    let mut app = spawn_app_with(Backend::Redis, config(2, Duration::from_secs(300))).await;
    app.open("lost").await;
    let before = app.join_many("lost", 3).await;
    for t in &before {
        app.wait_admitted("lost", t, WAIT).await;
    }
    let (_, old) = report_json(&app, "lost").await;
    assert!(!old.seconds.is_empty());
    assert_eq!(old.figures.admitted, 3);

    app.redis.as_mut().unwrap().server_mut().restart().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let ready = app.get(routes::READYZ).await;
        if ready.status() == StatusCode::OK && ready.text().await.unwrap().contains("lost") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the show was never marked lost"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The store lost the show: its report says so as the gate does (503, what happened and
    // what to do), in whatever form it is asked; never an empty report that reads as a quiet
    // sale, never a 500.
    for (query, accept) in [
        (Some("format=json"), None),
        (Some("format=csv"), None),
        (None, Some("text/html")),
    ] {
        let r = report(&app, "lost", query, accept).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{query:?}");
        let body = problem(r).await;
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains("lost") && message.contains("re-open"),
            "{body}"
        );
    }

    // Re-opened deliberately: a new incarnation, whose report starts afresh.
    let reopened_ms = wall_ms();
    app.open("lost").await;
    let fresh = ticket_id(&app.join_ok("lost").await);
    app.wait_admitted("lost", &fresh, WAIT).await;
    let (_, new) = report_json(&app, "lost").await;
    let stats = app.stats("lost").await;
    assert_eq!(stats["lost"], false, "{stats}");
    assert!(!new.seconds.is_empty());
    assert!(
        new.seconds.iter().all(|s| s.at_ms >= reopened_ms),
        "a sample of the old incarnation: {:?} (re-opened at {reopened_ms})",
        new.seconds
    );
    assert_eq!(new.figures.admitted, 1, "{:?}", new.figures);
    assert_eq!(new.figures.arrivals, 1, "{:?}", new.figures);
    assert_eq!(
        new.seconds.iter().map(|s| s.admitted).sum::<u64>(),
        1,
        "{:?}",
        new.seconds
    );
    let records = audit_of(&app, "lost", 100).await;
    assert!(new.fairness.verified, "{:?}", new.fairness);
    assert_eq!(new.fairness.records, records.len() as u64);
    app.stop().await;
}

/// The test's wall clock (ms since the epoch), the clock the store's ticks read too.
fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A new leader ticks at once (at .55 of a second, `admitter::run`) and then on the next
/// second (.05): two ticks 500 ms apart, in successive seconds of the store's clock. Each is
/// a second of the report: `t` counts the store's seconds, not whole seconds elapsed, or both
/// are `t = 0`, the page merges them into one row that admits twice the rate, and the
/// figures' length of the sale comes out a second short. Seen through HTTP as well, when a
/// show opens before the admitter first leads: `run_a_sale`'s first two ticks came 498 ms
/// apart (at .554 and .052), both `t = 0`, and the page showed 4 let in at a rate of 2.
#[tokio::test]
async fn a_tick_is_a_row_of_its_own_however_close_the_next() {
    let store = MemoryStore::new(settings(2, Duration::from_secs(300)));
    let sh = crate::support::show("close");
    store.open(&sh).await.unwrap();
    let stats = store.stats(&sh).await.unwrap();
    let tick = |at_ms: u64, head: u64| Sample {
        id: RecordId { ms: at_ms, seq: 0 },
        at_ms,
        epoch: 1,
        arrivals: 4,
        laned: 0,
        queued: 4 - head,
        admitted: 2,
        active: head,
        away: 0,
        head,
        pace: PaceFigures {
            rate: 2,
            ..PaceFigures::default()
        },
    };
    let samples = [tick(1_700_000_000_550, 2), tick(1_700_000_001_050, 4)];
    let rep = build(&Parts {
        stats: &stats,
        draw: None,
        records: &[],
        samples: &samples,
        push_latency: PushLatency::default(),
        now_ms: 1_700_000_002_000,
    });
    let ts: Vec<u64> = rep.seconds.iter().map(|s| s.t).collect();
    assert_eq!(ts, [0, 1], "two seconds of the store's clock");
    assert_eq!(rep.figures.seconds, 1);
    let links = Links {
        css: "/report.css",
        json: "/report.json",
        csv: "/report.csv",
    };
    let rows = table_rows(&html(&rep, &links));
    assert_eq!(rows.len(), 2, "a row a tick: {rows:?}");
    assert!(
        rows.iter().all(|r| r[ADMITTED] <= 2),
        "no row admits past the rate: {rows:?}"
    );
}

/// Fans may join a paused show: the report's arrivals are the tickets handed out, as the
/// show's stats count them, not as the last tick before the pause saw them.
async fn fans_who_join_after_the_last_tick_count_in_the_arrivals(backend: Backend) {
    let app = spawn_app_with(backend, config(2, Duration::from_secs(300))).await;
    app.open("p").await;
    for t in app.join_many("p", 2).await {
        app.wait_admitted("p", &t, WAIT).await;
    }
    let paused = app.operator(routes::PAUSE, "p").await;
    assert!(paused.status().is_success());
    app.join_many("p", 3).await;
    let (_, rep) = report_json(&app, "p").await;
    let stats = app.stats("p").await;
    assert_eq!(stats["joined"], 5, "{stats}");
    assert_eq!(
        Some(rep.figures.arrivals),
        stats["joined"].as_u64(),
        "{:?}",
        rep.figures
    );
    app.stop().await;
}
