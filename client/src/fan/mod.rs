//! `waiting-room-client fan`: one fan following their place in the queue, the way a person
//! would.
//!
//! It joins the show (or follows `--ticket`), follows the ticket over SSE or a WebSocket,
//! prints a line whenever what a fan reads changes (its place, its wait, why the queue stands
//! still), and exits 0 once admitted. When a connection fails it moves to the next `--url` at
//! once; when every server has failed in a row it backs off (exponentially, with jitter)
//! before going round again, and gives up after `--give-up-after` without a single push.
//! Over SSE it resumes with `Last-Event-ID`.
//!
//! With `--away-after` it steps away once, as a person who closes the waiting page would: it
//! closes its stream, stays away `--away-for`, then follows the same ticket again (on the next
//! `--url` when there are several), so a show's presence rules (docs/presence.md) can be seen
//! from the fan's side: passed over while away, let in first once back, or its place released
//! (`EXPIRED`, exit 8) after the show's hold.

mod lines;
mod servers;

use std::io::Write;
use std::time::Duration;

use reqwest::Url;
use tokio::time::Instant;
use uuid::Uuid;
use waiting_room::model::{ShowId, TicketStatus};
use waiting_room::protocol::EventName;
use waiting_room::words::thousands;

use crate::follow::{self, FollowError, Joined, Push, PushStream, Transport};
use crate::text::span;
use lines::{describe, line, shown};
use servers::Servers;

/// `fan`: join a show and follow the ticket until admitted.
#[derive(Clone, Debug, clap::Args)]
pub struct FanArgs {
    /// A waiting-room server (`http://127.0.0.1:8080`); repeat for others to fall back on,
    /// tried in turn.
    #[arg(long = "url", value_name = "URL", required = true, value_parser = crate::server_url)]
    pub urls: Vec<Url>,

    /// The show to queue for.
    #[arg(long)]
    pub show: ShowId,

    /// Follow this ticket instead of joining anew.
    #[arg(long, value_name = "UUID")]
    pub ticket: Option<Uuid>,

    /// Follow over a WebSocket instead of Server-Sent Events.
    #[arg(long)]
    pub ws: bool,

    /// Give up after this long without reaching any server (`90s`, `5m`).
    #[arg(long, default_value = "2m", value_parser = waiting_room::words::parse_duration)]
    pub give_up_after: Duration,

    /// Step away once after following this long (seconds, or `90s`, `2m`): close the stream,
    /// stay away --away-for, then follow the same ticket again, over the same transport, on
    /// the next --url if there are several.
    #[arg(long, value_name = "SECONDS", value_parser = crate::seconds_or_duration)]
    pub away_after: Option<Duration>,

    /// With --away-after: how long to stay away (seconds, or `90s`, `2m`).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "60",
        requires = "away_after",
        value_parser = crate::seconds_or_duration
    )]
    pub away_for: Duration,
}

impl FanArgs {
    /// Arguments for following `show` on `urls` over `transport`, joining anew.
    pub fn new(urls: Vec<Url>, show: ShowId, transport: Transport) -> Self {
        FanArgs {
            urls,
            show,
            ticket: None,
            ws: transport == Transport::Ws,
            give_up_after: Duration::from_secs(120),
            away_after: None,
            away_for: Duration::from_secs(60),
        }
    }

    fn transport(&self) -> Transport {
        if self.ws {
            Transport::Ws
        } else {
            Transport::Sse
        }
    }
}

/// How following ended well: the ticket was admitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The ticket admitted.
    pub ticket: Uuid,
    /// How long the admission lasts, as the server said when it was pushed.
    pub expires_in: Option<Duration>,
    /// The server that pushed the admission.
    pub server: Url,
    /// How many connections it took (1 when nothing failed).
    pub connections: u32,
}

/// How following ended badly.
#[derive(Debug, thiserror::Error)]
pub enum FanError {
    /// The show's queue does not know the ticket.
    #[error(
        "ticket {ticket} is not in show {show}'s queue: it never joined, it left, or it was admitted and the admission ran out"
    )]
    Unknown {
        /// The show asked about.
        show: ShowId,
        /// The ticket it does not know.
        ticket: Uuid,
    },
    /// The admission of this ticket ran out unused.
    #[error("the admission of ticket {0} ran out before it was used; join again")]
    Expired(Uuid),
    /// The fan was away longer than the show holds a place: its place was released
    /// (`EXPIRED`), as the server's message says.
    #[error("ticket {ticket} expired: {message}")]
    Released {
        /// The ticket whose place was released.
        ticket: Uuid,
        /// Why, in the server's words.
        message: String,
    },
    /// No server could be reached for too long.
    #[error("gave up after {} without reaching a server; last error: {last}", span(*.after))]
    GaveUp {
        /// How long it tried.
        after: Duration,
        /// The last error seen.
        last: String,
    },
    /// The server refused the request, as it said.
    #[error("{0}")]
    Refused(String),
    #[error(
        "the waiting room of show {0} stepped aside (its on-sale closed): order without an admission"
    )]
    /// The show's waiting room stepped aside.
    Closed(ShowId),
    /// The on-sale ended.
    #[error("the on-sale of show {show} has ended{}", .reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Ended {
        /// The show.
        show: ShowId,
        /// Why, when the operator said.
        reason: Option<String>,
    },
}

impl FanError {
    /// The process exit code for this outcome (0 is admission; 2 is clap's usage error).
    pub fn exit_code(&self) -> i32 {
        match self {
            FanError::Unknown { .. } | FanError::Expired(_) => 3,
            FanError::GaveUp { .. } => 4,
            FanError::Refused(_) => 5,
            FanError::Closed(_) => 6,
            FanError::Ended { .. } => 7,
            FanError::Released { .. } => 8,
        }
    }
}

/// The CLI entry: runs, writes the lines to stdout and the verdict to stderr, and returns the
/// exit code.
pub async fn main(args: FanArgs) -> i32 {
    match run(&args, &mut std::io::stdout()).await {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("waiting-room-client fan: {e}");
            e.exit_code()
        }
    }
}

/// Joins (unless `args.ticket`) and follows until admitted, writing one line per event to
/// `out`.
pub async fn run<W: Write>(args: &FanArgs, out: &mut W) -> Result<Admission, FanError> {
    let client = follow::http_client(None).map_err(|e| FanError::Refused(e.to_string()))?;
    let mut servers = Servers::new(&args.urls, args.give_up_after);
    let ticket = match args.ticket {
        Some(ticket) => ticket,
        None => join(&client, &args.show, &mut servers, out).await?,
    };
    let transport = args.transport();
    let mut last_event_id: Option<String> = None;
    let mut connections = 0u32;
    // When to step away, until it has (once).
    let mut away_at = args.away_after.map(|after| Instant::now() + after);
    loop {
        let url = servers.current().clone();
        let connecting = match transport {
            Transport::Sse => {
                PushStream::sse(&client, &url, &args.show, ticket, last_event_id.as_deref()).await
            }
            Transport::Ws => PushStream::ws(&url, &args.show, ticket, None).await,
            Transport::Poll => {
                PushStream::poll(&url, &args.show, ticket, None, follow::POLL_INTERVAL).await
            }
        };
        let (why, hint) = match connecting {
            Err(FollowError::Fatal(e)) => return Err(FanError::Refused(e)),
            Err(FollowError::Retry(e)) => (e, None),
            Err(e @ FollowError::Busy(wait)) => (e.to_string(), Some(wait)),
            Ok(mut stream) => {
                connections += 1;
                let resumed = match (&last_event_id, transport) {
                    (Some(id), Transport::Sse) => format!(", resuming after event {id}"),
                    _ => String::new(),
                };
                line(
                    out,
                    "following",
                    format_args!("{} over {}{resumed}", shown(&url), transport.name()),
                );
                // A push that changes nothing the fan reads (a new pace whose wait rounds
                // to the same words, a zero-admission tick) prints nothing.
                let mut said = String::new();
                let left = loop {
                    let next = match away_at {
                        Some(at) => match tokio::time::timeout_at(at, stream.next()).await {
                            Ok(next) => next,
                            Err(_) => break Left::Away,
                        },
                        None => stream.next().await,
                    };
                    match next {
                        Some(Ok(push)) => {
                            servers.worked();
                            let text = describe(&push);
                            if push.kind != EventName::Waiting || text != said {
                                line(out, push.kind.as_str(), &text);
                                said = text;
                            }
                            if let Some(end) = finished(push, &args.show, &url, connections) {
                                stream.close().await;
                                return end;
                            }
                        }
                        Some(Err(FollowError::Fatal(e))) => return Err(FanError::Refused(e)),
                        Some(Err(FollowError::Retry(e))) => break Left::Failed(e),
                        Some(Err(e @ FollowError::Busy(_))) => break Left::Failed(e.to_string()),
                        None => break Left::Failed("the server ended the stream".to_owned()),
                    }
                };
                match left {
                    Left::Away => {
                        stream.close().await;
                        away_at = None;
                        step_away(out, &url, args.away_for).await;
                        // Back as a page opened anew: on the next server, from its current
                        // state rather than resuming.
                        servers.next();
                        last_event_id = None;
                        continue;
                    }
                    Left::Failed(why) => {
                        last_event_id = stream.last_event_id().map(str::to_owned);
                        (why, stream.retry_hint())
                    }
                }
            }
        };
        servers.move_on(out, &url, &why, hint).await?;
    }
}

/// Why a connection was left.
enum Left {
    /// It failed or ended: why.
    Failed(String),
    /// The fan stepped away (`--away-after`).
    Away,
}

/// Says the fan stepped away from `url`, stays away `away_for`, and says it came back.
async fn step_away<W: Write>(out: &mut W, url: &Url, away_for: Duration) {
    line(
        out,
        "away",
        format_args!(
            "stepped away: stopped following on {}, back in {}",
            shown(url),
            span(away_for)
        ),
    );
    tokio::time::sleep(away_for).await;
    line(
        out,
        "back",
        format_args!("came back after {} away", span(away_for)),
    );
}

/// `POST …/join` on the servers in turn until one hands out a ticket, every attempt under one
/// `Idempotency-Key`: a join whose answer was lost on the way takes no second place when it
/// is asked again (of the same server or the next one, on the same store).
async fn join<W: Write>(
    client: &reqwest::Client,
    show: &ShowId,
    servers: &mut Servers<'_>,
    out: &mut W,
) -> Result<Uuid, FanError> {
    let key = Uuid::new_v4().to_string();
    loop {
        let url = servers.current().clone();
        match follow::join(client, &url, show, Some(&key)).await {
            Ok(Joined::Ticket(ticket)) => {
                servers.worked();
                let place = ticket
                    .position
                    .map(|p| format!(" · position {}", thousands(p)))
                    .unwrap_or_default();
                line(
                    out,
                    "joined",
                    format_args!("show {show} · ticket {}{place}", ticket.ticket_id),
                );
                return Ok(ticket.ticket_id);
            }
            Ok(Joined::TooMany(wait) | Joined::Busy(wait)) => {
                line(
                    out,
                    "busy",
                    format_args!("{} asks to wait {} before joining", shown(&url), span(wait)),
                );
                tokio::time::sleep(wait).await;
            }
            Err(FollowError::Fatal(e)) => return Err(FanError::Refused(e)),
            Err(FollowError::Retry(why)) => servers.move_on(out, &url, &why, None).await?,
            Err(e @ FollowError::Busy(wait)) => {
                servers
                    .move_on(out, &url, &e.to_string(), Some(wait))
                    .await?
            }
        }
    }
}

/// A push that ends following, and how.
fn finished(
    push: Push,
    show: &ShowId,
    url: &Url,
    connections: u32,
) -> Option<Result<Admission, FanError>> {
    let ticket = push.ticket.ticket_id;
    match push.kind {
        EventName::Waiting => None,
        EventName::Admitted => Some(Ok(Admission {
            ticket,
            expires_in: push.ticket.expires_in_seconds.map(Duration::from_secs),
            server: url.clone(),
            connections,
        })),
        // `EXPIRED`: a place released after its fan was away too long; otherwise (`UNKNOWN`)
        // an admission that ran out.
        EventName::Expired if push.ticket.status == TicketStatus::Expired => {
            Some(Err(FanError::Released {
                ticket,
                message: push.ticket.message.unwrap_or_else(|| {
                    "your place was released: you were away for too long".to_owned()
                }),
            }))
        }
        EventName::Expired => Some(Err(FanError::Expired(ticket))),
        EventName::Unknown => Some(Err(FanError::Unknown {
            show: show.clone(),
            ticket,
        })),
        EventName::Closed => Some(Err(FanError::Closed(show.clone()))),
        EventName::Ended => Some(Err(FanError::Ended {
            show: show.clone(),
            reason: push.ticket.reason,
        })),
    }
}
