//! An on-sale's report (`GET …/{showId}/report`, docs/report.md): what happened second by
//! second, how long fans waited against what they were told, and whether it was fair. The
//! server builds it from the audit and the samples its ticks leave (`crate::report`);
//! `waiting-room-client simulate` builds the same from a simulated sale, so a prediction and
//! what a server did read alike.

use serde::{Deserialize, Serialize};

use super::Phase;

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The show, as named in the path.
    pub show_id: String,
    /// When the report was made (RFC 3339, UTC).
    pub generated_at: String,
    /// Where the on-sale stands now.
    pub phase: Phase,
    /// The show's configured admissions a second.
    pub admit_per_second: u32,
    /// The cap on buyers behind the gate (0: none).
    pub max_active_buyers: u32,
    /// Seats for sale (absent: no stock set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<u64>,
    /// The sale in figures.
    pub figures: Figures,
    /// What the audit says of the order fans were let in.
    pub fairness: Fairness,
    /// One row a sampled second (a tick), oldest first; at most a day of them.
    pub seconds: Vec<Second>,
    /// Tick → every local fan's new state, on the instance that answered (all its shows).
    pub push_latency: PushLatency,
}

/// The sale in figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    /// The first sampled tick (ms since the epoch; absent: the show never ticked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// Seconds from the first sampled tick to the last.
    pub seconds: u64,
    /// Tickets handed out (the arrival counters, lanes included).
    pub arrivals: u64,
    /// Fans let in by ticks, as the audit records them.
    pub admitted: u64,
    /// Fans let in by a bypass rule.
    pub bypassed: u64,
    /// Orders placed, as the audit records them.
    pub orders: u64,
    /// Admissions redeemed at an edge.
    pub redeemed: u64,
    /// Places released, their fans away longer than the hold.
    pub released: u64,
    /// Fans still waiting at the last tick.
    pub queued: u64,
    /// Seats left at the last tick, when the show has a stock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock_left: Option<u64>,
    /// Admissions a second over the seconds that admitted anyone.
    pub admitted_per_second: f64,
    /// How long admitted fans of the general queue waited, from their arrival (or the
    /// first tick, for those who came before it) to the tick that let them in.
    pub wait: Percentiles,
    /// When each share of the admitted fans was in: seconds from the first tick.
    pub admitted_by: Vec<ShareAt>,
    /// The most fans told at once that they may not get a seat (queued past the seats left).
    pub most_told_no_seat: u64,
    /// The ETA a fan joining at the back was told after each tick, against its real wait.
    pub eta: EtaAccuracy,
}

/// Wait percentiles, in seconds (all 0 when nobody was admitted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Percentiles {
    /// Fans counted.
    pub fans: u64,
    /// Half waited at most this long.
    pub p50: f64,
    /// Nine in ten.
    pub p90: f64,
    /// 99 in 100.
    pub p99: f64,
    /// The longest wait.
    pub max: f64,
}

/// When a share of the admitted fans was in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShareAt {
    /// The share, percent.
    pub percent: u8,
    /// Seconds from the first tick.
    pub seconds: u64,
}

/// How the ETAs told compared with the waits that followed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EtaAccuracy {
    /// Ticks whose back-of-the-queue fan was let in, so its real wait is known.
    pub compared: u64,
    /// The median of told ÷ real (1: exact; above 1: told too long).
    pub median_ratio: f64,
    /// The share of those within a fifth of the real wait (or within 5 s).
    pub within_a_fifth: f64,
}

/// What the audit says of the order fans were let in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fairness {
    /// The audit walked whole and everything held (`waiting-room-client verify`'s check).
    pub verified: bool,
    /// Fans let in ahead of someone who was before them in their queue (and not away): 0
    /// when verified; absent when the walk stopped at a violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inversions: Option<u64>,
    /// The first thing that did not hold, when something did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
    /// Audit records walked.
    pub records: u64,
    /// With a fair start: the pre-queue drawn, its size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn: Option<u64>,
    /// With a fair start: whether the draw was recomputed from what was revealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_verified: Option<bool>,
    /// Fans let in by a bypass rule, by kind (`token`, `network`, `link`).
    pub bypasses: Vec<Count>,
    /// Fans let in, by lane (`general` for the general queue).
    pub lanes: Vec<Count>,
    /// Passed over while away, let in once back, released after the hold.
    pub passed_over: u64,
    /// Let in once back.
    pub returned: u64,
}

/// A name and how many.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Count {
    /// What is counted.
    pub name: String,
    /// How many.
    pub count: u64,
}

/// One sampled second: a tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Second {
    /// Seconds from the first tick.
    pub t: u64,
    /// The tick's time (ms since the epoch).
    pub at_ms: u64,
    /// Tickets handed out since the tick before.
    pub arrivals: u64,
    /// Waiting after the tick.
    pub queued: u64,
    /// Of those, away (no live stream within the presence grace).
    pub away: u64,
    /// Let in by the tick.
    pub admitted: u64,
    /// Orders placed since the tick before.
    pub orders: u64,
    /// Buyers behind the gate.
    pub active: u64,
    /// The rate in force.
    pub rate: u32,
    /// Seats left, when the show has a stock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock_left: Option<u64>,
    /// Fans queued past the seats left: told they may not get one.
    pub told_no_seat: u64,
    /// The ETA a fan at the back of the general queue was told after the tick (absent: none
    /// was, the queue standing still or empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_told: Option<u64>,
    /// How long that fan really waited (absent: not let in yet, or it never was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_wait: Option<u64>,
}

/// A latency histogram, as the Prometheus metric keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushLatency {
    /// Observations.
    pub count: u64,
    /// Their sum, ms.
    pub sum_ms: f64,
    /// Cumulative counts at each upper bound (ms), the last bound counting everything.
    pub buckets: Vec<Bucket>,
}

/// One histogram bucket: observations at or under `le_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    /// The upper bound, ms (absent: +Inf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub le_ms: Option<f64>,
    /// Observations at or under it, cumulative.
    pub count: u64,
}

impl PushLatency {
    /// The least bucket bound under which at least `q` (0 to 1) of the observations fall
    /// (ms; `None` when there are none, or they fall past the last finite bound).
    pub fn quantile_bound(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let want = (q * self.count as f64).ceil() as u64;
        self.buckets
            .iter()
            .find(|b| b.count >= want)
            .and_then(|b| b.le_ms)
    }
}
