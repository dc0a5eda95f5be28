//! One fan's life in a load run (join, follow, then buy, abandon or stay), and what every
//! fan task shares.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use reqwest::{Client, StatusCode, Url};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use super::TICK_PHASE_MS;
use super::eta::{FanRecord, Told};
use crate::client::backoff::Backoff;
use crate::client::follow::{self, FollowError, Joined, PushKind, PushStream, Transport};
use crate::client::plot::Sample;
use crate::model::{ShowId, TicketStatus, TicketView};

/// Attempts per fan at joining, and at connecting without hearing anything in between.
const ATTEMPTS: u32 = 3;

/// What a buying fan pays: any valid amount will do.
const AMOUNT: u32 = 50;

/// How one fan's run ended.
pub(super) enum Outcome {
    JoinFailed,
    JoinOnly,
    /// Admitted, whatever it did next (bought, abandoned, stayed until it expired or the run
    /// stopped).
    Admitted,
    Unknown,
    Expired,
    Lost,
    Unfinished,
}

/// What an admitted fan does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// `POST /orders` with its admission, then stop.
    Buy,
    /// Close the stream at once, never order.
    Abandon,
    /// Keep following until the admission expires, never order.
    Stay,
}

impl Choice {
    pub fn name(self) -> &'static str {
        match self {
            Choice::Buy => "buy",
            Choice::Abandon => "abandon",
            Choice::Stay => "stay",
        }
    }
}

/// Who buys, abandons or stays: `--buy` and `--abandon` shares of the fans, the rest stay.
///
/// Fan `i` takes the point `u = ((i·k mod n) + ½) / n` (with `k` coprime to `n`, near `n`
/// over the golden ratio) and buys when `u < buy`, abandons when `u < buy + abandon`: over
/// the whole run exactly `buy·n` fans buy (rounded to the nearest, a half down), and buyers
/// are spread along the queue instead of all at its head. The same run makes the same
/// choices.
#[derive(Clone, Copy, Debug)]
pub struct Choices {
    buy: f64,
    abandon: f64,
    fans: u64,
    stride: u64,
}

impl Choices {
    /// Without either share every fan abandons (it stops following once admitted, as before
    /// these flags); with one, the other is 0.
    pub fn new(buy: Option<f64>, abandon: Option<f64>, fans: u64) -> Result<Choices, String> {
        let (buy, abandon) = match (buy, abandon) {
            (None, None) => (0.0, 1.0),
            (buy, abandon) => (buy.unwrap_or(0.0), abandon.unwrap_or(0.0)),
        };
        let valid = |f: f64| (0.0..=1.0).contains(&f);
        if !valid(buy) || !valid(abandon) {
            return Err("--buy and --abandon are fractions from 0 to 1".into());
        }
        if buy + abandon > 1.0 + 1e-9 {
            return Err(format!(
                "--buy {buy} and --abandon {abandon} add up to more than 1 (the rest stay)"
            ));
        }
        let fans = fans.max(1);
        let mut stride = ((fans as f64 * 0.618_033_988_75).round() as u64).max(1);
        while gcd(stride, fans) != 1 {
            stride += 1;
        }
        Ok(Choices {
            buy,
            abandon,
            fans,
            stride,
        })
    }

    /// What fan `i` does once admitted.
    pub fn of(&self, i: u64) -> Choice {
        let spread =
            (u128::from(i % self.fans) * u128::from(self.stride) % u128::from(self.fans)) as f64;
        let u = (spread + 0.5) / self.fans as f64;
        if u < self.buy {
            Choice::Buy
        } else if u < self.buy + self.abandon {
            Choice::Abandon
        } else {
            Choice::Stay
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[derive(Default)]
pub(super) struct Counters {
    pub spawned: AtomicU64,
    pub joined: AtomicU64,
    pub join_throttled: AtomicU64,
    pub streams_opened: AtomicU64,
    pub connections: AtomicU64,
    pub peak_connections: AtomicU64,
    pub messages: AtomicU64,
    pub stream_errors: AtomicU64,
    pub join_errors: AtomicU64,
    pub done: AtomicU64,
    pub join_failed: AtomicU64,
    /// Fans whose `admitted` arrived, as it arrives (the timeline's figure).
    pub admissions: AtomicU64,
    /// Outcomes, counted as each fan ends.
    pub admitted: AtomicU64,
    pub unknown: AtomicU64,
    pub expired: AtomicU64,
    pub lost: AtomicU64,
    pub unfinished: AtomicU64,
    pub join_only: AtomicU64,
    /// What admitted fans chose, counted as they choose.
    pub buyers: AtomicU64,
    pub abandoners: AtomicU64,
    pub stayers: AtomicU64,
    /// Stayers who were told their admission expired.
    pub stayers_expired: AtomicU64,
    /// Microseconds since the start: the first join sent and the last one answered.
    pub first_join_us: AtomicU64,
    pub last_join_us: AtomicU64,
    /// Microseconds since the start when the server answered the first `--rate-change`
    /// (`u64::MAX` until then): every push after it carries the new pace.
    pub rate_changed_us: AtomicU64,
}

pub(super) fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

pub(super) fn add(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// What every fan task shares.
pub(super) struct Run {
    pub urls: Vec<Url>,
    pub show: ShowId,
    pub transport: Transport,
    /// One HTTP client per source address (reqwest binds per client).
    pub clients: Vec<(Option<IpAddr>, Client)>,
    pub start: Instant,
    pub counters: Counters,
    pub join_latency: Mutex<Histogram<u64>>,
    pub first_event: Mutex<Histogram<u64>>,
    pub push_latency: Mutex<Histogram<u64>>,
    pub order_latency: Mutex<Histogram<u64>>,
    /// Order answers by HTTP status (`"201"`), or `"failed"` when none came.
    pub orders: Mutex<BTreeMap<String, u64>>,
    /// One per fan that joined, added as it ends.
    pub records: Mutex<Vec<FanRecord>>,
    pub join_only: bool,
    pub choices: Choices,
    /// Bounds joins in flight (`--max-in-flight`).
    pub joining: Arc<Semaphore>,
}

impl Run {
    fn since_start_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Seconds since the start, as the ETA records keep them.
    fn now(&self) -> f32 {
        self.start.elapsed().as_secs_f32()
    }

    /// Whether the first `--rate-change` has been made.
    fn rate_changed(&self) -> bool {
        get(&self.counters.rate_changed_us) <= self.since_start_us()
    }

    /// What `ticket` tells at this moment: the fan's first ETA if it has none yet, and its
    /// first since the rate change if that was made.
    fn told(&self, record: &mut FanRecord, ticket: &TicketView) {
        if record.first.is_none() {
            record.first = Told::of(self.now(), ticket);
        }
        if record.retold.is_none() && self.rate_changed() {
            record.retold = Told::of(self.now(), ticket);
        }
    }

    fn record(h: &Mutex<Histogram<u64>>, d: Duration) {
        let mut h = h.lock().unwrap_or_else(|e| e.into_inner());
        h.saturating_record(d.as_micros() as u64);
    }

    pub fn sample(&self) -> Sample {
        let c = &self.counters;
        Sample {
            seconds: self.start.elapsed().as_secs_f64(),
            connections: get(&c.connections),
            joined: get(&c.joined),
            messages: get(&c.messages),
            admitted: get(&c.admissions),
            errors: get(&c.stream_errors) + get(&c.join_errors),
        }
    }
}

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

/// One fan: join, follow until admitted, then buy, abandon or stay (until `expired`, or
/// the run stops). What it was told and when it was admitted go into `record`.
pub(super) async fn fan(
    run: &Run,
    i: u64,
    permit: OwnedSemaphorePermit,
    record: &mut FanRecord,
) -> Outcome {
    let url = &run.urls[(i % run.urls.len() as u64) as usize];
    let (local, client) = &run.clients[(i % run.clients.len() as u64) as usize];
    let c = &run.counters;
    let Some(ticket) = join(run, client, url, permit, record).await else {
        return Outcome::JoinFailed;
    };
    if run.join_only {
        return Outcome::JoinOnly;
    }

    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(4));
    let mut last_event_id: Option<String> = None;
    loop {
        let asked = Instant::now();
        let opened = match run.transport {
            Transport::Sse => {
                PushStream::sse(client, url, &run.show, ticket, last_event_id.as_deref()).await
            }
            Transport::Ws => PushStream::ws(url, &run.show, ticket, *local).await,
        };
        match opened {
            Ok(mut stream) => {
                let _held = Held::new(c);
                let mut first = true;
                let end = loop {
                    match stream.next().await {
                        Some(Ok(push)) => {
                            add(&c.messages);
                            backoff.reset();
                            if first {
                                first = false;
                                Run::record(&run.first_event, asked.elapsed());
                            } else if push.kind != PushKind::Expired {
                                // Expiries follow the admission's TTL, not a tick.
                                Run::record(&run.push_latency, since_tick(SystemTime::now()));
                            }
                            match push.kind {
                                PushKind::Waiting => run.told(record, &push.ticket),
                                PushKind::Admitted => {
                                    if let Next::End(outcome) =
                                        admitted(run, client, url, ticket, i, record).await
                                    {
                                        break Some(outcome);
                                    }
                                }
                                PushKind::Unknown => break Some(ended(record, Outcome::Unknown)),
                                PushKind::Expired => {
                                    if record.admitted_at.is_some() {
                                        record.expired = true;
                                        add(&c.stayers_expired);
                                    }
                                    break Some(ended(record, Outcome::Expired));
                                }
                            }
                        }
                        Some(Err(_)) | None => break None,
                    }
                };
                if let Some(outcome) = end {
                    stream.close().await;
                    return outcome;
                }
                add(&c.stream_errors);
                last_event_id = stream.last_event_id().map(str::to_owned);
            }
            Err(FollowError::Fatal(_)) => {
                add(&c.stream_errors);
                return ended(record, Outcome::Lost);
            }
            Err(FollowError::Retry(_)) => add(&c.stream_errors),
        }
        if backoff.failures() + 1 >= ATTEMPTS {
            return ended(record, Outcome::Lost);
        }
        tokio::time::sleep(backoff.next_delay()).await;
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
    let mut url = base.clone();
    url.set_path(&format!("{}/orders", base.path().trim_end_matches('/')));
    let body = serde_json::json!({
        "showId": run.show,
        "holdId": format!("load-{ticket}"),
        "customerEmail": format!("fan{i}@load.example"),
        "amount": AMOUNT,
    });
    let sent = Instant::now();
    let answer = client
        .post(url)
        .header("X-Admission-Ticket", ticket.to_string())
        .json(&body)
        .timeout(follow::CONNECT_TIMEOUT)
        .send()
        .await;
    let status = match answer {
        Ok(response) => {
            let status = response.status();
            // Read the body so the connection goes back to the pool.
            let _ = response.bytes().await;
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

/// Joins with a few attempts; 429s wait as asked and do not count as attempts. The first
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
            (follow::join(client, url, &run.show).await, sent)
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
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
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

/// How long after the latest admission tick `at` is (see the module doc).
fn since_tick(at: SystemTime) -> Duration {
    let ms = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let into_second = ms.as_micros() as u64 % 1_000_000;
    let phase = TICK_PHASE_MS * 1000;
    Duration::from_micros((into_second + 1_000_000 - phase) % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_counts_from_the_tick_at_fifty_ms_past_the_second() {
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        assert_eq!(since_tick(at(1_000_053)), Duration::from_millis(3));
        assert_eq!(since_tick(at(1_000_050)), Duration::ZERO);
        // Just before the next tick: nearly a second late, not negative.
        assert_eq!(since_tick(at(1_001_049)), Duration::from_millis(999));
    }

    fn tally(choices: &Choices, fans: u64) -> [u64; 3] {
        let mut n = [0; 3];
        for i in 0..fans {
            n[choices.of(i) as usize] += 1;
        }
        n
    }

    #[test]
    fn choices_take_exactly_their_shares_spread_along_the_queue() {
        for fans in [1, 2, 3, 7, 40, 60, 1000, 19_950] {
            let choices = Choices::new(Some(0.5), Some(0.25), fans).unwrap();
            let [buy, abandon, stay] = tally(&choices, fans);
            // The nearest whole number of fans, a half rounded down.
            let share = |f: f64| (f * fans as f64 - 0.5).ceil() as u64;
            assert_eq!(buy, share(0.5), "{fans} fans");
            assert_eq!(buy + abandon, share(0.75), "{fans} fans");
            assert_eq!(buy + abandon + stay, fans);
        }
        // Not the first half buying: each quarter of the queue has its share of buyers.
        let choices = Choices::new(Some(0.5), Some(0.25), 400).unwrap();
        for quarter in 0..4 {
            let buyers = (quarter * 100..(quarter + 1) * 100)
                .filter(|&i| choices.of(i) == Choice::Buy)
                .count();
            assert!((40..=60).contains(&buyers), "quarter {quarter}: {buyers}");
        }
    }

    #[test]
    fn without_either_share_every_fan_stops_once_admitted() {
        let choices = Choices::new(None, None, 10).unwrap();
        assert_eq!(tally(&choices, 10), [0, 10, 0]);
        let buyers_only = Choices::new(Some(1.0), None, 10).unwrap();
        assert_eq!(tally(&buyers_only, 10), [10, 0, 0]);
        let stayers = Choices::new(Some(0.0), None, 10).unwrap();
        assert_eq!(tally(&stayers, 10), [0, 0, 10]);
        assert!(Choices::new(Some(0.75), Some(0.5), 10).is_err());
    }
}
