//! Checking an on-sale from what it published: the draw recomputed from the revealed seed,
//! and the audit walked tick by tick. `waiting-room-client verify` runs this over
//! `GET …/draw` and every page of `GET …/audit`; the tests run it too.

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::{Permutation, commitment, draw_key, order_key, participants_digest};
use crate::model::{AuditKind, AuditRecord, DrawStage, DrawView, LANE_SPAN, lane_of};

/// What held, when everything did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The pre-queue's size, when the show was drawn.
    pub participants: Option<u64>,
    /// Ticks walked, and the arrivals they admitted.
    pub ticks: usize,
    /// Arrivals those ticks admitted, each once.
    pub admitted: u64,
    /// Orders recorded, and how many of them came with an admission.
    pub orders: u64,
    /// Of those, the ones by an arrival's admission (the rest came while the gate was lifted).
    pub orders_admitted: u64,
    /// Presence: arrivals passed over while away, those of them let in once back, and the
    /// places released after the hold.
    pub passed: u64,
    /// Of the arrivals admitted, those let in once back after being passed over.
    pub returned: u64,
    /// Places released, their fans away longer than the hold.
    pub expired: u64,
    /// Fans let through without queueing by a bypass rule, each admitted once.
    pub bypassed: u64,
    /// Fans who joined a lane with an access code (each lane kept first in, first out, and
    /// its share of every tick).
    pub coded: u64,
    /// What the audit says of the arrival asked about.
    pub arrival: Option<ArrivalReport>,
}

/// Where one arrival was drawn and when it was let in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrivalReport {
    /// The arrival number asked about (`--arrival N`).
    pub arrival: u64,
    /// Its drawn place, when it was in the pre-queue.
    pub drawn_place: Option<u64>,
    /// Its place in the queue: the drawn place, or its arrival number after the pre-queue.
    pub place: u64,
    /// The tick that admitted it: its record id and time (ms since the epoch).
    pub admitted: Option<(String, u64)>,
    /// The tick that passed it over while it was away, if one did (id, ms).
    pub passed: Option<(String, u64)>,
    /// The tick that released its place, away longer than the hold, if one did (id, ms).
    pub expired: Option<(String, u64)>,
}

/// The first thing that did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation(pub String);

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Violation {}

/// The most participants a draw may claim for `verify` to recompute its digest (a second
/// or two of hashing).
pub(super) const MAX_PARTICIPANTS: u64 = 100_000_000;

fn violation<T>(what: String) -> Result<T, Violation> {
    Err(Violation(what))
}

/// Checks the draw (when the show had one) and the audit: the seed matches its commitment,
/// the digest and key follow from what was revealed, the audit holds one draw of that many
/// participants, every tick admits at most its rate, at most one tick a second, in queue
/// order (drawn order for the pre-queue, arrival order after), nobody twice; with presence, a
/// tick skips only fans it passes over (away) besides those gone, a passed-over fan is let in
/// only as a return and a return only of a fan passed over, and a released place is never
/// let in; every order came with an admission of this show (or while the gate was lifted),
/// no admission spent twice (by orders or redemptions), and never more orders than the
/// stock in force.
pub fn verify(
    draw: Option<&DrawView>,
    records: &[AuditRecord],
    arrival: Option<u64>,
) -> Result<Verified, Violation> {
    let permutation = draw.map(check_draw).transpose()?;
    let published = draw.zip(permutation.as_ref());
    let mut walk = Walk::new(records.first().map(|r| r.epoch), arrival);
    for r in records {
        walk.record(r, published)?;
    }
    walk.finish(permutation.as_ref())
}

/// The audit read in order: what each record is checked against is what came before it.
struct Walk {
    /// The audit's epoch: every record carries the first one's.
    epoch: Option<u64>,
    /// The fencing token of the last tick or draw; tokens never go back.
    last_fence: u64,
    draws: u32,
    queue: Queue,
    sales: Sales,
}

/// The admissions so far: ticks, their seconds and the last queue place reached (let in or
/// passed over).
#[derive(Default)]
struct Queue {
    ticks: usize,
    admitted: u64,
    /// Each lane's last queue place reached (docs/lanes.md: first in, first out inside each
    /// lane; lane 0 is the general queue).
    last_key: HashMap<u8, u64>,
    /// Fans who joined a lane with an access code.
    coded: u64,
    /// A fan joined a lane (a code's use): every tick from then says how it split its places.
    lanes_seen: bool,
    /// Passed over while away and neither back nor released yet: the record that passed
    /// each over.
    parked: HashMap<u64, String>,
    /// Released places: the record that released each.
    released: HashMap<u64, String>,
    passed: u64,
    returned: u64,
    bypassed: u64,
    /// The highest arrival any record named so far.
    highest: u64,
    last_second: Option<u64>,
    /// Who was let in, for the orders and redemptions after.
    let_in: HashSet<u64>,
    /// The arrival asked about, and the ticks that admitted it, passed it over and released
    /// its place (id, ms).
    asked: Option<u64>,
    found: Option<(String, u64)>,
    asked_passed: Option<(String, u64)>,
    asked_expired: Option<(String, u64)>,
}

/// What orders and redemptions are checked against: the phase, the stock, and the
/// admissions already spent.
#[derive(Default)]
struct Sales {
    /// The gate was lifted (the show closed): orders need no admission.
    lifted: bool,
    stock: Option<u64>,
    spent: HashSet<u64>,
    orders: u64,
    orders_admitted: u64,
}

impl Walk {
    fn new(epoch: Option<u64>, arrival: Option<u64>) -> Self {
        Walk {
            epoch,
            last_fence: 0,
            draws: 0,
            queue: Queue {
                asked: arrival,
                ..Queue::default()
            },
            sales: Sales::default(),
        }
    }

    /// One record, checked against the audit so far and the published draw.
    fn record(
        &mut self,
        r: &AuditRecord,
        published: Option<(&DrawView, &Permutation)>,
    ) -> Result<(), Violation> {
        if Some(r.epoch) != self.epoch {
            return violation(format!("record {}: another epoch than the audit's", r.id));
        }
        // Orders, phases and stock carry no fencing token.
        if matches!(r.kind, AuditKind::Tick | AuditKind::Draw) {
            if r.fence < self.last_fence {
                return violation(format!(
                    "record {}: fencing token {} after {}",
                    r.id, r.fence, self.last_fence
                ));
            }
            self.last_fence = r.fence;
        }
        match r.kind {
            AuditKind::Phase => self.sales.lifted = r.phase == Some(crate::model::Phase::Closed),
            // Arrival numbers are raised past the lost ones, never reused: queue order holds.
            AuditKind::Lost => {}
            // The rate a schedule sets is the admitter's to keep; ticks record it.
            AuditKind::Event => {}
            AuditKind::Code => self.queue.code(r)?,
            AuditKind::Bypass => {
                if published.is_some() && self.draws == 0 {
                    return violation(format!("record {}: a bypass before the draw", r.id));
                }
                self.queue.bypass(r)?;
            }
            AuditKind::Stock => self.sales.stock = r.stock.filter(|&s| s > 0),
            AuditKind::Order => self.sales.order(r, &self.queue.let_in)?,
            AuditKind::Redeem => self.sales.redeem(r, &self.queue.let_in)?,
            AuditKind::Draw => self.draw(r, published)?,
            AuditKind::Tick => {
                if published.is_some() && self.draws == 0 {
                    return violation(format!("record {}: admissions before the draw", r.id));
                }
                self.queue.tick(r, published.map(|(_, p)| p))?;
            }
        }
        Ok(())
    }

    /// The draw's record: the only one, before any admission, of the published participants.
    fn draw(
        &mut self,
        r: &AuditRecord,
        published: Option<(&DrawView, &Permutation)>,
    ) -> Result<(), Violation> {
        self.draws += 1;
        let Some((d, p)) = published else {
            return violation(format!("record {}: a draw the show does not show", r.id));
        };
        if self.draws > 1 {
            return violation(format!("record {}: a second draw", r.id));
        }
        if self.queue.ticks > 0 {
            return violation(format!("record {}: the draw after admissions", r.id));
        }
        if r.participants != Some(p.len()) || r.participants_digest != d.participants_digest {
            return violation(format!(
                "record {}: the draw's participants differ from the published ones",
                r.id
            ));
        }
        Ok(())
    }

    /// The figures, once every record held; a published draw must be in the audit.
    fn finish(self, permutation: Option<&Permutation>) -> Result<Verified, Violation> {
        if permutation.is_some() && self.draws == 0 {
            return violation("the audit holds no draw".into());
        }
        let Queue {
            ticks,
            admitted,
            released,
            passed,
            returned,
            bypassed,
            coded,
            asked,
            found,
            asked_passed,
            asked_expired,
            ..
        } = self.queue;
        let arrival = asked.map(|a| ArrivalReport {
            arrival: a,
            drawn_place: permutation
                .filter(|p| (1..=p.len()).contains(&a))
                .map(|p| p.place(a)),
            place: order_key(a, permutation),
            admitted: found,
            passed: asked_passed,
            expired: asked_expired,
        });
        Ok(Verified {
            participants: permutation.map(Permutation::len),
            ticks,
            admitted,
            orders: self.sales.orders,
            orders_admitted: self.sales.orders_admitted,
            passed,
            returned,
            expired: released.len() as u64,
            bypassed,
            coded,
            arrival,
        })
    }
}

impl Queue {
    /// A bypass: its arrival let in at once, outside the queue's order, once. Its arrival is a
    /// fresh one, above every arrival the audit named before: a queued fan cannot be passed
    /// off as a bypass.
    fn bypass(&mut self, r: &AuditRecord) -> Result<(), Violation> {
        let Some(a) = r.arrival.filter(|&a| a > 0) else {
            return violation(format!("record {}: a bypass without its arrival", r.id));
        };
        if a <= self.highest {
            return violation(format!(
                "record {}: a bypass of arrival {a}, not above arrival {} named before",
                r.id, self.highest
            ));
        }
        self.highest = a;
        if !self.let_in.insert(a) {
            return violation(format!("record {}: arrival {a} admitted twice", r.id));
        }
        self.bypassed += 1;
        if self.asked == Some(a) {
            self.found = Some((r.id.clone(), r.at_ms));
        }
        Ok(())
    }

    /// A tick: at most one a second, at most its rate, nobody twice. In the order a tick
    /// works: the places it released, then the fans it let in once back (each passed over
    /// before), then the queue in order from the previous head, each fan let in or passed
    /// over (skipping only those gone).
    fn tick(
        &mut self,
        r: &AuditRecord,
        permutation: Option<&Permutation>,
    ) -> Result<(), Violation> {
        self.ticks += 1;
        let second = r.at_ms / 1000;
        if self.last_second.is_some_and(|s| second <= s) {
            return violation(format!("record {}: a second tick in one second", r.id));
        }
        self.last_second = Some(second);
        within_rate(r)?;
        let rate = u64::from(r.rate.unwrap_or(0));
        let passed = arrivals(r, "passed over", &r.passed, rate + LOOKED_PAST_PLACES)?;
        let returned = arrivals(r, "let in once back", &r.returned, rate)?;
        let expired = arrivals(r, "released", &r.expired, RELEASED_A_TICK)?;
        let heads = self.last_key.clone();
        let head = |a: u64| lane_start(&heads, a);
        // A bypass's arrival is the general queue's: only its arrivals are held against it.
        let named = r.admitted.iter().map(|&[_, b]| b);
        self.highest = named
            .chain(passed.iter().copied())
            .chain(expired.iter().copied())
            .filter(|&a| lane_of(a) == 0)
            .fold(self.highest, u64::max);
        for &a in &expired {
            self.release(r, a, order_key(a, permutation), head(a))?;
        }
        let admitted: HashSet<u64> = r.admitted.iter().flat_map(|&[a, b]| a..=b).collect();
        for &a in &returned {
            self.welcome_back(r, a, &admitted)?;
        }
        let returned: HashSet<u64> = returned.into_iter().collect();
        for &[from, to] in &r.admitted {
            if from > to || from == 0 {
                return violation(format!("record {}: a range {from}-{to}", r.id));
            }
            for a in from..=to {
                if !returned.contains(&a) {
                    self.in_turn(r, a, order_key(a, permutation), head(a))?;
                }
                if !self.let_in.insert(a) {
                    return violation(format!("record {}: arrival {a} admitted twice", r.id));
                }
                self.admitted += 1;
                if self.asked == Some(a) {
                    self.found = Some((r.id.clone(), r.at_ms));
                }
            }
        }
        for &a in &passed {
            let key = order_key(a, permutation);
            if admitted.contains(&a) {
                return violation(format!(
                    "record {}: arrival {a} both passed over and admitted",
                    r.id
                ));
            }
            if key <= head(a) || self.parked.contains_key(&a) {
                return violation(format!(
                    "record {}: arrival {a} (place {key}) passed over out of queue order or \
                     twice (after place {})",
                    r.id,
                    head(a)
                ));
            }
            self.parked.insert(a, r.id.clone());
            self.passed += 1;
            let last = self.last_key.entry(lane_of(a)).or_insert(key);
            *last = (*last).max(key);
            if self.asked == Some(a) {
                self.asked_passed = Some((r.id.clone(), r.at_ms));
            }
        }
        let lanes_seen = self.lanes_seen;
        if passed.is_empty() && admitted.is_empty() {
            return Ok(());
        }
        lanes_kept(r, &admitted, &returned, &passed, lanes_seen)?;
        Ok(())
    }

    /// A fan joined a lane with an access code: its arrival is the lane's, fresh, and the
    /// record names the code by its hash alone.
    fn code(&mut self, r: &AuditRecord) -> Result<(), Violation> {
        let (Some(a), Some(code), Some(_)) = (r.arrival, r.code.as_deref(), r.lane.as_deref())
        else {
            return violation(format!(
                "record {}: a code's use without its arrival, code or lane",
                r.id
            ));
        };
        if lane_of(a) == 0 || code.len() != 16 || !code.bytes().all(|b| b.is_ascii_hexdigit()) {
            return violation(format!(
                "record {}: a code's use must name a lane's arrival and 16 hex digits of the \
                 code's hash",
                r.id
            ));
        }
        self.coded += 1;
        self.lanes_seen = true;
        Ok(())
    }

    /// A place released: a fan passed over and still away, or one still queued (its place
    /// not yet reached); never one let in, never twice.
    fn release(&mut self, r: &AuditRecord, a: u64, key: u64, head: u64) -> Result<(), Violation> {
        if self.let_in.contains(&a) {
            return violation(format!(
                "record {}: arrival {a}'s place released after it was admitted",
                r.id
            ));
        }
        if let Some(at) = self.released.get(&a) {
            return violation(format!(
                "record {}: arrival {a}'s place released twice (first at record {at})",
                r.id
            ));
        }
        if self.parked.remove(&a).is_none() && key <= head {
            return violation(format!(
                "record {}: arrival {a} (place {key}) released while queued, though a tick \
                 went past its place (to place {head}) without passing it over",
                r.id
            ));
        }
        self.released.insert(a, r.id.clone());
        if self.asked == Some(a) {
            self.asked_expired = Some((r.id.clone(), r.at_ms));
        }
        Ok(())
    }

    /// A return: a fan passed over at an earlier tick, still holding its place, let in now.
    fn welcome_back(
        &mut self,
        r: &AuditRecord,
        a: u64,
        admitted: &HashSet<u64>,
    ) -> Result<(), Violation> {
        if !admitted.contains(&a) {
            return violation(format!(
                "record {}: arrival {a} returned but not admitted",
                r.id
            ));
        }
        if self.parked.remove(&a).is_some() {
            self.returned += 1;
            return Ok(());
        }
        match self.released.get(&a) {
            Some(at) => violation(format!(
                "record {}: arrival {a} let in once back, though its place was released at \
                 record {at}",
                r.id
            )),
            None => violation(format!(
                "record {}: a return of arrival {a}, who was never passed over (or was let \
                 in already)",
                r.id
            )),
        }
    }

    /// An admission in turn (not a return): the next place in queue order, never a fan
    /// passed over or released.
    fn in_turn(&mut self, r: &AuditRecord, a: u64, key: u64, head: u64) -> Result<(), Violation> {
        if let Some(at) = self.parked.get(&a) {
            return violation(format!(
                "record {}: arrival {a} admitted while away: passed over at record {at}, and \
                 not among this tick's returns",
                r.id
            ));
        }
        if let Some(at) = self.released.get(&a) {
            return violation(format!(
                "record {}: arrival {a} admitted after its place was released at record {at}",
                r.id
            ));
        }
        let last = lane_start(&self.last_key, a);
        if key <= last {
            if key < head && !self.let_in.contains(&a) {
                return violation(format!(
                    "record {}: arrival {a} (place {key}) admitted out of queue order: a tick \
                     went past its place (to place {head}) though it was neither passed over \
                     nor gone",
                    r.id
                ));
            }
            return violation(format!(
                "record {}: arrival {a} (place {key}) admitted out of queue order or twice \
                 (after place {last})",
                r.id
            ));
        }
        self.last_key.insert(lane_of(a), key);
        Ok(())
    }
}

/// The last place reached in arrival `a`'s lane (where the lane starts, before any).
fn lane_start(last: &HashMap<u8, u64>, a: u64) -> u64 {
    let lane = lane_of(a);
    last.get(&lane)
        .copied()
        .unwrap_or(u64::from(lane) * LANE_SPAN)
}

/// A tick of a show with lanes kept them (docs/lanes.md): its lane turns agree with whom it
/// let in and passed over, lane by lane, and no lane got less than its part of the places.
fn lanes_kept(
    r: &AuditRecord,
    admitted: &HashSet<u64>,
    returned: &HashSet<u64>,
    passed: &[u64],
    lanes_seen: bool,
) -> Result<(), Violation> {
    // Each slot's fans let in (in turn) and passed over, in one pass.
    let mut let_in = [0u64; 256];
    let mut passed_in = [0u64; 256];
    for &a in admitted.iter().filter(|a| !returned.contains(a)) {
        let_in[usize::from(lane_of(a))] += 1;
    }
    for &a in passed {
        passed_in[usize::from(lane_of(a))] += 1;
    }
    if r.lanes.is_empty() {
        // Once a show has lanes, every tick that reaches a fan says how it split its places.
        if lanes_seen || let_in[1..].iter().chain(&passed_in[1..]).any(|&n| n > 0) {
            return violation(format!(
                "record {}: a tick of a show with lanes that names no lanes",
                r.id
            ));
        }
        return Ok(());
    }
    let mut listed = [false; 256];
    for t in &r.lanes {
        let slot = usize::from(t.slot);
        listed[slot] = true;
        if let_in[slot] != t.let_in || let_in[slot] + passed_in[slot] != t.reached {
            return violation(format!(
                "record {}: lane {} is said to have let in {} and reached {}, but the tick \
                 let in {} and passed over {} of it",
                r.id, t.slot, t.let_in, t.reached, let_in[slot], passed_in[slot]
            ));
        }
    }
    if let Some(slot) = (0..256).find(|&s| !listed[s] && let_in[s] + passed_in[s] > 0) {
        return violation(format!(
            "record {}: fans of lane {slot}, which the tick's lanes leave out",
            r.id
        ));
    }
    match super::lanes::shortchanged(r.places.unwrap_or(0), &r.lanes, r.at_ms / 1000) {
        Some(why) => violation(format!("record {}: {why}", r.id)),
        None => Ok(()),
    }
}

/// A tick looks at no more than this many fans past the places it fills, however many are
/// away (`budget` in admit.lua): a tick passes over at most its rate and this many.
const LOOKED_PAST_PLACES: u64 = 1000;
/// A tick releases at most this many places (the `LIMIT` of admit.lua's expiries).
const RELEASED_A_TICK: u64 = 1000;

/// The arrivals of one of a tick's presence fields (`what` names it), checked: ranges that
/// go up from 1, at most `most` in all, so a hostile server cannot have them walked forever.
fn arrivals(
    r: &AuditRecord,
    what: &str,
    ranges: &[[u64; 2]],
    most: u64,
) -> Result<Vec<u64>, Violation> {
    let mut count = 0u64;
    for &[a, b] in ranges {
        let Some(n) = b.checked_sub(a).and_then(|d| d.checked_add(1)) else {
            return violation(format!("record {}: a range {a}-{b}", r.id));
        };
        if a == 0 {
            return violation(format!("record {}: a range {a}-{b}", r.id));
        }
        count = count.saturating_add(n);
    }
    if count > most {
        return violation(format!(
            "record {}: {count} {what} in one tick, more than the {most} a tick can",
            r.id
        ));
    }
    Ok(ranges.iter().flat_map(|&[a, b]| a..=b).collect())
}

/// A tick admits no more than its rate, itself no more than any show has. Ranges a hostile
/// server wrote may overflow: checked, and their sum bounded by the rate, so walking them is
/// at most `MAX_RATE` a tick.
fn within_rate(r: &AuditRecord) -> Result<(), Violation> {
    let mut count = 0u64;
    for &[a, b] in &r.admitted {
        let Some(n) = b.checked_sub(a).and_then(|d| d.checked_add(1)) else {
            return violation(format!("record {}: a range {a}-{b}", r.id));
        };
        count = count.saturating_add(n);
    }
    let rate = u64::from(r.rate.unwrap_or(0));
    if rate > u64::from(crate::model::MAX_RATE) {
        return violation(format!(
            "record {}: a rate of {rate}, above the most any show has",
            r.id
        ));
    }
    if count > rate {
        return violation(format!(
            "record {}: {count} admitted at a rate of {rate}",
            r.id
        ));
    }
    Ok(())
}

impl Sales {
    /// An order: with an admission given and not yet spent (none needed while the gate is
    /// lifted), and within the stock in force.
    fn order(&mut self, r: &AuditRecord, let_in: &HashSet<u64>) -> Result<(), Violation> {
        self.orders += 1;
        match r.arrival {
            Some(0) if self.lifted => {}
            Some(0) | None => {
                return violation(format!(
                    "record {}: an order with no admission while the gate was shut",
                    r.id
                ));
            }
            Some(a) if !let_in.contains(&a) => {
                return violation(format!(
                    "record {}: an order by arrival {a}, who was never admitted",
                    r.id
                ));
            }
            Some(a) => {
                if !self.spent.insert(a) {
                    return violation(format!(
                        "record {}: arrival {a}'s admission bought twice",
                        r.id
                    ));
                }
                self.orders_admitted += 1;
            }
        }
        if let Some(stock) = self.stock.filter(|&s| self.orders > s) {
            return violation(format!(
                "record {}: order {} of a stock of {stock}",
                r.id, self.orders
            ));
        }
        Ok(())
    }

    /// A redemption spends an admission given, once.
    fn redeem(&mut self, r: &AuditRecord, let_in: &HashSet<u64>) -> Result<(), Violation> {
        match r.arrival {
            Some(a) if a > 0 && let_in.contains(&a) => {
                if !self.spent.insert(a) {
                    return violation(format!(
                        "record {}: arrival {a}'s admission spent twice",
                        r.id
                    ));
                }
                Ok(())
            }
            _ => violation(format!(
                "record {}: a redemption of an admission never given",
                r.id
            )),
        }
    }
}

/// Recomputes a revealed draw; its permutation when everything follows from the seed.
fn check_draw(d: &DrawView) -> Result<Permutation, Violation> {
    if d.state != DrawStage::Drawn {
        return violation(format!("{} is not drawn yet", d.show_id));
    }
    let (Some(seed), Some(n), Some(digest), Some(key)) = (
        d.seed.as_deref(),
        d.participants,
        d.participants_digest.as_deref(),
        d.draw_key.as_deref(),
    ) else {
        return violation("the draw does not reveal its seed, participants and key".into());
    };
    if commitment(seed) != d.commitment {
        return violation(format!(
            "the revealed seed does not match the commitment {}",
            d.commitment
        ));
    }
    // The digest hashes every arrival: a hostile server claiming 2^50 would keep us busy
    // for days. No queue holds more than this.
    if n > MAX_PARTICIPANTS {
        return violation(format!(
            "the draw claims {n} participants, more than any pre-queue holds ({MAX_PARTICIPANTS})"
        ));
    }
    if participants_digest(n) != digest {
        return violation(format!("the participants digest is not that of 1 to {n}"));
    }
    let beacon = d.beacon_value.as_deref().unwrap_or("");
    if draw_key(seed, digest, beacon) != key {
        return violation("the draw key does not follow from seed, digest and beacon".into());
    }
    Permutation::new(key, n).ok_or_else(|| Violation("the draw key is not one".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Phase;

    fn tick(id: &str, second: u64, rate: u32, admitted: &[[u64; 2]]) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            fence: 1,
            rate: Some(rate),
            admitted: admitted.to_vec(),
            ..AuditRecord::new(AuditKind::Tick, second * 1000)
        }
    }

    fn order(id: &str, arrival: u64) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            arrival: Some(arrival),
            ..AuditRecord::new(AuditKind::Order, 0)
        }
    }

    fn phase(id: &str, phase: Phase) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            phase: Some(phase),
            ..AuditRecord::new(AuditKind::Phase, 0)
        }
    }

    fn stock(id: &str, seats: u64) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            stock: Some(seats),
            ..AuditRecord::new(AuditKind::Stock, 0)
        }
    }

    fn refused(records: &[AuditRecord]) -> String {
        verify(None, records, None).unwrap_err().0
    }

    #[test]
    fn orders_come_with_an_admission_once_each_and_within_the_stock() {
        let sale = [
            stock("s", 2),
            phase("p", Phase::Open),
            tick("t1", 1, 2, &[[1, 2]]),
            order("o1", 2),
            order("o2", 1),
        ];
        let v = verify(None, &sale, None).unwrap();
        assert_eq!((v.orders, v.orders_admitted, v.admitted), (2, 2, 2));
        // Nobody admitted by that number.
        let mut bad = sale.to_vec();
        bad[3] = order("o1", 7);
        assert!(refused(&bad).contains("arrival 7, who was never admitted"));
        // One admission, two orders.
        bad = sale.to_vec();
        bad[4] = order("o2", 2);
        assert!(refused(&bad).contains("bought twice"));
        // No admission while the gate was shut.
        bad = sale.to_vec();
        bad[4] = order("o2", 0);
        assert!(refused(&bad).contains("no admission while the gate was shut"));
        // More orders than seats.
        bad = sale.to_vec();
        bad[0] = stock("s", 1);
        assert!(refused(&bad).contains("order 2 of a stock of 1"));
    }

    #[test]
    fn ticks_keep_one_epoch_a_rising_fence_one_a_second_and_the_queue_order() {
        let run = [
            tick("t1", 1, 2, &[[1, 2]]),
            tick("t2", 2, 2, &[[3, 4]]),
            tick("t3", 3, 2, &[[5, 5]]),
        ];
        assert_eq!(verify(None, &run, None).unwrap().admitted, 5);
        let mut bad = run.to_vec();
        bad[1].epoch = 9;
        assert!(refused(&bad).contains("another epoch than the audit's"));
        bad = run.to_vec();
        bad[0].fence = 3;
        assert!(refused(&bad).contains("fencing token 1 after 3"));
        bad = run.to_vec();
        bad[1].at_ms = 1_500;
        assert!(refused(&bad).contains("a second tick in one second"));
        bad = run.to_vec();
        bad[2].admitted = vec![[2, 2]];
        assert!(refused(&bad).contains("out of queue order or twice"));
        // A draw in the audit of a show that published none.
        let draw = AuditRecord {
            id: "d".into(),
            participants: Some(3),
            ..AuditRecord::new(AuditKind::Draw, 0)
        };
        bad = run.to_vec();
        bad.insert(0, draw);
        assert!(refused(&bad).contains("a draw the show does not show"));
    }

    /// A tick with presence: `passed`, `returned` and `expired` besides `admitted`.
    fn away(
        id: &str,
        second: u64,
        admitted: &[[u64; 2]],
        passed: &[[u64; 2]],
        returned: &[[u64; 2]],
        expired: &[[u64; 2]],
    ) -> AuditRecord {
        AuditRecord {
            passed: passed.to_vec(),
            returned: returned.to_vec(),
            expired: expired.to_vec(),
            ..tick(id, second, 2, admitted)
        }
    }

    /// Eight fans, two places a tick: 1 and 4 are away when reached, 1 comes back, 4 and 9
    /// (still queued) are released.
    fn presence_sale() -> Vec<AuditRecord> {
        vec![
            phase("p", Phase::Open),
            away("t1", 1, &[[2, 3]], &[[1, 1]], &[], &[]),
            away("t2", 2, &[[5, 6]], &[[4, 4]], &[], &[]),
            // Back: 1 goes first, then the next in turn.
            away("t3", 3, &[[1, 1], [7, 7]], &[], &[[1, 1]], &[]),
            away("t4", 4, &[[8, 8], [10, 10]], &[], &[], &[[4, 4], [9, 9]]),
            // A tick that only passes someone over is in the audit too.
            away("t5", 5, &[], &[[11, 11]], &[], &[]),
            order("o1", 1),
        ]
    }

    #[test]
    fn a_sale_with_passes_returns_and_expiries_verifies() {
        let v = verify(None, &presence_sale(), Some(4)).unwrap();
        assert_eq!(
            (
                v.admitted,
                v.passed,
                v.returned,
                v.expired,
                v.orders_admitted
            ),
            (8, 3, 1, 2, 1)
        );
        let four = v.arrival.unwrap();
        assert_eq!(four.passed, Some(("t2".into(), 2000)));
        assert_eq!(four.expired, Some(("t4".into(), 4000)));
        assert_eq!(four.admitted, None);
        let one = verify(None, &presence_sale(), Some(1))
            .unwrap()
            .arrival
            .unwrap();
        assert_eq!(one.passed, Some(("t1".into(), 1000)));
        assert_eq!(one.admitted, Some(("t3".into(), 3000)));
        // The fields read as the audit's JSON names them, and records without them as ever.
        let json = serde_json::to_value(&presence_sale()[3]).unwrap();
        assert_eq!(json["returned"], serde_json::json!([[1, 1]]));
        assert!(json.get("passed").is_none(), "{json}");
    }

    #[test]
    fn an_away_fan_admitted_without_a_return_fails() {
        let mut bad = presence_sale();
        bad[3].returned.clear();
        assert_eq!(
            refused(&bad),
            "record t3: arrival 1 admitted while away: passed over at record t1, and not \
             among this tick's returns"
        );
        // Nor once its place was released.
        bad = presence_sale();
        bad.push(away("t6", 6, &[[9, 9]], &[], &[], &[]));
        assert_eq!(
            refused(&bad),
            "record t6: arrival 9 admitted after its place was released at record t4"
        );
        bad = presence_sale();
        bad.push(away("t6", 6, &[[4, 4]], &[], &[[4, 4]], &[]));
        assert!(
            refused(&bad).contains("arrival 4 let in once back, though its place was released"),
            "{}",
            refused(&bad)
        );
        // Passed over and let in by the same tick.
        bad = presence_sale();
        bad[1].admitted = vec![[1, 2]];
        assert!(refused(&bad).contains("arrival 1 both passed over and admitted"));
    }

    #[test]
    fn a_later_arrival_admitted_over_a_fan_neither_passed_nor_gone_fails() {
        // Skipping 1 at t1 says it was gone; admitting it at t2 says it was not.
        let mut bad = presence_sale();
        bad[1].passed.clear();
        assert_eq!(
            refused(&bad),
            "record t3: a return of arrival 1, who was never passed over (or was let in \
             already)"
        );
        bad[3].returned.clear();
        assert_eq!(
            refused(&bad),
            "record t3: arrival 1 (place 1) admitted out of queue order: a tick went past its \
             place (to place 6) though it was neither passed over nor gone"
        );
        // Its place released while it still stood in line behind a later admission.
        bad = presence_sale();
        bad[2].passed.clear();
        assert!(
            refused(&bad).contains(
                "arrival 4 (place 4) released while queued, though a tick went past its place"
            ),
            "{}",
            refused(&bad)
        );
        // Passing over a place already reached is no pass.
        bad = presence_sale();
        bad[2].passed = vec![[3, 3]];
        assert!(refused(&bad).contains("arrival 3 (place 3) passed over out of queue order"));
    }

    #[test]
    fn a_return_of_a_fan_never_passed_over_fails() {
        let mut bad = presence_sale();
        bad[3] = away("t3", 3, &[[7, 8]], &[], &[[7, 7]], &[]);
        assert_eq!(
            refused(&bad),
            "record t3: a return of arrival 7, who was never passed over (or was let in \
             already)"
        );
        // A return is one of the tick's admissions.
        bad = presence_sale();
        bad[3].admitted = vec![[7, 8]];
        assert_eq!(
            refused(&bad),
            "record t3: arrival 1 returned but not admitted"
        );
        // Back twice.
        bad = presence_sale();
        bad.push(away("t6", 6, &[[1, 1]], &[], &[[1, 1]], &[]));
        assert!(refused(&bad).contains("a return of arrival 1, who was never passed over"));
    }

    #[test]
    fn a_hostile_presence_field_is_refused_without_walking_it() {
        let wraps = [away("t", 1, &[], &[[1, u64::MAX]], &[], &[])];
        assert!(refused(&wraps).contains("passed over in one tick, more than the 1002"));
        let zero = [away("t", 1, &[], &[], &[], &[[0, 3]])];
        assert!(refused(&zero).contains("a range 0-3"));
        let reversed = [away("t", 1, &[], &[], &[[5, 2]], &[])];
        assert!(refused(&reversed).contains("a range 5-2"));
    }

    #[test]
    fn the_bounds_are_those_of_the_admission_script() {
        let script = include_str!("../store/queue/admit.lua");
        assert!(script.contains(&format!("local budget = places + {LOOKED_PAST_PLACES}")));
        assert!(script.contains(&format!("'LIMIT', 0, {RELEASED_A_TICK})")));
    }

    #[test]
    fn a_redemption_spends_an_admission_given_once() {
        let redeem = |id: &str, arrival| AuditRecord {
            id: id.into(),
            arrival: Some(arrival),
            ..AuditRecord::new(AuditKind::Redeem, 0)
        };
        let sale = [
            phase("p", Phase::Open),
            tick("t1", 1, 2, &[[1, 2]]),
            redeem("r1", 1),
            order("o2", 2),
        ];
        assert_eq!(verify(None, &sale, None).unwrap().orders, 1);
        let mut bad = sale.to_vec();
        bad[3] = order("o2", 1);
        assert!(refused(&bad).contains("bought twice"));
        bad = sale.to_vec();
        bad[3] = redeem("r2", 1);
        assert!(refused(&bad).contains("spent twice"));
        bad = sale.to_vec();
        bad[2] = redeem("r1", 9);
        assert!(refused(&bad).contains("never given"));
    }

    #[test]
    fn orders_without_an_admission_only_while_the_gate_is_lifted() {
        let lifted = [phase("c", Phase::Closed), order("o1", 0), order("o2", 0)];
        assert_eq!(verify(None, &lifted, None).unwrap().orders, 2);
        let shut_again = [
            phase("c", Phase::Closed),
            phase("p", Phase::Paused),
            order("o", 0),
        ];
        assert!(refused(&shut_again).contains("gate was shut"));
    }

    #[test]
    fn a_hostile_audit_is_refused_without_walking_it() {
        // A range to the end of u64 wraps in release builds, and would be walked forever.
        let wraps = [tick("t", 1, 10, &[[1, u64::MAX]])];
        assert!(
            refused(&wraps).contains("admitted at a rate of 10"),
            "{}",
            refused(&wraps)
        );
        let reversed = [tick("t", 1, 10, &[[5, 2]])];
        assert!(refused(&reversed).contains("a range 5-2"));
        let huge_rate = [tick("t", 1, u32::MAX, &[[1, u64::MAX - 1]])];
        assert!(refused(&huge_rate).contains("above the most any show has"));
    }

    /// A tick of a show with a presale lane (slot 1, 80 %) and the general queue (20 %).
    fn lane_tick(id: &str, second: u64, presale: &[[u64; 2]], general: &[[u64; 2]]) -> AuditRecord {
        let count = |r: &[[u64; 2]]| r.iter().map(|[a, b]| b - a + 1).sum::<u64>();
        let mut t = tick(id, second, 10, &[presale, general].concat());
        t.places = Some(10);
        t.lanes = vec![
            crate::model::LaneTurn {
                slot: 1,
                share: Some(80),
                queued: 100,
                let_in: count(presale),
                reached: count(presale),
            },
            crate::model::LaneTurn {
                slot: 0,
                share: Some(20),
                queued: 100,
                let_in: count(general),
                reached: count(general),
            },
        ];
        t
    }

    fn code_use(id: &str, arrival: u64) -> AuditRecord {
        AuditRecord {
            id: id.into(),
            arrival: Some(arrival),
            code: Some("0123456789abcdef".into()),
            lane: Some("presale".into()),
            ..AuditRecord::new(AuditKind::Code, 0)
        }
    }

    #[test]
    fn lanes_first_in_first_out_at_their_shares_verify_and_a_broken_one_does_not() {
        let l = LANE_SPAN;
        let honest = [
            code_use("c1", l + 1),
            lane_tick("t1", 1, &[[l + 1, l + 8]], &[[1, 2]]),
            lane_tick("t2", 2, &[[l + 9, l + 16]], &[[3, 4]]),
        ];
        let v = verify(None, &honest, None).expect("fair");
        assert_eq!((v.coded, v.admitted), (1, 20));
        // A lane's later arrivals before an earlier one, let in after them.
        let mut bad = honest.to_vec();
        bad[2] = lane_tick("t2", 2, &[[l + 10, l + 17]], &[[3, 4]]);
        let mut late = lane_tick("t3", 3, &[[l + 9, l + 9]], &[[5, 13]]);
        late.lanes[0].queued = 1;
        bad.push(late);
        assert!(
            refused(&bad).contains("out of queue order"),
            "{}",
            refused(&bad)
        );
        // The presale lane given 2 places of 10 while it held fans: its share broken.
        let mut bad = honest.clone();
        bad[2] = lane_tick("t2", 2, &[[l + 9, l + 10]], &[[3, 10]]);
        assert!(
            refused(&bad).contains("lane 1 let in 2"),
            "{}",
            refused(&bad)
        );
        // Lane figures that disagree with whom the tick let in.
        let mut bad = honest.clone();
        bad[1].lanes[0].let_in = 7;
        assert!(
            refused(&bad).contains("is said to have let in 7"),
            "{}",
            refused(&bad)
        );
        // Lanes left out of a tick of a show with lanes.
        let mut bad = honest.clone();
        bad[2].lanes.clear();
        assert!(
            refused(&bad).contains("names no lanes"),
            "{}",
            refused(&bad)
        );
        // A code's use that names a general arrival.
        let mut bad = honest.clone();
        bad[0] = code_use("c1", 5);
        assert!(
            refused(&bad).contains("a lane's arrival"),
            "{}",
            refused(&bad)
        );
    }

    #[test]
    fn hostile_lane_turns_are_refused_when_read() {
        use crate::model::LaneTurn;
        assert!(LaneTurn::parse_all("1:80:5:4:4,0:20:5:1:1").is_some());
        assert!(
            LaneTurn::parse_all("1:80:5:4:4,1:20:5:1:1").is_none(),
            "a slot twice"
        );
        let many: Vec<String> = (0..300).map(|i| format!("{}:p:1:1:1", i % 256)).collect();
        assert!(LaneTurn::parse_all(&many.join(",")).is_none());
        assert!(LaneTurn::parse_all("1:80:5:4").is_none());
        assert!(LaneTurn::parse_all("1:80:5:4:4:9").is_none());
        assert!(LaneTurn::parse_all("300:80:5:4:4").is_none());
    }
}
