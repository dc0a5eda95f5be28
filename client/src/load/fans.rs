//! One fan's life in a load run: join, follow (stepping away and back once, for the fans
//! `--away` picks), then buy, abandon or stay.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use reqwest::{Client, StatusCode, Url};
use tokio::sync::OwnedSemaphorePermit;
use uuid::Uuid;
use waiting_room::model::TicketStatus;
use waiting_room::protocol::EventName;

use super::choices::Choice;
use super::count::PageCount;
use super::eta::FanRecord;
use super::run::{Counters, Outcome, Run, add};
use super::staleness::{Knowledge, since_tick};
use crate::backoff::Backoff;
use crate::follow::{self, FollowError, Joined, Push, PushStream, Transport};

/// Attempts per fan at joining, and at connecting without hearing anything in between.
const ATTEMPTS: u32 = 3;

/// One open stream, counted while it lives (also when its task is cancelled).
struct Held<'a>(&'a Counters);

impl<'a> Held<'a> {
    fn new(c: &'a Counters) -> Self {
        add(&c.streams_opened);
        let now = c.connections.fetch_add(1, Ordering::Relaxed) + 1;
        c.peak_connections.fetch_max(now, Ordering::Relaxed);
        Held(c)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What to do after a push.
enum Next {
    Follow,
    End(Outcome),
}

/// How listening to one stream ended.
enum Heard {
    /// The fan's story ended, as this.
    End(Outcome),
    /// The stream failed or ended first.
    Dropped,
    /// The fan stepped away (`--away`).
    Away,
}

/// One fan: join, follow until admitted, then buy, abandon or stay (until `expired`, or
/// the run stops). What it was told and when it was admitted go into `record`.
pub(super) async fn fan(
    run: &Run,
    i: u64,
    permit: OwnedSemaphorePermit,
    record: &mut FanRecord,
) -> Outcome {
    let url = &run.urls[(i % run.urls.len() as u64) as usize];
    let (local, client) = match run.sources.client(i) {
        Ok(source) => source,
        Err(e) => {
            // No server was asked: this machine could not make the fan an HTTP client.
            tracing::debug!(error = %e, "no HTTP client");
            add(&run.counters.join_errors);
            return Outcome::JoinFailed;
        }
    };
    let Some(ticket) = join(run, client, url, permit, record).await else {
        return Outcome::JoinFailed;
    };
    if run.join_only {
        return Outcome::JoinOnly;
    }
    let follower = Follower {
        run,
        i,
        url,
        local,
        client,
        ticket,
        backoff: Backoff::new(Duration::from_millis(250), Duration::from_secs(4)),
        last_event_id: None,
        knowledge: Knowledge::default(),
        count: PageCount::default(),
        heard_any: false,
        away_at: run
            .away
            .filter(|away| away.steps_away(i))
            .map(|away| tokio::time::Instant::now() + away.after),
        returned: false,
        just_back: false,
    };
    follower.follow(record).await
}

/// One fan following its ticket, over as many connections as it takes.
struct Follower<'a> {
    run: &'a Run,
    i: u64,
    url: &'a Url,
    local: Option<IpAddr>,
    client: &'a Client,
    ticket: Uuid,
    /// Between connections; reset by every push heard.
    backoff: Backoff,
    /// Where an SSE stream resumes.
    last_event_id: Option<String>,
    /// When the fan learned each change, and each tick ([`super::staleness`], [`super::count`]).
    knowledge: Knowledge,
    count: PageCount,
    heard_any: bool,
    /// When this fan steps away (`--away`), until it has.
    away_at: Option<tokio::time::Instant>,
    /// Whether it stepped away and came back.
    returned: bool,
    /// Back, and nothing heard yet since.
    just_back: bool,
}

impl Follower<'_> {
    /// Connects, listens, and connects again after a dropped stream, until the fan's story
    /// ends or `ATTEMPTS` connections in a row heard nothing.
    async fn follow(mut self, record: &mut FanRecord) -> Outcome {
        let c = &self.run.counters;
        loop {
            let asked = Instant::now();
            match self.open().await {
                Ok(mut stream) => match self.listen(&mut stream, asked, record).await {
                    Heard::End(outcome) => {
                        stream.close().await;
                        return outcome;
                    }
                    Heard::Away => {
                        stream.close().await;
                        record.stepped_away = true;
                        self.step_away().await;
                        continue;
                    }
                    Heard::Dropped => {
                        add(&c.stream_errors);
                        self.last_event_id = stream.last_event_id().map(str::to_owned);
                    }
                },
                Err(FollowError::Fatal(_)) => {
                    add(&c.stream_errors);
                    return ended(record, Outcome::Lost);
                }
                Err(FollowError::Retry(_)) => add(&c.stream_errors),
                Err(FollowError::Busy(wait)) => {
                    // Told when to come back: not a failure, and not an attempt.
                    add(&c.streams_shed);
                    tokio::time::sleep(wait).await;
                    continue;
                }
            }
            if self.backoff.failures() + 1 >= ATTEMPTS {
                return ended(record, Outcome::Lost);
            }
            tokio::time::sleep(self.backoff.next_delay()).await;
        }
    }

    /// Away for `--away-for` with no connection, then back: the next stream starts afresh, as
    /// a page opened again would.
    async fn step_away(&mut self) {
        let c = &self.run.counters;
        self.away_at = None;
        add(&c.stepped_away);
        if let Some(away) = self.run.away {
            tokio::time::sleep(away.absence).await;
        }
        add(&c.came_back);
        self.returned = true;
        self.just_back = true;
        self.last_event_id = None;
        self.backoff.reset();
    }

    /// A stream over the run's transport, resuming after the last event heard.
    async fn open(&self) -> Result<PushStream, FollowError> {
        let (run, url, ticket) = (self.run, self.url, self.ticket);
        match run.transport {
            Transport::Sse => {
                let resume = self.last_event_id.as_deref();
                PushStream::sse(self.client, url, &run.show, ticket, resume).await
            }
            Transport::Ws => PushStream::ws(url, &run.show, ticket, self.local).await,
            Transport::Poll => {
                PushStream::poll(url, &run.show, ticket, self.local, run.poll_interval).await
            }
        }
    }

    /// Every push of one stream, measured and acted on, until the fan's story ends, the
    /// stream does, or the fan steps away.
    async fn listen(
        &mut self,
        stream: &mut PushStream,
        asked: Instant,
        record: &mut FanRecord,
    ) -> Heard {
        let _held = Held::new(&self.run.counters);
        let mut first = true;
        loop {
            let next = match self.away_at {
                Some(at) => match tokio::time::timeout_at(at, stream.next()).await {
                    Ok(next) => next,
                    Err(_) => return Heard::Away,
                },
                None => stream.next().await,
            };
            let Some(Ok(push)) = next else {
                return Heard::Dropped;
            };
            self.measure(&push, std::mem::take(&mut first), asked);
            if let Next::End(outcome) = self.act(&push, record).await {
                return Heard::End(outcome);
            }
        }
    }

    /// What one push says of the server's latency, and of when the fan knew each tick and
    /// each change.
    fn measure(&mut self, push: &Push, first: bool, asked: Instant) {
        let (run, c) = (self.run, &self.run.counters);
        let now = SystemTime::now();
        let pushed = run.transport != Transport::Poll;
        add(&c.messages);
        self.backoff.reset();
        if first {
            Run::record(&run.first_event, asked.elapsed());
        } else if push.kind != EventName::Expired && pushed {
            // Expiries follow the admission's TTL, not a tick; a polled answer follows the
            // poller's clock.
            Run::record(&run.push_latency, since_tick(now));
        }
        let at_ms = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as i64;
        let learned = self.count.heard(&push.ticket, at_ms);
        if learned.count_wrong {
            add(&c.count_wrong);
        }
        // The state a fan first hears is no tick it waited for.
        if std::mem::replace(&mut self.heard_any, true) {
            for (second, late) in learned.ticks {
                run.knew(second, late);
            }
        }
        if push.kind != EventName::Expired
            && let Some(stale) = self.knowledge.heard(&push.ticket, now, pushed)
        {
            add(&c.positions_learned);
            Run::record(&run.staleness, stale);
        }
    }

    /// What the fan does on hearing `push`.
    async fn act(&mut self, push: &Push, record: &mut FanRecord) -> Next {
        let run = self.run;
        // Admitted while away: it learns so only now, its first state an admission (or one
        // that ran out meanwhile).
        let gone = push.kind == EventName::Admitted
            || (push.kind == EventName::Unknown && push.ticket.status == TicketStatus::Unknown)
            || (push.kind == EventName::Expired && push.ticket.status != TicketStatus::Expired);
        if std::mem::take(&mut self.just_back) && gone {
            add(&run.counters.admitted_while_away);
        }
        match push.kind {
            EventName::Waiting => {
                run.told(record, &push.ticket);
                Next::Follow
            }
            EventName::Admitted => {
                if self.returned && record.admitted_at.is_none() {
                    add(&run.counters.admitted_after_return);
                }
                // Stepping away is a waiting fan's: an admitted one who stays, stays.
                self.away_at = None;
                admitted(run, self.client, self.url, self.ticket, self.i, record).await
            }
            // A place released while its fan was away (`EXPIRED`, not an admission that ran
            // out, whose `expired` says `UNKNOWN`).
            EventName::Expired if push.ticket.status == TicketStatus::Expired => {
                Next::End(ended(record, Outcome::Released))
            }
            // The show closed or ended under the run: its fans wait no more.
            EventName::Unknown | EventName::Closed | EventName::Ended => {
                Next::End(ended(record, Outcome::Unknown))
            }
            EventName::Expired => {
                if record.admitted_at.is_some() {
                    record.expired = true;
                    add(&run.counters.stayers_expired);
                }
                Next::End(ended(record, Outcome::Expired))
            }
        }
    }
}

/// A fan once admitted is counted admitted however its stream ends.
fn ended(record: &FanRecord, otherwise: Outcome) -> Outcome {
    if record.admitted_at.is_some() {
        Outcome::Admitted
    } else {
        otherwise
    }
}

/// The fan's `admitted` arrived (again, after a reconnection, for one who stays).
async fn admitted(
    run: &Run,
    client: &Client,
    url: &Url,
    ticket: Uuid,
    i: u64,
    record: &mut FanRecord,
) -> Next {
    let c = &run.counters;
    if record.admitted_at.is_some() {
        return Next::Follow;
    }
    record.admitted_at = Some(run.now());
    add(&c.admissions);
    match record.choice {
        Choice::Abandon => {
            add(&c.abandoners);
            Next::End(Outcome::Admitted)
        }
        Choice::Stay => {
            add(&c.stayers);
            Next::Follow
        }
        Choice::Buy => {
            add(&c.buyers);
            record.order_status = Some(order(run, client, url, ticket, i).await);
            Next::End(Outcome::Admitted)
        }
    }
}

/// `POST /orders` with the fan's admission and a hold of its own; the answer's status, or
/// 0 when none came. One attempt: a retry would be another figure to explain.
async fn order(run: &Run, client: &Client, base: &Url, ticket: Uuid, i: u64) -> u16 {
    let sent = Instant::now();
    let answer = follow::order(
        client,
        base,
        &run.show,
        ticket,
        &format!("load-{ticket}"),
        &format!("fan{i}@load.example"),
    )
    .await;
    let status = match answer {
        Ok(status) => {
            Run::record(&run.order_latency, sent.elapsed());
            status.as_u16()
        }
        Err(e) => {
            tracing::debug!(error = %e, "order failed");
            0
        }
    };
    let key = match StatusCode::from_u16(status) {
        Ok(status) => status.as_u16().to_string(),
        Err(_) => "failed".to_owned(),
    };
    *run.orders
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default() += 1;
    status
}

/// Joins with a few attempts; 429s and 503s with `Retry-After` wait as asked and do not count
/// as attempts. The first
/// attempt uses the slot the fan started with; later ones queue for another.
async fn join(
    run: &Run,
    client: &Client,
    url: &Url,
    permit: OwnedSemaphorePermit,
    record: &mut FanRecord,
) -> Option<Uuid> {
    let c = &run.counters;
    let mut failures = 0;
    let mut first = Some(permit);
    // One key for every attempt, as the waiting page keeps its own.
    let key = run.idempotency_key.then(|| Uuid::new_v4().to_string());
    loop {
        let (answer, sent) = {
            // Held for the request only, not for the waits below.
            let _permit = match first.take() {
                Some(permit) => permit,
                None => run
                    .joining
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed"),
            };
            c.first_join_us
                .fetch_min(run.since_start_us(), Ordering::Relaxed);
            let sent = Instant::now();
            (
                follow::join(client, url, &run.show, key.as_deref()).await,
                sent,
            )
        };
        match answer {
            Ok(Joined::Ticket(ticket)) => {
                Run::record(&run.join_latency, sent.elapsed());
                add(&c.joined);
                c.last_join_us
                    .fetch_max(run.since_start_us(), Ordering::Relaxed);
                record.ticket = Some(ticket.ticket_id);
                run.told(record, &ticket);
                if ticket.status == TicketStatus::Admitted {
                    // Not what a queue answers today, but then the wait was nothing.
                    record.admitted_at = Some(run.now());
                }
                return Some(ticket.ticket_id);
            }
            Ok(Joined::TooMany(wait)) => {
                add(&c.join_throttled);
                record.throttled = true;
                tokio::time::sleep(wait).await;
            }
            Ok(Joined::Busy(wait)) => {
                // Told when to come back: not a failure, and not an attempt.
                add(&c.join_shed);
                record.throttled = true;
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                record.throttled = false;
                add(&c.join_errors);
                failures += 1;
                if failures >= ATTEMPTS || matches!(e, FollowError::Fatal(_)) {
                    tracing::debug!(error = %e, "join failed");
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(200 * u64::from(failures))).await;
            }
        }
    }
}
