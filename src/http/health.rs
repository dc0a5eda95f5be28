//! Liveness, readiness and metrics.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use super::AppState;
use crate::error::AppError;

/// `GET /healthz`: the process answers.
pub async fn healthz() -> &'static str {
    "ok"
}

/// `GET /readyz`: the store answers too.
pub async fn readyz(State(state): State<AppState>) -> Result<&'static str, AppError> {
    state.store.ping().await?;
    Ok("ready")
}

/// `GET /metrics`: Prometheus text; per-show gauges cost one store call per open show.
pub async fn metrics(State(state): State<AppState>) -> Result<impl IntoResponse, AppError> {
    let stats = state.open_show_stats().await?;
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(&stats),
    ))
}
