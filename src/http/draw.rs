//! The fair start's public faces: a scheduled show's draw, and the audit of every tick.
//! Neither needs a token: anyone may check that the on-sale was fair.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Deserialize;

use super::{AppPath, AppState, show_id};
use crate::error::AppError;
use crate::model::{AuditPage, DrawView, RecordId};

/// `GET …/{showId}/draw`: the commitment from the start; the seed, the participants, the
/// beacon's value and the key once drawn. 404 for a show that was never scheduled.
#[utoipa::path(
    get,
    path = crate::protocol::routes::DRAW,
    operation_id = "draw",
    tag = crate::http::openapi::FAN,
    summary = "A scheduled show's draw: the commitment to its seed from the start; once drawn, the \
         seed, the participants and their digest, the beacon's value and the key, from which \
         anyone recomputes the drawn order",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 200, description = "The draw", body = DrawView),
        (
            status = 404,
            description = "No show of that id, or a show that was never scheduled",
            body = crate::protocol::ErrorBody,
        ),
        (status = 503, description = crate::http::openapi::LOST, body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn draw(
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<Json<DrawView>, AppError> {
    let show = show_id(&show)?;
    let Some(d) = state.store.draw(&show).await? else {
        return Err(AppError::NotFound(format!(
            "{show} has no draw: it was not scheduled with opensAt"
        )));
    };
    Ok(Json(d.view(show.as_str())))
}

/// The public view of a draw: the seed only once drawn.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AuditQuery {
    after: Option<String>,
    limit: Option<usize>,
}

/// Records a page by default, and at most.
const AUDIT_PAGE: usize = 100;
const AUDIT_PAGE_MAX: usize = 1000;

/// `GET …/{showId}/audit?after=ID&limit=N`: up to `limit` records after `after`, oldest
/// first; `next` pages on.
#[utoipa::path(
    get,
    path = crate::protocol::routes::AUDIT,
    operation_id = "audit",
    tag = crate::http::openapi::FAN,
    summary = "A page of the show's audit, oldest first: one record per tick that admitted anyone \
         (time, fencing token, rate, epoch, the arrival numbers admitted) and the draw. Never a \
         ticket id",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::AuditPaging),
    responses(
        (status = 200, description = "Up to `limit` records after `after`", body = AuditPage),
        (
            status = 400,
            description = "`after` is not a record id, or `limit` is out of range",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(super) async fn audit(
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<AuditPage>, AppError> {
    let show = show_id(&show)?;
    let Query(q) = query.map_err(|e| AppError::BadRequest(format!("audit query: {e}")))?;
    let limit = q.limit.unwrap_or(AUDIT_PAGE);
    if !(1..=AUDIT_PAGE_MAX).contains(&limit) {
        return Err(AppError::BadRequest(format!(
            "limit: 1 to {AUDIT_PAGE_MAX} records a page"
        )));
    }
    // Checked here, so neither store is asked to page from a cursor it cannot use.
    let after = q
        .after
        .as_deref()
        .map(str::parse::<RecordId>)
        .transpose()
        .map_err(|e| AppError::BadRequest(format!("after: {e}")))?;
    let records = state.store.audit(&show, after, limit).await?;
    let next = (records.len() == limit)
        .then(|| records.last().map(|r| r.id.clone()))
        .flatten();
    Ok(Json(AuditPage { records, next }))
}
