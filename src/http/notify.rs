//! The "your turn" call, as a fan asks for it: `POST …/tickets/{ticketId}/notify` with its
//! browser's push subscription (or `{"webhook": true}` for the operator's own service), and
//! `GET /.well-known/vapid`, the key a page subscribes with. When to call and the sending are
//! the admitter's and [`crate::notify`]'s.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::{AppPath, AppState, ticket_path};
use crate::error::AppError;
use crate::model::TicketState;
use crate::notify::{MAX_SUBSCRIPTION_JSON, WEBHOOK_CHANNEL, check_subscription};

/// `POST …/tickets/{ticketId}/notify`: 204 once the waiting fan will be called `soon` (its
/// turn `notifyAheadSeconds` away) and `admitted`, at most once each, over the channel it
/// sent (one a ticket, the newest kept; forgotten when it leaves, is let in or its place is
/// released). 400 for a subscription that is not one or names an endpoint outside the
/// show's `pushServices`; 409 for `{"webhook":true}` on a show with no `notifyUrl`; 404 for a
/// ticket that is not waiting.
#[utoipa::path(
    post,
    path = crate::protocol::routes::NOTIFY,
    operation_id = "notify",
    tag = crate::http::openapi::FAN,
    summary = "Be called when the turn is near: a Web Push subscription (`PushSubscription.toJSON()`, \
         at most 4 KiB, an `https` endpoint of the show's push services) or `{\"webhook\": true}`",
    params(crate::http::openapi::params::TicketPath),
    request_body(content = Object, content_type = "application/json"),
    responses(
        (status = 204, description = "The fan will be called"),
        (status = 400, description = "Not a subscription, or an endpoint not allowed", body = crate::protocol::ErrorBody),
        (status = 404, response = inline(crate::http::openapi::NoTicket)),
        (status = 409, description = "The show has no notifyUrl", body = crate::protocol::ErrorBody),
        (status = 413, description = "A body over 4 KiB", body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn ask(
    State(state): State<AppState>,
    AppPath((show, ticket)): AppPath<(String, String)>,
    body: Bytes,
) -> Result<Response, AppError> {
    let (show, id) = ticket_path(&show, &ticket)?;
    if body.len() > MAX_SUBSCRIPTION_JSON {
        return Err(AppError::Rejected(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a subscription is at most {MAX_SUBSCRIPTION_JSON} bytes"),
        ));
    }
    // A ticket that is not waiting is told so before its body is read.
    let status = state.store.status(&show, id).await?;
    if !matches!(
        status.state,
        TicketState::Waiting { .. } | TicketState::PreQueue { .. }
    ) {
        return Err(AppError::UnknownTicket(ticket));
    }
    let value: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| AppError::BadRequest(format!("the body is not JSON: {e}")))?;
    let settings = state.store.stats(&show).await?.settings;
    let channel = if value.get("webhook") == Some(&serde_json::Value::Bool(true)) {
        if settings
            .notify_url
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            return Err(AppError::Conflict(format!(
                "{show} has no notifyUrl to call fans back by"
            )));
        }
        WEBHOOK_CHANNEL.to_owned()
    } else {
        let allowed = settings.push_services.unwrap_or_default();
        let subscription =
            check_subscription(&body, &allowed).map_err(|e| AppError::BadRequest(e.to_string()))?;
        serde_json::to_string(&subscription).expect("a subscription serialises")
    };
    if state.store.ask_call(&show, id, channel).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(AppError::UnknownTicket(ticket))
    }
}

/// The key Web Push subscriptions are made with.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Vapid {
    /// The VAPID public key (RFC 8292): a P-256 point, uncompressed, base64url; a page hands
    /// it to `pushManager.subscribe` as `applicationServerKey`.
    public_key: String,
}

/// `GET /.well-known/vapid`: the key this waiting room signs its pushes with (it follows the
/// pass keys, so every instance on one store has the same one).
#[utoipa::path(
    get,
    path = crate::protocol::routes::VAPID,
    operation_id = "vapid",
    tag = crate::http::openapi::FAN,
    summary = "The VAPID public key a page subscribes to Web Push with",
    responses((status = 200, description = "The key", body = Vapid)),
)]
pub(super) async fn vapid(State(state): State<AppState>) -> Response {
    (
        [(header::CACHE_CONTROL, "public, max-age=300")],
        Json(Vapid {
            public_key: state.notifier.vapid_public_key().to_owned(),
        }),
    )
        .into_response()
}
