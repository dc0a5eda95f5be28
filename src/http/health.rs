//! Liveness, readiness and metrics.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use super::AppState;
use crate::error::AppError;
use crate::metrics::StoreCaller;
use crate::model::ShowId;

/// `GET /healthz`: the process answers.
pub(super) async fn healthz() -> &'static str {
    "ok"
}

/// `GET /readyz`: the store answers, and has not lost any show's state. A lost show keeps
/// every instance unready (503, naming the shows) until an operator re-opens or deletes it:
/// the deployment's health says what the console says.
pub(super) async fn readyz(State(state): State<AppState>) -> Result<&'static str, AppError> {
    state.store.ping().await?;
    let lost = state.watchdog.lost();
    if !lost.is_empty() {
        let names: Vec<&str> = lost.iter().map(ShowId::as_str).collect();
        return Err(AppError::Unavailable(format!(
            "the store lost the state of {}; re-open (or delete) them deliberately",
            names.join(", ")
        )));
    }
    Ok("ready")
}

/// `GET /metrics`: Prometheus text; per-show gauges cost one store call per open show. A
/// store that does not answer is itself a figure (`store_up` 0, without the per-show gauges),
/// not a failed scrape: the operator's dashboard must show the outage, not go blank.
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
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(&stats),
    )
}
