//! What every fan task of a run shares: the counters, the histograms, the records.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use reqwest::Url;
use tokio::sync::Semaphore;
use waiting_room::model::{ShowId, TicketView};

use super::LoadArgs;
use super::choices::{Away, Choices};
use super::eta::{FanRecord, Told};
use super::sources::Sources;
use crate::follow::Transport;
use crate::plot::Sample;

/// How one fan's run ended.
pub(super) enum Outcome {
    JoinFailed,
    /// The run stopped before it joined, while the server had told it when to come back (its
    /// last join answered 429, or 503 with `Retry-After`).
    Throttled,
    /// The run stopped before it joined, its join queued for a slot or unanswered.
    Joining,
    JoinOnly,
    /// Admitted, whatever it did next (bought, abandoned, stayed until it expired or the run
    /// stopped).
    Admitted,
    Unknown,
    Expired,
    /// Its place was released (`EXPIRED`): away longer than the show's `awayHoldSeconds`.
    Released,
    Lost,
    /// Joined, and still waiting when the run stopped.
    Unfinished,
}

impl Outcome {
    /// Where a fan was when the run stopped it, by what its record says.
    pub(super) fn stopped(record: &FanRecord) -> Outcome {
        match record.ticket {
            // Admitted and still following (it stays): admitted all the same.
            Some(_) if record.admitted_at.is_some() => Outcome::Admitted,
            Some(_) => Outcome::Unfinished,
            None if record.throttled => Outcome::Throttled,
            None => Outcome::Joining,
        }
    }
}

/// The run's counts, added to by every fan task as things happen.
#[derive(Default)]
pub(super) struct Counters {
    pub spawned: AtomicU64,
    pub joined: AtomicU64,
    pub join_throttled: AtomicU64,
    pub join_shed: AtomicU64,
    pub streams_opened: AtomicU64,
    pub connections: AtomicU64,
    pub peak_connections: AtomicU64,
    pub messages: AtomicU64,
    pub stream_errors: AtomicU64,
    pub streams_shed: AtomicU64,
    pub join_errors: AtomicU64,
    pub done: AtomicU64,
    pub join_failed: AtomicU64,
    /// Fans that never joined: the run stopped while the server throttled them (their last
    /// answer was 429), or while their join was queued or unanswered.
    pub throttled: AtomicU64,
    pub joining: AtomicU64,
    /// Fans whose `admitted` arrived, as it arrives (the timeline's figure).
    pub admissions: AtomicU64,
    /// Outcomes, counted as each fan ends.
    pub admitted: AtomicU64,
    pub unknown: AtomicU64,
    pub expired: AtomicU64,
    pub released: AtomicU64,
    pub lost: AtomicU64,
    pub unfinished: AtomicU64,
    pub join_only: AtomicU64,
    /// What admitted fans chose, counted as they choose.
    pub buyers: AtomicU64,
    pub abandoners: AtomicU64,
    pub stayers: AtomicU64,
    /// Stayers who were told their admission expired.
    pub stayers_expired: AtomicU64,
    /// Fans who stepped away while waiting (`--away`), those who came back, and those of
    /// them admitted after coming back.
    pub stepped_away: AtomicU64,
    pub came_back: AtomicU64,
    pub admitted_after_return: AtomicU64,
    /// Fans whose first state on coming back was an admission made while they were away
    /// (`admitted`, or one that ran out meanwhile): an admission spent on nobody.
    pub admitted_while_away: AtomicU64,
    /// States heard that told a fan something new (a position, an admission).
    pub positions_learned: AtomicU64,
    /// Pushes that found the page's count wrong at their tick ([`super::count`]).
    pub count_wrong: AtomicU64,
    /// Microseconds since the start: the first join sent and the last one answered.
    pub first_join_us: AtomicU64,
    pub last_join_us: AtomicU64,
    /// Microseconds since the start when the server answered the first `--rate-change`
    /// (`u64::MAX` until then): every push after it carries the new pace.
    pub rate_changed_us: AtomicU64,
}

pub(crate) fn get(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

pub(crate) fn add(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// What every fan task shares.
pub(super) struct Run {
    pub urls: Vec<Url>,
    pub show: ShowId,
    pub transport: Transport,
    /// How often polling fans ask (`--transport poll`).
    pub poll_interval: Duration,
    /// The source addresses and their HTTP clients.
    pub sources: Sources,
    pub start: Instant,
    pub counters: Counters,
    pub join_latency: Mutex<Histogram<u64>>,
    pub first_event: Mutex<Histogram<u64>>,
    pub push_latency: Mutex<Histogram<u64>>,
    /// From the tick that changed a fan's state to the fan knowing it ([`super::staleness`]).
    pub staleness: Mutex<Histogram<u64>>,
    /// From each tick to a fan knowing it, pushed or counted ([`super::count`]).
    pub knowledge: Mutex<Histogram<u64>>,
    /// The same, per tick second (Unix time, the store's clock).
    pub knowledge_by_second: Mutex<BTreeMap<u64, Histogram<u64>>>,
    pub order_latency: Mutex<Histogram<u64>>,
    /// Order answers by HTTP status (`"201"`), or `"failed"` when none came.
    pub orders: Mutex<BTreeMap<String, u64>>,
    /// One per fan that joined, added as it ends.
    pub records: Mutex<Vec<FanRecord>>,
    pub join_only: bool,
    /// Whether each fan sends an `Idempotency-Key` of its own (`--idempotency-key`).
    pub idempotency_key: bool,
    pub choices: Choices,
    /// Who steps away while waiting (`--away`).
    pub away: Option<Away>,
    /// Bounds joins in flight (`--max-in-flight`).
    pub joining: Arc<Semaphore>,
}

impl Run {
    /// A run of `args` starting now, its fans connecting from `sources` and choosing as
    /// `choices` say.
    pub(super) fn new(args: &LoadArgs, sources: Sources, choices: Choices) -> Run {
        // 1 µs to 1 h, 3 significant figures: a few kB each.
        let histogram =
            || Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"));
        Run {
            urls: args.urls.clone(),
            show: args.show.clone(),
            transport: args.transport,
            poll_interval: args.poll_interval,
            sources,
            start: Instant::now(),
            counters: Counters {
                first_join_us: AtomicU64::new(u64::MAX),
                rate_changed_us: AtomicU64::new(u64::MAX),
                ..Counters::default()
            },
            join_latency: histogram(),
            first_event: histogram(),
            push_latency: histogram(),
            staleness: histogram(),
            knowledge: histogram(),
            knowledge_by_second: Mutex::default(),
            order_latency: histogram(),
            orders: Mutex::default(),
            records: Mutex::default(),
            join_only: args.join_only,
            idempotency_key: args.idempotency_key,
            choices,
            away: args.away(),
            joining: Arc::new(Semaphore::new(args.max_in_flight as usize)),
        }
    }

    /// A fan ended as `outcome`: counted, and its record kept if it joined.
    pub(super) fn ended(&self, outcome: Outcome, record: FanRecord) {
        let c = &self.counters;
        add(match outcome {
            Outcome::JoinFailed => &c.join_failed,
            Outcome::Throttled => &c.throttled,
            Outcome::Joining => &c.joining,
            Outcome::Admitted => &c.admitted,
            Outcome::Unknown => &c.unknown,
            Outcome::Expired => &c.expired,
            Outcome::Released => &c.released,
            Outcome::Lost => &c.lost,
            Outcome::Unfinished => &c.unfinished,
            Outcome::JoinOnly => &c.join_only,
        });
        if record.ticket.is_some() {
            self.records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(record);
        }
        add(&c.done);
    }

    /// The records of every fan that joined, by fan, taken out of the run.
    pub(super) fn take_records(&self) -> Vec<FanRecord> {
        let mut records =
            std::mem::take(&mut *self.records.lock().unwrap_or_else(|e| e.into_inner()));
        records.sort_by_key(|r| r.fan);
        records
    }

    pub(super) fn since_start_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Seconds since the start, as the ETA records keep them.
    pub(super) fn now(&self) -> f32 {
        self.start.elapsed().as_secs_f32()
    }

    /// Whether the first `--rate-change` has been made.
    pub(super) fn rate_changed(&self) -> bool {
        get(&self.counters.rate_changed_us) <= self.since_start_us()
    }

    /// What `ticket` tells at this moment: the fan's first ETA if it has none yet, and its
    /// first since the rate change if that was made.
    pub(super) fn told(&self, record: &mut FanRecord, ticket: &TicketView) {
        if record.first.is_none() {
            record.first = Told::of(self.now(), ticket);
        }
        if record.retold.is_none() && self.rate_changed() {
            record.retold = Told::of(self.now(), ticket);
        }
    }

    /// Tick `second` known `late` after it.
    pub(super) fn knew(&self, second: u64, late: Duration) {
        Run::record(&self.knowledge, late);
        let mut by = self
            .knowledge_by_second
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let h = by.entry(second).or_insert_with(|| {
            Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid bounds")
        });
        h.saturating_record(late.as_micros() as u64);
    }

    pub(super) fn record(h: &Mutex<Histogram<u64>>, d: Duration) {
        let mut h = h.lock().unwrap_or_else(|e| e.into_inner());
        h.saturating_record(d.as_micros() as u64);
    }

    pub(super) fn sample(&self) -> Sample {
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
