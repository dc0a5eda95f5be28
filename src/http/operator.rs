//! Operator calls, all behind the bearer token: create, configure and delete a show, open and
//! close its on-sale, read its figures.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{AppJson, AppPath, AppState, Operator, OptionalJson, show_id};
use crate::error::AppError;
use crate::model::{EndReason, ShowId, ShowList, ShowSettings, ShowStats};
use crate::protocol::EndRequest;

/// `POST …/{showId}/open`: 204; creates the show if needed, the admitter serves it and the
/// gate closes. A show whose state was lost starts again from nothing: this is the
/// operator's deliberate re-open.
#[utoipa::path(
    post,
    path = crate::protocol::routes::OPEN,
    operation_id = "openShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Open the on-sale (the gate closes), creating the show if needed; re-opens a lost \
         show from nothing",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Open"),
        (
            status = 409,
            description = "A scheduled show, which opens by itself at its `opensAt`",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn open(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    let opened = state.store.open(&show).await?;
    if opened.recovered {
        tracing::warn!(%show, "a lost show re-opened from nothing");
    }
    state.watchdog.remember(&show, opened.epoch, true);
    tracing::info!(%show, "on-sale opened");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST …/{showId}/close`: 204; the original's close: no more admissions and no gate, and
/// fans still queued are sent on. 404 for a show nobody made.
#[utoipa::path(
    post,
    path = crate::protocol::routes::CLOSE,
    operation_id = "closeShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Close the on-sale (the original's close): no more admissions and no gate; fans \
         still queued are told `CLOSED` and sent on",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Closed"),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn close(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    state.store.close(&show).await?;
    tracing::warn!(%show, "on-sale closed: the gate is lifted, orders need no admission");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST …/{showId}/pause`: 204; admission stops at once, every place is kept and the gate
/// stays shut (`open` resumes). 409 before the show opened or once it ended.
#[utoipa::path(
    post,
    path = crate::protocol::routes::PAUSE,
    operation_id = "pauseShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Pause the on-sale: admission stops at once, every place is kept, the gate stays \
         shut; `open` resumes",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Paused"),
        (
            status = 409,
            description = "Not opened yet, or ended: nothing to pause",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn pause(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    state.store.pause(&show).await?;
    tracing::info!(%show, "on-sale paused");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST …/{showId}/end` `{"reason"}` (optional body): 204; the on-sale is over: joins are
/// 410, the gate stays shut (fans admitted before may finish), every fan still queued is
/// pushed the end.
#[utoipa::path(
    post,
    path = crate::protocol::routes::END,
    operation_id = "endShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "End the on-sale: joins are 410, the gate stays shut (admissions running may still \
         buy), every fan still queued is told `ENDED` with the reason",
    params(crate::http::openapi::params::ShowPath),
    request_body = Option<EndRequest>,
    responses(
        (status = 204, description = "Ended"),
        (
            status = 400,
            description = "A reason that is empty, too long or not printable",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn end(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    OptionalJson(request): OptionalJson<EndRequest>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    let request = request.unwrap_or_default();
    let reason = match request.reason {
        None => None,
        Some(text) => Some(EndReason::new(&text).ok_or_else(|| {
            AppError::BadRequest(format!(
                "reason: 1 to {} bytes of printable text",
                EndReason::MAX
            ))
        })?),
    };
    state.store.end(&show, reason).await?;
    tracing::info!(%show, reason = reason.as_ref().map(EndReason::as_str), "on-sale ended");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /orders/waiting-room`: every show's id, for a tool that makes the server match a
/// file (`waiting-room-client export`) or a console.
#[utoipa::path(
    get,
    path = crate::protocol::routes::SHOWS,
    operation_id = "listShows",
    tag = crate::http::openapi::OPERATOR,
    summary = "Every show's id",
    responses((status = 200, description = "The shows, in order of their ids", body = ShowList)),
)]
pub(super) async fn list(
    _: Operator,
    State(state): State<AppState>,
) -> Result<Json<ShowList>, AppError> {
    let mut shows: Vec<String> = state
        .store
        .shows()
        .await?
        .iter()
        .map(ToString::to_string)
        .collect();
    shows.sort_unstable();
    Ok(Json(ShowList { shows }))
}

/// `GET …/{showId}/stats`: open or not, lost or not, queue length, valid admissions, rate.
#[utoipa::path(
    get,
    path = crate::protocol::routes::STATS,
    operation_id = "showStats",
    tag = crate::http::openapi::OPERATOR,
    summary = "A show's figures",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 200, description = "The figures", body = ShowStats),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(super) async fn stats(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<Json<ShowStats>, AppError> {
    let show = show_id(&show)?;
    Ok(Json(state.store.stats(&show).await?))
}

/// `PUT /orders/waiting-room/{showId}` with the show's settings (an empty object or no body
/// takes the server's defaults): 201 with its figures when it is new, 200 when it existed.
/// The on-sale stays closed until `open`.
#[utoipa::path(
    put,
    path = crate::protocol::routes::SHOW,
    operation_id = "createShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Create a show, or change its settings; its on-sale stays closed",
    params(crate::http::openapi::params::ShowPath),
    request_body = Option<ShowSettings>,
    responses(
        (status = 201, description = "The show is new: its figures", body = ShowStats),
        (status = 200, description = "The show existed: its figures", body = ShowStats),
        (
            status = 400,
            description = "A bad showId, or a setting out of range",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "A fair-start setting that does not fit the show now: `opensAt` once \
                 it opened, fans joined or its pre-queue closed; `drawBeacon` without `opensAt` \
                 or after the pre-queue closed; `drawBeaconValue` out of turn",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn create(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    OptionalJson(config): OptionalJson<ShowSettings>,
) -> Result<Response, AppError> {
    let show = show_id(&show)?;
    let config = config.unwrap_or_default();
    let (created, stats) = configure(&state, &show, &config).await?;
    if created {
        let location = crate::protocol::routes::show(crate::protocol::routes::SHOW, show.as_str());
        return Ok((
            StatusCode::CREATED,
            [(axum::http::header::LOCATION, location)],
            Json(stats),
        )
            .into_response());
    }
    Ok((StatusCode::OK, Json(stats)).into_response())
}

/// `DELETE /orders/waiting-room/{showId}`: 204 once the show and all its state are gone
/// (fans following it are told their tickets are unknown); 404 if there was none. Orders
/// already placed stay readable at `/orders/{id}`.
#[utoipa::path(
    delete,
    path = crate::protocol::routes::SHOW,
    operation_id = "deleteShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Delete a show and its state; its followers are told `unknown`; orders stay",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Gone"),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn delete(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    if !state.store.delete(&show).await? {
        return Err(AppError::NotFound(format!("no on-sale named {show}")));
    }
    state.watchdog.forget(&show);
    state.metrics.forget_show(&show);
    tracing::info!(%show, "show deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT …/{showId}/config` with `{"admitPerSecond": N, "maxActiveBuyers": M}`: creates the
/// show if needed; takes effect at the next tick; a new rate pushes every waiting fan a new
/// ETA. Answers the show's figures.
#[utoipa::path(
    put,
    path = crate::protocol::routes::CONFIG,
    operation_id = "configureShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Change any of a show's settings, creating it if needed; applies from the next tick; \
         a new rate pushes every waiting fan a new ETA",
    params(crate::http::openapi::params::ShowPath),
    request_body = ShowSettings,
    responses(
        (status = 200, description = "The figures after", body = ShowStats),
        (
            status = 400,
            description = "No setting sent, or one out of range",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "A fair-start setting that does not fit the show now: `opensAt` once \
                 it opened, fans joined or its pre-queue closed; `drawBeacon` without `opensAt` \
                 or after the pre-queue closed; `drawBeaconValue` out of turn",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn set_config(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    AppJson(config): AppJson<ShowSettings>,
) -> Result<Json<ShowStats>, AppError> {
    let show = show_id(&show)?;
    if config.is_empty() {
        return Err(AppError::BadRequest(
            "send at least one setting: admitPerSecond, maxActiveBuyers, arrivalWindowSeconds, \
             checkoutHealthUrl, minAdmitPerSecond, rateChangeAt, rateChangeTo, \
             joinChallengeBits, stock, opensAt, drawBeacon, drawBeaconValue, …"
                .into(),
        ));
    }
    Ok(Json(configure(&state, &show, &config).await?.1))
}

/// Applies checked settings, creating the show if needed: whether it was created, and its
/// figures after.
async fn configure(
    state: &AppState,
    show: &ShowId,
    settings: &ShowSettings,
) -> Result<(bool, ShowStats), AppError> {
    settings
        .check(crate::clock::wall_ms())
        .map_err(|e| AppError::BadRequest(e.to_string()))?;
    let configured = state.store.configure(show, settings.clone()).await?;
    state.watchdog.remember(show, configured.epoch, false);
    if settings.schedules() {
        state.store.schedule(show, settings.schedule()).await?;
        if let Some(at) = settings.opens_at.as_deref() {
            tracing::info!(%show, opens_at = at, "on-sale scheduled; pre-queue open");
        }
    }
    if configured.created {
        tracing::info!(%show, "show created");
    }
    if let Some(rate) = settings.admit_per_second {
        tracing::info!(%show, rate, "admission rate changed");
    }
    if let Some(cap) = settings.max_active_buyers {
        tracing::info!(%show, cap, "active buyer cap changed");
    }
    if let Some(bits) = settings.join_challenge_bits {
        tracing::info!(%show, bits, "join challenge difficulty changed");
    }
    Ok((configured.created, state.store.stats(show).await?))
}
