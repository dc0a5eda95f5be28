//! `GET …/tickets/{ticketId}/ws`: a ticket's state over a WebSocket.
//!
//! The socket loop is written against any `Sink`/`Stream` of messages, so it can be driven
//! by channels in tests as well as by axum's socket.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use futures::{Sink, SinkExt, Stream, StreamExt};
use serde::Serialize;

use super::fan::unknown;
use super::{AppState, show_id, ticket_id};
use crate::error::AppError;
use crate::hub::Update;
use crate::metrics::{Metrics, Transport};
use crate::model::TicketView;

/// Server pings go out this often (spec: ≤ 15 s).
pub const PING_EVERY: Duration = Duration::from_secs(10);

/// One frame: the ticket JSON plus its event name and the show version.
#[derive(Serialize)]
struct Frame<'a> {
    event: &'a str,
    id: u64,
    #[serde(flatten)]
    view: &'a TicketView,
}

/// Upgrades after checking the ids, so bad input still gets a plain 4xx.
pub async fn upgrade(
    State(state): State<AppState>,
    Path((show, ticket)): Path<(String, String)>,
    ws: WebSocketUpgrade,
) -> Result<Response, AppError> {
    let show = show_id(&show)?;
    let Some(id) = ticket_id(&ticket) else {
        return Ok(unknown(&ticket));
    };
    let updates = state.hub.follow(&show, id, state.shutdown.clone()).await?;
    let metrics = state.metrics.clone();
    Ok(ws
        .on_upgrade(move |socket: WebSocket| async move {
            let _connected = metrics.connected(Transport::WebSocket);
            let (sink, stream) = socket.split();
            serve(sink, stream, updates, &metrics, PING_EVERY).await;
        })
        .into_response())
}

/// Sends every update as a text frame and pings every `ping_every`, until the updates end
/// (then closes politely), the client closes, or the connection fails.
pub async fn serve<W, R, U>(
    mut sink: W,
    mut incoming: R,
    updates: U,
    metrics: &Metrics,
    ping_every: Duration,
) where
    W: Sink<Message> + Unpin,
    R: Stream<Item = Result<Message, axum::Error>> + Unpin,
    U: Stream<Item = Update>,
{
    let mut updates = std::pin::pin!(updates);
    let mut ping = tokio::time::interval(ping_every);
    ping.tick().await;
    loop {
        tokio::select! {
            update = updates.next() => {
                let Some(update) = update else { break };
                let frame = Frame { event: update.event.as_str(), id: update.version, view: &update.view };
                let text = serde_json::to_string(&frame).expect("a frame always serialises");
                if sink.send(Message::Text(text.into())).await.is_err() {
                    return;
                }
                metrics.pushed(Transport::WebSocket);
            }
            _ = ping.tick() => {
                if sink.send(Message::Ping(Vec::new().into())).await.is_err() {
                    return;
                }
            }
            message = incoming.next() => match message {
                // Fans have nothing to say; pongs and chatter are read and dropped.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = sink.send(Message::Close(None)).await;
}
