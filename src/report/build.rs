//! The report worked out from its parts: the show's figures, its draw, the audit and the
//! samples. Pure: the server and the simulation hand it what their store holds.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::clock::rfc3339;
use crate::draw::verify;
use crate::model::{
    AuditKind, AuditRecord, Count, DrawStage, DrawView, EtaAccuracy, Fairness, Figures,
    Percentiles, PushLatency, Report, Second, ShareAt, ShowStats, TicketState, lane_of,
};
use crate::store::Sample;

/// What a report is made from.
pub struct Parts<'a> {
    /// The show's figures now.
    pub stats: &'a ShowStats,
    /// Its draw, when it was scheduled.
    pub draw: Option<&'a DrawView>,
    /// Its audit, oldest first.
    pub records: &'a [AuditRecord],
    /// Its samples, oldest first.
    pub samples: &'a [Sample],
    /// The answering instance's push latency.
    pub push_latency: PushLatency,
    /// Now (ms since the epoch).
    pub now_ms: u64,
}

/// The shares of the admitted fans `admittedBy` tells the time of.
const SHARES: [u8; 6] = [10, 25, 50, 75, 90, 100];

/// The report of `parts`.
pub fn build(parts: &Parts<'_>) -> Report {
    let stats = parts.stats;
    let seconds = seconds(parts.samples, parts.records);
    let start = parts.samples.first().map(|s| s.at_ms);
    let ticks: Vec<&AuditRecord> = parts
        .records
        .iter()
        .filter(|r| r.kind == AuditKind::Tick)
        .collect();
    let admitted: u64 = ticks.iter().map(|r| arrivals_in(r)).sum();
    let count = |kind: AuditKind| parts.records.iter().filter(|r| r.kind == kind).count() as u64;
    let last = parts.samples.last();
    let figures = Figures {
        started_at_ms: start,
        seconds: seconds.last().map_or(0, |s| s.t),
        // Now, not at the last tick: fans keep joining a paused or pending show.
        arrivals: stats.joined.max(last.map_or(0, |s| s.arrivals)) + last.map_or(0, |s| s.laned),
        admitted,
        bypassed: count(AuditKind::Bypass),
        orders: count(AuditKind::Order),
        redeemed: count(AuditKind::Redeem),
        released: ticks
            .iter()
            .map(|r| r.expired.iter().map(|[a, b]| b - a + 1).sum::<u64>())
            .sum(),
        queued: stats.queue_length,
        stock_left: stats.stock_left,
        admitted_per_second: per_second(&ticks),
        wait: waits(parts.samples, &ticks),
        admitted_by: admitted_by(start.unwrap_or(0), &ticks, admitted),
        most_told_no_seat: seconds.iter().map(|s| s.told_no_seat).max().unwrap_or(0),
        eta: eta_accuracy(&seconds),
    };
    Report {
        show_id: stats.show_id.clone(),
        generated_at: rfc3339(parts.now_ms),
        phase: stats.phase,
        admit_per_second: stats.admit_per_second,
        max_active_buyers: stats.max_active_buyers,
        stock: stats.stock,
        figures,
        fairness: fairness(parts),
        seconds,
        push_latency: parts.push_latency.clone(),
    }
}

/// Arrivals a tick record let in.
fn arrivals_in(r: &AuditRecord) -> u64 {
    r.admitted.iter().map(|[a, b]| b - a + 1).sum()
}

/// One row a sample; orders counted into the tick they came before (those after the last
/// tick into the last row, so the rows' orders add up to the audit's).
fn seconds(samples: &[Sample], records: &[AuditRecord]) -> Vec<Second> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    let mut orders = records
        .iter()
        .filter(|r| r.kind == AuditKind::Order)
        .map(|r| r.at_ms)
        .peekable();
    // The highest head so far, sample by sample (heads only rise): the first later sample
    // whose head passed an arrival is found by halving, not by a walk from every sample.
    let reach: Vec<u64> = samples
        .iter()
        .scan(0, |most, s| {
            *most = s.head.max(*most);
            Some(*most)
        })
        .collect();
    let mut rows = Vec::with_capacity(samples.len());
    let mut before = 0;
    for (i, s) in samples.iter().enumerate() {
        let last = i + 1 == samples.len();
        let mut ordered = 0;
        while orders.next_if(|&at| last || at <= s.at_ms).is_some() {
            ordered += 1;
        }
        let (pace, sale) = s.pace.read();
        let laned_waiting: u64 = s
            .pace
            .lanes
            .iter()
            .filter(|l| l.slot > 0)
            .map(|l| l.waiting)
            .sum();
        let back = s.queued.saturating_sub(laned_waiting);
        let eta_told = (back > 0)
            .then(|| {
                TicketState::Waiting {
                    position: back,
                    arrival: s.arrivals,
                }
                .view(Uuid::nil(), &pace, &sale)
                .eta_seconds
            })
            .flatten();
        // The back fan's real wait: until a tick's head passed its arrival.
        let real_wait = (back > 0)
            .then(|| {
                let passed = i + 1 + reach[i + 1..].partition_point(|&head| head < s.arrivals);
                samples
                    .get(passed)
                    .map(|later| later.at_ms.saturating_sub(s.at_ms).div_ceil(1000))
            })
            .flatten();
        let arrived = s.arrivals + s.laned;
        rows.push(Second {
            // By the store's seconds, which hold one tick each: no two rows share a `t`.
            t: (s.at_ms / 1000).saturating_sub(first.at_ms / 1000),
            at_ms: s.at_ms,
            arrivals: arrived.saturating_sub(before),
            queued: s.queued,
            away: s.away,
            admitted: s.admitted,
            orders: ordered,
            active: s.active,
            rate: s.pace.rate,
            stock_left: s.pace.stock_left,
            told_no_seat: s
                .pace
                .stock_left
                .map_or(0, |left| s.queued.saturating_sub(left)),
            eta_told,
            real_wait,
        });
        before = arrived;
    }
    rows
}

/// Admissions a second, from the first tick that let anyone in to the last.
fn per_second(ticks: &[&AuditRecord]) -> f64 {
    let admitting: Vec<&&AuditRecord> = ticks.iter().filter(|r| arrivals_in(r) > 0).collect();
    let (Some(first), Some(last)) = (admitting.first(), admitting.last()) else {
        return 0.0;
    };
    let total: u64 = admitting.iter().map(|r| arrivals_in(r)).sum();
    let span = ((last.at_ms / 1000).saturating_sub(first.at_ms / 1000) + 1) as f64;
    total as f64 / span
}

/// The waits of the general queue's admitted fans: each from its arrival's second (the
/// sample whose counter first covers it, less half a second), or from the first tick for
/// those who came before it, to the tick that let it in.
fn waits(samples: &[Sample], ticks: &[&AuditRecord]) -> Percentiles {
    let mut weighted: Vec<(f64, u64)> = Vec::new();
    for r in ticks {
        for &[lo, hi] in &r.admitted {
            if lane_of(lo) != 0 {
                continue;
            }
            let mut a = lo;
            while a <= hi {
                // The first sample whose arrivals reach `a`.
                let i = samples.partition_point(|s| s.arrivals < a);
                let (joined_ms, upto) = match samples.get(i) {
                    Some(s) if i == 0 => (s.at_ms as f64, s.arrivals.min(hi)),
                    Some(s) => (s.at_ms as f64 - 500.0, s.arrivals.min(hi)),
                    // Not sampled (trimmed away, or the tick's own sample is missing).
                    None => (r.at_ms as f64, hi),
                };
                let wait = ((r.at_ms as f64 - joined_ms) / 1000.0).max(0.0);
                weighted.push((wait, upto - a + 1));
                a = upto + 1;
            }
        }
    }
    percentiles(weighted)
}

/// Percentiles of waits each counted `n` times.
fn percentiles(mut weighted: Vec<(f64, u64)>) -> Percentiles {
    weighted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let fans: u64 = weighted.iter().map(|w| w.1).sum();
    let at = |q: f64| {
        let want = ((q * fans as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for &(wait, n) in &weighted {
            seen += n;
            if seen >= want {
                return (wait * 10.0).round() / 10.0;
            }
        }
        0.0
    };
    Percentiles {
        fans,
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        max: at(1.0),
    }
}

/// When each share of the `admitted` fans was in, in seconds from `start`.
fn admitted_by(start: u64, ticks: &[&AuditRecord], admitted: u64) -> Vec<ShareAt> {
    if admitted == 0 {
        return Vec::new();
    }
    let mut so_far = 0;
    let mut shares = SHARES.iter().peekable();
    let mut out = Vec::new();
    for r in ticks {
        so_far += arrivals_in(r);
        while let Some(&&percent) = shares.peek() {
            if so_far * 100 < u64::from(percent) * admitted {
                break;
            }
            out.push(ShareAt {
                percent,
                seconds: (r.at_ms / 1000).saturating_sub(start / 1000),
            });
            shares.next();
        }
    }
    out
}

/// The ETAs told at the back of the queue against the waits that followed.
fn eta_accuracy(seconds: &[Second]) -> EtaAccuracy {
    let pairs: Vec<(f64, f64)> = seconds
        .iter()
        .filter_map(|s| Some((s.eta_told? as f64, s.real_wait? as f64)))
        .collect();
    if pairs.is_empty() {
        return EtaAccuracy::default();
    }
    let mut ratios: Vec<f64> = pairs
        .iter()
        .map(|&(told, real)| told.max(1.0) / real.max(1.0))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let within = pairs
        .iter()
        .filter(|&&(told, real)| (told - real).abs() <= (real / 5.0).max(5.0))
        .count();
    EtaAccuracy {
        compared: pairs.len() as u64,
        median_ratio: (ratios[ratios.len() / 2] * 100.0).round() / 100.0,
        within_a_fifth: (within as f64 / pairs.len() as f64 * 1000.0).round() / 1000.0,
    }
}

/// The audit walked as `waiting-room-client verify` walks it, and what it says of bypasses
/// and lanes.
fn fairness(parts: &Parts<'_>) -> Fairness {
    let records = parts.records;
    let walked = verify(parts.draw, records, None);
    let mut bypasses: BTreeMap<String, u64> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind == AuditKind::Bypass) {
        let kind = r.via.map_or("other", |v| v.as_str());
        *bypasses.entry(kind.to_owned()).or_default() += 1;
    }
    let names: BTreeMap<u8, String> = parts
        .samples
        .last()
        .map(|s| {
            s.pace
                .lanes
                .iter()
                .map(|l| (l.slot, l.name.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut lanes: BTreeMap<u8, u64> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind == AuditKind::Tick) {
        for &[a, b] in &r.admitted {
            *lanes.entry(lane_of(a)).or_default() += b - a + 1;
        }
    }
    let lanes = lanes
        .into_iter()
        .map(|(slot, count)| Count {
            name: match (slot, names.get(&slot)) {
                (0, _) => "general".to_owned(),
                (_, Some(name)) if !name.is_empty() => name.clone(),
                _ => format!("lane {slot}"),
            },
            count,
        })
        .collect();
    let bypasses = bypasses
        .into_iter()
        .map(|(name, count)| Count { name, count })
        .collect();
    let drawn = parts.draw.filter(|d| d.state == DrawStage::Drawn);
    match walked {
        Ok(v) => Fairness {
            verified: true,
            inversions: Some(0),
            violation: None,
            records: records.len() as u64,
            drawn: drawn.and(v.participants),
            draw_verified: drawn.map(|_| true),
            bypasses,
            lanes,
            passed_over: v.passed,
            returned: v.returned,
        },
        Err(violation) => Fairness {
            verified: false,
            inversions: None,
            violation: Some(violation.0),
            records: records.len() as u64,
            drawn: drawn.and_then(|d| d.participants),
            // The walk stopped at the first violation, which may come before the draw's.
            draw_verified: None,
            bypasses,
            lanes,
            passed_over: 0,
            returned: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RecordId;
    use crate::store::PaceFigures;

    fn sample(at_ms: u64, arrivals: u64, head: u64, admitted: u64) -> Sample {
        Sample {
            id: RecordId { ms: at_ms, seq: 0 },
            at_ms,
            epoch: 1,
            arrivals,
            laned: 0,
            queued: arrivals - head,
            admitted,
            active: head,
            away: 0,
            head,
            pace: PaceFigures {
                rate: 2,
                flow_milli: 2000,
                phase: crate::model::Phase::Open,
                ..PaceFigures::default()
            },
        }
    }

    fn tick(at_ms: u64, from: u64, to: u64) -> AuditRecord {
        AuditRecord {
            admitted: vec![[from, to]],
            rate: Some(2),
            ..AuditRecord::new(AuditKind::Tick, at_ms)
        }
    }

    fn order(at_ms: u64, arrival: u64) -> AuditRecord {
        AuditRecord {
            arrival: Some(arrival),
            ..AuditRecord::new(AuditKind::Order, at_ms)
        }
    }

    /// Four fans come before the first tick, two in the second after it; two are let in a
    /// tick.
    fn sale() -> (Vec<Sample>, Vec<AuditRecord>) {
        let samples = vec![
            sample(10_000, 4, 2, 2),
            sample(11_000, 6, 4, 2),
            sample(12_000, 6, 6, 2),
        ];
        let records = vec![
            tick(10_000, 1, 2),
            tick(11_000, 3, 4),
            order(11_500, 1),
            tick(12_000, 5, 6),
            order(12_500, 3),
            order(19_000, 5),
        ];
        (samples, records)
    }

    #[test]
    fn waits_count_from_the_arrivals_second_or_the_first_tick() {
        let (samples, records) = sale();
        let ticks: Vec<&AuditRecord> = records
            .iter()
            .filter(|r| r.kind == AuditKind::Tick)
            .collect();
        let w = waits(&samples, &ticks);
        // Fans 1–4 came before the first tick: 0, 0, 1 and 1 s from it; 5 and 6 joined in
        // the second before the second tick (half a second, on average) and waited 1.5 s.
        assert_eq!(w.fans, 6);
        assert_eq!((w.p50, w.p90, w.max), (1.0, 1.5, 1.5));
    }

    #[test]
    fn every_order_falls_in_a_row_and_shares_come_in_their_tick() {
        let (samples, records) = sale();
        let rows = seconds(&samples, &records);
        let orders: Vec<u64> = rows.iter().map(|r| r.orders).collect();
        // An order counts in the row of the tick after it; those after the last tick in the
        // last row.
        assert_eq!(orders, [0, 0, 3]);
        assert_eq!(rows.iter().map(|r| r.orders).sum::<u64>(), 3);
        assert_eq!(rows.iter().map(|r| r.t).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(rows[1].arrivals, 2);
        let ticks: Vec<&AuditRecord> = records
            .iter()
            .filter(|r| r.kind == AuditKind::Tick)
            .collect();
        let by = admitted_by(10_000, &ticks, 6);
        let at: Vec<(u8, u64)> = by.iter().map(|s| (s.percent, s.seconds)).collect();
        assert_eq!(at, [(10, 0), (25, 0), (50, 1), (75, 2), (90, 2), (100, 2)]);
        assert_eq!(per_second(&ticks), 2.0);
    }

    #[test]
    fn the_back_fans_eta_is_told_by_the_pace_and_its_wait_read_from_the_heads() {
        let (samples, records) = sale();
        let rows = seconds(&samples, &records);
        // After the first tick, fan 4 stands second at 2 a second: told 1 s; the head passes
        // it at the next tick, 1 s later.
        assert_eq!((rows[0].eta_told, rows[0].real_wait), (Some(1), Some(1)));
        // After the last, nobody waits: nothing told.
        assert_eq!((rows[2].eta_told, rows[2].real_wait), (None, None));
    }
}
