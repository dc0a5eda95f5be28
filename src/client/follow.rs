//! Following a ticket over either transport, as one stream of [`Push`]es, and joining.
//!
//! Errors are sorted by what the caller should do next: [`FollowError::Retry`] (another
//! attempt, perhaps on another server, may work) or [`FollowError::Fatal`] (none will).

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::{Client, StatusCode, Url};
use serde::Deserialize;
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use uuid::Uuid;

use super::sse::SseParser;
use crate::model::{ShowId, TicketView};

/// A connection that has heard nothing for this long is dead: the server sends a keep-alive
/// comment or a ping every 10 s (at most 15 s, by the push contract).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting and the handshake (or response headers) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The transports a fan can follow a ticket over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Server-Sent Events (`…/events`).
    Sse,
    /// A WebSocket (`…/ws`).
    Ws,
}

impl Transport {
    /// The name people know the transport by.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Sse => "SSE",
            Transport::Ws => "WebSocket",
        }
    }
}

/// The event names of the push contract, as a client reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushKind {
    Waiting,
    Admitted,
    Expired,
    Unknown,
}

impl FromStr for PushKind {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "waiting" => PushKind::Waiting,
            "admitted" => PushKind::Admitted,
            "expired" => PushKind::Expired,
            "unknown" => PushKind::Unknown,
            _ => return Err(()),
        })
    }
}

/// One state the server pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    pub kind: PushKind,
    /// The event id (SSE `id:`, the WebSocket frame's `id`), when there is one.
    pub id: Option<String>,
    /// The same JSON the poll endpoint answers.
    pub ticket: TicketView,
}

/// Why following (or joining) did not work.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// Worth another attempt: refused connection, timeout, 5xx, a dropped stream.
    #[error("{0}")]
    Retry(String),
    /// No attempt will help: the server refused the request as such.
    #[error("{0}")]
    Fatal(String),
}

impl FollowError {
    fn retry(what: impl std::fmt::Display) -> Self {
        FollowError::Retry(what.to_string())
    }
}

/// The URL of one of a ticket's resources on the server at `base`.
pub fn ticket_url(base: &Url, show: &ShowId, ticket: Uuid, suffix: &str) -> Url {
    let mut url = base.clone();
    let path = format!(
        "{}/orders/waiting-room/{show}/tickets/{ticket}{suffix}",
        base.path().trim_end_matches('/')
    );
    url.set_path(&path);
    url
}

fn join_url(base: &Url, show: &ShowId) -> Url {
    let mut url = base.clone();
    url.set_path(&format!(
        "{}/orders/waiting-room/{show}/join",
        base.path().trim_end_matches('/')
    ));
    url
}

/// An HTTP client for the fan and load clients, optionally bound to one source address
/// (so a load run can spread over many loopback addresses).
pub fn http_client(local: Option<IpAddr>) -> reqwest::Result<Client> {
    Client::builder()
        .local_address(local)
        .connect_timeout(CONNECT_TIMEOUT)
        // Per read, not for the whole body: a stream stays open as long as keep-alives come.
        .read_timeout(IDLE_TIMEOUT)
        .tcp_nodelay(true)
        // Once a fan follows, its join connection is idle for good. A load run holding
        // thousands of streams cannot spare a file per idle connection, on either side.
        .pool_idle_timeout(Duration::from_secs(2))
        .user_agent(concat!("waiting-room-client/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// What the server answered a join.
#[derive(Debug)]
pub enum Joined {
    /// 202 with a ticket.
    Ticket(TicketView),
    /// 429: try again after this long.
    TooMany(Duration),
}

/// One `POST …/join` on `base`.
pub async fn join(client: &Client, base: &Url, show: &ShowId) -> Result<Joined, FollowError> {
    let response = client
        .post(join_url(base, show))
        .timeout(CONNECT_TIMEOUT)
        .send()
        .await
        .map_err(|e| FollowError::retry(describe(&e)))?;
    let status = response.status();
    if status == StatusCode::TOO_MANY_REQUESTS {
        let wait = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1);
        return Ok(Joined::TooMany(Duration::from_secs(wait)));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| FollowError::retry(describe(&e)))?;
    if status == StatusCode::ACCEPTED || status == StatusCode::OK {
        return serde_json::from_slice(&body)
            .map(Joined::Ticket)
            .map_err(|e| FollowError::Fatal(format!("join answered a ticket I cannot read: {e}")));
    }
    Err(refusal(status, &body, "join"))
}

/// 5xx and the like are worth retrying; other 4xx are not.
fn refusal(status: StatusCode, body: &[u8], what: &str) -> FollowError {
    // The server's JSON errors carry a `message` worth showing as it is.
    let message = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
    let text = format!("{what} answered {status}: {message}");
    if status.is_server_error() || status == StatusCode::REQUEST_TIMEOUT {
        FollowError::Retry(text)
    } else {
        FollowError::Fatal(text)
    }
}

/// reqwest's errors repeat the URL and bury the cause three levels down; a person wants
/// "cannot connect: Connection refused".
fn describe(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(source) = cause.source() {
        cause = source;
    }
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else if e.is_body() || e.is_decode() {
        "the stream broke"
    } else {
        "request failed"
    };
    if std::ptr::addr_eq(cause, e as &dyn std::error::Error) {
        return format!("{what}: {e}");
    }
    format!("{what}: {cause}")
}

/// A live connection to a ticket's push stream.
pub struct PushStream {
    inner: Inner,
    /// When the connection was established.
    pub connected_at: Instant,
}

enum Inner {
    Sse {
        body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
        parser: SseParser,
        ready: std::collections::VecDeque<Push>,
    },
    Ws(Box<WebSocketStream<TcpStream>>),
    /// The server answered the connection with a final state (404 UNKNOWN) instead of a
    /// stream; it is yielded once.
    Done(Option<Push>),
}

impl PushStream {
    /// Opens the ticket's SSE stream on `base`, sending `last_event_id` if there is one.
    pub async fn sse(
        client: &Client,
        base: &Url,
        show: &ShowId,
        ticket: Uuid,
        last_event_id: Option<&str>,
    ) -> Result<PushStream, FollowError> {
        let mut request = client
            .get(ticket_url(base, show, ticket, "/events"))
            .header(reqwest::header::ACCEPT, "text/event-stream");
        // An empty id means "forget it", as in an EventSource.
        if let Some(id) = last_event_id.filter(|id| !id.is_empty()) {
            request = request.header("Last-Event-ID", id);
        }
        let response = tokio::time::timeout(CONNECT_TIMEOUT, request.send())
            .await
            .map_err(|_| FollowError::retry("no answer in time"))?
            .map_err(|e| FollowError::retry(describe(&e)))?;
        let status = response.status();
        if status != StatusCode::OK {
            let body = response.bytes().await.unwrap_or_default();
            return final_answer(status, &body, ticket);
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
        Ok(PushStream {
            inner: Inner::Sse {
                body: Box::pin(response.bytes_stream()),
                parser: SseParser::resuming(last_event_id.map(str::to_owned)),
                ready: Default::default(),
            },
            connected_at: Instant::now(),
        })
    }

    /// Opens the ticket's WebSocket on `base`, from `local` if given.
    pub async fn ws(
        base: &Url,
        show: &ShowId,
        ticket: Uuid,
        local: Option<IpAddr>,
    ) -> Result<PushStream, FollowError> {
        let mut url = ticket_url(base, show, ticket, "/ws");
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
                        let body = response.body().as_deref().unwrap_or_default();
                        match final_answer(response.status(), body, ticket) {
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
        Ok(PushStream {
            inner: Inner::Ws(Box::new(socket)),
            connected_at: Instant::now(),
        })
    }

    /// The next push; `None` when the server ended the stream cleanly.
    pub async fn next(&mut self) -> Option<Result<Push, FollowError>> {
        match &mut self.inner {
            Inner::Done(last) => last.take().map(Ok),
            Inner::Sse {
                body,
                parser,
                ready,
            } => loop {
                if let Some(push) = ready.pop_front() {
                    return Some(Ok(push));
                }
                let chunk = match body.next().await? {
                    Ok(chunk) => chunk,
                    Err(e) => return Some(Err(FollowError::retry(describe(&e)))),
                };
                for event in parser.feed(&chunk) {
                    // Events this client does not know are someone else's extension.
                    let Ok(kind) = event.event.parse() else {
                        continue;
                    };
                    match serde_json::from_str(&event.data) {
                        Ok(ticket) => ready.push_back(Push {
                            kind,
                            id: event.id,
                            ticket,
                        }),
                        Err(e) => {
                            return Some(Err(FollowError::retry(format!("unreadable event: {e}"))));
                        }
                    }
                }
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
            Inner::Sse { parser, .. } => parser.last_event_id(),
            _ => None,
        }
    }

    /// The reconnection time the server asked for (SSE `retry:`).
    pub fn retry_hint(&self) -> Option<Duration> {
        match &self.inner {
            Inner::Sse { parser, .. } => parser.retry(),
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
fn final_answer(status: StatusCode, body: &[u8], ticket: Uuid) -> Result<PushStream, FollowError> {
    if status == StatusCode::NOT_FOUND
        && let Ok(view) = serde_json::from_slice::<serde_json::Value>(body)
        && view.get("status").and_then(|s| s.as_str()) == Some("UNKNOWN")
    {
        return Ok(PushStream {
            inner: Inner::Done(Some(Push {
                kind: PushKind::Unknown,
                id: None,
                ticket: unknown_view(ticket),
            })),
            connected_at: Instant::now(),
        });
    }
    Err(refusal(status, body, "the push endpoint"))
}

/// The ticket JSON of an `UNKNOWN` ticket. Read from JSON rather than built field by field, so
/// that fields the server's model gains later (all optional) need no change here.
fn unknown_view(ticket: Uuid) -> TicketView {
    serde_json::from_value(serde_json::json!({ "ticketId": ticket, "status": "UNKNOWN" }))
        .expect("an UNKNOWN ticket is valid ticket JSON")
}

/// Frames here are a few hundred bytes; tungstenite's default 128 KiB read buffer per
/// connection would cost a load run of 10,000 fans over a gigabyte.
fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .max_message_size(Some(64 * 1024))
        .max_frame_size(Some(64 * 1024))
}

/// A WebSocket text frame: the ticket JSON plus `event` and `id`.
fn parse_frame(text: &str) -> Result<Option<Push>, FollowError> {
    #[derive(Deserialize)]
    struct Frame {
        event: String,
        id: Option<u64>,
        #[serde(flatten)]
        ticket: TicketView,
    }
    let frame: Frame = serde_json::from_str(text)
        .map_err(|e| FollowError::retry(format!("unreadable frame: {e}")))?;
    Ok(frame.event.parse().ok().map(|kind| Push {
        kind,
        id: frame.id.map(|id| id.to_string()),
        ticket: frame.ticket,
    }))
}

/// A TCP connection to `base`'s host and port, bound to `local` if given.
async fn connect_tcp(base: &Url, local: Option<IpAddr>) -> Result<TcpStream, FollowError> {
    // IPv6 hosts come bracketed, as in the URL; the resolver wants them bare.
    let Some(host) = base
        .host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
    else {
        return Err(FollowError::Fatal(format!("{base} names no host")));
    };
    let port = base.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| FollowError::retry(format!("cannot resolve {host}: {e}")))?
        // A source address only works with a destination of its own family.
        .filter(|a| local.is_none_or(|l| l.is_ipv4() == a.is_ipv4()))
        .collect();
    let mut last = FollowError::retry(format!("{host} has no usable address"));
    for addr in addrs {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        };
        let attempt = async {
            let socket = socket?;
            if let Some(ip) = local {
                socket.bind(SocketAddr::new(ip, 0))?;
            }
            let stream = socket.connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok::<_, std::io::Error>(stream)
        };
        match attempt.await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = FollowError::retry(format!("{addr}: {e}")),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Paused;

    #[test]
    fn urls_keep_a_base_path() {
        let show: ShowId = "s1".parse().unwrap();
        let t = Uuid::nil();
        let base: Url = "http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(
            ticket_url(&base, &show, t, "/events").as_str(),
            format!("http://127.0.0.1:8080/orders/waiting-room/s1/tickets/{t}/events")
        );
        let behind_proxy: Url = "http://127.0.0.1:8080/wr/".parse().unwrap();
        assert_eq!(
            join_url(&behind_proxy, &show).as_str(),
            "http://127.0.0.1:8080/wr/orders/waiting-room/s1/join"
        );
    }

    #[test]
    fn frames_parse_and_unknown_event_names_are_skipped() {
        let t = Uuid::new_v4();
        let push = parse_frame(&format!(
            r#"{{"event":"waiting","id":4,"ticketId":"{t}","status":"WAITING","position":3,"etaSeconds":1}}"#
        ))
        .unwrap()
        .unwrap();
        assert_eq!(push.kind, PushKind::Waiting);
        assert_eq!(push.id.as_deref(), Some("4"));
        assert_eq!(push.ticket.position, Some(3));
        let other = format!(r#"{{"event":"promo","ticketId":"{t}","status":"WAITING"}}"#);
        assert!(parse_frame(&other).unwrap().is_none());
        assert!(parse_frame("not json").is_err());
        assert_eq!(
            push.ticket.eta_min_seconds, None,
            "a certain pace has no range"
        );
        assert_eq!(push.ticket.paused, None);
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
        assert_eq!(unknown_view(t).ticket_id, t);
    }

    #[test]
    fn server_errors_are_retried_and_client_errors_are_not() {
        let body = br#"{"status":400,"message":"showId: bad"}"#;
        let e = refusal(StatusCode::BAD_REQUEST, body, "join");
        assert!(
            matches!(&e, FollowError::Fatal(m) if m.contains("showId: bad")),
            "{e:?}"
        );
        assert!(matches!(
            refusal(StatusCode::BAD_GATEWAY, b"", "join"),
            FollowError::Retry(_)
        ));
    }
}
