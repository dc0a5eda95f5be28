//! The queue and its admissions in the embedded store.

use std::time::Duration;

use async_trait::async_trait;
use uuid::Uuid;

use super::MemoryStore;
use crate::model::{ShowId, TicketState};
use crate::pass::Proof;
use crate::store::{AdmitOutcome, EventKind, Joined, Queue, Result, Status, StoreError, Touched};

#[async_trait]
impl Queue for MemoryStore {
    async fn join(&self, show: &ShowId) -> Result<Joined> {
        self.join_as(show, None, None)
            .await
            .map(|(joined, _)| joined)
    }

    async fn join_once(&self, show: &ShowId, key: &str) -> Result<(Joined, bool)> {
        self.join_as(show, Some(key), None).await
    }

    async fn join_proven(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
    ) -> Result<(Joined, bool)> {
        self.join_as(show, key, proof).await
    }

    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        let (state, seq) = s.state(ticket, now);
        if let TicketState::Admitted { .. } = state {
            // A poll of an admitted ticket is a sign of life (the arrival window).
            s.seen.insert(ticket, now);
        }
        Ok(Status {
            state,
            epoch: s.epoch,
            arrival: seq,
            pace: s.pace(&self.settings, now),
            version: s.version,
        })
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if let Some(seq) = s.seq_of.remove(&ticket) {
            s.queue.remove(&seq);
            // Kept by its place in the queue; a pre-queue's arrival until the draw places it.
            let key = s.phase().order_key(seq).unwrap_or(seq);
            s.left.insert(key);
            s.version += 1;
            let mut event = s.event(show, EventKind::Leave, &self.settings, now);
            event.left = Some(key);
            drop(inner);
            self.publish(event);
            return Ok(true);
        }
        // Giving an admission back frees capacity; nobody's position moves.
        let ended = s
            .admitted_now(ticket, now)
            .then(|| s.ended_event(show, ticket, &self.settings, now));
        if ended.is_some() {
            s.ended(ticket, now, &self.settings);
        }
        s.buying.remove(&ticket);
        let live = s.admitted.remove(&ticket).is_some_and(|until| until > now);
        drop(inner);
        if let Some(event) = ended {
            self.publish(event);
        }
        Ok(live)
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let now = self.now_ms();
        Ok(self.lock().show(show)?.admitted_now(ticket, now))
    }

    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<Touched> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if !s.admitted_now(ticket, now) {
            return Ok(Touched::Over);
        }
        let window = s.window.unwrap_or(self.settings.arrival_window);
        if s.cap(&self.settings) == 0 || window.is_zero() {
            return Ok(Touched::NotNeeded);
        }
        s.seen.insert(ticket, now);
        Ok(Touched::Kept)
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let now = self.now_ms();
        let ttl_ms = self.settings.admission_ttl.as_millis() as u64;
        let mut inner = self.lock();
        let Some(s) = inner.shows.get_mut(show).filter(|s| s.is_open()) else {
            return Ok(AdmitOutcome::NotServed);
        };
        if fence < s.fence {
            return Ok(AdmitOutcome::Fenced { fence: s.fence });
        }
        s.fence = fence;
        let second = now / 1000;
        if s.last_second.is_some_and(|last| second <= last) {
            return Ok(AdmitOutcome::AlreadyThisSecond {
                next_in: Duration::from_millis((second + 1) * 1000 - now),
            });
        }
        s.last_second = Some(second);
        // An announced rate change takes effect at the first tick from its time.
        if let Some(change) = s.change.filter(|c| c.at_ms <= now) {
            s.rate = Some(change.rate);
            s.change = None;
        }
        // Those still buying when their admission ran out held it the whole TTL.
        let ran_out: Vec<u64> = s
            .buying
            .iter()
            .filter_map(|t| s.admitted.get(t).copied())
            .filter(|&until| until <= now)
            .collect();
        for until in ran_out {
            s.held(until.saturating_sub(ttl_ms), until);
        }
        s.admitted.retain(|_, until| *until > now);
        let admitted = &s.admitted;
        s.admitted_arrival.retain(|t, _| admitted.contains_key(t));
        s.buying.retain(|t| admitted.contains_key(t));
        s.seen.retain(|t, _| admitted.contains_key(t));
        let mut places = s.rate(&self.settings) as usize;
        let mut released = Vec::new();
        let cap = s.cap(&self.settings);
        if cap > 0 {
            // As in `admit.lua`: admissions nobody took up within the window go on.
            let window = s.window.unwrap_or(self.settings.arrival_window).as_millis() as u64;
            if window > 0 && window < ttl_ms {
                let since = now - window;
                let untaken: Vec<Uuid> = s
                    .buying
                    .iter()
                    .filter(|t| s.admitted[*t] + window <= now + ttl_ms)
                    .filter(|t| s.seen.get(*t).is_none_or(|&seen| seen < since))
                    .copied()
                    .collect();
                for t in untaken {
                    released.push(t);
                    s.ended(t, now, &self.settings);
                    s.buying.remove(&t);
                    s.admitted.remove(&t);
                    s.seen.remove(&t);
                    s.released += 1;
                }
            }
            places = places.min(cap.saturating_sub(s.active(now) as u32) as usize);
        }
        // Never more admitted than seats neither sold nor held by a running admission.
        if let Some(left) = s.stock_left() {
            places = places.min(left.saturating_sub(s.active(now)) as usize);
        }
        s.full = cap > 0 && places == 0;
        let mut count = 0;
        let mut arrivals = Vec::new();
        // A drawn pre-queue goes first, in drawn order: place head + 1 is the arrival the
        // permutation put there (skipped if it left).
        if let crate::store::DrawPhase::Drawn(p) = s.phase() {
            while count < places && s.head < p.len() {
                s.head += 1;
                let arrival = p.arrival_at(s.head);
                if let Some(ticket) = s.queue.remove(&arrival) {
                    s.seq_of.remove(&ticket);
                    s.admitted.insert(ticket, now + ttl_ms);
                    s.admitted_arrival.insert(ticket, arrival);
                    s.buying.insert(ticket);
                    s.admitted_at(now);
                    arrivals.push(arrival);
                    count += 1;
                }
            }
        }
        while count < places {
            let Some((seq, ticket)) = s.queue.pop_first() else {
                break;
            };
            s.seq_of.remove(&ticket);
            s.admitted.insert(ticket, now + ttl_ms);
            s.admitted_arrival.insert(ticket, seq);
            s.buying.insert(ticket);
            s.admitted_at(now);
            s.head = seq;
            arrivals.push(seq);
            count += 1;
        }
        if count > 0 {
            let rate = s.rate(&self.settings);
            s.record(super::show::Show::tick_record(now, fence, rate, &arrivals));
        }
        let head = s.head;
        s.left = s.left.split_off(&(head + 1));
        // Every tick is published, one that admitted nobody too: the pace moved.
        s.version += 1;
        let mut event = s.event(show, EventKind::Tick, &self.settings, now);
        event.admitted = count as u64;
        event.ended = released;
        let version = s.version;
        drop(inner);
        self.publish(event);
        Ok(AdmitOutcome::Admitted {
            count: count as u64,
            head,
            version,
        })
    }
}

impl MemoryStore {
    /// Joins, or (with an `Idempotency-Key`) answers the live ticket joined under it.
    async fn join_as(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
    ) -> Result<(Joined, bool)> {
        let ticket = Uuid::new_v4();
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if let Some(kept) = key.and_then(|k| s.idem.get(k)).copied() {
            let (state, seq) = s.state(kept, now);
            if state != TicketState::Unknown {
                let joined = Joined {
                    ticket: kept,
                    arrival: seq.unwrap_or(0),
                    status: Status {
                        state,
                        epoch: s.epoch,
                        arrival: seq,
                        pace: s.pace(&self.settings, now),
                        version: s.version,
                    },
                };
                return Ok((joined, true));
            }
        }
        if s.on_sale() == crate::model::Phase::Ended {
            return Err(StoreError::Ended(show.clone()));
        }
        // As `join.lua`: the show's difficulty, and the challenge spent with the join.
        if s.challenge_bits > 0 {
            let Some(proof) = proof else {
                return Err(StoreError::ProofRequired(s.challenge_bits));
            };
            if proof.bits < s.challenge_bits {
                return Err(StoreError::ProofTooWeak(s.challenge_bits));
            }
            s.spent_challenges.retain(|_, until| *until > now);
            if s.spent_challenges.contains_key(&proof.id) {
                return Err(StoreError::ProofSpent);
            }
            s.spent_challenges
                .insert(proof.id.clone(), now + proof.ttl_ms.max(1));
        }
        if let Some(key) = key {
            s.idem.insert(key.to_owned(), ticket);
        }

        s.arrival += 1;
        let seq = s.arrival;
        s.queue.insert(seq, ticket);
        s.seq_of.insert(ticket, seq);
        let (state, _) = s.state(ticket, now);
        Ok((
            Joined {
                ticket,
                arrival: seq,
                status: Status {
                    state,
                    epoch: s.epoch,
                    arrival: Some(seq),
                    pace: s.pace(&self.settings, now),
                    version: s.version,
                },
            },
            false,
        ))
    }
}
