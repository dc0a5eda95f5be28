//! A live connection to a ticket's push stream, over SSE or a WebSocket.
//!
//! SSE is read by [`eventsource_stream`] over reqwest's byte stream, which keeps what an
//! EventSource keeps across events: the last event id (sent back as `Last-Event-ID` on
//! reconnecting) and the reconnection time the server asked for with `retry:`.

use std::net::IpAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::{Client, StatusCode, Url};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use uuid::Uuid;
use waiting_room::model::{ShowId, TicketStatus, TicketView};
use waiting_room::protocol::{EventName, Frame, routes};

use super::poll::Poller;
use super::tcp::connect_tcp;
use super::{
    CONNECT_TIMEOUT, FollowError, IDLE_TIMEOUT, Push, describe, refusal, retry_after, ticket_url,
};

type SseEvents =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// A live connection to a ticket's push stream.
pub struct PushStream {
    inner: Inner,
    /// When the connection was established.
    pub connected_at: Instant,
}

enum Inner {
    Sse {
        events: SseEvents,
        /// The id to resume from: the one this connection resumed from until the server
        /// names another.
        last_id: Option<String>,
        /// The reconnection time the server last asked for.
        retry: Option<Duration>,
    },
    Ws(Box<WebSocketStream<TcpStream>>),
    /// Not a stream: `GET …/tickets/{ticketId}` every interval (`--transport poll`).
    Poll(Box<Poller>),
    /// The server answered the connection with a final state (404 UNKNOWN) instead of a
    /// stream; it is yielded once. Boxed: a ticket's JSON is the largest thing here.
    Done(Option<Box<Push>>),
}

impl PushStream {
    fn new(inner: Inner) -> PushStream {
        PushStream {
            inner,
            connected_at: Instant::now(),
        }
    }

    /// Opens the ticket's SSE stream on `base`, sending `last_event_id` if there is one.
    pub async fn sse(
        client: &Client,
        base: &Url,
        show: &ShowId,
        ticket: Uuid,
        last_event_id: Option<&str>,
    ) -> Result<PushStream, FollowError> {
        // An empty id means "forget it", as in an EventSource.
        let last_event_id = last_event_id.filter(|id| !id.is_empty());
        let mut request = client
            .get(ticket_url(base, routes::EVENTS, show, ticket))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = tokio::time::timeout(CONNECT_TIMEOUT, request.send())
            .await
            .map_err(|_| FollowError::retry("no answer in time"))?
            .map_err(|e| FollowError::retry(describe(&e)))?;
        let status = response.status();
        if status == StatusCode::SERVICE_UNAVAILABLE
            && let Some(wait) = retry_after(response.headers())
        {
            return Err(FollowError::Busy(wait));
        }
        if status != StatusCode::OK {
            let body = response.bytes().await.unwrap_or_default();
            return final_answer(status, &body);
        }
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            return Err(FollowError::Fatal(format!(
                "{base} did not answer with an event stream"
            )));
        }
        Ok(PushStream::new(Inner::Sse {
            events: Box::pin(response.bytes_stream().eventsource()),
            last_id: last_event_id.map(str::to_owned),
            retry: None,
        }))
    }

    /// Opens the ticket's WebSocket on `base`, from `local` if given.
    pub async fn ws(
        base: &Url,
        show: &ShowId,
        ticket: Uuid,
        local: Option<IpAddr>,
    ) -> Result<PushStream, FollowError> {
        let mut url = ticket_url(base, routes::WS, show, ticket);
        if url.scheme() != "http" || url.set_scheme("ws").is_err() {
            return Err(FollowError::Fatal(format!(
                "{base}: only http:// servers are supported"
            )));
        }
        let connect = async {
            let tcp = connect_tcp(base, local).await?;
            tokio_tungstenite::client_async_with_config(url.as_str(), tcp, Some(ws_config()))
                .await
                .map_err(|e| match e {
                    tungstenite::Error::Http(response) => {
                        if response.status() == StatusCode::SERVICE_UNAVAILABLE
                            && let Some(wait) = retry_after(response.headers())
                        {
                            return FollowError::Busy(wait);
                        }
                        let body = response.body().as_deref().unwrap_or_default();
                        match final_answer(response.status(), body) {
                            Ok(_) => FollowError::retry("unexpected answer"),
                            Err(e) => e,
                        }
                    }
                    other => FollowError::retry(other),
                })
        };
        let (socket, _) = tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| FollowError::retry("no answer in time"))??;
        Ok(PushStream::new(Inner::Ws(Box::new(socket))))
    }

    /// Polls the ticket on `base` every `interval` over one connection, from `local` if
    /// given: each answer comes as a push.
    pub async fn poll(
        base: &Url,
        show: &ShowId,
        ticket: Uuid,
        local: Option<IpAddr>,
        interval: Duration,
    ) -> Result<PushStream, FollowError> {
        let poller = Poller::connect(base, show, ticket, local, interval).await?;
        Ok(PushStream::new(Inner::Poll(Box::new(poller))))
    }

    /// The next push; `None` when the server ended the stream cleanly.
    pub async fn next(&mut self) -> Option<Result<Push, FollowError>> {
        match &mut self.inner {
            Inner::Done(last) => last.take().map(|push| Ok(*push)),
            Inner::Poll(poller) => poller.next().await,
            Inner::Sse {
                events,
                last_id,
                retry,
            } => loop {
                let event = match events.next().await? {
                    Ok(event) => event,
                    Err(EventStreamError::Transport(e)) => {
                        return Some(Err(FollowError::retry(describe(&e))));
                    }
                    Err(e) => return Some(Err(FollowError::retry(format!("unreadable: {e}")))),
                };
                if event.retry.is_some() {
                    *retry = event.retry;
                }
                // The parser gives the id in force, empty before the server named one on
                // this connection: then the id resumed from still holds.
                if !event.id.is_empty() {
                    *last_id = Some(event.id);
                }
                // Events this client does not know are someone else's extension.
                let Ok(kind) = event.event.parse() else {
                    continue;
                };
                return Some(match serde_json::from_str(&event.data) {
                    Ok(ticket) => Ok(Push {
                        kind,
                        id: last_id.clone(),
                        ticket,
                    }),
                    Err(e) => Err(FollowError::retry(format!("unreadable event: {e}"))),
                });
            },
            Inner::Ws(socket) => loop {
                let message = match tokio::time::timeout(IDLE_TIMEOUT, socket.next()).await {
                    Err(_) => return Some(Err(FollowError::retry("no message or ping for 30 s"))),
                    Ok(None) | Ok(Some(Ok(Message::Close(_)))) => return None,
                    Ok(Some(Err(e))) => return Some(Err(FollowError::retry(e))),
                    Ok(Some(Ok(message))) => message,
                };
                // Pings are answered by tungstenite itself; only text frames carry news.
                let Message::Text(text) = message else {
                    continue;
                };
                match parse_frame(text.as_str()) {
                    Ok(Some(push)) => return Some(Ok(push)),
                    Ok(None) => continue,
                    Err(e) => return Some(Err(e)),
                }
            },
        }
    }

    /// The id to resume from on reconnecting (SSE only: a WebSocket starts afresh).
    pub fn last_event_id(&self) -> Option<&str> {
        match &self.inner {
            Inner::Sse { last_id, .. } => last_id.as_deref(),
            _ => None,
        }
    }

    /// The reconnection time the server asked for (SSE `retry:`).
    pub fn retry_hint(&self) -> Option<Duration> {
        match &self.inner {
            Inner::Sse { retry, .. } => *retry,
            _ => None,
        }
    }

    /// Closes politely where the transport has a way to (a WebSocket close frame).
    pub async fn close(self) {
        if let Inner::Ws(mut socket) = self.inner {
            let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(None)).await;
        }
    }
}

/// A non-stream answer: 404 with an UNKNOWN ticket is a final state, the rest are errors.
fn final_answer(status: StatusCode, body: &[u8]) -> Result<PushStream, FollowError> {
    if status == StatusCode::NOT_FOUND
        && let Ok(ticket) = serde_json::from_slice::<TicketView>(body)
        && ticket.status == TicketStatus::Unknown
    {
        return Ok(PushStream::new(Inner::Done(Some(Box::new(Push {
            kind: EventName::Unknown,
            id: None,
            ticket,
        })))));
    }
    Err(refusal(status, body, "the push endpoint"))
}

/// Frames here are a few hundred bytes; tungstenite's default 128 KiB read buffer per
/// connection would cost a load run of 10,000 fans over a gigabyte.
fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .max_message_size(Some(64 * 1024))
        .max_frame_size(Some(64 * 1024))
}

/// A WebSocket text frame of the contract; `None` for an event this client does not know
/// (someone else's extension).
fn parse_frame(text: &str) -> Result<Option<Push>, FollowError> {
    match serde_json::from_str::<Frame>(text) {
        Ok(frame) => Ok(Some(Push {
            kind: frame.event,
            id: Some(frame.id.to_string()),
            ticket: frame.view,
        })),
        Err(e) => {
            let named: Option<String> = serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|v| Some(v.get("event")?.as_str()?.to_owned()));
            match named {
                Some(name) if name.parse::<EventName>().is_err() => Ok(None),
                _ => Err(FollowError::retry(format!("unreadable frame: {e}"))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use waiting_room::model::Paused;

    #[test]
    fn frames_parse_and_unknown_event_names_are_skipped() {
        let t = Uuid::new_v4();
        let push = parse_frame(&format!(
            r#"{{"event":"waiting","id":4,"ticketId":"{t}","status":"WAITING","position":3,"etaSeconds":1}}"#
        ))
        .unwrap()
        .unwrap();
        assert_eq!(push.kind, EventName::Waiting);
        assert_eq!(push.id.as_deref(), Some("4"));
        assert_eq!(push.ticket.position, Some(3));
        let other = format!(r#"{{"event":"promo","ticketId":"{t}","status":"WAITING"}}"#);
        assert!(parse_frame(&other).unwrap().is_none());
        assert!(parse_frame("not json").is_err());
        let broken = format!(r#"{{"event":"waiting","id":4,"ticketId":"{t}"}}"#);
        assert!(parse_frame(&broken).is_err(), "a known event must be whole");
        assert_eq!(
            push.ticket.eta_min_seconds, None,
            "a certain pace has no range"
        );
        assert_eq!(push.ticket.paused, None);
    }

    #[test]
    fn a_place_a_failover_lost_is_read_as_a_final_unknown_saying_lost() {
        let t = Uuid::new_v4();
        let push = parse_frame(&format!(
            r#"{{"event":"unknown","id":9,"ticketId":"{t}","status":"LOST","message":"please join again"}}"#
        ))
        .unwrap()
        .unwrap();
        assert_eq!(push.kind, EventName::Unknown);
        assert_eq!(push.ticket.status, TicketStatus::Lost);
        assert_eq!(push.ticket.message.as_deref(), Some("please join again"));
    }

    #[test]
    fn the_eta_range_and_pause_are_read_when_present() {
        let t = Uuid::new_v4();
        let push = parse_frame(&format!(
            r#"{{"event":"waiting","id":5,"ticketId":"{t}","status":"WAITING","position":95,"etaSeconds":600,"etaMinSeconds":300,"etaMaxSeconds":900,"paused":"full"}}"#
        ))
        .unwrap()
        .unwrap();
        let ticket = &push.ticket;
        assert_eq!(ticket.eta_seconds, Some(600));
        assert_eq!(
            (ticket.eta_min_seconds, ticket.eta_max_seconds),
            (Some(300), Some(900))
        );
        assert_eq!(ticket.paused, Some(Paused::Full));
    }

    #[tokio::test]
    async fn a_404_unknown_ticket_is_a_final_state_and_other_answers_are_errors() {
        let t = Uuid::new_v4();
        let body = format!(r#"{{"ticketId":"{t}","status":"UNKNOWN"}}"#);
        let Ok(mut done) = final_answer(StatusCode::NOT_FOUND, body.as_bytes()) else {
            panic!("a 404 UNKNOWN is a final state");
        };
        let push = done.next().await.unwrap().unwrap();
        assert_eq!((push.kind, push.ticket.ticket_id), (EventName::Unknown, t));
        assert!(done.next().await.is_none(), "yielded once");
        let refused = br#"{"status":404,"error":"Not Found","message":"no on-sale named x"}"#;
        assert!(matches!(
            final_answer(StatusCode::NOT_FOUND, refused),
            Err(FollowError::Fatal(m)) if m.contains("no on-sale named x")
        ));
    }

    /// The SSE side as the fan reads it, from raw bytes cut anywhere: comments, `retry:`, a
    /// two-line data field, an event of someone else's, CRLF line ends.
    #[tokio::test]
    async fn sse_pushes_carry_the_id_in_force_and_the_retry_hint() {
        let t = Uuid::new_v4();
        let text = format!(
            ": hello\r\nretry: 2000\r\nevent: waiting\r\nid: 7\r\ndata: {{\"ticketId\":\"{t}\",\r\n\
             data: \"status\":\"WAITING\",\"position\":2}}\r\n\r\nevent: promo\r\nid: 8\r\ndata: x\r\n\r\n\
             event: admitted\r\ndata: {{\"ticketId\":\"{t}\",\"status\":\"ADMITTED\"}}\r\n\r\n"
        );
        for size in [1, 2, 3, 7, text.len()] {
            let chunks: Vec<reqwest::Result<Vec<u8>>> = text
                .as_bytes()
                .chunks(size)
                .map(|c| Ok(c.to_vec()))
                .collect();
            let mut stream = PushStream::new(Inner::Sse {
                events: Box::pin(futures::stream::iter(chunks).eventsource()),
                last_id: Some("5".into()),
                retry: None,
            });
            assert_eq!(stream.last_event_id(), Some("5"), "resumed from");
            let first = stream.next().await.unwrap().unwrap();
            assert_eq!(
                (first.kind, first.id.as_deref()),
                (EventName::Waiting, Some("7"))
            );
            assert_eq!(first.ticket.position, Some(2));
            assert_eq!(stream.retry_hint(), Some(Duration::from_millis(2000)));
            // `promo` is skipped, yet its id counts; `admitted` names none, so 8 holds.
            let second = stream.next().await.unwrap().unwrap();
            assert_eq!(
                (second.kind, second.id.as_deref()),
                (EventName::Admitted, Some("8"))
            );
            assert!(stream.next().await.is_none(), "chunk size {size}");
            assert_eq!(stream.last_event_id(), Some("8"));
        }
    }
}
