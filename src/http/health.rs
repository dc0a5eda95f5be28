//! Liveness, readiness and metrics.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use super::AppState;
use crate::error::AppError;
use crate::metrics::StoreCaller;
use crate::model::ShowId;

/// `GET /healthz`: the process answers.
#[utoipa::path(
    get,
    path = crate::protocol::routes::HEALTHZ,
    operation_id = "healthz",
    tag = crate::http::openapi::SERVICE,
    summary = "Liveness",
    responses(
        (status = 200, description = "`ok`", body = String, content_type = "text/plain"),
    ),
)]
pub(super) async fn healthz() -> &'static str {
    "ok"
}

/// `GET /readyz`: this instance can serve: the store answers (503 otherwise). A show whose
/// state the store lost is named in the body, not a reason to be unready: a balancer that
/// drops unready instances would take every show and the console offline with it, and nobody
/// could re-open the lost one. The `show_lost` metric and its alert say it too.
#[utoipa::path(
    get,
    path = crate::protocol::routes::READYZ,
    operation_id = "readyz",
    tag = crate::http::openapi::SERVICE,
    summary = "Readiness: the store answers. Shows the store lost are named in the body, and do \
         not make the instance unready",
    responses(
        (
            status = 200,
            description = "`ready`, and the lost shows if any",
            body = String,
            content_type = "text/plain",
        ),
        (
            status = 503,
            description = "The store does not answer",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(super) async fn readyz(State(state): State<AppState>) -> Result<String, AppError> {
    state.store.ping().await?;
    let lost = state.watchdog.lost();
    if lost.is_empty() {
        return Ok("ready".into());
    }
    let names: Vec<&str> = lost.iter().map(ShowId::as_str).collect();
    Ok(format!(
        "ready; the store lost the state of {}: re-open (or delete) them deliberately",
        names.join(", ")
    ))
}

/// `GET /metrics`: Prometheus text; per-show gauges cost one store call per open show. A
/// store that does not answer is itself a figure (`store_up` 0, without the per-show gauges),
/// not a failed scrape: the operator's dashboard must show the outage, not go blank.
#[utoipa::path(
    get,
    path = crate::protocol::routes::METRICS,
    operation_id = "metrics",
    tag = crate::http::openapi::SERVICE,
    summary = "Prometheus metrics",
    responses(
        (
            status = 200,
            description = "OpenMetrics text; while the store does not answer, \
                 `waiting_room_store_up 0` without the per-show gauges",
            body = String,
            content_type = "application/openmetrics-text",
        ),
    ),
)]
pub(super) async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let stats = match state.open_show_stats().await {
        Ok(stats) => {
            state.metrics.set_store_up(true);
            stats
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics without the per-show figures: the store failed");
            state.metrics.set_store_up(false);
            state.metrics.store_error(StoreCaller::Metrics);
            Vec::new()
        }
    };
    let calls = state.notifier.counts();
    for (channel, c) in [("web_push", calls.web_push), ("webhook", calls.webhook)] {
        state
            .metrics
            .set_calls(channel, c.sent, c.failed, c.dropped);
    }
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(&stats),
    )
}
