//! What a fan calls: join the queue, ask where a ticket stands, leave.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use super::credentials::set_ticket_cookie;
use super::join::JoinRequest;
use super::serve::origin::check_join_post;
use super::shown::Shown;
use super::{AppPath, AppState, show_id, ticket_path};
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::model::{ShowId, TicketStatus};
use crate::pass::CHALLENGE_TTL_SECONDS;
use crate::protocol::{Challenge, IDEMPOTENT_REPLAYED, routes};
use crate::store::Status;

/// `POST …/{showId}/join`: 202 with a fresh ticket. Joining a show that is not open yet is
/// allowed: the fan waits until it opens.
#[utoipa::path(
    post,
    path = crate::protocol::routes::JOIN,
    operation_id = "join",
    tag = crate::http::openapi::FAN,
    summary = "Join the queue (also before the on-sale opens). With an `Idempotency-Key` header (1 \
         to 128 visible ASCII characters) the same key gets the same ticket back while it lives: \
         200 and `Idempotent-Replayed: true` instead of a new place",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::JoinHeaders),
    responses(
        (
            status = 202,
            description = "A fresh ticket",
            body = crate::protocol::TicketView,
            headers(("Set-Cookie" = String, description = "`wr_ticket`, for the show's page")),
        ),
        (
            status = 200,
            description = "The ticket this Idempotency-Key already holds",
            body = crate::protocol::TicketView,
            headers(("Set-Cookie" = String, description = "`wr_ticket`, for the show's page")),
        ),
        (
            status = 400,
            description = "A malformed Idempotency-Key or X-Join-Proof",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 403,
            description = "The proof is forged, for another show, ran out, or too weak",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "The proof's challenge was used already",
            body = crate::protocol::ErrorBody,
        ),
        (status = 410, description = "The on-sale has ended", body = crate::protocol::ErrorBody),
        (
            status = 428,
            description = "The show asks a proof of work and none came",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 429,
            description = "Past the per-client join limit",
            body = crate::protocol::ErrorBody,
        ),
        (status = 503, description = crate::http::openapi::LOST, body = crate::protocol::ErrorBody),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn join(
    State(state): State<AppState>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    AppPath(show): AppPath<String>,
) -> Result<impl IntoResponse, AppError> {
    let show = show_id(&show)?;
    check_join_post(&headers, state.site.public_origin.as_ref())?;
    let client = state.client_ip(client.ip(), &headers);
    let request = JoinRequest::read(&headers, client)?;
    let (joined, replayed) = super::join::join(&state, &show, request).await?;
    // The same Idempotency-Key again: the same ticket, said so (200, not a new 202).
    let code = if replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok(ticket_answer(
        &state,
        &show,
        joined.ticket,
        &joined.status,
        code,
        replayed,
    ))
}

/// A ticket handed out (by a join, or a bypass): its JSON, with its pass once admitted (a
/// replayed key may answer a ticket admitted since), the cookie the waiting page's first paint
/// reads it from after a reload, whether the `Idempotency-Key` replayed it, and where it is
/// followed from now on; a ticket with a pass is a bearer credential, which no cache may keep.
pub(super) fn ticket_answer(
    state: &AppState,
    show: &ShowId,
    ticket: Uuid,
    status: &Status,
    code: StatusCode,
    replayed: bool,
) -> Response {
    let view = Shown::of(&state.passes.keys, show, ticket, status).view;
    let cookie = set_ticket_cookie(show, Some(ticket), state.public_https());
    let location = routes::ticket(routes::TICKET, show.as_str(), &ticket.to_string());
    (
        code,
        [
            (header::SET_COOKIE, cookie),
            (
                HeaderName::from_static(IDEMPOTENT_REPLAYED),
                replayed.to_string(),
            ),
            (header::LOCATION, location),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        Json(view),
    )
        .into_response()
}

/// `GET …/tickets/{ticketId}`: 200 while waiting or admitted, 410 `LOST` for a ticket whose
/// place a Redis failover lost (`crate::loss_witness`; the store's status read says so), 404
/// UNKNOWN otherwise.
#[utoipa::path(
    get,
    path = crate::protocol::routes::TICKET,
    operation_id = "ticket",
    tag = crate::http::openapi::FAN,
    summary = "Where a ticket stands",
    params(crate::http::openapi::params::TicketPath),
    responses(
        (status = 200, description = "Waiting or admitted", body = crate::protocol::TicketView),
        (status = 404, response = inline(crate::http::openapi::NoTicket)),
        (
            status = 410,
            description = "A place a Redis failover lost: `{\"status\":\"LOST\"}`; join again",
            body = crate::protocol::TicketView,
        ),
    ),
)]
pub(super) async fn status(
    State(state): State<AppState>,
    AppPath((show, ticket)): AppPath<(String, String)>,
) -> Result<Response, AppError> {
    let (show, id) = ticket_path(&show, &ticket)?;
    let status = state.store.status(&show, id).await?;
    let view = Shown::of(&state.passes.keys, &show, id, &status).view;
    if view.status == TicketStatus::Waiting {
        // A poll is a sign of presence: told to the store with this instance's next report.
        state.hub.polled(&show, id);
    }
    // One read says it all: a place a failover lost is `LOST` in the status itself.
    let code = match view.status {
        TicketStatus::Unknown => StatusCode::NOT_FOUND,
        TicketStatus::Lost | TicketStatus::Expired => StatusCode::GONE,
        _ => StatusCode::OK,
    };
    Ok((code, [(header::CACHE_CONTROL, "no-store")], Json(view)).into_response())
}

/// `DELETE …/tickets/{ticketId}`: 204 once the fan is out of the queue (or has given its
/// admission back); 404 UNKNOWN for a ticket that is not live.
#[utoipa::path(
    delete,
    path = crate::protocol::routes::TICKET,
    operation_id = "leave",
    tag = crate::http::openapi::FAN,
    summary = "Leave the queue, or give the admission back",
    params(crate::http::openapi::params::TicketPath),
    responses(
        (
            status = 204,
            description = "Out",
            headers(("Set-Cookie" = String, description = "`wr_ticket`, for the show's page")),
        ),
        (status = 404, response = inline(crate::http::openapi::NoTicket)),
    ),
)]
pub(super) async fn leave(
    State(state): State<AppState>,
    AppPath((show, ticket)): AppPath<(String, String)>,
) -> Result<Response, AppError> {
    let (show, id) = ticket_path(&show, &ticket)?;
    if state.store.leave(&show, id).await? {
        // An admission given back lets its pass through here no more, at once.
        state
            .passes
            .cache
            .ended([id], crate::clock::wall_ms() / 1000);
        let forget = set_ticket_cookie(&show, None, state.public_https());
        Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, forget)]).into_response())
    } else {
        Err(AppError::UnknownTicket(ticket))
    }
}

/// `POST …/{showId}/challenge`: a fresh join challenge and the show's difficulty now; 404
/// for a show nobody made. Minting is a signature, not a write: one store call (the
/// difficulty), and the challenge is spent with the join it proves.
#[utoipa::path(
    post,
    path = crate::protocol::routes::CHALLENGE,
    operation_id = "challenge",
    tag = crate::http::openapi::FAN,
    summary = "A single-use join challenge and the show's difficulty (`bits`, 0: none asked)",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 200, description = "A challenge", body = crate::protocol::Challenge),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
        (status = 503, description = crate::http::openapi::LOST, body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn challenge(
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<Json<Challenge>, AppError> {
    let show = show_id(&show)?;
    let bits = state.store.challenge_bits(&show).await?;
    Ok(Json(Challenge {
        challenge: state.passes.keys.mint_challenge(&show, wall_ms() / 1000),
        bits,
        expires_in_seconds: CHALLENGE_TTL_SECONDS,
    }))
}
