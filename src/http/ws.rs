//! `GET …/tickets/{ticketId}/ws`: a ticket's state over a WebSocket.
//!
//! The socket loop is written against any `Sink`/`Stream` of messages, so it can be driven
//! by channels in tests as well as by axum's socket. A fan's frame past [`MAX_FRAME`] is
//! answered with a close frame saying so (1009, RFC 6455 §7.4.1), not a dropped connection.

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures::{Sink, SinkExt, Stream, StreamExt};

use super::shown::Shown;
use super::{AppPath, AppState, ticket_path};
use crate::error::AppError;
use crate::metrics::{Metrics, Transport};
use crate::protocol::Frame;

/// Server pings go out this often (spec: ≤ 15 s).
pub(super) const PING_EVERY: Duration = Duration::from_secs(10);

/// The most a fan's frames may hold; a fan has nothing to say beyond a close.
const MAX_FRAME: usize = 4 * 1024;

/// How long a socket closed for a frame too big stays open after its close frame, so that the
/// frame reaches the client before the connection ends (the rest of the big frame is never
/// read: closing over unread bytes resets the connection, which may lose what was in flight).
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What tungstenite reads into (and zero-fills) per connection: a pong or a close fits, and a
/// larger frame (up to [`MAX_FRAME`]) grows it for as long as it is read.
const READ_BUFFER: usize = 256;

/// Upgrades after checking the ids and the client's stream count, so bad input and a
/// greedy client still get a plain 4xx.
#[utoipa::path(
    get,
    path = crate::protocol::routes::WS,
    operation_id = "ticketSocket",
    tag = crate::http::openapi::FAN,
    summary = "Follow a ticket over a WebSocket",
    params(crate::http::openapi::params::TicketPath, crate::http::openapi::params::Upgrade),
    responses(
        (status = 101, response = inline(crate::http::openapi::Frames)),
        (
            status = 400,
            description = "Not a WebSocket handshake, or a bad showId",
            body = crate::protocol::ErrorBody,
        ),
        (status = 404, response = inline(crate::http::openapi::NoTicket)),
        (
            status = 429,
            description = crate::http::openapi::TOO_MANY_STREAMS,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(super) async fn upgrade(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    AppPath((show, ticket)): AppPath<(String, String)>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, AppError> {
    let ws = ws.map_err(|r| AppError::Rejected(r.status(), r.body_text()))?;
    let (show, id) = ticket_path(&show, &ticket)?;
    // Held by the socket's task: an upgrade that never completes gives it back too.
    let slot = state.open_stream(peer.ip(), &headers)?;
    // Boxed: the socket's task would otherwise hold the follower's state twice, once in the
    // closure it is handed and once in the future that closure makes (BENCHMARKS.md §1).
    // Rendered here, as each goes out: the hub hands over the ticket's state.
    let keys = state.passes.keys.clone();
    let updates = Box::pin(
        state
            .hub
            .follow(&show, id, state.life.shutdown.clone())
            .await?
            .map(move |update| Shown::of_update(&keys, &show, id, &update)),
    );
    let metrics = state.metrics.clone();
    Ok(ws
        // Fans send nothing but pongs and a close: tungstenite's default 128 KiB read buffer
        // per connection would be most of a waiting fan's memory (BENCHMARKS.md §1).
        .read_buffer_size(READ_BUFFER)
        .max_message_size(MAX_FRAME)
        .max_frame_size(MAX_FRAME)
        .on_upgrade(move |socket: WebSocket| async move {
            let _held = slot;
            let _connected = metrics.connected(Transport::WebSocket);
            let (sink, stream) = socket.split();
            serve(sink, stream, updates, &metrics, PING_EVERY).await;
        })
        .into_response())
}

/// Sends every update as a text frame and pings every `ping_every`, until the updates end
/// (then closes politely), the client closes, or the connection fails.
pub(super) async fn serve<W, R, U>(
    mut sink: W,
    mut incoming: R,
    updates: U,
    metrics: &Metrics,
    ping_every: Duration,
) where
    W: Sink<Message> + Unpin,
    R: Stream<Item = Result<Message, axum::Error>> + Unpin,
    U: Stream<Item = Shown>,
{
    let mut updates = std::pin::pin!(updates);
    let mut ping = tokio::time::interval(ping_every);
    ping.tick().await;
    loop {
        tokio::select! {
            update = updates.next() => {
                let Some(update) = update else { break };
                // Only the text is kept across the write, not the update it was made from.
                let text = frame_text(update);
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
                Some(Ok(Message::Close(_))) | None => return,
                Some(Err(e)) if too_big(&e) => {
                    let close = CloseFrame {
                        code: close_code::SIZE,
                        reason: format!("a frame of at most {MAX_FRAME} bytes").into(),
                    };
                    if sink.send(Message::Close(Some(close))).await.is_ok() {
                        // Nothing more is read: tungstenite would buffer the big frame whole.
                        tokio::time::sleep(CLOSE_GRACE).await;
                    }
                    return;
                }
                Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
    let _ = sink.send(Message::Close(None)).await;
}

/// Whether a read failed because the client sent a frame or message larger than allowed.
fn too_big(e: &axum::Error) -> bool {
    std::error::Error::source(e)
        .and_then(|inner| inner.downcast_ref::<tungstenite::Error>())
        .is_some_and(|e| matches!(e, tungstenite::Error::Capacity(_)))
}

/// One update as the text of its frame.
fn frame_text(update: Shown) -> String {
    let frame = Frame {
        event: update.event,
        id: update.version,
        view: update.view,
    };
    serde_json::to_string(&frame).expect("a frame always serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TicketState;
    use crate::protocol::EventName;
    use futures::channel::mpsc;

    fn update(position: u64) -> Shown {
        let ticket = uuid::Uuid::nil();
        Shown {
            event: EventName::Waiting,
            view: TicketState::Waiting {
                position,
                arrival: position,
            }
            .view(
                ticket,
                &crate::model::Pace::at_rate(1),
                &crate::model::Sale::open(),
            ),
            version: position,
            expires_at: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn frames_updates_pings_while_quiet_and_stops_on_close() {
        let (sink, mut sent) = mpsc::unbounded::<Message>();
        let (client, incoming) = mpsc::unbounded::<Result<Message, axum::Error>>();
        // Two updates, then nothing more for a long while.
        let updates =
            futures::stream::iter([update(2), update(1)]).chain(futures::stream::pending());
        let metrics = Metrics::default();
        let served = tokio::spawn(async move {
            serve(sink, incoming, updates, &metrics, Duration::from_secs(10)).await;
        });
        for expected in [2, 1] {
            let Some(Message::Text(text)) = sent.next().await else {
                panic!("a text frame")
            };
            let frame: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(frame["event"], "waiting");
            assert_eq!(frame["position"], expected);
            assert_eq!(frame["id"], expected);
            assert_eq!(frame["status"], "WAITING");
        }
        // Quiet: a ping every 10 s keeps proxies from cutting the connection.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(matches!(sent.next().await, Some(Message::Ping(_))));
        client.unbounded_send(Ok(Message::Close(None))).unwrap();
        served.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_too_big_is_answered_with_a_close_saying_so() {
        let (sink, mut sent) = mpsc::unbounded::<Message>();
        let (client, incoming) = mpsc::unbounded::<Result<Message, axum::Error>>();
        let metrics = Metrics::default();
        let too_big = tungstenite::error::CapacityError::MessageTooLong {
            size: MAX_FRAME + 1,
            max_size: MAX_FRAME,
        };
        client
            .unbounded_send(Err(axum::Error::new(tungstenite::Error::Capacity(too_big))))
            .unwrap();
        serve(
            sink,
            incoming,
            futures::stream::pending(),
            &metrics,
            Duration::from_secs(10),
        )
        .await;
        let Some(Message::Close(Some(close))) = sent.next().await else {
            panic!("a close frame")
        };
        assert_eq!(close.code, close_code::SIZE);
        // Any other failure of the connection ends it without a word: nothing could carry it.
        let (sink, mut sent) = mpsc::unbounded::<Message>();
        let (client, incoming) = mpsc::unbounded::<Result<Message, axum::Error>>();
        let broken = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        client
            .unbounded_send(Err(axum::Error::new(tungstenite::Error::Io(broken))))
            .unwrap();
        drop(client);
        let pending = futures::stream::pending();
        serve(sink, incoming, pending, &metrics, Duration::from_secs(10)).await;
        assert!(sent.next().await.is_none());
    }

    #[tokio::test]
    async fn closes_politely_when_the_updates_end() {
        let (sink, mut sent) = mpsc::unbounded::<Message>();
        let (_client, incoming) = mpsc::unbounded::<Result<Message, axum::Error>>();
        let metrics = Metrics::default();
        serve(
            sink,
            incoming,
            futures::stream::iter([update(1)]),
            &metrics,
            Duration::from_secs(10),
        )
        .await;
        assert!(matches!(sent.next().await, Some(Message::Text(_))));
        assert!(matches!(sent.next().await, Some(Message::Close(None))));
    }
}
