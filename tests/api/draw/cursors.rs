//! The audit's paging cursor, on a real server process of each store: one neither store can
//! page from is a 400 problem, never a store error (a 503 logged as one).

use reqwest::StatusCode;
use serde_json::Value;
use waiting_room::model::AuditPage;
use waiting_room::protocol::{PROBLEM_JSON, routes};

use crate::support::backend::{Backend, RedisBehind};
use crate::support::process::ServerProcess;

both_stores!(audit_cursors_neither_store_can_use_are_400_and_log_nothing);

async fn audit_cursors_neither_store_can_use_are_400_and_log_nothing(backend: Backend) {
    let redis = RedisBehind::start(backend).await;
    let url = redis.as_ref().map(RedisBehind::url).unwrap_or_default();
    let server = ServerProcess::start_logged(&url, 20, &[]).await;
    // Opening is an audit record of its own.
    server.open("cursors").await;
    let audit = routes::show(routes::AUDIT, "cursors");
    let server = &server;
    let page = |query: String| {
        let path = format!("{audit}?{query}");
        async move { server.get(&path).await }
    };
    let r = page("limit=1000".into()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let first: AuditPage = r.json().await.unwrap();
    let last = first
        .records
        .last()
        .expect("the opening's record")
        .id
        .clone();

    // Cursors a store can page from: after the last record, and just before the last id
    // there can be: nothing follows either.
    for after in [last.as_str(), "18446744073709551615-18446744073709551614"] {
        let r = page(format!("after={after}")).await;
        assert_eq!(r.status(), StatusCode::OK, "after={after}");
        let rest: AuditPage = r.json().await.unwrap();
        assert!(rest.records.is_empty(), "after={after}: {:?}", rest.records);
    }
    // Out of range (the last id there can be has no successor to start from; parts past 64
    // bits) or malformed: a clear 400, on either store.
    for after in [
        "18446744073709551615-18446744073709551615",
        "18446744073709551616-0",
        "1-18446744073709551616",
        "%2B1-0",
        "1-",
        "-1",
        "x",
        "",
    ] {
        let r = page(format!("after={after}")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "after={after}");
        assert_eq!(r.headers()["content-type"], PROBLEM_JSON, "after={after}");
        let body: Value = r.json().await.unwrap();
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with("after: a record id"), "{message}");
    }
    // None of it was the store's failure.
    assert_eq!(server.logged("ERROR"), Vec::<String>::new());
}
