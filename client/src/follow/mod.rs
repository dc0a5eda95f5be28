//! Following a ticket over either transport (or by polling), as one stream of [`Push`]es,
//! and joining.
//!
//! Every path, event name and frame comes from the server's contract
//! ([`waiting_room::protocol`]). Errors are sorted by what the caller should do next:
//! [`FollowError::Retry`] (another attempt, perhaps on another server, may work) or
//! [`FollowError::Fatal`] (none will).

pub mod challenge;
mod poll;
mod stream;
mod tcp;

use std::net::IpAddr;
use std::time::Duration;

use reqwest::{Client, StatusCode, Url};
use uuid::Uuid;
use waiting_room::model::{ShowId, TicketView};
use waiting_room::protocol::{
    ADMISSION_HEADER, ErrorBody, EventName, IDEMPOTENCY_KEY, JOIN_PROOF_HEADER, routes,
};

pub use poll::POLL_INTERVAL;
pub use stream::PushStream;

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
    /// No stream: `GET …/tickets/{ticketId}` every second (or `--poll-interval`), as the
    /// seed's client does.
    Poll,
}

impl Transport {
    /// The name people know the transport by.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Sse => "SSE",
            Transport::Ws => "WebSocket",
            Transport::Poll => "polling",
        }
    }
}

/// One state the server pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// The event name of the push contract.
    pub kind: EventName,
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
    /// The server sheds what it cannot serve now (503 with `Retry-After`): come back after
    /// this long. Not a failure: the server answered, and said when.
    #[error("the server is busy: come back in {} s", .0.as_secs())]
    Busy(Duration),
}

impl FollowError {
    fn retry(what: impl std::fmt::Display) -> Self {
        FollowError::Retry(what.to_string())
    }
}

/// `path` on the server at `base`, which may have a path of its own (behind a proxy).
pub fn url(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(&format!("{}{path}", base.path().trim_end_matches('/')));
    url
}

/// One of a show's routes (`routes::JOIN`, `routes::CONFIG`, …) on the server at `base`.
pub fn show_url(base: &Url, route: &str, show: &ShowId) -> Url {
    url(base, &routes::show(route, show.as_str()))
}

/// One of a ticket's routes (`routes::TICKET`, `routes::EVENTS`, `routes::WS`) on the server
/// at `base`.
pub fn ticket_url(base: &Url, route: &str, show: &ShowId, ticket: Uuid) -> Url {
    url(
        base,
        &routes::ticket(route, show.as_str(), &ticket.to_string()),
    )
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
    Ticket(Box<TicketView>),
    /// 429: try again after this long.
    TooMany(Duration),
    /// 503 with `Retry-After`: the server sheds what it cannot serve now; try again after
    /// this long. (A 503 without one is a failure, retried as any other.)
    Busy(Duration),
}

/// One join on `base`: `POST …/join`; when the show asks a proof of work (428), its
/// challenge is asked, solved, and the join sent again with the proof. With `key` (the
/// `Idempotency-Key` a fan keeps for its every attempt, as the waiting page does), a join
/// asked again after an answer that never came gets the same ticket, not a second place.
pub async fn join(
    client: &Client,
    base: &Url,
    show: &ShowId,
    key: Option<&str>,
) -> Result<Joined, FollowError> {
    let mut proof = None;
    loop {
        let mut request = client
            .post(show_url(base, routes::JOIN, show))
            .timeout(CONNECT_TIMEOUT);
        if let Some(key) = key {
            request = request.header(IDEMPOTENCY_KEY, key);
        }
        if let Some(p) = &proof {
            request = request.header(JOIN_PROOF_HEADER, p);
        }
        let response = request
            .send()
            .await
            .map_err(|e| FollowError::retry(describe(&e)))?;
        if response.status() == StatusCode::PRECONDITION_REQUIRED && proof.is_none() {
            proof = challenge::prove(client, base, show).await?.header;
            if proof.is_some() {
                continue;
            }
        }
        return joined(response).await;
    }
}

/// What a buying fan pays: any valid amount will do.
const AMOUNT: u32 = 50;

/// A fan's order: `POST /orders` with its admission (`X-Admission-Ticket`) and a hold of its
/// own; the answer's status (its body read, so the connection goes back to the pool).
pub async fn order(
    client: &Client,
    base: &Url,
    show: &ShowId,
    ticket: Uuid,
    hold_id: &str,
    email: &str,
) -> reqwest::Result<StatusCode> {
    let body = serde_json::json!({
        "showId": show,
        "holdId": hold_id,
        "customerEmail": email,
        "amount": AMOUNT,
    });
    let response = client
        .post(url(base, routes::ORDERS))
        .header(ADMISSION_HEADER, ticket.to_string())
        .json(&body)
        .timeout(CONNECT_TIMEOUT)
        .send()
        .await?;
    let status = response.status();
    let _ = response.bytes().await;
    Ok(status)
}

/// The longest `Retry-After` a fan honours (a join, a stream, a poll); a longer one is
/// someone else's problem to explain.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The wait a `Retry-After` of whole seconds asks for; a server may ask for any wait, a fan
/// waits a minute at most before asking again.
pub(crate) fn retry_after(headers: &hyper::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s.min(MAX_RETRY_AFTER.as_secs())))
}

/// What a join's answer says.
async fn joined(response: reqwest::Response) -> Result<Joined, FollowError> {
    let status = response.status();
    let retry_after = retry_after(response.headers());
    if status == StatusCode::TOO_MANY_REQUESTS {
        return Ok(Joined::TooMany(
            retry_after.unwrap_or(Duration::from_secs(1)),
        ));
    }
    if status == StatusCode::SERVICE_UNAVAILABLE
        && let Some(wait) = retry_after
    {
        return Ok(Joined::Busy(wait));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| FollowError::retry(describe(&e)))?;
    if status == StatusCode::ACCEPTED || status == StatusCode::OK {
        return serde_json::from_slice(&body)
            .map(|t| Joined::Ticket(Box::new(t)))
            .map_err(|e| FollowError::Fatal(format!("join answered a ticket I cannot read: {e}")));
    }
    Err(refusal(status, &body, "join"))
}

/// 5xx and the like are worth retrying; other 4xx are not.
fn refusal(status: StatusCode, body: &[u8], what: &str) -> FollowError {
    // The server's JSON errors carry a `message` worth showing as it is.
    let message = serde_json::from_slice::<ErrorBody>(body)
        .map(|e| e.message)
        .unwrap_or_else(|_| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_a_base_path() {
        let show: ShowId = "s1".parse().unwrap();
        let t = Uuid::nil();
        let base: Url = "http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(
            ticket_url(&base, routes::EVENTS, &show, t).as_str(),
            format!("http://127.0.0.1:8080/orders/waiting-room/s1/tickets/{t}/events")
        );
        let behind_proxy: Url = "http://127.0.0.1:8080/wr/".parse().unwrap();
        assert_eq!(
            show_url(&behind_proxy, routes::JOIN, &show).as_str(),
            "http://127.0.0.1:8080/wr/orders/waiting-room/s1/join"
        );
        assert_eq!(
            url(&behind_proxy, routes::ORDERS).as_str(),
            "http://127.0.0.1:8080/wr/orders"
        );
    }

    #[test]
    fn server_errors_are_retried_and_client_errors_are_not() {
        let body = br#"{"status":400,"error":"Bad Request","message":"showId: bad"}"#;
        let e = refusal(StatusCode::BAD_REQUEST, body, "join");
        assert!(
            matches!(&e, FollowError::Fatal(m) if m.contains("showId: bad")),
            "{e:?}"
        );
        assert!(matches!(
            refusal(StatusCode::BAD_GATEWAY, b"", "join"),
            FollowError::Retry(_)
        ));
        // Not the server's JSON (a proxy's page, say): shown as it came.
        let e = refusal(StatusCode::NOT_FOUND, b"no such page", "join");
        assert!(
            matches!(&e, FollowError::Fatal(m) if m.ends_with("404 Not Found: no such page")),
            "{e:?}"
        );
    }
}
