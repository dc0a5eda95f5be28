//! `GET …/tickets/{ticketId}/events`: a ticket's state as Server-Sent Events.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::serve::handover::HandOver;
use super::shown::Shown;
use super::{AppPath, AppState, ticket_path};
use crate::error::AppError;
use crate::metrics::Transport;
use crate::protocol::LAST_EVENT_ID;

/// Keep-alive comments go out this often, well inside proxies' idle timeouts (spec: ≤ 15 s).
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// How long an EventSource waits before reconnecting after the stream drops, in ms: drawn per
/// stream from this range, so that the crowd of an instance that died (or shed them) does not
/// come back to the others in the same instant.
pub const RETRY_MS: (u64, u64) = (1500, 4500);

/// Streams the ticket: its current state at once, then one event per change. Each event's
/// `id` is the show version it holds at; a reconnecting EventSource sends it back as
/// `Last-Event-ID` and is answered with the state now, so it never loses its place.
/// A client with `MAX_STREAMS_PER_CLIENT` streams open already gets 429 instead.
#[utoipa::path(
    get,
    path = crate::protocol::routes::EVENTS,
    operation_id = "ticketEvents",
    tag = crate::http::openapi::FAN,
    summary = "Follow a ticket over Server-Sent Events",
    params(crate::http::openapi::params::TicketPath, crate::http::openapi::params::LastEventId),
    responses(
        (status = 200, response = inline(crate::http::openapi::TicketEvents)),
        (status = 404, response = inline(crate::http::openapi::NoTicket)),
        (
            status = 429,
            description = crate::http::openapi::TOO_MANY_STREAMS,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show, ticket = %ticket))]
pub(super) async fn events(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    AppPath((show, ticket)): AppPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let (show, id) = ticket_path(&show, &ticket)?;
    // Counted before the stream opens; the slot is held as long as the stream is.
    let slot = state.open_stream(peer.ip(), &headers)?;
    let resumed_from = headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(from) = resumed_from {
        tracing::debug!(from, "EventSource resuming");
    }
    let updates = state
        .hub
        .follow(&show, id, state.life.shutdown.clone())
        .await?;
    let retry = Duration::from_millis(rand::random_range(RETRY_MS.0..=RETRY_MS.1));
    let connected = state.metrics.connected(Transport::Sse);
    let metrics = state.metrics.clone();
    // Rendered here, as each goes out: the hub hands over the ticket's state.
    let keys = state.passes.keys.clone();
    let stream = updates.enumerate().map(move |(i, update)| {
        let _still_connected = (&connected, &slot);
        metrics.pushed(Transport::Sse);
        let event = to_event(&Shown::of_update(&keys, &show, id, &update));
        Ok::<_, Infallible>(if i == 0 { event.retry(retry) } else { event })
    });
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // nginx would otherwise buffer the stream and fans would see updates in bursts.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    // Held for as long as the fan waits: served outside hyper, without its buffers.
    response.extensions_mut().insert(HandOver);
    Ok(response)
}

/// One update as an SSE event: name, id and the poll endpoint's JSON.
pub(super) fn to_event(update: &Shown) -> Event {
    Event::default()
        .event(update.event.as_str())
        .id(update.version.to_string())
        .json_data(&update.view)
        .expect("a ticket view always serialises")
}
