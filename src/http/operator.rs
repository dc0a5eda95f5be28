//! Operator calls, all behind the bearer token: open and close an on-sale, read a show's
//! figures, change its admission rate.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use super::{AppJson, AppPath, AppState, Operator, show_id};
use crate::error::AppError;
use crate::model::ShowStats;

/// `POST …/{showId}/open`: 204; the admitter serves the show and the gate closes.
#[tracing::instrument(skip_all, fields(show = %show))]
pub async fn open(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    state.store.open(&show).await?;
    tracing::info!(%show, "on-sale opened");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST …/{showId}/close`: 204; no more admissions and no gate.
#[tracing::instrument(skip_all, fields(show = %show))]
pub async fn close(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    state.store.close(&show).await?;
    tracing::info!(%show, "on-sale closed");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET …/{showId}/stats`: open or not, queue length, valid admissions, rate.
pub async fn stats(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<Json<ShowStats>, AppError> {
    let show = show_id(&show)?;
    Ok(Json(state.store.stats(&show).await?))
}

/// The body of `PUT …/{showId}/config`; each field is optional, at least one is needed.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShowConfig {
    pub admit_per_second: Option<u32>,
    /// Cap on admitted fans who have not bought yet; 0 removes the cap.
    pub max_active_buyers: Option<u32>,
}

/// The most a show may admit a second; beyond it the rate is surely a typo.
pub const MAX_RATE: u32 = 1_000_000;

/// `PUT …/{showId}/config` with `{"admitPerSecond": N, "maxActiveBuyers": M}`: takes effect
/// at the next tick; a new rate pushes every waiting fan a new ETA. Answers the show's figures.
#[tracing::instrument(skip_all, fields(show = %show))]
pub async fn set_config(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    AppJson(config): AppJson<ShowConfig>,
) -> Result<Json<ShowStats>, AppError> {
    let show = show_id(&show)?;
    if config.admit_per_second.is_none() && config.max_active_buyers.is_none() {
        return Err(AppError::BadRequest(
            "send admitPerSecond and/or maxActiveBuyers".into(),
        ));
    }
    if config
        .admit_per_second
        .is_some_and(|rate| !(1..=MAX_RATE).contains(&rate))
    {
        return Err(AppError::BadRequest(format!(
            "admitPerSecond: must be between 1 and {MAX_RATE}"
        )));
    }
    if config
        .max_active_buyers
        .is_some_and(|cap| cap > MAX_RATE * 3600)
    {
        return Err(AppError::BadRequest(
            "maxActiveBuyers: must be at most 3600000000".into(),
        ));
    }
    if let Some(rate) = config.admit_per_second {
        state.store.set_rate(&show, rate).await?;
        tracing::info!(%show, rate, "admission rate changed");
    }
    if let Some(cap) = config.max_active_buyers {
        state.store.set_max_active_buyers(&show, cap).await?;
        tracing::info!(%show, cap, "active buyer cap changed");
    }
    Ok(Json(state.store.stats(&show).await?))
}
