//! Following a ticket the seed's way: `GET …/tickets/{ticketId}` every interval, over one
//! keep-alive connection per fan, as a browser holds one.
//!
//! Each answer is yielded as a [`Push`] (its event name from the ticket's status), changed or
//! not: the caller learns when its knowledge was last confirmed, which is what staleness is
//! measured from. The server gives no interval of its own to poll at; the seed's client polls
//! every second, and `load --poll-interval` sets another. Only a `Retry-After` on a 429 or a
//! 503 makes a poller wait longer, as long as it says.

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use reqwest::Url;
use tokio::task::JoinHandle;
use tokio::time::{Interval, MissedTickBehavior};
use uuid::Uuid;
use waiting_room::model::{ShowId, TicketStatus, TicketView};
use waiting_room::protocol::{EventName, routes};

use super::tcp::connect_tcp;
use super::{CONNECT_TIMEOUT, FollowError, Push, refusal, retry_after, ticket_url};

/// How often the seed's client asks.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// A ticket's JSON is a hundred bytes; an answer this long is not one.
const MAX_BODY: usize = 64 * 1024;

/// One fan polling one ticket on one connection.
pub(super) struct Poller {
    sender: SendRequest<Empty<Bytes>>,
    connection: JoinHandle<()>,
    path: String,
    host: String,
    every: Interval,
    /// Whether an answer said `ADMITTED`: a later `UNKNOWN` is then the admission expiring.
    admitted: bool,
    /// An `UNKNOWN` ends the ticket: nothing follows it.
    done: bool,
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

impl Poller {
    /// Connects to `base` (from `local` if given) to poll `ticket` every `interval`; the
    /// first poll goes out at once.
    pub(super) async fn connect(
        base: &Url,
        show: &ShowId,
        ticket: Uuid,
        local: Option<IpAddr>,
        interval: Duration,
    ) -> Result<Poller, FollowError> {
        let url = ticket_url(base, routes::TICKET, show, ticket);
        let host = match base.port() {
            Some(port) => format!("{}:{port}", base.host_str().unwrap_or_default()),
            None => base.host_str().unwrap_or_default().to_owned(),
        };
        let handshake = async {
            let tcp = connect_tcp(base, local).await?;
            http1::handshake(TokioIo::new(tcp))
                .await
                .map_err(FollowError::retry)
        };
        let (sender, connection) = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
            .await
            .map_err(|_| FollowError::retry("no answer in time"))??;
        let connection = tokio::spawn(async move {
            // Ends when the server closes or the poller is dropped; the next request says why.
            let _ = connection.await;
        });
        let mut every = tokio::time::interval(interval);
        // A slow answer delays the next poll; it never makes the poller catch up in a burst.
        every.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Ok(Poller {
            sender,
            connection,
            path: url.path().to_owned(),
            host,
            every,
            admitted: false,
            done: false,
        })
    }

    /// The next answer, at the next poll; `None` once the ticket is gone.
    pub(super) async fn next(&mut self) -> Option<Result<Push, FollowError>> {
        if self.done {
            return None;
        }
        loop {
            self.every.tick().await;
            match self.poll().await {
                Ok(Answer::Ticket(status, ticket)) => return Some(self.push(status, *ticket)),
                Ok(Answer::Wait(wait)) => tokio::time::sleep(wait).await,
                Err(e) => return Some(Err(e)),
            }
        }
    }

    async fn poll(&mut self) -> Result<Answer, FollowError> {
        let request = Request::get(self.path.as_str())
            .header(hyper::header::HOST, self.host.as_str())
            .body(Empty::new())
            .map_err(FollowError::retry)?;
        let answer = async {
            self.sender.ready().await.map_err(FollowError::retry)?;
            let response = self
                .sender
                .send_request(request)
                .await
                .map_err(FollowError::retry)?;
            let status = response.status();
            let wait = retry_after(response.headers());
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| FollowError::retry(format!("the answer broke: {e}")))?
                .to_bytes();
            Ok::<_, FollowError>((status, wait, body))
        };
        let (status, wait, body) = tokio::time::timeout(CONNECT_TIMEOUT, answer)
            .await
            .map_err(|_| FollowError::retry("no answer in time"))??;
        if matches!(
            status,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
        ) && let Some(wait) = wait
        {
            return Ok(Answer::Wait(wait));
        }
        // 410 is a place a Redis failover lost (`LOST`) or released while its fan was away
        // (`EXPIRED`): an answer too, and a final one.
        if matches!(
            status,
            StatusCode::OK | StatusCode::NOT_FOUND | StatusCode::GONE
        ) && let Ok(ticket) = serde_json::from_slice::<TicketView>(&body)
        {
            return Ok(Answer::Ticket(status, Box::new(ticket)));
        }
        Err(refusal(status, &body, "the ticket endpoint"))
    }

    fn push(&mut self, status: StatusCode, ticket: TicketView) -> Result<Push, FollowError> {
        let kind = event_of(status, ticket.status, self.admitted)?;
        self.admitted |= kind == EventName::Admitted;
        self.done = !matches!(kind, EventName::Waiting | EventName::Admitted);
        Ok(Push {
            kind,
            id: None,
            ticket,
        })
    }
}

/// The push event a polled answer stands for, as a stream would have pushed it; every one
/// but `waiting` and `admitted` ends the ticket. `admitted`: whether an earlier answer said
/// `ADMITTED` (a later 404 `UNKNOWN` is then the admission running out).
fn event_of(
    status: StatusCode,
    ticket: TicketStatus,
    admitted: bool,
) -> Result<EventName, FollowError> {
    Ok(match ticket {
        TicketStatus::Waiting => EventName::Waiting,
        TicketStatus::Closed => EventName::Closed,
        TicketStatus::Ended => EventName::Ended,
        TicketStatus::Admitted => EventName::Admitted,
        TicketStatus::Unknown if status == StatusCode::NOT_FOUND && admitted => EventName::Expired,
        TicketStatus::Unknown if status == StatusCode::NOT_FOUND => EventName::Unknown,
        // Pushed as `unknown` too, its JSON saying `LOST`: the place is gone.
        TicketStatus::Lost if status == StatusCode::GONE => EventName::Unknown,
        // A place released while its fan was away (410, `EXPIRED` and why): pushed as
        // `expired`, its JSON saying `EXPIRED`.
        TicketStatus::Expired if status == StatusCode::GONE => EventName::Expired,
        TicketStatus::Unknown | TicketStatus::Lost | TicketStatus::Expired => {
            return Err(FollowError::Fatal(format!(
                "the ticket endpoint answered {status} with a {ticket:?} ticket"
            )));
        }
    })
}

/// What one poll came back with.
enum Answer {
    /// 200, 404 or 410 with the ticket's JSON.
    Ticket(StatusCode, Box<TicketView>),
    /// 429 or 503 with `Retry-After`: ask again after this long.
    Wait(Duration),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_polled_answer_is_read_as_the_event_a_stream_would_push() {
        let ok = StatusCode::OK;
        let (not_found, gone) = (StatusCode::NOT_FOUND, StatusCode::GONE);
        let event = |status, ticket, admitted| event_of(status, ticket, admitted).ok();
        assert_eq!(
            event(ok, TicketStatus::Waiting, false),
            Some(EventName::Waiting)
        );
        assert_eq!(
            event(not_found, TicketStatus::Unknown, false),
            Some(EventName::Unknown)
        );
        assert_eq!(
            event(not_found, TicketStatus::Unknown, true),
            Some(EventName::Expired),
            "an admission that ran out"
        );
        // 410 is an answer, and a final one: a place lost, or released while away.
        assert_eq!(
            event(gone, TicketStatus::Lost, false),
            Some(EventName::Unknown)
        );
        assert_eq!(
            event(gone, TicketStatus::Expired, false),
            Some(EventName::Expired)
        );
        assert!(matches!(
            event_of(ok, TicketStatus::Expired, false),
            Err(FollowError::Fatal(_))
        ));
    }
}
