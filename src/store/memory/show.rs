//! One show's state in the embedded store, and the arithmetic the Lua scripts do on theirs
//! (`prelude.lua`, `admit.lua`), done the same way here.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use uuid::Uuid;

use crate::draw::Permutation;
use crate::model::{EndReason, Pace, Phase, ShowId, TicketState};
use crate::store::{
    AuditKind, AuditRecord, DrawPhase, Drawn, EventKind, ShowEvent, ShowMeta, StoreSettings,
    new_epoch, pace_of, position,
};

/// One show an operator made. This store never loses state, so a show is never lost here.
pub(super) struct Show {
    pub(super) epoch: u64,
    /// Where the on-sale stands; the admitter serves it while `Open`.
    pub(super) phase: Phase,
    /// Why it ended, when the operator said.
    pub(super) end_reason: Option<EndReason>,
    /// Seats for sale.
    pub(super) stock: Option<u64>,
    /// The last sequence handed out.
    pub(super) arrival: u64,
    /// The highest sequence ever admitted.
    pub(super) head: u64,
    pub(super) version: u64,
    /// The settings as the operator sent them, laid over each other (`configure.lua`'s).
    pub(super) settings: crate::model::ShowSettings,
    /// The operator's rate and buyer cap, when the show has its own.
    pub(super) rate: Option<u32>,
    pub(super) cap: Option<u32>,
    /// The newest fencing token an admission step came with.
    pub(super) fence: u64,
    /// The second (of `now_ms`) last served.
    pub(super) last_second: Option<u64>,
    /// The waiting tickets by sequence, and back.
    pub(super) queue: BTreeMap<u64, Uuid>,
    pub(super) seq_of: HashMap<Uuid, u64>,
    /// Sequences above `head` that left early.
    pub(super) left: BTreeSet<u64>,
    /// Admitted ticket → when its admission runs out (ms).
    pub(super) admitted: HashMap<Uuid, u64>,
    /// Admitted ticket → the arrival number it was admitted under (the audit's name for it).
    pub(super) admitted_arrival: HashMap<Uuid, u64>,
    /// Admitted tickets that have not ordered yet: the active buyers (as `admissions` in Redis).
    pub(super) buying: HashSet<Uuid>,
    /// holdId → (order, fingerprint of the request that placed it).
    pub(super) holds: HashMap<String, (Uuid, String)>,
    /// Admissions that bought.
    pub(super) spent: HashSet<Uuid>,
    /// Idempotency-Key → the ticket joined under it.
    pub(super) idem: HashMap<String, Uuid>,
    /// How long admissions held their place (seconds, smoothed; `None`: none ended yet, the
    /// whole TTL), and its variance.
    pub(super) done_n: u64,
    pub(super) done_sum: f64,
    /// Admissions running, and the sum of their admission times (s).
    pub(super) run_n: u64,
    pub(super) run_sum: f64,
    /// The last tick offered no place: every place was taken.
    pub(super) full: bool,
    /// The show's own arrival window.
    pub(super) window: Option<Duration>,
    /// Admissions released untaken.
    pub(super) released: u64,
    /// Admitted ticket → when its fan last showed it was there (ms).
    pub(super) seen: HashMap<Uuid, u64>,
    /// Following the checkout: its health URL, the lowest rate, the rate in force.
    pub(super) health_url: Option<String>,
    pub(super) floor: u32,
    pub(super) pace: Option<u32>,
    /// A rate change announced ahead.
    pub(super) change: Option<crate::store::AnnouncedRate>,
    /// The fair start, when the show was given an opening time.
    pub(super) schedule: Option<Scheduled>,
    /// The audit: every tick that admitted someone, and the draw.
    pub(super) audit: Vec<AuditRecord>,
    /// Leading zero bits a join's proof of work must have (0: none).
    pub(super) challenge_bits: u32,
    /// Challenges spent on joins → until when they could have been used (ms).
    pub(super) spent_challenges: HashMap<String, u64>,
}

/// A scheduled show's opening and draw.
pub(super) struct Scheduled {
    pub(super) opens_at_ms: u64,
    pub(super) seed: String,
    pub(super) commitment: String,
    pub(super) beacon: Option<String>,
    pub(super) beacon_value: Option<String>,
    /// The pre-queue's size once it closed.
    pub(super) closed: Option<u64>,
    pub(super) drawn: Option<(Permutation, Drawn)>,
}

impl Show {
    /// A show nobody joined yet, closed, under a new epoch.
    pub(super) fn new() -> Show {
        Show {
            epoch: new_epoch(),
            phase: Phase::Pending,
            end_reason: None,
            settings: Default::default(),
            stock: None,
            arrival: 0,
            head: 0,
            version: 0,
            rate: None,
            cap: None,
            fence: 0,
            last_second: None,
            queue: BTreeMap::new(),
            seq_of: HashMap::new(),
            left: BTreeSet::new(),
            admitted: HashMap::new(),
            admitted_arrival: HashMap::new(),
            buying: HashSet::new(),
            holds: HashMap::new(),
            spent: HashSet::new(),
            idem: HashMap::new(),
            done_n: 0,
            done_sum: 0.0,
            run_n: 0,
            run_sum: 0.0,
            full: false,
            window: None,
            released: 0,
            seen: HashMap::new(),
            health_url: None,
            floor: 1,
            pace: None,
            change: None,
            schedule: None,
            audit: Vec::new(),
            challenge_bits: 0,
            spent_challenges: HashMap::new(),
        }
    }

    /// Where the show's draw stands.
    pub(super) fn phase(&self) -> DrawPhase {
        match &self.schedule {
            None => DrawPhase::None,
            Some(Scheduled {
                drawn: Some((p, _)),
                ..
            }) => DrawPhase::Drawn(p.clone()),
            Some(Scheduled {
                closed: Some(n), ..
            }) => DrawPhase::Closed { participants: *n },
            Some(s) => DrawPhase::PreQueue {
                opens_at_ms: s.opens_at_ms,
            },
        }
    }

    /// Appends an audit record, with an id in Redis stream form (`ms-n`).
    pub(super) fn record(&mut self, mut record: AuditRecord) {
        let n = self.audit.len();
        record.id = format!("{}-{n}", record.at_ms);
        record.epoch = self.epoch;
        self.audit.push(record);
    }

    /// A tick's audit record.
    pub(super) fn tick_record(at_ms: u64, fence: u64, rate: u32, arrivals: &[u64]) -> AuditRecord {
        AuditRecord {
            fence,
            rate: Some(rate),
            admitted: crate::store::to_ranges(arrivals),
            ..AuditRecord::new(AuditKind::Tick, at_ms)
        }
    }

    /// The pace, as `pace()` in `prelude.lua` works it out: the rate in force, or with a cap,
    /// cap over the mean time a place stays taken.
    pub(super) fn pace(&self, settings: &StoreSettings, now_ms: u64) -> Pace {
        let rate = self.rate(settings);
        let cap = self.cap(settings);
        let (flow, spread) = if cap == 0 {
            (f64::from(rate), 0.0)
        } else {
            let (mean, var) = self.hold(settings, now_ms);
            // A place freed is filled at the next tick: half a second later, on average.
            let mean = mean + 0.5;
            let flow = f64::from(rate).min(f64::from(cap) / mean);
            (flow, flow * var.sqrt() / mean / 2.0)
        };
        Pace {
            change: self.change.map(|c| crate::model::RateChange {
                in_ms: c.at_ms.saturating_sub(now_ms),
                rate: c.rate,
            }),
            tick_sec: self.last_second,
            stock_left: self.stock_left(),
            reason: self.end_reason.filter(|_| self.on_sale() == Phase::Ended),
            ..pace_of(
                rate,
                (flow * 1000.0).round() as u64,
                (spread * 1000.0).round() as u64,
                self.on_sale(),
                self.full,
            )
        }
    }

    /// Where the on-sale stands, as `phase()` in `prelude.lua`.
    pub(super) fn on_sale(&self) -> Phase {
        self.phase
    }

    /// The admitter serves it.
    pub(super) fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// Seats still for sale, with a stock.
    pub(super) fn stock_left(&self) -> Option<u64> {
        self.stock
            .map(|stock| stock.saturating_sub(self.holds.len() as u64))
    }

    /// Puts the on-sale in `phase` (paused, closed, ended: admission stops in each), as
    /// `enter_phase` in `prelude.lua`; the event to publish when that changed anything.
    pub(super) fn enter(
        &mut self,
        show: &ShowId,
        phase: Phase,
        reason: Option<EndReason>,
        settings: &StoreSettings,
        now_ms: u64,
    ) -> Option<ShowEvent> {
        if self.phase == phase && self.end_reason == reason {
            return None;
        }
        self.phase = phase;
        self.end_reason = reason;
        self.record(AuditRecord {
            phase: Some(phase),
            ..AuditRecord::new(AuditKind::Phase, now_ms)
        });
        self.version += 1;
        Some(self.event(show, EventKind::Rate, settings, now_ms))
    }

    /// The mean hold and a variance for the range, as `hold()` in `prelude.lua`: time held
    /// (ended holds and the ages of running admissions) over admissions ended, with the prior
    /// (half the longest an untaken admission holds: the arrival window, or the TTL) weighing
    /// as one turnover of the cap.
    fn hold(&self, settings: &StoreSettings, now_ms: u64) -> (f64, f64) {
        // The prior's longest hold: an untaken admission goes after the arrival window, when
        // a cap makes that release places and it is shorter than the TTL.
        let window = self.window.unwrap_or(settings.arrival_window);
        let longest =
            if self.cap(settings) > 0 && !window.is_zero() && window < settings.admission_ttl {
                window
            } else {
                settings.admission_ttl
            }
            .as_secs_f64();
        let k = f64::from(self.cap(settings).max(1));
        let running = (self.run_n as f64 * now_ms as f64 / 1000.0 - self.run_sum).max(0.0);
        let done = self.done_n as f64;
        let mean = (k * longest / 2.0 + self.done_sum + running) / (k + done);
        (mean, longest * longest / 12.0 * k / (k + done))
    }

    /// An admission was made at `at_ms`.
    pub(super) fn admitted_at(&mut self, at_ms: u64) {
        self.run_n += 1;
        self.run_sum += at_ms as f64 / 1000.0;
    }

    /// An admission made at `since_ms` ended at `now_ms` (as `held` in `prelude.lua`).
    pub(super) fn held(&mut self, since_ms: u64, now_ms: u64) {
        self.done_n += 1;
        self.done_sum += now_ms.saturating_sub(since_ms) as f64 / 1000.0;
        self.run_n = self.run_n.saturating_sub(1);
        self.run_sum -= since_ms as f64 / 1000.0;
    }

    /// `ticket`'s admission ends now (bought, given back, released): its hold is measured.
    pub(super) fn ended(&mut self, ticket: Uuid, now_ms: u64, settings: &StoreSettings) {
        if !self.buying.contains(&ticket) {
            return;
        }
        let ttl_ms = settings.admission_ttl.as_millis() as u64;
        if let Some(&until) = self.admitted.get(&ticket) {
            self.held(until.saturating_sub(ttl_ms), now_ms);
        }
    }

    /// What [`Shows::show`](crate::store::Shows::show) answers.
    pub(super) fn meta(&self) -> ShowMeta {
        ShowMeta {
            epoch: self.epoch,
            open: self.is_open(),
            lost: false,
        }
    }

    /// Whether `ticket` holds an admission that has not run out.
    /// Spends the admission of `ticket` (an order or a redemption): done buying, its place
    /// goes to the next fan in line, and the ticket answers as admitted no more (and gets no
    /// pass again). Its arrival number (0 when unknown).
    pub(super) fn spend(&mut self, ticket: Uuid, now_ms: u64, settings: &StoreSettings) -> u64 {
        self.spent.insert(ticket);
        self.ended(ticket, now_ms, settings);
        self.buying.remove(&ticket);
        self.admitted.remove(&ticket);
        self.seen.remove(&ticket);
        self.admitted_arrival.remove(&ticket).unwrap_or(0)
    }

    pub(super) fn admitted_now(&self, ticket: Uuid, now_ms: u64) -> bool {
        self.admitted
            .get(&ticket)
            .is_some_and(|&until| until > now_ms)
    }

    /// The rate in force: the configured one, or less while the pace follows the checkout.
    pub(super) fn rate(&self, settings: &StoreSettings) -> u32 {
        let configured = self.configured_rate(settings);
        self.pace.map_or(configured, |p| p.min(configured))
    }

    /// The operator's rate (or the server's default).
    pub(super) fn configured_rate(&self, settings: &StoreSettings) -> u32 {
        self.rate.unwrap_or(settings.default_rate)
    }

    /// The buyer cap in force; 0: none.
    pub(super) fn cap(&self, settings: &StoreSettings) -> u32 {
        self.cap.unwrap_or(settings.max_active_buyers)
    }

    /// Admitted, not expired, not yet bought.
    pub(super) fn active(&self, now_ms: u64) -> u64 {
        self.buying
            .iter()
            .filter(|t| self.admitted.get(t).is_some_and(|&until| until > now_ms))
            .count() as u64
    }

    /// Where `ticket` stands, and its sequence while it waits.
    pub(super) fn state(&self, ticket: Uuid, now_ms: u64) -> (TicketState, Option<u64>) {
        if let Some(&seq) = self.seq_of.get(&ticket) {
            let phase = self.phase();
            let Some(key) = phase.order_key(seq) else {
                let state = TicketState::PreQueue {
                    arrival: seq,
                    opens_in_ms: phase.opens_in_ms(now_ms),
                };
                return (state, Some(seq));
            };
            // rank + 1 without walking the queue: everything up to `head` is gone, and so are
            // the early leavers between `head` and the ticket's place.
            let gone = self.left.range(self.head + 1..key).count() as u64;
            let position = position(key, self.head, gone);
            let state = TicketState::Waiting {
                position,
                arrival: seq,
            };
            return (state, Some(seq));
        }
        match self.admitted.get(&ticket) {
            Some(&until) if until > now_ms => (
                TicketState::Admitted {
                    expires_in_ms: until - now_ms,
                },
                None,
            ),
            _ => (TicketState::Unknown, None),
        }
    }

    /// The event that publishes the show's state now, as `prelude.lua` builds it.
    pub(super) fn event(
        &self,
        show: &ShowId,
        kind: EventKind,
        settings: &StoreSettings,
        now_ms: u64,
    ) -> ShowEvent {
        let pace = self.pace(settings, now_ms);
        ShowEvent {
            show: show.clone(),
            epoch: self.epoch,
            version: self.version,
            kind,
            head: self.head,
            left: None,
            rate: pace.rate,
            flow_milli: pace.flow_milli,
            spread_milli: pace.spread_milli,
            open: self.is_open(),
            phase: pace.phase,
            reason: pace.reason,
            stock_left: pace.stock_left,
            full: self.full,
            admitted: 0,
            ttl_ms: settings.admission_ttl.as_millis() as u64,
            at_ms: now_ms,
            change_in_ms: pace.change.map(|c| c.in_ms),
            change_rate: pace.change.map(|c| c.rate),
            tick_sec: pace.tick_sec,
            ended: Vec::new(),
        }
    }

    /// The event that tells every hub `ticket`'s admission ended, as `publish_ended` in
    /// `prelude.lua` does.
    pub(super) fn ended_event(
        &self,
        show: &ShowId,
        ticket: Uuid,
        settings: &StoreSettings,
        now_ms: u64,
    ) -> ShowEvent {
        ShowEvent {
            ended: vec![ticket],
            ..self.event(show, EventKind::Spent, settings, now_ms)
        }
    }
}
