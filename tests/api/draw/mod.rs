//! The fair start through HTTP: a scheduled show's pre-queue, the draw at its opening, the
//! audit of every tick, and `verify` over what the show published.

mod cursors;
mod handover;
mod lua;
mod opening;
mod schedule;
mod verifying;

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use waiting_room::draw::Permutation;
use waiting_room::model::{AuditPage, AuditRecord, DrawView};
use waiting_room::protocol::routes;

use crate::support::api::Api;

/// `secs` from now as RFC 3339, to the millisecond.
fn in_secs(secs: f64) -> String {
    let now = jiff::Timestamp::now().as_millisecond();
    jiff::Timestamp::from_millisecond(now + (secs * 1000.0) as i64)
        .unwrap()
        .to_string()
}

/// Makes `show` with `settings`, answering its status and body.
async fn make(api: &Api, show: &str, settings: Value) -> (StatusCode, Value) {
    let r = api
        .as_operator(Method::PUT, &routes::show(routes::SHOW, show))
        .json(&settings)
        .send()
        .await
        .unwrap();
    (r.status(), r.json().await.unwrap())
}

/// Schedules `show` to open in `secs`, at `rate` a second.
async fn scheduled(api: &Api, show: &str, secs: f64, rate: u32) {
    let (status, body) = make(
        api,
        show,
        json!({"opensAt": in_secs(secs), "admitPerSecond": rate}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// The show's draw as published.
async fn draw_of(api: &Api, show: &str) -> DrawView {
    let r = api.get(&routes::show(routes::DRAW, show)).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// Waits until the show's draw is revealed.
async fn drawn(api: &Api, show: &str, within: Duration) -> DrawView {
    draw_when(api, show, within, "drawn", |d| d.seed.is_some()).await
}

/// Waits until the show's draw is as `done` says (`what`, for the failure).
async fn draw_when(
    api: &Api,
    show: &str,
    within: Duration,
    what: &str,
    done: impl Fn(&DrawView) -> bool,
) -> DrawView {
    let until = tokio::time::Instant::now() + within;
    loop {
        let d = draw_of(api, show).await;
        if done(&d) {
            return d;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "{show} not {what}: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The whole audit, page by page (`limit` a page).
pub(crate) async fn audit_of(api: &Api, show: &str, limit: usize) -> Vec<AuditRecord> {
    let mut records = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut path = format!("{}?limit={limit}", routes::show(routes::AUDIT, show));
        if let Some(a) = &after {
            path += &format!("&after={a}");
        }
        let r = api.get(&path).await;
        assert_eq!(r.status(), StatusCode::OK);
        let page: AuditPage = r.json().await.unwrap();
        assert!(page.records.len() <= limit);
        records.extend(page.records);
        match page.next {
            Some(n) => after = Some(n),
            None => return records,
        }
    }
}

/// The permutation a revealed draw names.
fn permutation(d: &DrawView) -> Permutation {
    Permutation::new(d.draw_key.as_deref().unwrap(), d.participants.unwrap()).unwrap()
}
