//! What every fan of a swarm shares: where to connect, the show, the churn's rates, the
//! counters and the process-wide latency histograms. A fan keeps only its own small state;
//! everything measured lands here.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::sync::Semaphore;
use waiting_room::model::ShowId;

use super::args::{Mix, SwarmArgs};
use crate::follow::Transport;

/// A server the fans connect to: its address, and its `host` header.
#[derive(Debug)]
pub(super) struct Server {
    pub addr: SocketAddr,
    pub host: String,
}

/// How often, on average, a fan leaves, returns or reconnects: rates a second.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Churn {
    pub leave: f64,
    pub back: f64,
    pub reconnect: f64,
}

impl Churn {
    /// The rate a second at which a share `per_minute` of a crowd goes each minute (each
    /// member independently): `P(gone within a minute) = per_minute`.
    fn rate(per_minute: f64) -> f64 {
        -(1.0 - per_minute.min(0.999)).ln() / 60.0
    }

    pub(super) fn of(args: &SwarmArgs) -> Churn {
        Churn {
            leave: Churn::rate(args.leave_per_minute),
            back: Churn::rate(args.return_per_minute),
            reconnect: Churn::rate(args.reconnect_per_minute),
        }
    }
}

/// The swarm's counts, added to by every fan as things happen.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub joined: AtomicU64,
    pub join_failed: AtomicU64,
    pub pushes: AtomicU64,
    pub polls: AtomicU64,
    pub count_wrong: AtomicU64,
    pub lost: AtomicU64,
    pub ended: AtomicU64,
    pub stream_errors: AtomicU64,
    pub streams_shed: AtomicU64,
    pub dropped: AtomicU64,
    pub reconnects: AtomicU64,
    pub left: AtomicU64,
    pub leave_failed: AtomicU64,
    pub returned: AtomicU64,
    pub admitted: AtomicU64,
    /// Fans holding a live stream, or polling, now and at most; by transport, in the order
    /// SSE, WebSocket, polling.
    pub held: AtomicU64,
    pub held_peak: AtomicU64,
    pub held_by: [AtomicU64; 3],
    pub held_peak_by: [AtomicU64; 3],
}

pub(super) use crate::load::{add, get};

/// The index of `transport` in [`Counts::held_by`].
pub(super) fn slot(transport: Transport) -> usize {
    match transport {
        Transport::Sse => 0,
        Transport::Ws => 1,
        Transport::Poll => 2,
    }
}

/// Tick → knowing latencies (microseconds): overall, per tick second, and since the
/// timeline's last row.
pub(super) struct Knowing {
    pub all: Histogram<u64>,
    pub by_second: BTreeMap<u64, Histogram<u64>>,
    pub window: Histogram<u64>,
}

/// A histogram of microseconds up to a minute: a tick known later than that is a minute late.
pub(super) fn histogram(significant: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, significant).expect("valid bounds")
}

/// What every fan shares.
pub(super) struct Swarm {
    pub servers: Vec<Server>,
    /// The source addresses, fan i taking the i-th modulo their number (none: the system's).
    pub sources: Vec<IpAddr>,
    pub show: ShowId,
    pub mix: Mix,
    pub poll_interval: Duration,
    pub churn: Churn,
    pub seed: u64,
    pub start: Instant,
    /// Bounds the joins awaiting an answer (`--max-pending`).
    pub joining: Semaphore,
    /// A fan heard the show open: churn starts.
    pub opened: AtomicBool,
    pub counts: Counts,
    pub knowing: Mutex<Knowing>,
    /// Join answers other than 202, by status (`"429"`), `"error"` when none came.
    pub join_status: Mutex<BTreeMap<String, u64>>,
}

impl Swarm {
    pub(super) fn new(args: &SwarmArgs, servers: Vec<Server>) -> Swarm {
        Swarm {
            servers,
            sources: args.source_ips.map(|r| r.addrs()).unwrap_or_default(),
            show: args.show.clone(),
            mix: args.mix,
            poll_interval: args.poll_interval,
            churn: Churn::of(args),
            seed: args.seed,
            start: Instant::now(),
            joining: Semaphore::new(args.max_pending as usize),
            opened: AtomicBool::new(false),
            counts: Counts::default(),
            knowing: Mutex::new(Knowing {
                all: histogram(3),
                by_second: BTreeMap::new(),
                window: histogram(2),
            }),
            join_status: Mutex::default(),
        }
    }

    /// Fan `i`'s server and source address.
    pub(super) fn route(&self, i: u64) -> (&Server, Option<IpAddr>) {
        let server = &self.servers[(i % self.servers.len() as u64) as usize];
        let source = (!self.sources.is_empty())
            .then(|| self.sources[(i % self.sources.len() as u64) as usize]);
        (server, source)
    }

    /// Each tick `second` a fan newly knew, `late` after the tick.
    pub(super) fn knew(&self, ticks: &[(u64, Duration)]) {
        if ticks.is_empty() {
            return;
        }
        let mut k = self.knowing.lock().unwrap_or_else(|e| e.into_inner());
        for &(second, late) in ticks {
            let us = late.as_micros() as u64;
            k.all.saturating_record(us);
            k.window.saturating_record(us);
            k.by_second
                .entry(second)
                .or_insert_with(|| histogram(2))
                .saturating_record(us);
        }
    }

    /// A join answered `status` (or not at all: `None`) rather than 202.
    pub(super) fn join_refused(&self, status: Option<u16>) {
        let key = status.map_or_else(|| "error".to_owned(), |s| s.to_string());
        *self
            .join_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default() += 1;
    }
}

/// One fan holding a live stream (or polling), counted while it lives.
pub(super) struct Held<'a> {
    counts: &'a Counts,
    slot: usize,
}

impl<'a> Held<'a> {
    pub(super) fn new(counts: &'a Counts, transport: Transport) -> Held<'a> {
        let slot = slot(transport);
        let now = counts.held.fetch_add(1, Ordering::Relaxed) + 1;
        counts.held_peak.fetch_max(now, Ordering::Relaxed);
        let now = counts.held_by[slot].fetch_add(1, Ordering::Relaxed) + 1;
        counts.held_peak_by[slot].fetch_max(now, Ordering::Relaxed);
        Held { counts, slot }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.counts.held.fetch_sub(1, Ordering::Relaxed);
        self.counts.held_by[self.slot].fetch_sub(1, Ordering::Relaxed);
    }
}
