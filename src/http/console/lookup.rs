//! `GET /admin/tickets/{ticketId}` (operator): support's question "where does this fan
//! stand?", answered from the ticket id alone: its show, and the ticket as its fan sees it.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::super::{AppPath, AppState, Operator, show_id};
use crate::error::AppError;
use crate::model::{Phase, ShowId, TicketState, TicketView};
use crate::store::StoreError;

/// The query of a lookup.
#[derive(Debug, Default, Deserialize)]
pub(in crate::http) struct LookupQuery {
    /// Search this show only (else every show made).
    show: Option<String>,
}

/// A ticket found, for support.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(in crate::http) struct TicketLookup {
    /// The show that holds the ticket.
    pub show_id: String,
    /// Where the show's on-sale stands.
    pub phase: Phase,
    /// The ticket as its fan is told it now (position and arrival while waiting, the seconds
    /// left while admitted); never its pass.
    pub ticket: TicketView,
}

/// `GET /admin/tickets/{ticketId}?show=…` (operator): the show holding the ticket and where
/// it stands there; 404 when no show holds it (never joined, left, or its admission ran out).
/// Without `show` every show made is asked in turn: one store call each, a support
/// desk's pace, not a fan's.
/// It reads the ticket as a poll does, so an admitted ticket looked up counts as a sign of
/// life for the arrival window: the fan who calls support about it is there to buy.
#[utoipa::path(
    get,
    path = crate::protocol::routes::ADMIN_TICKET,
    operation_id = "lookupTicket",
    tag = crate::http::openapi::OPERATOR,
    summary = "Where a ticket stands, and in which show, for support",
    params(
        ("ticketId" = Uuid, Path, description = "The ticket id the fan reads out"),
        crate::http::openapi::params::LookupShow,
    ),
    responses(
        (status = 200, description = "The ticket and its show", body = TicketLookup),
        (
            status = 400,
            description = "A ticket id that is not a UUID, or a bad show",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = "No show holds the ticket: never joined, left, or its admission ran out",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all)]
pub(in crate::http) async fn lookup(
    _: Operator,
    State(state): State<AppState>,
    AppPath(ticket): AppPath<String>,
    query: Result<Query<LookupQuery>, QueryRejection>,
) -> Result<Json<TicketLookup>, AppError> {
    let Query(query) = query.map_err(|r| AppError::Rejected(r.status(), r.body_text()))?;
    let id = Uuid::parse_str(ticket.trim()).map_err(|_| {
        AppError::BadRequest(
            "ticketId: a ticket id is a UUID, such as 0b8f5c2e-5d1a-4c52-9e57-2f0d4c1e9a3b".into(),
        )
    })?;
    let shows: Vec<ShowId> = match query.show.as_deref().map(str::trim) {
        Some(show) if !show.is_empty() => vec![show_id(show)?],
        _ => state.store.shows().await?,
    };
    for show in shows {
        let status = match state.store.status(&show, id).await {
            Ok(status) => status,
            // Deleted since the list was read, or lost: it holds no ticket to speak of.
            Err(StoreError::NoSuchShow(_) | StoreError::ShowLost(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        // A place a failover lost is held by no show either (the fan's page says so).
        if matches!(status.state, TicketState::Unknown | TicketState::Lost) {
            continue;
        }
        return Ok(Json(TicketLookup {
            show_id: show.to_string(),
            phase: status.sale.phase,
            ticket: status.state.view(id, &status.pace, &status.sale),
        }));
    }
    Err(AppError::NotFound(format!(
        "no show holds ticket {id}: it never joined, left, or its admission ran out"
    )))
}
