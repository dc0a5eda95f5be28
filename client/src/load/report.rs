//! What a run measured, printed for a person and as JSON for scripts.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::LoadArgs;
use super::eta::EtaReport;
use super::rate_change::RateChangeDone;
use super::run::{Run, get};
use crate::follow::Transport;
use waiting_room::words::thousands;

/// Latency percentiles, in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

impl Percentiles {
    pub(crate) fn of(h: &Histogram<u64>) -> Self {
        // Recorded in microseconds.
        let ms = |us: u64| (us as f64 / 100.0).round() / 10.0;
        Percentiles {
            count: h.len(),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}

impl fmt::Display for Percentiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 0 {
            return f.write_str("none measured");
        }
        write!(
            f,
            "p50 {} ms · p90 {} ms · p99 {} ms · max {} ms ({} samples)",
            self.p50,
            self.p90,
            self.p99,
            self.max,
            thousands(self.count)
        )
    }
}

/// What a run measured. The fan outcomes add up to `fans`: `not_started + join_failed +
/// throttled + joining + join_only + admitted + unknown + expired + released + lost +
/// unfinished`.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    /// Fans the run started (or meant to).
    pub fans: u64,
    /// SSE, WebSocket or polling.
    pub transport: Transport,
    /// Servers the fans were spread over.
    pub servers: usize,
    /// Source addresses the fans were spread over.
    pub source_ips: usize,
    /// From the start to the last fan's end.
    pub elapsed_seconds: f64,
    /// Joins answered 202.
    pub joined: u64,
    /// Joins per second achieved, from the first join sent to the last one answered.
    pub joins_per_second: f64,
    /// From sending a join to its answer.
    pub join_latency: Percentiles,
    /// Joins answered 429 (each retried after its `Retry-After`).
    pub join_throttled: u64,
    /// Joins answered 503 with `Retry-After`: the server shed them while overloaded (each
    /// retried after its `Retry-After`).
    pub join_shed: u64,
    /// Streams opened, reconnections included.
    pub streams_opened: u64,
    /// The most connections open at once.
    pub peak_connections: u64,
    /// Pushes received, first events included.
    pub messages: u64,
    /// From sending the stream request to its first event.
    pub first_event: Percentiles,
    /// From the admission tick to the push arriving (every push but the first of a stream,
    /// and but `expired`, which follows the admission's TTL rather than a tick).
    pub push_latency: Percentiles,
    /// From the admitter's tick that changed a fan's position (or admitted it) to the fan
    /// knowing it, pushed or polled (see `load::staleness`); one sample per change learned.
    pub staleness: Percentiles,
    /// The staleness distribution: `[milliseconds, share of changes learned within them]` at
    /// every percent, for plots that set runs side by side.
    pub staleness_cdf: Vec<[f64; 2]>,
    /// Changes learned: new positions and admissions heard.
    pub positions_learned: u64,
    /// From each tick to a fan knowing it, by a push or by its page's count between pushes
    /// (see `load::count`); one sample per tick per waiting fan.
    pub knowledge: Percentiles,
    /// The same per tick second: `[Unix second, samples, p50 ms, p99 ms]`.
    pub knowledge_by_second: Vec<[f64; 4]>,
    /// Pushes that found the page's count wrong at their tick: a leave, rate change or pause
    /// pushed at once; none in a run without them.
    pub count_wrong: u64,
    /// With `--transport poll`: the interval each fan polled at, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_seconds: Option<f64>,
    /// Streams that failed (each fan reconnected).
    pub stream_errors: u64,
    /// Stream openings answered 503 with `Retry-After` (the server shed them; each fan came
    /// back when told): not errors.
    pub streams_shed: u64,
    /// Fans the run stopped before their turn to join came.
    pub not_started: u64,
    /// Fans whose join was refused (or failed `ATTEMPTS` times).
    pub join_failed: u64,
    /// Fans that never joined: when the run stopped, the server had told them when to come
    /// back (their last join answered 429, or 503 with `Retry-After`).
    pub throttled: u64,
    /// Fans that never joined: when the run stopped, their join was queued for a slot
    /// (`--max-in-flight`) or unanswered.
    pub joining: u64,
    /// Fans that joined and, with `--join-only`, stopped there.
    pub join_only: u64,
    /// Fans told `admitted`, whatever they did next:
    /// `admitted = buyers + abandoners + stayers`.
    pub admitted: u64,
    /// Fans whose ticket the server no longer knew.
    pub unknown: u64,
    /// Fans whose admission ran out.
    pub expired: u64,
    /// Fans whose place was released (`EXPIRED`): away longer than the show's
    /// `awayHoldSeconds`.
    pub released: u64,
    /// Fans whose stream failed `ATTEMPTS` times in a row.
    pub lost: u64,
    /// Fans that joined and were still waiting in the queue when the run stopped.
    pub unfinished: u64,
    /// Admitted fans who ordered (`--buy`).
    pub buyers: u64,
    /// Admitted fans who closed their stream at once (`--abandon`; every admitted fan
    /// without `--buy` and `--abandon`).
    pub abandoners: u64,
    /// Admitted fans who kept following, never ordering.
    pub stayers: u64,
    /// Stayers told their admission expired before the run stopped.
    pub stayers_expired: u64,
    /// With `--away`: fans who stepped away while waiting (closed their stream, or stopped
    /// polling).
    pub stepped_away: u64,
    /// With `--away`: fans who came back after `--away-for` and followed their ticket again.
    pub came_back: u64,
    /// With `--away`: fans admitted after they came back. (One admitted while away would
    /// hear it only on coming back: its first state then is `admitted`. The server's rule is
    /// that none is, past the show's `presenceGraceSeconds`.)
    pub admitted_after_return: u64,
    /// With `--away`: fans whose first state on coming back was an admission made while they
    /// were away (`admitted`, or one that ran out meanwhile): admissions spent on nobody.
    /// With `awayHoldSeconds` above 0 the server lets in no fan away past the show's
    /// `presenceGraceSeconds`; within it a fan still counts as present and may be let in.
    pub admitted_while_away: u64,
    /// Answers to the buyers' orders by HTTP status (`"201"`), `"failed"` when none came.
    pub orders: BTreeMap<String, u64>,
    /// From sending an order to its answer.
    pub order_latency: Percentiles,
    /// Each fan's first ETA against its real admission.
    pub eta: EtaReport,
    /// With `--rate-change`: each fan's first ETA told once the first change was made (by a
    /// push with the new pace, or with its join), against its real admission.
    pub eta_after_rate_change: Option<EtaReport>,
    /// `--rate-change`s, in the order given, and what became of each.
    pub rate_changes: Vec<RateChangeDone>,
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = thousands;
        writeln!(
            f,
            "{} fans over {} to {} server(s) from {} source address(es), {:.1} s",
            n(self.fans),
            self.transport.name(),
            self.servers,
            self.source_ips,
            self.elapsed_seconds
        )?;
        writeln!(
            f,
            "joins:        {} answered at {:.0}/s · {} throttled (429) · {} shed (503), each \
             asked again when told",
            n(self.joined),
            self.joins_per_second,
            n(self.join_throttled),
            n(self.join_shed)
        )?;
        writeln!(f, "join latency: {}", self.join_latency)?;
        writeln!(
            f,
            "streams:      {} opened · peak {} held · {} errors · {} shed (503, opened again \
             when told)",
            n(self.streams_opened),
            n(self.peak_connections),
            n(self.stream_errors),
            n(self.streams_shed)
        )?;
        writeln!(f, "first event:  {}", self.first_event)?;
        writeln!(f, "messages:     {} pushed", n(self.messages))?;
        writeln!(f, "tick → push:  {}", self.push_latency)?;
        writeln!(
            f,
            "tick → known: {} · {} counts found wrong",
            self.knowledge,
            n(self.count_wrong)
        )?;
        writeln!(
            f,
            "staleness:    {} ({} changes learned)",
            self.staleness,
            n(self.positions_learned)
        )?;
        write!(
            f,
            "fans:         {} admitted · {} joined only · {} still waiting · {} lost · {} join failed · {} unknown · {} expired · {} released · {} not started",
            n(self.admitted),
            n(self.join_only),
            n(self.unfinished),
            n(self.lost),
            n(self.join_failed),
            n(self.unknown),
            n(self.expired),
            n(self.released),
            n(self.not_started)
        )?;
        if self.stepped_away > 0 {
            writeln!(f)?;
            write!(
                f,
                "stepped away: {} · {} came back · {} admitted after coming back · {} admitted \
                 while away · {} released (EXPIRED: away longer than the show's hold)",
                n(self.stepped_away),
                n(self.came_back),
                n(self.admitted_after_return),
                n(self.admitted_while_away),
                n(self.released)
            )?;
        }
        if self.throttled + self.joining > 0 {
            writeln!(f)?;
            write!(
                f,
                "never joined: {} told to come back (their last join answered 429 or 503 with Retry-After) · {} still joining",
                n(self.throttled),
                n(self.joining)
            )?;
        }
        if self.admitted > 0 {
            writeln!(f)?;
            write!(
                f,
                "once admitted: {} bought · {} abandoned · {} stayed ({} until expired)",
                n(self.buyers),
                n(self.abandoners),
                n(self.stayers),
                n(self.stayers_expired)
            )?;
        }
        if !self.orders.is_empty() {
            let answers: Vec<String> = self
                .orders
                .iter()
                .map(|(status, count)| format!("{} answered {status}", n(*count)))
                .collect();
            writeln!(f)?;
            write!(
                f,
                "orders:       {} · {}",
                answers.join(", "),
                self.order_latency
            )?;
        }
        if !self.rate_changes.is_empty() {
            let changes: Vec<String> = self.rate_changes.iter().map(|c| c.to_string()).collect();
            writeln!(f)?;
            write!(f, "rate changes: {}", changes.join(" · "))?;
        }
        if self.eta.measured > 0 || self.admitted > 0 {
            writeln!(f)?;
            write!(f, "first ETA:    {}", self.eta)?;
        }
        if let Some(after) = &self.eta_after_rate_change {
            writeln!(f)?;
            write!(f, "ETA after the rate change: {after}")?;
        }
        Ok(())
    }
}

/// `[ms, q]` at q = 0, 0.01, …, 1 (none for an empty histogram of microseconds).
fn cdf(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    (0..=100)
        .map(|p| {
            let q = f64::from(p) / 100.0;
            [h.value_at_quantile(q) as f64 / 1000.0, q]
        })
        .collect()
}

pub(super) fn report(
    args: &LoadArgs,
    run: &Run,
    eta: EtaReport,
    eta_after_rate_change: Option<EtaReport>,
    rate_changes: Vec<RateChangeDone>,
) -> LoadReport {
    let c = &run.counters;
    let pct =
        |h: &Mutex<Histogram<u64>>| Percentiles::of(&h.lock().unwrap_or_else(|e| e.into_inner()));
    let joined = get(&c.joined);
    let window_us = get(&c.last_join_us).saturating_sub(get(&c.first_join_us));
    LoadReport {
        fans: args.fans,
        transport: args.transport,
        servers: args.urls.len(),
        source_ips: run.sources.len(),
        elapsed_seconds: run.start.elapsed().as_secs_f64(),
        joined,
        joins_per_second: if joined > 1 && window_us > 0 && window_us != u64::MAX {
            joined as f64 / (window_us as f64 / 1e6)
        } else {
            0.0
        },
        join_latency: pct(&run.join_latency),
        join_throttled: get(&c.join_throttled),
        join_shed: get(&c.join_shed),
        streams_opened: get(&c.streams_opened),
        peak_connections: get(&c.peak_connections),
        messages: get(&c.messages),
        first_event: pct(&run.first_event),
        push_latency: pct(&run.push_latency),
        staleness: pct(&run.staleness),
        staleness_cdf: cdf(&run.staleness.lock().unwrap_or_else(|e| e.into_inner())),
        positions_learned: get(&c.positions_learned),
        knowledge: pct(&run.knowledge),
        knowledge_by_second: run
            .knowledge_by_second
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(s, h)| {
                let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
                [*s as f64, h.len() as f64, ms(0.5), ms(0.99)]
            })
            .collect(),
        count_wrong: get(&c.count_wrong),
        poll_interval_seconds: (args.transport == Transport::Poll)
            .then_some(args.poll_interval.as_secs_f64()),
        stream_errors: get(&c.stream_errors),
        streams_shed: get(&c.streams_shed),
        not_started: args.fans - get(&c.spawned),
        join_failed: get(&c.join_failed),
        throttled: get(&c.throttled),
        joining: get(&c.joining),
        admitted: get(&c.admitted),
        unknown: get(&c.unknown),
        expired: get(&c.expired),
        released: get(&c.released),
        lost: get(&c.lost),
        unfinished: get(&c.unfinished),
        join_only: get(&c.join_only),
        buyers: get(&c.buyers),
        abandoners: get(&c.abandoners),
        stayers: get(&c.stayers),
        stayers_expired: get(&c.stayers_expired),
        stepped_away: get(&c.stepped_away),
        came_back: get(&c.came_back),
        admitted_after_return: get(&c.admitted_after_return),
        admitted_while_away: get(&c.admitted_while_away),
        orders: run.orders.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        order_latency: pct(&run.order_latency),
        eta,
        eta_after_rate_change,
        rate_changes,
    }
}
