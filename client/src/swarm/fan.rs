//! One lean fan's life: join, follow its ticket over one connection (SSE, WebSocket or polls),
//! and, once the show opens, maybe leave, come back at the back, or drop its connection and
//! reconnect; admitted, it closes and is done.
//!
//! A fan is one small task: its state is this module's [`Fan`] (a ticket id, a page count, a
//! few instants and a seeded generator) and, while connected, one [`Conn`]. What it measures
//! goes to the swarm's counters and histograms at once.

use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::rngs::Xoshiro128PlusPlus;
use rand::{RngExt, SeedableRng};
use tokio::time::timeout;
use uuid::Uuid;
use waiting_room::model::{TicketStatus, TicketView};
use waiting_room::protocol::{EventName, Frame, LAST_EVENT_ID, routes};

use super::shared::{Held, Server, Swarm, add};
use super::wire::{self, Conn, Head, WireError, WsFrame};
use crate::backoff::Backoff;
use crate::follow::{CONNECT_TIMEOUT, IDLE_TIMEOUT, Transport};
use crate::load::count::PageCount;

/// Attempts of one join that fail (no answer, or an error without `Retry-After`) before the
/// fan gives up. A join the server sheds (429 or 503 with `Retry-After`) is not one: the fan
/// comes back when told, as the waiting page does, until the run stops.
const JOIN_ATTEMPTS: u32 = 5;

/// The first and the longest wait before a fan tries again (a join, a connection).
const BACKOFF: (Duration, Duration) = (Duration::from_millis(200), Duration::from_secs(10));

/// The longest a shed stream waits before it asks again, whatever `Retry-After` says.
const MAX_SHED_WAIT: Duration = Duration::from_secs(30);

/// WebSocket opcodes a fan sends.
const CLOSE: u8 = 0x8;
const PONG: u8 = 0xA;

/// A close frame's payload: 1000, a normal closure.
const NORMAL_CLOSURE: [u8; 2] = 1000u16.to_be_bytes();

/// How a fan's life ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Admitted,
    /// The ticket is gone (LOST, UNKNOWN, released; 404 or 410).
    Lost,
    /// The show closed or ended.
    Ended,
    /// The fan left (and may come back).
    Left,
}

/// What happened to one connection.
enum Step {
    End(End),
    /// Churn: the fan leaves now.
    Leave,
    /// Churn: the fan drops its connection and reconnects.
    Reconnect,
    /// The connection failed (`true`: an error, `false`: the server closed it); reconnect.
    Dropped(bool),
    /// The server shed the stream (503): reconnect after this long.
    Shed(Duration),
}

impl From<WireError> for Step {
    fn from(e: WireError) -> Step {
        Step::Dropped(!matches!(e, WireError::Closed))
    }
}

/// Why a fan woke without hearing anything.
enum Wake {
    Idle,
    Leave,
    Reconnect,
    Poll,
}

/// One fan of the swarm.
pub(super) async fn live(swarm: &Swarm, i: u64) {
    let mut fan = Fan {
        swarm,
        i: i as u32,
        transport: swarm.mix.of(i),
        rng: Xoshiro128PlusPlus::seed_from_u64(swarm.seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        ticket: Uuid::nil(),
        last_id: None,
        page: PageCount::default(),
        heard_any: false,
        armed: false,
        leave_at: None,
        reconnect_at: None,
        backoff: None,
    };
    fan.live().await;
}

struct Fan<'a> {
    swarm: &'a Swarm,
    /// The fan's number: its server and source address ([`Swarm::route`]).
    i: u32,
    transport: Transport,
    /// Who leaves, returns and reconnects, and when (16 bytes: the smallest of rand's).
    rng: Xoshiro128PlusPlus,
    ticket: Uuid,
    /// The id of the last SSE event (the show version), sent back on reconnecting.
    last_id: Option<u64>,
    page: PageCount,
    /// Whether the fan heard a state of its ticket yet (the first is no tick it waited for).
    heard_any: bool,
    /// Whether the churn's times are drawn (once the show opened).
    armed: bool,
    leave_at: Option<Instant>,
    reconnect_at: Option<Instant>,
    /// Made at the first failure, dropped at the next success: most fans never need one.
    backoff: Option<Box<Backoff>>,
}

impl<'a> Fan<'a> {
    async fn live(&mut self) {
        let c = &self.swarm.counts;
        let mut returning = false;
        loop {
            let Some(mut conn) = Box::pin(self.join()).await else {
                // A fan counts once: as joined, or as a join that failed. A return that
                // fails was counted joined already.
                if !returning {
                    add(&c.join_failed);
                }
                return;
            };
            add(if returning { &c.returned } else { &c.joined });
            match self.follow(&mut conn).await {
                End::Admitted | End::Lost | End::Ended => return,
                End::Left => {
                    let Some(away) = self.draw(self.swarm.churn.back) else {
                        return;
                    };
                    tokio::time::sleep(away).await;
                    returning = true;
                }
            }
        }
    }

    /// Joins (a new place at the back): the connection to follow on, if the server keeps
    /// it open. `None` when every attempt failed.
    async fn join(&mut self) -> Option<Option<Conn>> {
        let swarm = self.swarm;
        self.page = PageCount::default();
        self.heard_any = false;
        self.armed = false;
        self.last_id = None;
        (self.leave_at, self.reconnect_at) = (None, None);
        let mut failures = 0;
        while failures < JOIN_ATTEMPTS {
            let answer = {
                let _permit = swarm.joining.acquire().await.ok()?;
                timeout(CONNECT_TIMEOUT, self.try_join()).await
            };
            let wait = match answer {
                Ok(Ok(Ok(conn))) => {
                    self.backoff = None;
                    return Some(conn);
                }
                Ok(Ok(Err(head))) => {
                    swarm.join_refused(Some(head.status));
                    match (head.status, head.retry_after) {
                        (429 | 503, Some(seconds)) => Duration::from_secs(seconds.into()),
                        (429 | 500.., None) => {
                            failures += 1;
                            self.delay()
                        }
                        // Refused for good (the show is unknown, ended, ...).
                        _ => break,
                    }
                }
                Ok(Err(_)) | Err(_) => {
                    failures += 1;
                    swarm.join_refused(None);
                    self.delay()
                }
            };
            tokio::time::sleep(wait.min(BACKOFF.1)).await;
        }
        None
    }

    /// One join: the connection (if kept alive) and the ticket, or the refusal's head.
    async fn try_join(&mut self) -> Result<Result<Option<Conn>, Head>, WireError> {
        let mut conn = Conn::open(self.server().addr, self.source()).await?;
        let path = routes::show(routes::JOIN, self.swarm.show.as_str());
        conn.send("POST", &path, &self.server().host, "").await?;
        let head = conn.head().await?;
        let body = conn.body().await?;
        if !(200..300).contains(&head.status) {
            return Ok(Err(head));
        }
        let view: TicketView =
            serde_json::from_slice(body).map_err(|_| WireError::Malformed("a join answer"))?;
        self.ticket = view.ticket_id;
        conn.finish_body();
        Ok(Ok((!head.close).then_some(conn)))
    }

    /// Follows the ticket until the fan's life there ends, reconnecting as needed.
    async fn follow(&mut self, slot: &mut Option<Conn>) -> End {
        let c = &self.swarm.counts;
        loop {
            let conn = match slot {
                Some(conn) => conn,
                None => {
                    let open = timeout(
                        CONNECT_TIMEOUT,
                        Conn::open(self.server().addr, self.source()),
                    );
                    match Box::pin(open).await {
                        Ok(Ok(conn)) => slot.insert(conn),
                        Ok(Err(_)) | Err(_) => {
                            add(&c.stream_errors);
                            tokio::time::sleep(self.delay()).await;
                            continue;
                        }
                    }
                }
            };
            // The connection is taken by reference all the way down: a fan's task holds it
            // once, not once per call.
            let step = match self.transport {
                Transport::Sse => self.sse(conn).await,
                Transport::Ws => self.ws(conn).await,
                Transport::Poll => self.poll(conn).await,
            };
            // Whatever happened, this connection is done.
            *slot = None;
            match step {
                Step::End(end) => return end,
                Step::Leave => {
                    Box::pin(self.leave()).await;
                    return End::Left;
                }
                Step::Reconnect => add(&c.reconnects),
                Step::Shed(wait) => {
                    add(&c.reconnects);
                    tokio::time::sleep(wait.min(MAX_SHED_WAIT)).await;
                }
                Step::Dropped(error) => {
                    add(if error { &c.stream_errors } else { &c.dropped });
                    add(&c.reconnects);
                    tokio::time::sleep(self.delay()).await;
                }
            }
        }
    }

    /// Follows over Server-Sent Events, resuming after the last event heard.
    async fn sse(&mut self, conn: &mut Conn) -> Step {
        let resume = self
            .last_id
            .map(|id| format!("{LAST_EVENT_ID}: {id}\r\n"))
            .unwrap_or_default();
        let head = match Box::pin(self.ask(conn, routes::EVENTS, resume)).await {
            Ok(head) => head,
            Err(step) => return step,
        };
        if head.status != 200 {
            return refused(self.swarm, head);
        }
        let _held = Held::new(&self.swarm.counts, Transport::Sse);
        loop {
            loop {
                let (n, event) = match conn.next_event() {
                    Ok(Some(event)) => event,
                    Ok(None) => break,
                    Err(e) => return e.into(),
                };
                if let Some(id) = event.id {
                    self.last_id = Some(id);
                }
                let view = serde_json::from_slice::<TicketView>(event.data);
                let named = std::str::from_utf8(event.name)
                    .ok()
                    .and_then(|n| EventName::from_str(n).ok());
                conn.consume(n);
                let Ok(view) = view else {
                    return Step::Dropped(true);
                };
                if named.is_none() {
                    return Step::Dropped(true);
                }
                if let Some(step) = self.heard(&view, true) {
                    return step;
                }
            }
            if let Some(step) = self.wait_for(conn).await {
                return step;
            }
        }
    }

    /// Follows over a WebSocket.
    async fn ws(&mut self, conn: &mut Conn) -> Step {
        let upgrade = Box::pin(self.ask(conn, routes::WS, wire::UPGRADE_HEADERS.to_owned()));
        let head = match upgrade.await {
            Ok(head) => head,
            Err(step) => return step,
        };
        if head.status != 101 {
            return refused(self.swarm, head);
        }
        if !head.ws_accepted {
            return Step::Dropped(true);
        }
        let _held = Held::new(&self.swarm.counts, Transport::Ws);
        let mask = self.rng.random::<[u8; 4]>();
        let step = 'follow: loop {
            loop {
                let (n, frame) = match conn.next_frame() {
                    Ok(Some(frame)) => frame,
                    Ok(None) => break,
                    Err(e) => break 'follow e.into(),
                };
                match frame {
                    WsFrame::Text(text) => {
                        let frame = serde_json::from_slice::<Frame>(text);
                        conn.consume(n);
                        let Ok(frame) = frame else {
                            break 'follow Step::Dropped(true);
                        };
                        if let Some(step) = self.heard(&frame.view, true) {
                            break 'follow step;
                        }
                    }
                    WsFrame::Ping(payload) => {
                        let pong = Box::new(Pong::of(payload));
                        conn.consume(n);
                        // Boxed: the frame is written only now and then, and a waiting fan's
                        // task should not carry its buffer.
                        if let Err(e) = Box::pin(pong.send(conn, mask)).await {
                            break 'follow e.into();
                        }
                    }
                    WsFrame::Close => break 'follow Step::Dropped(false),
                    WsFrame::Other => conn.consume(n),
                }
            }
            if let Some(step) = self.wait_for(conn).await {
                break step;
            }
        };
        // A polite close (1000) where the connection still takes one; the server needs none.
        if !matches!(step, Step::Dropped(true)) {
            let close = timeout(
                Duration::from_secs(1),
                conn.send_control(CLOSE, &NORMAL_CLOSURE, mask),
            );
            let _ = Box::pin(close).await;
        }
        step
    }

    /// Follows by asking for the ticket every `--poll-interval` over the keep-alive connection.
    async fn poll(&mut self, conn: &mut Conn) -> Step {
        let mut held = None;
        loop {
            // The answer is handled and dropped before the wait: a ticket's JSON is no part of
            // what a waiting fan's task holds.
            let close = match Box::pin(self.ask_ticket(conn)).await {
                Ok((head, view)) => {
                    held.get_or_insert_with(|| Held::new(&self.swarm.counts, Transport::Poll));
                    if let Some(step) = self.heard(&view, false) {
                        return step;
                    }
                    head.close
                }
                Err(step) => return step,
            };
            if close {
                return Step::Dropped(false);
            }
            let next = Instant::now() + self.swarm.poll_interval;
            loop {
                let (at, wake) = self.next_wake(next, Wake::Poll);
                tokio::time::sleep_until(at.into()).await;
                match wake {
                    Wake::Poll => break,
                    Wake::Leave => return Step::Leave,
                    // Polling fans hold no stream to drop.
                    Wake::Reconnect | Wake::Idle => {}
                }
            }
        }
    }

    /// Sends `GET` for one of the ticket's routes with `headers` and reads the answer's head,
    /// bounded in time.
    async fn ask(&self, conn: &mut Conn, route: &str, headers: String) -> Result<Head, Step> {
        let path = self.ticket_path(route);
        let asked = async {
            conn.send("GET", &path, &self.server().host, &headers)
                .await?;
            conn.head().await
        };
        match timeout(CONNECT_TIMEOUT, asked).await {
            Ok(Ok(head)) => Ok(head),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(Step::Dropped(true)),
        }
    }

    /// Polls the ticket once: the answer's head and the ticket it holds (a 200's), bounded in
    /// time; the connection is ready for the next poll.
    async fn ask_ticket(&self, conn: &mut Conn) -> Result<(Head, TicketView), Step> {
        let head = self.ask(conn, routes::TICKET, String::new()).await?;
        let body = match timeout(CONNECT_TIMEOUT, conn.body()).await {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => return Err(Step::Dropped(true)),
        };
        if head.status != 200 {
            return Err(refused(self.swarm, head));
        }
        let view = serde_json::from_slice::<TicketView>(body).map_err(|_| Step::Dropped(true))?;
        conn.finish_body();
        Ok((head, view))
    }

    /// Waits for more from the server, or for the churn's next move, or gives up on a
    /// silent connection.
    async fn wait_for(&mut self, conn: &mut Conn) -> Option<Step> {
        let (at, wake) = self.next_wake(Instant::now() + IDLE_TIMEOUT, Wake::Idle);
        tokio::select! {
            read = conn.fill() => read.err().map(Step::from),
            _ = tokio::time::sleep_until(at.into()) => Some(match wake {
                Wake::Idle | Wake::Poll => Step::Dropped(true),
                Wake::Leave => Step::Leave,
                Wake::Reconnect => {
                    self.reconnect_at = self.draw(self.swarm.churn.reconnect).map(|d| at + d);
                    Step::Reconnect
                }
            }),
        }
    }

    /// What comes first: `otherwise` at `at`, leaving, or reconnecting.
    fn next_wake(&mut self, at: Instant, otherwise: Wake) -> (Instant, Wake) {
        self.arm();
        let mut next = (at, otherwise);
        if let Some(leave) = self.leave_at.filter(|l| *l < next.0) {
            next = (leave, Wake::Leave);
        }
        if let Some(again) = self.reconnect_at.filter(|r| *r < next.0) {
            next = (again, Wake::Reconnect);
        }
        next
    }

    /// Once the show is open, draws when this fan leaves and reconnects.
    fn arm(&mut self) {
        if self.armed || !self.swarm.opened.load(Ordering::Relaxed) {
            return;
        }
        self.armed = true;
        let now = Instant::now();
        self.leave_at = self.draw(self.swarm.churn.leave).map(|d| now + d);
        if self.transport != Transport::Poll {
            self.reconnect_at = self.draw(self.swarm.churn.reconnect).map(|d| now + d);
        }
    }

    /// A wait drawn from the exponential distribution of `rate` a second (none at 0).
    fn draw(&mut self, rate: f64) -> Option<Duration> {
        if rate <= 0.0 {
            return None;
        }
        let u: f64 = self.rng.random();
        Some(Duration::from_secs_f64((-(1.0 - u).ln() / rate).min(1e6)))
    }

    /// One state of the ticket heard (`pushed`, or a poll's answer): counted, measured, and
    /// what the fan does next.
    fn heard(&mut self, view: &TicketView, pushed: bool) -> Option<Step> {
        let swarm = self.swarm;
        let c = &swarm.counts;
        add(if pushed { &c.pushes } else { &c.polls });
        self.backoff = None;
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as i64;
        let learned = self.page.heard(view, at_ms);
        if learned.count_wrong {
            add(&c.count_wrong);
        }
        if std::mem::replace(&mut self.heard_any, true) {
            swarm.knew(&learned.ticks);
        }
        let open = view.countdown_per_second.is_some()
            || (view.status == TicketStatus::Waiting
                && view.paused.is_none()
                && view.pre_queue != Some(true)
                && view.position.is_some());
        if open && !swarm.opened.load(Ordering::Relaxed) {
            swarm.opened.store(true, Ordering::Relaxed);
        }
        let end = match view.status {
            TicketStatus::Waiting => return None,
            TicketStatus::Admitted => {
                add(&c.admitted);
                End::Admitted
            }
            TicketStatus::Unknown | TicketStatus::Lost | TicketStatus::Expired => {
                add(&c.lost);
                End::Lost
            }
            TicketStatus::Closed | TicketStatus::Ended => {
                add(&c.ended);
                End::Ended
            }
        };
        Some(Step::End(end))
    }

    /// Leaves the queue: `DELETE` the ticket over a connection of its own.
    async fn leave(&mut self) {
        let c = &self.swarm.counts;
        let path = self.ticket_path(routes::TICKET);
        let host = &self.server().host;
        let (addr, source) = (self.server().addr, self.source());
        let asked = async {
            let mut conn = Conn::open(addr, source).await?;
            conn.send("DELETE", &path, host, "").await?;
            let head = conn.head().await?;
            conn.body().await?;
            Ok::<_, WireError>(head.status)
        };
        match timeout(CONNECT_TIMEOUT, asked).await {
            Ok(Ok(200..=299)) => add(&c.left),
            _ => add(&c.leave_failed),
        }
    }

    fn server(&self) -> &'a Server {
        self.swarm.route(u64::from(self.i)).0
    }

    fn source(&self) -> Option<std::net::IpAddr> {
        self.swarm.route(u64::from(self.i)).1
    }

    /// The wait before the next attempt, longer after each failure.
    fn delay(&mut self) -> Duration {
        self.backoff
            .get_or_insert_with(|| Box::new(Backoff::new(BACKOFF.0, BACKOFF.1)))
            .next_delay()
    }

    /// The path of one of the ticket's routes.
    fn ticket_path(&self, route: &str) -> String {
        let mut id = Uuid::encode_buffer();
        let id = self.ticket.hyphenated().encode_lower(&mut id);
        routes::ticket(route, self.swarm.show.as_str(), id)
    }
}

/// A pong to send: the payload of the ping it answers (at most 125 bytes).
struct Pong {
    payload: [u8; 125],
    len: usize,
}

impl Pong {
    fn of(ping: &[u8]) -> Pong {
        let mut payload = [0; 125];
        let len = ping.len().min(125);
        payload[..len].copy_from_slice(&ping[..len]);
        Pong { payload, len }
    }

    async fn send(&self, conn: &mut Conn, mask: [u8; 4]) -> Result<(), WireError> {
        conn.send_control(PONG, &self.payload[..self.len], mask)
            .await
    }
}

/// A stream (or poll) the server refused: the ticket is gone (404, 410, counted lost), shed
/// (503 with `Retry-After`: come back when told), or try again.
fn refused(swarm: &Swarm, head: Head) -> Step {
    match (head.status, head.retry_after) {
        (404 | 410, _) => {
            add(&swarm.counts.lost);
            Step::End(End::Lost)
        }
        (503, Some(seconds)) => {
            add(&swarm.counts.streams_shed);
            Step::Shed(Duration::from_secs(seconds.into()))
        }
        _ => Step::Dropped(true),
    }
}
