//! Checking an on-sale from what it published: the draw recomputed from the revealed seed,
//! and the audit walked tick by tick. `waiting-room-client verify` runs this over
//! `GET …/draw` and every page of `GET …/audit`; the tests run it too.

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
    pub admitted: u64,
    /// What the audit says of the arrival asked about.
    pub arrival: Option<ArrivalReport>,
}

/// Where one arrival was drawn and when it was let in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrivalReport {
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

fn violation<T>(what: String) -> Result<T, Violation> {
    Err(Violation(what))
}

/// Checks the draw (when the show had one) and the audit: the seed matches its commitment,
/// the digest and key follow from what was revealed, the audit holds one draw of that many
/// participants, every tick admits at most its rate, at most one tick a second, in queue
/// order (drawn order for the pre-queue, arrival order after), nobody twice.
pub fn verify(
    draw: Option<&DrawView>,
    records: &[AuditRecord],
    arrival: Option<u64>,
) -> Result<Verified, Violation> {
    let permutation = match draw {
        Some(d) => Some(check_draw(d)?),
        None => None,
    };
    let epoch = records.first().map(|r| r.epoch);
    let mut draws = 0;
    let mut ticks = 0;
    let mut admitted = 0u64;
    let mut last_key = 0u64;
    let mut last_second: Option<u64> = None;
    let mut last_fence = 0u64;
    let mut found = None;
    for r in records {
        if Some(r.epoch) != epoch {
            return violation(format!("record {}: another epoch than the audit's", r.id));
        }
        if r.fence < last_fence {
            return violation(format!(
                "record {}: fencing token {} after {last_fence}",
                r.id, r.fence
            ));
        }
        last_fence = r.fence;
        match r.kind {
            AuditKind::Draw => {
                draws += 1;
                let Some((d, p)) = draw.zip(permutation.as_ref()) else {
                    return violation(format!("record {}: a draw the show does not show", r.id));
                };
                if draws > 1 {
                    return violation(format!("record {}: a second draw", r.id));
                }
                if ticks > 0 {
                    return violation(format!("record {}: the draw after admissions", r.id));
                }
                if r.participants != Some(p.len()) || r.participants_digest != d.participants_digest
                {
                    return violation(format!(
                        "record {}: the draw's participants differ from the published ones",
                        r.id
                    ));
                }
            }
            AuditKind::Tick => {
                ticks += 1;
                if permutation.is_some() && draws == 0 {
                    return violation(format!("record {}: admissions before the draw", r.id));
                }
                let second = r.at_ms / 1000;
                if last_second.is_some_and(|s| second <= s) {
                    return violation(format!("record {}: a second tick in one second", r.id));
                }
                last_second = Some(second);
                let count: u64 = r
                    .admitted
                    .iter()
                    .map(|&[a, b]| (b + 1).saturating_sub(a))
                    .sum();
                let rate = u64::from(r.rate.unwrap_or(0));
                if count > rate {
                    return violation(format!(
                        "record {}: {count} admitted at a rate of {rate}",
                        r.id
                    ));
                }
                for &[from, to] in &r.admitted {
                    if from > to || from == 0 {
                        return violation(format!("record {}: a range {from}-{to}", r.id));
                    }
                    for a in from..=to {
                        let key = order_key(a, permutation.as_ref());
                        if key <= last_key {
                            return violation(format!(
                                "record {}: arrival {a} (place {key}) admitted out of queue \
                                 order or twice (after place {last_key})",
                                r.id
                            ));
                        }
                        last_key = key;
                        admitted += 1;
                        if arrival == Some(a) {
                            found = Some((r.id.clone(), r.at_ms));
                        }
                    }
                }
            }
        }
    }
    if permutation.is_some() && draws == 0 {
        return violation("the audit holds no draw".into());
    }
    let report = arrival.map(|a| {
        let drawn_place = permutation
            .as_ref()
            .filter(|p| (1..=p.len()).contains(&a))
            .map(|p| p.place(a));
        ArrivalReport {
            arrival: a,
            drawn_place,
            place: order_key(a, permutation.as_ref()),
            admitted: found,
        }
    });
    Ok(Verified {
        participants: permutation.as_ref().map(Permutation::len),
        ticks,
        admitted,
        arrival: report,
    })
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
    if participants_digest(n) != digest {
        return violation(format!("the participants digest is not that of 1 to {n}"));
    }
    let beacon = d.beacon_value.as_deref().unwrap_or("");
    if draw_key(seed, digest, beacon) != key {
        return violation("the draw key does not follow from seed, digest and beacon".into());
    }
    Permutation::new(key, n).ok_or_else(|| Violation("the draw key is not one".into()))
}
