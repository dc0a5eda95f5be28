//! Orders, behind the gate: while a show's on-sale is open, only an admitted ticket may order.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{AppJson, AppPath, AppState};
use crate::error::AppError;
use crate::model::{NewOrder, Order, OrderRequest};

/// The header naming the fan's admitted ticket.
pub const ADMISSION_HEADER: &str = "X-Admission-Ticket";

/// `POST /orders`: 201 + Location when created, 200 with the existing order for a repeated
/// `holdId`, 403 when the gate refuses, 400 on invalid input.
#[tracing::instrument(skip_all)]
pub async fn place(
    State(state): State<AppState>,
    headers: HeaderMap,
    AppJson(req): AppJson<OrderRequest>,
) -> Result<Response, AppError> {
    let order = req.validate().map_err(AppError::BadRequest)?;
    let ticket = gate(&state, &headers, &order).await?;
    let (placed, created) = state.store.place_order(&order).await?;
    if let Some(ticket) = ticket {
        // Done buying: the place goes to the next fan in line.
        state.store.bought(&order.show_id, ticket).await?;
    }
    let order = placed;
    if !created {
        return Ok((StatusCode::OK, Json(order)).into_response());
    }
    let location = format!("/orders/{}", order.id);
    tracing::info!(order = %order.id, show = %order.show_id, "order placed");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(order),
    )
        .into_response())
}

/// The seed's `mayEnter`: no gate unless the show's on-sale is open; then an admitted,
/// unexpired ticket of that very show, which is returned.
async fn gate(
    state: &AppState,
    headers: &HeaderMap,
    order: &NewOrder,
) -> Result<Option<uuid::Uuid>, AppError> {
    let show = &order.show_id;
    if !state.store.is_open(show).await? {
        return Ok(None);
    }
    let ticket = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| uuid::Uuid::parse_str(v.trim()).ok());
    let admitted = match ticket {
        Some(t) => state.store.is_admitted(show, t).await?,
        None => false,
    };
    if admitted {
        Ok(ticket)
    } else {
        Err(AppError::Forbidden(format!(
            "on-sale in progress: join /orders/waiting-room/{show}/join first"
        )))
    }
}

/// `GET /orders/{id}`: the order, or 404.
pub async fn get(
    State(state): State<AppState>,
    AppPath(id): AppPath<String>,
) -> Result<Json<Order>, AppError> {
    let not_found = || AppError::NotFound(format!("no order {id}"));
    let uuid = uuid::Uuid::parse_str(&id).map_err(|_| not_found())?;
    state
        .store
        .get_order(uuid)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}
