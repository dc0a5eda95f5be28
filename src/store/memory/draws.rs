//! The fair start in the embedded store, as `schedule.lua`, `close_pre_queue.lua` and
//! `draw.lua` do it in Redis.

use async_trait::async_trait;

use super::MemoryStore;
use super::show::{Scheduled, Show};
use crate::draw::{self, Permutation};
use crate::model::ShowId;
use crate::store::draws::Refused;
use crate::store::{
    AuditKind, AuditRecord, Closing, DrawState, Drawn, Draws, EventKind, RecordId, Result,
    Schedule, StoreError,
};

#[async_trait]
impl Draws for MemoryStore {
    async fn schedule(&self, show: &ShowId, schedule: Schedule) -> Result<()> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        check_schedule(show, s, &schedule)?;
        if let Some(opens_at_ms) = schedule.opens_at_ms {
            match &mut s.schedule {
                Some(d) => d.opens_at_ms = opens_at_ms,
                None => {
                    let seed = draw::new_seed();
                    s.schedule = Some(Scheduled {
                        opens_at_ms,
                        commitment: draw::commitment(&seed),
                        seed,
                        beacon: None,
                        beacon_value: None,
                        closed: None,
                        drawn: None,
                    });
                }
            }
        }
        let d = s.schedule.as_mut().expect("checked: scheduled");
        if let Some(beacon) = schedule.beacon {
            d.beacon = Some(beacon);
        }
        if let Some(value) = schedule.beacon_value {
            d.beacon_value = Some(value);
        }
        s.version += 1;
        let event = s.event(show, EventKind::Draw, &self.settings, now);
        drop(inner);
        self.publish(event);
        Ok(())
    }

    async fn due(&self, now_ms: u64) -> Result<Vec<ShowId>> {
        let inner = self.lock();
        let mut due: Vec<ShowId> = inner
            .shows
            .iter()
            .filter(|(_, s)| {
                // An ended show does not open by itself any more.
                s.on_sale() != crate::model::Phase::Ended
                    && s.schedule
                        .as_ref()
                        .is_some_and(|d| d.drawn.is_none() && d.opens_at_ms <= now_ms)
            })
            .map(|(id, _)| id.clone())
            .collect();
        due.sort();
        Ok(due)
    }

    async fn close_pre_queue(&self, show: &ShowId, fence: u64) -> Result<Closing> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let Some(s) = inner.shows.get_mut(show) else {
            return Ok(Closing::NotScheduled);
        };
        if fence < s.fence {
            return Ok(Closing::Fenced);
        }
        s.fence = fence;
        let seq = s.arrival;
        let Some(d) = s.schedule.as_mut() else {
            return Ok(Closing::NotScheduled);
        };
        if d.drawn.is_some() {
            return Ok(Closing::Drawn);
        }
        let participants = match d.closed {
            Some(n) => n,
            None if d.opens_at_ms > now => return Ok(Closing::NotDue),
            None => {
                d.closed = Some(seq);
                s.version += 1;
                let event = s.event(show, EventKind::Draw, &self.settings, now);
                self.publish(event);
                seq
            }
        };
        let d = s.schedule.as_ref().expect("scheduled");
        Ok(match (&d.beacon, &d.beacon_value) {
            (Some(_), None) => Closing::AwaitingBeacon { participants },
            (_, value) => Closing::Ready {
                participants,
                seed: d.seed.clone(),
                beacon_value: value.clone().unwrap_or_default(),
            },
        })
    }

    async fn apply_draw(&self, show: &ShowId, fence: u64, digest: &str, key: &str) -> Result<bool> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let Some(s) = inner.shows.get_mut(show) else {
            return Ok(false);
        };
        if fence < s.fence || s.on_sale() == crate::model::Phase::Ended {
            return Ok(false);
        }
        let Some(d) = s.schedule.as_mut() else {
            return Ok(false);
        };
        let (Some(n), None) = (d.closed, &d.drawn) else {
            return Ok(false);
        };
        let beacon_value = d.beacon_value.clone().unwrap_or_default();
        if draw::draw_key(&d.seed, digest, &beacon_value) != key {
            return Err(StoreError::Protocol(format!(
                "draw of {show}: the key does not follow from the seed"
            )));
        }
        let p = Permutation::new(key, n)
            .ok_or_else(|| StoreError::Protocol(format!("draw of {show}: bad key")))?;
        d.drawn = Some((
            p.clone(),
            Drawn {
                seed: d.seed.clone(),
                participants_digest: digest.to_owned(),
                beacon_value,
                key: key.to_owned(),
                at_ms: now,
            },
        ));
        // The pre-queue's early leavers are kept by arrival until now: by drawn place from now.
        s.left = s
            .left
            .iter()
            .map(|&a| if a <= n { p.place(a) } else { a })
            .collect();
        s.phase = crate::model::Phase::Open;
        s.version += 1;
        s.record(AuditRecord {
            fence,
            participants: Some(n),
            participants_digest: Some(digest.to_owned()),
            ..AuditRecord::new(AuditKind::Draw, now)
        });
        let event = s.event(show, EventKind::Draw, &self.settings, now);
        drop(inner);
        self.publish(event);
        Ok(true)
    }

    async fn draw(&self, show: &ShowId) -> Result<Option<DrawState>> {
        let mut inner = self.lock();
        let s = inner.show(show)?;
        Ok(s.schedule.as_ref().map(|d| DrawState {
            opens_at_ms: d.opens_at_ms,
            commitment: d.commitment.clone(),
            beacon: d.beacon.clone(),
            participants: d.closed,
            drawn: d.drawn.as_ref().map(|(_, drawn)| drawn.clone()),
        }))
    }

    async fn audit(
        &self,
        show: &ShowId,
        after: Option<RecordId>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let mut inner = self.lock();
        let s = inner.show(show)?;
        // From the least id after `after`, as the Redis store asks XRANGE.
        let from = after.and_then(RecordId::next);
        Ok(s.audit
            .iter()
            .filter(|r| from.is_none_or(|from| r.id.parse().is_ok_and(|id: RecordId| id >= from)))
            .take(limit)
            .cloned()
            .collect())
    }
}

/// Whether `schedule` fits the show's state, as `schedule.lua` checks it.
fn check_schedule(show: &ShowId, s: &Show, schedule: &Schedule) -> Result<()> {
    let d = s.schedule.as_ref();
    let closed = d.is_some_and(|d| d.closed.is_some());
    let refused = if schedule.opens_at_ms.is_some() {
        if closed {
            Some(Refused::Closed)
        } else if d.is_none() && s.is_open() {
            Some(Refused::Open)
        } else if d.is_none() && s.arrival > 0 {
            Some(Refused::Joined)
        } else {
            None
        }
    } else if d.is_none() {
        Some(Refused::NotScheduled)
    } else {
        None
    };
    let named = schedule.beacon.is_some() || d.is_some_and(|d| d.beacon.is_some());
    let drawn = d.is_some_and(|d| d.drawn.is_some());
    let refused = refused.or(if schedule.beacon.is_some() && closed {
        Some(Refused::BeaconLate)
    } else if schedule.beacon_value.is_some() && (!named || !closed || drawn) {
        Some(Refused::BeaconValue)
    } else {
        None
    });
    refused.map_or(Ok(()), |r| Err(r.error(show)))
}
