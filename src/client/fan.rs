//! `waiting-room fan`: one fan following their place in the queue, the way a person would.
//!
//! It joins the show (or follows `--ticket`), follows the ticket over SSE or a WebSocket,
//! prints a line whenever what a fan reads changes (its place, its wait, why the queue stands
//! still), and exits 0 once admitted. When a connection fails it moves to the next `--url` at
//! once; when every server has failed in a row it backs off (exponentially, with jitter)
//! before going round again, and gives up after `--give-up-after` without a single push.
//! Over SSE it resumes with `Last-Event-ID`.

use std::fmt::Display;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use reqwest::Url;
use uuid::Uuid;

use super::backoff::Backoff;
use super::follow::{self, FollowError, Joined, Push, PushKind, PushStream, Transport};
use super::text::{clock, span};
use crate::model::{Paused, ShowId, TicketView};
use crate::words::{thousands, wait_words};

/// First and longest wait between rounds of attempts.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(10);

/// `waiting-room fan`: join a show and follow the ticket until admitted.
#[derive(Clone, Debug, clap::Args)]
pub struct FanArgs {
    /// A waiting-room server (`http://127.0.0.1:8080`); repeat for others to fall back on,
    /// tried in turn.
    #[arg(long = "url", value_name = "URL", required = true)]
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
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    pub give_up_after: Duration,
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
    #[error(
        "ticket {ticket} is not in show {show}'s queue: it never joined, it left, or it was admitted and the admission ran out"
    )]
    Unknown { show: ShowId, ticket: Uuid },
    #[error("the admission of ticket {0} ran out before it was used; join again")]
    Expired(Uuid),
    #[error("gave up after {} without reaching a server; last error: {last}", span(*.after))]
    GaveUp { after: Duration, last: String },
    #[error("{0}")]
    Refused(String),
}

impl FanError {
    /// The process exit code for this outcome (0 is admission; 2 is clap's usage error).
    pub fn exit_code(&self) -> i32 {
        match self {
            FanError::Unknown { .. } | FanError::Expired(_) => 3,
            FanError::GaveUp { .. } => 4,
            FanError::Refused(_) => 5,
        }
    }
}

/// The CLI entry: runs, writes the lines to stdout and the verdict to stderr, and returns the
/// exit code.
pub async fn main(args: FanArgs) -> i32 {
    match run(&args, &mut std::io::stdout()).await {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("waiting-room fan: {e}");
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
    loop {
        let url = servers.current().clone();
        let connecting = match transport {
            Transport::Sse => {
                PushStream::sse(&client, &url, &args.show, ticket, last_event_id.as_deref()).await
            }
            Transport::Ws => PushStream::ws(&url, &args.show, ticket, None).await,
        };
        let (why, hint) = match connecting {
            Err(FollowError::Fatal(e)) => return Err(FanError::Refused(e)),
            Err(FollowError::Retry(e)) => (e, None),
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
                let why = loop {
                    match stream.next().await {
                        Some(Ok(push)) => {
                            servers.worked();
                            let text = describe(&push);
                            if push.kind != PushKind::Waiting || text != said {
                                line(out, word(push.kind), &text);
                                said = text;
                            }
                            if let Some(end) = finished(push, &args.show, &url, connections) {
                                stream.close().await;
                                return end;
                            }
                        }
                        Some(Err(FollowError::Fatal(e))) => return Err(FanError::Refused(e)),
                        Some(Err(FollowError::Retry(e))) => break e,
                        None => break "the server ended the stream".to_owned(),
                    }
                };
                last_event_id = stream.last_event_id().map(str::to_owned);
                (why, stream.retry_hint())
            }
        };
        servers.move_on(out, &url, &why, hint).await?;
    }
}

/// `POST …/join` on the servers in turn until one hands out a ticket.
async fn join<W: Write>(
    client: &reqwest::Client,
    show: &ShowId,
    servers: &mut Servers<'_>,
    out: &mut W,
) -> Result<Uuid, FanError> {
    loop {
        let url = servers.current().clone();
        match follow::join(client, &url, show).await {
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
            Ok(Joined::TooMany(wait)) => {
                line(
                    out,
                    "busy",
                    format_args!("{} asks to wait {} before joining", shown(&url), span(wait)),
                );
                tokio::time::sleep(wait).await;
            }
            Err(FollowError::Fatal(e)) => return Err(FanError::Refused(e)),
            Err(FollowError::Retry(why)) => servers.move_on(out, &url, &why, None).await?,
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
        PushKind::Waiting => None,
        PushKind::Admitted => Some(Ok(Admission {
            ticket,
            expires_in: push.ticket.expires_in_seconds.map(Duration::from_secs),
            server: url.clone(),
            connections,
        })),
        PushKind::Expired => Some(Err(FanError::Expired(ticket))),
        PushKind::Unknown => Some(Err(FanError::Unknown {
            show: show.clone(),
            ticket,
        })),
    }
}

fn word(kind: PushKind) -> &'static str {
    match kind {
        PushKind::Waiting => "waiting",
        PushKind::Admitted => "admitted",
        PushKind::Expired => "expired",
        PushKind::Unknown => "unknown",
    }
}

/// The human half of a status line.
fn describe(push: &Push) -> String {
    let t = &push.ticket;
    match push.kind {
        PushKind::Waiting => waiting(t),
        PushKind::Admitted => {
            let valid = t
                .expires_in_seconds
                .map(|s| format!(" · valid for {}", span(Duration::from_secs(s))))
                .unwrap_or_default();
            format!(
                "your turn{valid} · order with header X-Admission-Ticket: {}",
                t.ticket_id
            )
        }
        PushKind::Expired => "the admission ran out".into(),
        PushKind::Unknown => format!("ticket {} is not in the queue", t.ticket_id),
    }
}

/// Where a waiting fan stands: `position 1,204 · about 20–30 minutes`, and why the queue
/// stands still when it does (as the waiting page says it).
fn waiting(t: &TicketView) -> String {
    let range = t.eta_min_seconds.zip(t.eta_max_seconds);
    let wait = t.eta_seconds.map(|s| wait_words(s, range));
    let parts = match t.paused {
        // Before the opening the wait counts from it, not from now.
        Some(Paused::Closed) => [
            Some("not open yet".to_owned()),
            wait.map(|w| format!("{w} once it opens")),
        ],
        Some(Paused::Full) => [
            wait,
            Some("paused: every place at the checkout is taken".to_owned()),
        ],
        None => [wait, None],
    };
    let parts: Vec<String> = t
        .position
        .map(|p| format!("position {}", thousands(p)))
        .into_iter()
        .chain(parts.into_iter().flatten())
        .collect();
    if parts.is_empty() {
        "in the queue".into()
    } else {
        parts.join(" · ")
    }
}

/// A server as the user typed it, without the slash the URL parser adds.
fn shown(url: &Url) -> &str {
    url.as_str().trim_end_matches('/')
}

/// One output line: `12:00:03  waiting   position 1,204 · about a minute`.
fn line<W: Write>(out: &mut W, word: &str, text: impl Display) {
    // Flushed per line, so a pipe (`| tee`, a test) sees each update as it happens. A closed
    // stdout is no reason to stop following.
    let _ = writeln!(out, "{}  {word:<9} {text}", clock(SystemTime::now()));
    let _ = out.flush();
}

/// The `--url`s, tried in turn, and the failure bookkeeping that decides when to wait and
/// when to give up.
struct Servers<'a> {
    urls: &'a [Url],
    current: usize,
    /// Servers that failed in a row since the last success or the last wait.
    failed_in_round: usize,
    backoff: Backoff,
    failing_since: Option<Instant>,
    give_up_after: Duration,
}

impl<'a> Servers<'a> {
    fn new(urls: &'a [Url], give_up_after: Duration) -> Self {
        assert!(!urls.is_empty(), "clap requires at least one --url");
        Servers {
            urls,
            current: 0,
            failed_in_round: 0,
            backoff: Backoff::new(BACKOFF_BASE, BACKOFF_CAP),
            failing_since: None,
            give_up_after,
        }
    }

    fn current(&self) -> &Url {
        &self.urls[self.current]
    }

    fn worked(&mut self) {
        self.failing_since = None;
        self.failed_in_round = 0;
        self.backoff.reset();
    }

    /// Moves to the next server and says how long to wait first: not at all for a server
    /// not yet tried this round, a growing, jittered delay (at least the server's `retry`
    /// hint) once all have failed. Gives up once failing has lasted `give_up_after`.
    fn failed(&mut self, why: &str, hint: Option<Duration>) -> Result<Duration, FanError> {
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= self.give_up_after {
            return Err(FanError::GaveUp {
                after: since.elapsed(),
                last: why.to_owned(),
            });
        }
        self.current = (self.current + 1) % self.urls.len();
        self.failed_in_round += 1;
        if self.failed_in_round < self.urls.len() {
            return Ok(Duration::ZERO);
        }
        self.failed_in_round = 0;
        let delay = self.backoff.next_delay().max(hint.unwrap_or_default());
        // Never sleep past the moment of giving up: one last try happens at that moment.
        let left = self.give_up_after.saturating_sub(since.elapsed());
        Ok(delay.min(left))
    }

    /// After `from` failed: says so, waits as [`Servers::failed`] decides, and leaves the
    /// next server current (or gives up).
    async fn move_on<W: Write>(
        &mut self,
        out: &mut W,
        from: &Url,
        why: &str,
        hint: Option<Duration>,
    ) -> Result<(), FanError> {
        let delay = self.failed(why, hint)?;
        line(
            out,
            "lost",
            format_args!(
                "{}: {why}; trying {} in {}",
                shown(from),
                shown(self.current()),
                span(delay)
            ),
        );
        tokio::time::sleep(delay).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn urls(n: usize) -> Vec<Url> {
        (0..n)
            .map(|i| format!("http://127.0.0.1:{}", 8080 + i).parse().unwrap())
            .collect()
    }

    #[test]
    fn servers_are_tried_in_turn_and_the_wait_comes_after_a_full_round() {
        let urls = urls(3);
        let mut s = Servers::new(&urls, Duration::from_secs(60));
        assert_eq!(s.failed("x", None).unwrap(), Duration::ZERO);
        assert_eq!(s.current().port(), Some(8081));
        assert_eq!(s.failed("x", None).unwrap(), Duration::ZERO);
        assert_eq!(s.current().port(), Some(8082));
        let wait = s.failed("x", None).unwrap();
        assert!(wait > Duration::ZERO, "a full round failed, so wait");
        assert_eq!(s.current().port(), Some(8080));
        s.worked();
        assert_eq!(s.failed("x", None).unwrap(), Duration::ZERO);
    }

    #[test]
    fn a_single_server_backs_off_growing_and_honours_the_retry_hint() {
        let urls = urls(1);
        let mut s = Servers::new(&urls, Duration::from_secs(600));
        let first = s.failed("x", None).unwrap();
        assert!(first <= BACKOFF_BASE, "{first:?}");
        let hinted = s.failed("x", Some(Duration::from_secs(3))).unwrap();
        assert!(hinted >= Duration::from_secs(3), "{hinted:?}");
        for _ in 0..10 {
            s.failed("x", None).unwrap();
        }
        assert!(s.failed("x", None).unwrap() <= BACKOFF_CAP);
    }

    #[test]
    fn failing_for_too_long_gives_up_with_the_last_reason() {
        let urls = urls(2);
        let mut s = Servers::new(&urls, Duration::ZERO);
        match s.failed("connection refused", None) {
            Err(FanError::GaveUp { last, .. }) => assert_eq!(last, "connection refused"),
            other => panic!("expected to give up, got {other:?}"),
        }
    }

    #[test]
    fn status_lines_read_like_sentences() {
        // From JSON, as the server sends it: fields the model gains later need no change here.
        let ticket = |json: serde_json::Value| -> TicketView {
            let mut json = json;
            json["ticketId"] = Uuid::nil().to_string().into();
            serde_json::from_value(json).unwrap()
        };
        let waiting = Push {
            kind: PushKind::Waiting,
            id: None,
            ticket: ticket(json!({"status": "WAITING", "position": 1204, "etaSeconds": 61})),
        };
        assert_eq!(describe(&waiting), "position 1,204 · about a minute");
        let admitted = Push {
            kind: PushKind::Admitted,
            id: None,
            ticket: ticket(json!({"status": "ADMITTED", "expiresInSeconds": 298})),
        };
        assert!(describe(&admitted).starts_with("your turn · valid for 4 min 58 s"));
        let mut out = Vec::new();
        line(&mut out, "waiting", describe(&waiting));
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("  waiting   position 1,204 · about a minute\n"),
            "{text:?}"
        );
    }

    #[test]
    fn an_uncertain_wait_is_a_range_and_a_standstill_says_why() {
        let waiting = |json: serde_json::Value| {
            let mut json = json;
            json["ticketId"] = Uuid::nil().to_string().into();
            json["status"] = "WAITING".into();
            waiting(&serde_json::from_value(json).unwrap())
        };
        assert_eq!(
            waiting(
                json!({"position": 95, "etaSeconds": 1500, "etaMinSeconds": 1200, "etaMaxSeconds": 1800})
            ),
            "position 95 · about 20–30 minutes"
        );
        assert_eq!(
            waiting(
                json!({"position": 95, "etaSeconds": 1500, "etaMinSeconds": 1200, "etaMaxSeconds": 1800, "paused": "full"})
            ),
            "position 95 · about 20–30 minutes · paused: every place at the checkout is taken"
        );
        assert_eq!(
            waiting(json!({"position": 31, "etaSeconds": 2, "paused": "closed"})),
            "position 31 · not open yet · less than a minute once it opens"
        );
        assert_eq!(
            waiting(json!({"position": 3, "paused": "closed"})),
            "position 3 · not open yet"
        );
        assert_eq!(waiting(json!({})), "in the queue");
    }
}
