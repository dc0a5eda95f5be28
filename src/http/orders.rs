//! Orders, behind the gate: while a show's on-sale is open, only an admitted ticket may order.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{AppJson, AppPath, AppState};
use crate::error::AppError;
use crate::model::{Order, OrderRequest};
use crate::pass::{Admission, PassError};
use crate::protocol::routes;
use crate::store::OrderOutcome;

pub use crate::protocol::ADMISSION_HEADER;

/// `POST /orders`: 201 + Location when created; 200 with the order when the very same
/// request was placed before; 409 when the hold was ordered with something else or the
/// admission already bought; 403 when the gate refuses; 404 for a show nobody made; 400 on
/// invalid input. The gate, the hold and the admission are checked and claimed in one store
/// step, so two racing requests can never both pass.
#[tracing::instrument(skip_all)]
pub async fn place(
    State(state): State<AppState>,
    headers: HeaderMap,
    admission: Option<Extension<Admission>>,
    AppJson(req): AppJson<OrderRequest>,
) -> Result<Response, AppError> {
    let order = req.validate().map_err(AppError::BadRequest)?;
    // Anything but a UUID names no admission; the store decides whether one is needed.
    let ticket = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| uuid::Uuid::parse_str(v.trim()).ok());
    let show = &order.show_id;
    // A pass the gate layer verified: the admission it names, if it is for this show.
    let placed = match admission {
        Some(Extension(admission)) => {
            if admission.show != *show {
                return Err(AppError::Forbidden(
                    PassError::OtherShow(admission.show.to_string()).to_string(),
                ));
            }
            state
                .store
                .place_order_with_pass(&order, admission.ticket)
                .await?
        }
        None => state.store.place_order(&order, ticket).await?,
    };
    match placed {
        OrderOutcome::Created(order) => {
            let location = routes::path(routes::ORDER, "", &order.id.to_string());
            tracing::info!(order = %order.id, show = %order.show_id, "order placed");
            Ok((
                StatusCode::CREATED,
                [(header::LOCATION, location)],
                Json(order),
            )
                .into_response())
        }
        OrderOutcome::Repeated(order) => Ok((StatusCode::OK, Json(order)).into_response()),
        // Neither message shows anything of the other order.
        OrderOutcome::Conflict("admission") => Err(AppError::Conflict(
            "this admission has already placed its order; one admission buys once".into(),
        )),
        OrderOutcome::Conflict("sold out") => Err(AppError::Conflict(format!(
            "{show} is sold out: every seat of its stock has an order"
        ))),
        OrderOutcome::Conflict(_) => Err(AppError::Conflict(format!(
            "holdId {} was already ordered with a different request",
            order.hold_id
        ))),
        OrderOutcome::Forbidden => Err(AppError::Forbidden(format!(
            "the waiting room gates this show (before it opens, while it runs, paused or \
             ended): join {} first and order with the admission it gives",
            routes::show(routes::JOIN, show.as_str())
        ))),
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

/// `GET …/{showId}/pass`: 204 when `X-Admission-Ticket` carries a valid, running pass of
/// this show, 403 otherwise. The [`RequireAdmission`](crate::pass::RequireAdmission) layer
/// checks the signature and expiry; nothing asks the store, so an edge (nginx
/// `auth_request`) can ask it on every request, and it answers while the store is down.
pub async fn check_pass(
    AppPath(show): AppPath<String>,
    Extension(admission): Extension<Admission>,
) -> Result<StatusCode, AppError> {
    let show = super::show_id(&show)?;
    if admission.show != show {
        return Err(AppError::Forbidden(
            PassError::OtherShow(admission.show.to_string()).to_string(),
        ));
    }
    Ok(StatusCode::NO_CONTENT)
}
