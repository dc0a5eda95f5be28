//! Checking an on-sale from what it published: the draw recomputed from the revealed seed,
//! and the audit walked tick by tick. `waiting-room-client verify` runs this over
//! `GET …/draw` and every page of `GET …/audit`; the tests run it too.

use std::collections::HashSet;
use std::fmt;

use super::{Permutation, commitment, draw_key, order_key, participants_digest};
use crate::model::{AuditKind, AuditRecord, DrawStage, DrawView};

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
/// order (drawn order for the pre-queue, arrival order after), nobody twice; every order came
/// with an admission of this show (or while the gate was lifted), no admission spent twice
/// (by orders or redemptions),
/// and never more orders than the stock in force.
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

/// The admissions so far: ticks, their seconds and the last queue place let in.
#[derive(Default)]
struct Queue {
    ticks: usize,
    admitted: u64,
    last_key: u64,
    last_second: Option<u64>,
    /// Who was let in, for the orders and redemptions after.
    let_in: HashSet<u64>,
    /// The arrival asked about, and the tick that admitted it (id, ms).
    asked: Option<u64>,
    found: Option<(String, u64)>,
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
            asked,
            found,
            ..
        } = self.queue;
        let arrival = asked.map(|a| ArrivalReport {
            arrival: a,
            drawn_place: permutation
                .filter(|p| (1..=p.len()).contains(&a))
                .map(|p| p.place(a)),
            place: order_key(a, permutation),
            admitted: found,
        });
        Ok(Verified {
            participants: permutation.map(Permutation::len),
            ticks,
            admitted,
            orders: self.sales.orders,
            orders_admitted: self.sales.orders_admitted,
            arrival,
        })
    }
}

impl Queue {
    /// A tick: at most one a second, at most its rate, in queue order, nobody twice.
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
        for &[from, to] in &r.admitted {
            if from > to || from == 0 {
                return violation(format!("record {}: a range {from}-{to}", r.id));
            }
            for a in from..=to {
                let key = order_key(a, permutation);
                if key <= self.last_key {
                    return violation(format!(
                        "record {}: arrival {a} (place {key}) admitted out of queue \
                         order or twice (after place {})",
                        r.id, self.last_key
                    ));
                }
                self.last_key = key;
                self.admitted += 1;
                self.let_in.insert(a);
                if self.asked == Some(a) {
                    self.found = Some((r.id.clone(), r.at_ms));
                }
            }
        }
        Ok(())
    }
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
}
