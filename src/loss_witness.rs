//! The loss witness: noticing a failover that lost writes, and mending what it left.
//!
//! A replica promoted after its primary died may lack the last writes (replication is
//! asynchronous; `REDIS_WAIT_REPLICAS` closes that gap, at a cost). The store then comes back
//! with less than this instance saw: a show's arrival counter lower than a number handed out
//! here (by a join) or read here before (by the watchdog). Left alone, the next joins would be
//! handed those numbers again, and the fans who held them would find their tickets gone
//! without a word (UNKNOWN).
//!
//! So every instance remembers, per show and epoch, the highest arrival number it saw and the
//! tickets it handed out lately (the only ones a failover can lose: replication lags by
//! seconds, not minutes). Once a second the watchdog compares ([`LossWitness::check`]); when the
//! store's counter is lower, or when the counter is at least as high but another instance has
//! mended this show since (its audit's `lost` record, seen as a raise of the counter past
//! ours), the store is mended ([`crate::store::Lineage::mend`]): the counter raised past every
//! number seen, so none is handed out twice after the mend; the tickets of ours that are
//! neither waiting nor admitted any more marked lost, so their fans are told (`GET …/tickets/…`
//! answers 410 `LOST`, a stream `unknown` saying `LOST`: the store's status read says so, and
//! this instance's hub tells the fans of them it holds at once, see [`crate::hub::Hub::lost`]);
//! the event in the show's audit (kind `lost`), the log (an error) and the metrics
//! (`waiting_room_lost_writes_total`, `waiting_room_lost_places_total`).
//!
//! Joins keep coming through a failover, and at 20 a second they take the counter back past
//! what was lost within a second: the check alone would then find nothing wrong. So a join
//! answered a number at or below one handed out here more than [`REORDER`] earlier (an intact
//! counter never does that; only handlers answering out of order do, and within
//! milliseconds) is itself the proof: the show is marked, the watchdog woken, and the check
//! treats the numbers from that one on as possibly lost.
//!
//! A third witness is the failover itself: behind Sentinel an instance knows when it followed
//! the primary to another node, and writes a paused primary acknowledged after it came back,
//! before it was told it is a replica now, are gone with it; the counter may not show it, and
//! no join may be handed their numbers again here. So the first check after this instance
//! followed a failover mends every show with the tickets it handed out in the
//! [`SUSPECT_FOR`] before: those the store no longer holds are marked lost and their fans told.
//!
//! What it cannot do: the joins answered between the failover and the mend are handed numbers
//! lost tickets held (the lost ones are gone from the store, so no two live tickets share
//! one); and a ticket handed out by an instance that died with the primary is nobody's to
//! tell. `REDIS_WAIT_REPLICAS=1` (behind Sentinel) loses no acknowledged write at
//! all.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::metrics::Metrics;
use crate::model::ShowId;
use crate::store::{Arrivals, Lineage as Store};

/// How long a ticket handed out here is remembered: far longer than any replica lags.
const REMEMBER_FOR: Duration = Duration::from_secs(120);
/// At most this many tickets remembered per show (a burst of joins keeps the newest).
const REMEMBER_AT_MOST: usize = 200_000;
/// Joins of one instance may be told their numbers out of order by this much (their handlers
/// run concurrently); a number at or below one handed out longer ago than this means the
/// store's counter went back.
pub(crate) const REORDER: Duration = Duration::from_millis(500);
/// After this instance followed a failover, the tickets it handed out this long before are
/// suspect: far longer than a paused primary answers before Sentinel demotes it.
pub(crate) const SUSPECT_FOR: Duration = Duration::from_secs(15);

/// What this instance saw of one show, under one epoch.
#[derive(Default)]
struct Seen {
    epoch: u64,
    /// The highest arrival number handed out here or read from the store.
    high: u64,
    /// Tickets handed out here lately: (arrival number, ticket, when).
    recent: VecDeque<(u64, Uuid, Instant)>,
    /// The store's count of mends this instance has answered.
    mends: u64,
    /// When `high` was handed out or read here.
    high_at: Option<Instant>,
    /// The lowest number a join was handed since the counter was seen to go back (the
    /// counter the failover left is below it); taken by the next check.
    regressed: Option<u64>,
    /// The failovers this instance had followed when this show was last checked.
    failovers: u64,
    /// The epoch the joins in `recent` were handed out under (0: none yet).
    join_epoch: u64,
}

impl Seen {
    /// `n` was handed out or read here at `at`: the highest number seen, if above the last.
    fn saw(&mut self, n: u64, at: Instant) -> bool {
        let higher = n > self.high;
        if higher {
            self.high = n;
            self.high_at = Some(at);
        }
        higher
    }
}

/// Per show, what this instance saw. Cheap to clone.
#[derive(Clone)]
pub(crate) struct LossWitness {
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    seen: Arc<Mutex<BTreeMap<ShowId, Seen>>>,
    /// Woken when a join proves a counter went back, so the check runs now.
    woken: Arc<tokio::sync::Notify>,
}

impl LossWitness {
    pub(crate) fn new(store: Arc<dyn Store>, metrics: Arc<Metrics>) -> Self {
        LossWitness {
            store,
            metrics,
            seen: Arc::default(),
            woken: Arc::default(),
        }
    }

    /// Resolves once a join has shown a counter went back since the last call.
    pub(crate) async fn woken(&self) {
        self.woken.notified().await;
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, BTreeMap<ShowId, Seen>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A join here handed out `ticket` with arrival number `arrival` under `epoch`, at `now`.
    pub(crate) fn joined(
        &self,
        show: &ShowId,
        epoch: u64,
        arrival: u64,
        ticket: Uuid,
        now: Instant,
    ) {
        let mut seen = self.seen();
        // Every join passes here: the show's name is cloned only the first time.
        if !seen.contains_key(show) {
            seen.insert(show.clone(), Seen::default());
        }
        let s = seen.get_mut(show).expect("listed just above");
        if epoch != s.join_epoch {
            // Another incarnation of the show (re-opened from nothing, or deleted and made
            // again): its numbers start over and say nothing of the old one's.
            s.recent.clear();
            s.join_epoch = epoch;
            if s.epoch != epoch {
                s.high = 0;
                s.high_at = None;
                s.regressed = None;
            }
        }
        let same_epoch = s.epoch == 0 || s.epoch == epoch;
        if !s.saw(arrival, now)
            && same_epoch
            && s.high_at
                .is_some_and(|at| now.saturating_duration_since(at) > REORDER)
        {
            // The counter handed out again a number given long enough ago: it went back.
            s.regressed = Some(s.regressed.map_or(arrival, |r| r.min(arrival)));
            self.woken.notify_one();
        }
        s.recent.push_back((arrival, ticket, now));
        while s.recent.len() > REMEMBER_AT_MOST
            || s.recent
                .front()
                .is_some_and(|&(_, _, at)| now.duration_since(at) > REMEMBER_FOR)
        {
            s.recent.pop_front();
        }
    }

    /// The show was deleted here, or its epoch moved on (re-opened after a loss): what was
    /// seen of it belongs to the past.
    pub(crate) fn forget(&self, show: &ShowId) {
        self.seen().remove(show);
    }

    /// Compares the store's arrival counter with what this instance saw, and mends the store
    /// when it lost writes; answers the tickets of ours it marked lost (their fans connected
    /// here are told at once). A store error ends the check (the next one tries again).
    pub(crate) async fn check(&self, show: &ShowId) -> crate::store::Result<Vec<Uuid>> {
        let Some(Arrivals {
            epoch,
            counter,
            mends,
            mended_from,
        }) = self.store.arrivals(show).await?
        else {
            return Ok(Vec::new());
        };
        let followed = self.metrics.redis_failovers_followed();
        let (high, tickets) = {
            let mut seen = self.seen();
            let s = seen.entry(show.clone()).or_default();
            if s.epoch == 0 {
                // The first look: the joins made here before it belong to this epoch.
                s.epoch = epoch;
                s.mends = mends;
                s.failovers = followed;
                s.saw(counter, Instant::now());
            } else if s.epoch != epoch {
                // A new epoch: numbers of another epoch say nothing; the joins made here
                // under the new one before this look are kept.
                let recent = if s.join_epoch == epoch {
                    std::mem::take(&mut s.recent)
                } else {
                    VecDeque::new()
                };
                let joined = recent
                    .iter()
                    .map(|&(arrival, _, _)| arrival)
                    .max()
                    .unwrap_or(0);
                *s = Seen {
                    epoch,
                    recent,
                    mends,
                    failovers: followed,
                    join_epoch: epoch,
                    ..Seen::default()
                };
                s.saw(counter.max(joined), Instant::now());
                return Ok(Vec::new());
            }
            // Another instance mended the show since we last looked: the numbers above the
            // counter it found may have been ours too.
            let from = if mends > s.mends {
                s.mends = mends;
                Some(mended_from)
            } else {
                None
            };
            // A join here was handed a number again: the counter went back below it, even
            // if joins since took it past what we saw.
            let regressed = s.regressed.take().map(|arrival| arrival.saturating_sub(1));
            // This instance followed a failover since: what it handed out just before may
            // have gone with the old primary.
            let suspect = if followed > s.failovers {
                s.failovers = followed;
                let since = Instant::now().checked_sub(SUSPECT_FOR);
                s.recent
                    .iter()
                    .filter(|&&(_, _, at)| since.is_none_or(|since| at >= since))
                    .map(|&(arrival, _, _)| arrival.saturating_sub(1))
                    .min()
            } else {
                None
            };
            if counter >= s.high && from.is_none() && regressed.is_none() && suspect.is_none() {
                s.saw(counter, Instant::now());
                return Ok(Vec::new());
            }
            // The store forgot numbers we saw: every ticket of ours above its counter may be
            // gone with them.
            let above = [from, regressed, suspect, Some(counter)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(counter);
            let tickets: Vec<Uuid> = s
                .recent
                .iter()
                .filter(|&&(arrival, _, _)| arrival > above)
                .map(|&(_, t, _)| t)
                .collect();
            s.saw(counter, Instant::now());
            (s.high, tickets)
        };
        let mended = self.store.mend(show, epoch, high, &tickets).await?;
        if !mended.raised && mended.lost.is_empty() {
            // Another instance's mend, and none of ours was lost in it.
            return Ok(Vec::new());
        }
        if mended.raised {
            self.metrics.lost_writes(show);
        }
        self.metrics.lost_places(show, mended.lost.len() as u64);
        tracing::error!(
            %show,
            epoch,
            counter,
            high,
            raised = mended.raised,
            lost = mended.lost.len(),
            "the store lost writes (a failover to a replica that lagged): arrival numbers up to {high} were handed out, the store's counter says {counter}; counter raised, the lost places' fans are told"
        );
        let mut seen = self.seen();
        if let Some(s) = seen.get_mut(show).filter(|s| s.epoch == epoch) {
            // The lost tickets are told; nothing more to do for them here.
            s.recent.retain(|(_, t, _)| !mended.lost.contains(t));
        }
        Ok(mended.lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Mended, Result};

    /// A store whose counter the test sets, recording each mend.
    #[derive(Default)]
    struct Fake {
        counter: Mutex<u64>,
        mends: Mutex<Vec<(u64, Vec<Uuid>)>>,
    }

    #[async_trait::async_trait]
    impl Store for Fake {
        async fn arrivals(&self, _: &ShowId) -> Result<Option<Arrivals>> {
            Ok(Some(Arrivals {
                epoch: 7,
                counter: *self.counter.lock().unwrap(),
                mends: 0,
                mended_from: 0,
            }))
        }

        async fn mend(&self, _: &ShowId, _: u64, high: u64, t: &[Uuid]) -> Result<Mended> {
            self.mends.lock().unwrap().push((high, t.to_vec()));
            *self.counter.lock().unwrap() = high;
            Ok(Mended {
                found: 0,
                raised: true,
                lost: t.to_vec(),
            })
        }
    }

    #[tokio::test]
    async fn a_counter_gone_back_is_raised_past_every_number_seen_and_our_lost_tickets_named() {
        let fake = Arc::new(Fake::default());
        let witness = LossWitness::new(fake.clone(), Arc::new(Metrics::default()));
        let show: ShowId = "s".parse().unwrap();
        witness.check(&show).await.unwrap();
        let tickets: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
        let now = Instant::now();
        for (i, t) in tickets.iter().enumerate() {
            witness.joined(&show, 7, i as u64 + 1, *t, now);
        }
        *fake.counter.lock().unwrap() = 5;
        witness.check(&show).await.unwrap();
        assert!(fake.mends.lock().unwrap().is_empty(), "nothing lost");
        // A failover: the store says 3 where we handed out 5.
        *fake.counter.lock().unwrap() = 3;
        let lost = witness.check(&show).await.unwrap();
        assert_eq!(
            lost,
            tickets[3..].to_vec(),
            "the lost ones answered, to be told"
        );
        assert_eq!(
            *fake.mends.lock().unwrap(),
            vec![(5, tickets[3..].to_vec())],
            "raised to 5, tickets 4 and 5 named"
        );
        // Mended: the next check finds nothing more.
        assert!(witness.check(&show).await.unwrap().is_empty());
        assert_eq!(fake.mends.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_number_handed_out_again_is_a_counter_gone_back_even_once_joins_overtook_it() {
        let fake = Arc::new(Fake::default());
        let witness = LossWitness::new(fake.clone(), Arc::new(Metrics::default()));
        let show: ShowId = "s".parse().unwrap();
        witness.check(&show).await.unwrap();
        let old: Vec<Uuid> = (0..5).map(|_| Uuid::new_v4()).collect();
        let t0 = Instant::now();
        for (i, t) in old.iter().enumerate() {
            witness.joined(&show, 7, i as u64 + 1, *t, t0);
        }
        // Handlers answering out of order, within milliseconds: no proof of anything.
        witness.joined(&show, 7, 4, Uuid::new_v4(), t0 + Duration::from_millis(3));
        *fake.counter.lock().unwrap() = 5;
        witness.check(&show).await.unwrap();
        assert!(fake.mends.lock().unwrap().is_empty(), "nothing lost");
        // A failover left the counter at 3; two seconds on, joins here are handed 4, 5 and 6
        // again, so the counter is past what we saw by the time the check looks.
        let later = t0 + REORDER * 4;
        let new: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
        for (i, t) in new.iter().enumerate() {
            witness.joined(&show, 7, i as u64 + 4, *t, later);
        }
        *fake.counter.lock().unwrap() = 6;
        tokio::time::timeout(Duration::from_secs(1), witness.woken())
            .await
            .expect("the check is woken at once");
        let lost = witness.check(&show).await.unwrap();
        // Every ticket of ours from 4 on is named (the store marks those it no longer holds:
        // the old 4 and 5, not the new ones waiting), and the counter stays past 6.
        let mends = fake.mends.lock().unwrap().clone();
        assert_eq!(mends.len(), 1, "{mends:?}");
        assert_eq!(mends[0].0, 6);
        for t in old[3..].iter().chain(&new) {
            assert!(lost.contains(t), "{t} named");
        }
        assert!(!lost.contains(&old[2]), "3 was kept");
    }

    #[tokio::test]
    async fn after_a_failover_it_followed_the_tickets_handed_out_just_before_are_checked() {
        let fake = Arc::new(Fake::default());
        let metrics = Arc::new(Metrics::default());
        let witness = LossWitness::new(fake.clone(), metrics.clone());
        let show: ShowId = "s".parse().unwrap();
        witness.check(&show).await.unwrap();
        let now = Instant::now();
        let long_ago = now.checked_sub(SUSPECT_FOR * 2).unwrap();
        let (old, recent) = (Uuid::new_v4(), Uuid::new_v4());
        witness.joined(&show, 7, 1, old, long_ago);
        witness.joined(&show, 7, 2, recent, now);
        *fake.counter.lock().unwrap() = 2;
        witness.check(&show).await.unwrap();
        assert!(fake.mends.lock().unwrap().is_empty(), "nothing lost");
        // The counter says nothing is missing, but this instance followed the primary to
        // another node: what it handed out just before is checked, once.
        metrics.redis_failover();
        witness.check(&show).await.unwrap();
        witness.check(&show).await.unwrap();
        let mends = fake.mends.lock().unwrap().clone();
        assert_eq!(mends, vec![(2, vec![recent])]);
    }

    #[tokio::test]
    async fn numbers_starting_over_in_a_new_incarnation_prove_nothing() {
        let fake = Arc::new(Fake::default());
        let witness = LossWitness::new(fake.clone(), Arc::new(Metrics::default()));
        let show: ShowId = "s".parse().unwrap();
        // Joins before any check, under an epoch the store then forgot (flushed, re-opened).
        let t0 = Instant::now();
        for arrival in 1..=5 {
            witness.joined(&show, 3, arrival, Uuid::new_v4(), t0);
        }
        // The re-opened show (epoch 7, the fake's) hands out 1 and 2 again, much later.
        let fresh = Uuid::new_v4();
        witness.joined(&show, 7, 1, fresh, t0 + REORDER * 4);
        witness.joined(&show, 7, 2, Uuid::new_v4(), t0 + REORDER * 4);
        *fake.counter.lock().unwrap() = 2;
        assert!(witness.check(&show).await.unwrap().is_empty());
        assert!(fake.mends.lock().unwrap().is_empty(), "nothing mended");
    }
}
