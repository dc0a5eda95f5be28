//! Prometheus metrics, served as text at `GET /metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::model::{Bucket, BypassKind, PushLatency, ShowId, ShowStats};

type Labels = Vec<(&'static str, String)>;

/// `hub_lag_milliseconds`' bucket bounds: from 1 ms to about 4 s.
const HUB_LAG_BOUNDS: [f64; 11] = [
    1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 4000.0,
];

/// Every metric this instance exports.
pub struct Metrics {
    registry: Registry,
    connected: Family<Labels, Gauge>,
    pushed: Family<Labels, Counter>,
    hub_lag: Histogram,
    /// The same observations per bucket (not cumulative, the last past every bound), which
    /// the report reads: prometheus-client keeps its own private.
    hub_lag_buckets: [AtomicU64; HUB_LAG_BOUNDS.len() + 1],
    /// Their sum, µs.
    hub_lag_sum_us: AtomicU64,
    admitted: Family<Labels, Counter>,
    joins: Family<Labels, Counter>,
    queue_length: Family<Labels, Gauge>,
    admitted_valid: Family<Labels, Gauge>,
    leader: Gauge,
    show_lost: Family<Labels, Gauge>,
    admitter_errors: Counter,
    store_up: Gauge,
    store_errors: Family<Labels, Counter>,
    redemptions: Family<Labels, Counter>,
    bypasses: Family<Labels, Counter>,
    codes: Family<Labels, Counter>,
    /// `gateway_requests` by [`GatewayOutcome`], each series made once: a proxied request
    /// costs one atomic increment.
    gateway: [Counter; GatewayOutcome::ALL.len()],
    /// `pass_checks` by [`PassCheck`], likewise.
    pass_check_counters: [Counter; PassCheck::ALL.len()],
    redis_failovers: Counter,
    shed: Counter,
    /// Parked fans (passed over while away) this instance saw come back.
    presence_back: Counter,
    /// The "your turn" calls this instance sent, per channel and outcome.
    calls: Family<Labels, Gauge>,
    at_work: Gauge,
    crowd_limit: Gauge,
    lost_writes: Family<Labels, Counter>,
    lost_places: Family<Labels, Counter>,
}

/// What a gateway request came to.
#[derive(Clone, Copy, Debug)]
pub enum GatewayOutcome {
    /// Sent on to the origin (whatever it answered).
    Proxied,
    /// A guarded path without an admission: sent to the waiting page.
    Queued,
    /// The origin could not be reached, or did not answer in time (502, 504).
    Unreachable,
    /// A path the gateway would not send on: malformed, or a spelling servers read
    /// differently under a guarded prefix (400).
    Refused,
    /// A purchase path spent its admission and went on.
    Spent,
    /// A purchase path whose admission was spent already (409): a twin, or a second buy.
    Twin,
}

impl GatewayOutcome {
    const ALL: [GatewayOutcome; 6] = [
        GatewayOutcome::Proxied,
        GatewayOutcome::Queued,
        GatewayOutcome::Unreachable,
        GatewayOutcome::Refused,
        GatewayOutcome::Spent,
        GatewayOutcome::Twin,
    ];

    fn label(self) -> Labels {
        let name = match self {
            GatewayOutcome::Proxied => "proxied",
            GatewayOutcome::Queued => "queued",
            GatewayOutcome::Unreachable => "unreachable",
            GatewayOutcome::Refused => "refused",
            GatewayOutcome::Spent => "spent",
            GatewayOutcome::Twin => "twin",
        };
        vec![("outcome", name.to_owned())]
    }
}

/// What a check of a verified pass against the store came to.
#[derive(Clone, Copy, Debug)]
pub enum PassCheck {
    /// A running, unspent admission (204).
    Valid,
    /// Refused (403): no valid pass, or its admission spent, released or of another epoch.
    Refused,
    /// The signature and expiry held but the store could not be asked whether the admission
    /// is unspent (204 all the same).
    Unverified,
    /// A pass the store confirmed lately, whose admission the feed has not said ended:
    /// answered from the cache, with no signature check and no store read.
    Cached,
}

impl PassCheck {
    const ALL: [PassCheck; 4] = [
        PassCheck::Valid,
        PassCheck::Refused,
        PassCheck::Unverified,
        PassCheck::Cached,
    ];

    fn label(self) -> Labels {
        let name = match self {
            PassCheck::Valid => "valid",
            PassCheck::Refused => "refused",
            PassCheck::Unverified => "unverified",
            PassCheck::Cached => "cached",
        };
        vec![("outcome", name.to_owned())]
    }
}

/// The transports a fan can follow a ticket over.
#[derive(Clone, Copy, Debug)]
pub enum Transport {
    /// Server-Sent Events (label `transport="sse"`).
    Sse,
    /// A WebSocket (label `transport="ws"`).
    WebSocket,
}

impl Transport {
    fn label(self) -> Labels {
        let name = match self {
            Transport::Sse => "sse",
            Transport::WebSocket => "ws",
        };
        vec![("transport", name.to_owned())]
    }
}

/// The parts of an instance that call the store in the background or for `/metrics`, as
/// `store_errors` counts their failures.
#[derive(Clone, Copy, Debug)]
pub enum StoreCaller {
    /// The admitter loop: its lease check and its tick (label `source="admitter"`).
    Admitter,
    /// The hub: its pub/sub subscription and a show's snapshot (`source="hub"`).
    Hub,
    /// The watchdog's once-a-second look for shows the store lost (`source="watchdog"`).
    Watchdog,
    /// A `GET /metrics` scrape reading the per-show figures (`source="metrics"`).
    Metrics,
}

impl StoreCaller {
    const ALL: [StoreCaller; 4] = [
        StoreCaller::Admitter,
        StoreCaller::Hub,
        StoreCaller::Watchdog,
        StoreCaller::Metrics,
    ];

    fn label(self) -> Labels {
        let name = match self {
            StoreCaller::Admitter => "admitter",
            StoreCaller::Hub => "hub",
            StoreCaller::Watchdog => "watchdog",
            StoreCaller::Metrics => "metrics",
        };
        vec![("source", name.to_owned())]
    }
}

fn show_label(show: &ShowId) -> Labels {
    vec![("show", show.to_string())]
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("waiting_room");
        let connected = Family::<Labels, Gauge>::default();
        registry.register(
            "connected_fans",
            "Fans following a ticket on this instance",
            connected.clone(),
        );
        let pushed = Family::<Labels, Counter>::default();
        registry.register("pushed_messages", "Messages pushed to fans", pushed.clone());
        let hub_lag = Histogram::new(HUB_LAG_BOUNDS);
        registry.register(
            "hub_lag_milliseconds",
            "Time from a change in the store to every local fan's new state",
            hub_lag.clone(),
        );
        let admitted = Family::<Labels, Counter>::default();
        registry.register(
            "admissions",
            "Tickets admitted by this instance's admitter",
            admitted.clone(),
        );
        let presence_back = Counter::default();
        registry.register(
            "presence_back",
            "Fans passed over while away whom this instance saw come back",
            presence_back.clone(),
        );
        let joins = Family::<Labels, Counter>::default();
        registry.register(
            "joins",
            "Tickets handed out by this instance",
            joins.clone(),
        );
        let calls = Family::<Labels, Gauge>::default();
        registry.register(
            "calls",
            "The your-turn calls this instance sent since it started, per channel (web_push, \
             webhook) and outcome (sent, failed, dropped)",
            calls.clone(),
        );
        let queue_length = Family::<Labels, Gauge>::default();
        registry.register(
            "queue_length",
            "Fans waiting, per open show",
            queue_length.clone(),
        );
        let admitted_valid = Family::<Labels, Gauge>::default();
        registry.register(
            "admitted_valid",
            "Admissions not yet expired, per open show",
            admitted_valid.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "admitter_leader",
            "1 while this instance holds the admitter lease",
            leader.clone(),
        );
        let show_lost = Family::<Labels, Gauge>::default();
        registry.register(
            "show_lost",
            "1 while the store has lost this show's state (refused until an operator re-opens it)",
            show_lost.clone(),
        );
        let admitter_errors = Counter::default();
        registry.register(
            "admitter_errors",
            "Admission steps of one show that failed (store errors) or were refused",
            admitter_errors.clone(),
        );
        let store_up = Gauge::default();
        registry.register(
            "store_up",
            "1 while the store answered this instance's last check (every second, and every scrape)",
            store_up.clone(),
        );
        let store_errors = Family::<Labels, Counter>::default();
        registry.register(
            "store_errors",
            "Store calls that failed, by the part of this instance that made them",
            store_errors.clone(),
        );
        let pass_checks = Family::<Labels, Counter>::default();
        registry.register(
            "pass_checks",
            "Passes checked (GET .../pass, gateway mode, the page's cookie): valid (the store said so), cached (the store said so lately and the feed told of no end since), refused (a bad signature, or the store said no), or unverified (the store was unreachable; the signature alone let it through)",
            pass_checks.clone(),
        );
        let redemptions = Family::<Labels, Counter>::default();
        registry.register(
            "redemptions",
            "Admissions spent by a checkout outside (POST .../redeem), per show",
            redemptions.clone(),
        );
        let bypasses = Family::<Labels, Counter>::default();
        registry.register(
            "bypasses",
            "Fans let through without queueing by a bypass rule, per show and the rule's kind (token, network, link)",
            bypasses.clone(),
        );
        let codes = Family::<Labels, Counter>::default();
        registry.register(
            "access_codes",
            "Joins with an access code, per show and outcome: used (the fan joined the code's lane) or refused (unknown, used up, its lane closed)",
            codes.clone(),
        );
        let redis_failovers = Counter::default();
        registry.register(
            "redis_failovers",
            "Behind Sentinel: times this instance followed the primary to another node",
            redis_failovers.clone(),
        );
        let shed = Counter::default();
        registry.register(
            "shed_requests",
            "Fans' requests answered 503 at once because as many as the bound allows were at work already",
            shed.clone(),
        );
        let at_work = Gauge::default();
        registry.register(
            "crowd_requests_at_work",
            "Fans' requests at work on this instance now (bounded by crowd_requests_limit)",
            at_work.clone(),
        );
        let crowd_limit = Gauge::default();
        registry.register(
            "crowd_requests_limit",
            "How many fans' requests may be at work at once now: MAX_STORE_CALLS, less while answers are late",
            crowd_limit.clone(),
        );
        let lost_writes = Family::<Labels, Counter>::default();
        registry.register(
            "lost_writes",
            "Times this instance found a show's arrival counter lower than numbers handed out (a failover lost writes) and raised it, per show",
            lost_writes.clone(),
        );
        let lost_places = Family::<Labels, Counter>::default();
        registry.register(
            "lost_places",
            "Tickets handed out here whose place a failover lost (their fans are told LOST), per show",
            lost_places.clone(),
        );
        let gateway = Family::<Labels, Counter>::default();
        registry.register(
            "gateway_requests",
            "Gateway mode: requests sent on to the origin (proxied), sent to queue (queued), failed to reach it (unreachable), refused as unreadable (refused), purchases that spent their admission (spent) or found it spent (twin)",
            gateway.clone(),
        );
        // Every series from the start at 0: a rate over a series that appears only with the
        // first error shows nothing until then, and misses that first error.
        for caller in StoreCaller::ALL {
            let _ = store_errors.get_or_create(&caller.label());
        }
        let pass_check_counters =
            PassCheck::ALL.map(|outcome| pass_checks.get_or_create(&outcome.label()).clone());
        let gateway =
            GatewayOutcome::ALL.map(|outcome| gateway.get_or_create(&outcome.label()).clone());
        Metrics {
            calls,
            presence_back,
            pass_check_counters,
            redis_failovers,
            shed,
            at_work,
            crowd_limit,
            lost_writes,
            lost_places,
            gateway,
            redemptions,
            bypasses,
            codes,
            store_up,
            store_errors,
            show_lost,
            admitter_errors,
            registry,
            connected,
            pushed,
            hub_lag,
            hub_lag_buckets: Default::default(),
            hub_lag_sum_us: AtomicU64::new(0),
            admitted,
            joins,
            queue_length,
            admitted_valid,
            leader,
        }
    }
}

impl Metrics {
    /// A connection opened; the returned guard counts it until dropped.
    pub fn connected(&self, transport: Transport) -> ConnectedGuard {
        let gauge = self.connected.get_or_create(&transport.label()).clone();
        gauge.inc();
        ConnectedGuard(gauge)
    }

    /// One message went out to one fan.
    pub fn pushed(&self, transport: Transport) {
        self.pushed.get_or_create(&transport.label()).inc();
    }

    /// The calls sent so far over `channel`: `sent`, `failed`, `dropped`.
    pub fn set_calls(&self, channel: &'static str, sent: u64, failed: u64, dropped: u64) {
        for (outcome, n) in [("sent", sent), ("failed", failed), ("dropped", dropped)] {
            let labels = vec![
                ("channel", channel.to_owned()),
                ("outcome", outcome.to_owned()),
            ];
            self.calls.get_or_create(&labels).set(n as i64);
        }
    }

    /// A presence report of this instance's found `back` parked fans come back.
    pub fn presence_reported(&self, back: u64) {
        self.presence_back.inc_by(back);
    }

    /// A show change reached every local fan `lag_ms` after it happened.
    pub fn hub_lag(&self, lag_ms: u64) {
        self.hub_lag.observe(lag_ms as f64);
        let bucket = HUB_LAG_BOUNDS.partition_point(|&le| le < lag_ms as f64);
        self.hub_lag_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.hub_lag_sum_us
            .fetch_add(lag_ms.saturating_mul(1000), Ordering::Relaxed);
    }

    /// `hub_lag_milliseconds` as the report shows it: cumulative counts at each bound.
    pub fn push_latency(&self) -> PushLatency {
        let mut count = 0;
        let bounds = HUB_LAG_BOUNDS.iter().map(|&le| Some(le)).chain([None]);
        let buckets = bounds
            .zip(&self.hub_lag_buckets)
            .map(|(le_ms, n)| {
                count += n.load(Ordering::Relaxed);
                Bucket { le_ms, count }
            })
            .collect();
        PushLatency {
            count,
            sum_ms: self.hub_lag_sum_us.load(Ordering::Relaxed) as f64 / 1000.0,
            buckets,
        }
    }

    /// This instance's admitter let `count` fans of `show` in.
    pub fn admitted(&self, show: &ShowId, count: u64) {
        self.admitted.get_or_create(&show_label(show)).inc_by(count);
    }

    /// `GET …/pass` answered `outcome`.
    pub fn pass_check(&self, outcome: PassCheck) {
        self.pass_check_counters[outcome as usize].inc();
    }

    /// A checkout outside redeemed an admission of `show` through this instance.
    pub fn redeemed(&self, show: &ShowId) {
        self.redemptions.get_or_create(&show_label(show)).inc();
    }

    /// A bypass rule of `show`, of `kind`, let a fan through without queueing.
    pub fn bypassed(&self, show: &ShowId, kind: BypassKind) {
        self.bypasses
            .get_or_create(&vec![
                ("show", show.to_string()),
                ("kind", kind.as_str().to_owned()),
            ])
            .inc();
    }

    /// A join into a lane of `show` by its access code.
    pub fn code_used(&self, show: &ShowId) {
        self.code(show, "used");
    }

    /// An access code of a join to `show` was refused (unknown, used up, its lane closed).
    pub fn code_refused(&self, show: &ShowId) {
        self.code(show, "refused");
    }

    fn code(&self, show: &ShowId, outcome: &'static str) {
        self.codes
            .get_or_create(&vec![
                ("show", show.to_string()),
                ("outcome", outcome.to_owned()),
            ])
            .inc();
    }

    /// Behind Sentinel, the store followed the primary to another node.
    pub fn redis_failover(&self) {
        self.redis_failovers.inc();
    }

    /// How many times this instance followed the primary to another node so far.
    pub fn redis_failovers_followed(&self) -> u64 {
        self.redis_failovers.get()
    }

    /// A fan's request was shed: too many at work already.
    pub fn shed(&self) {
        self.shed.inc();
    }

    /// The bound on the fans' requests at work is `limit` now.
    pub fn crowd_limit(&self, limit: u32) {
        self.crowd_limit.set(i64::from(limit));
    }

    /// A fan's request went to work; the guard counts it until dropped.
    pub fn at_work(&self) -> ConnectedGuard {
        self.at_work.inc();
        ConnectedGuard(self.at_work.clone())
    }

    /// This instance found `show`'s arrival counter gone back, and raised it.
    pub fn lost_writes(&self, show: &ShowId) {
        self.lost_writes.get_or_create(&show_label(show)).inc();
    }

    /// `n` tickets handed out here for `show` lost their place in a failover.
    pub fn lost_places(&self, show: &ShowId, n: u64) {
        if n > 0 {
            self.lost_places.get_or_create(&show_label(show)).inc_by(n);
        }
    }

    /// A gateway request came to `outcome`.
    pub fn gateway(&self, outcome: GatewayOutcome) {
        self.gateway[outcome as usize].inc();
    }

    /// This instance handed out a ticket for `show`.
    pub fn joined(&self, show: &ShowId) {
        self.joins.get_or_create(&show_label(show)).inc();
    }

    /// Whether the store lost `show`'s state, for a show that is `open` (or lost): `/metrics`
    /// is scraped by more than the operator, and must not name shows nobody announced (a show
    /// made for next week is listed by the watchdog long before it opens).
    pub fn set_lost(&self, show: &ShowId, lost: bool, open: bool) {
        if lost || open {
            self.show_lost
                .get_or_create(&show_label(show))
                .set(i64::from(lost));
        } else {
            self.show_lost.remove(&show_label(show));
        }
    }

    /// A deleted show has no lost state to report.
    pub fn forget_lost(&self, show: &ShowId) {
        self.show_lost.remove(&show_label(show));
    }

    /// A deleted show's series go away with it.
    pub fn forget_show(&self, show: &ShowId) {
        let label = show_label(show);
        self.admitted.remove(&label);
        self.joins.remove(&label);
        self.show_lost.remove(&label);
    }

    /// One show's admission step failed.
    pub fn admitter_error(&self) {
        self.admitter_errors.inc();
    }

    /// Whether the store answered this instance's latest check.
    pub fn set_store_up(&self, up: bool) {
        self.store_up.set(i64::from(up));
    }

    /// A store call made by `caller` failed.
    pub fn store_error(&self, caller: StoreCaller) {
        self.store_errors.get_or_create(&caller.label()).inc();
    }

    /// Whether this instance is the admitter.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// The text exposition, with per-show gauges taken from `stats` of the open shows.
    pub fn render(&self, stats: &[ShowStats]) -> String {
        self.queue_length.clear();
        self.admitted_valid.clear();
        for s in stats {
            let label = vec![("show", s.show_id.clone())];
            self.queue_length
                .get_or_create(&label)
                .set(s.queue_length as i64);
            self.admitted_valid
                .get_or_create(&label)
                .set(s.admitted_valid as i64);
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// Keeps a connection (or a request at work) counted while it lives.
pub struct ConnectedGuard(Gauge);

impl Drop for ConnectedGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}
