//! Shedding: a bound on the fans' requests at work on this instance at once.
//!
//! Each of the crowd's requests (a join, a poll, a stream opening, the waiting page) is one
//! or two store calls. When the store or this instance's CPU cannot keep up, queueing them
//! only makes every one of them late: they pile up until they time out, and the fans retry
//! into a deeper pile. Past the bound a request is answered at once, without touching the
//! store, with `503` and a `Retry-After` drawn between one and a few seconds, so the fans
//! told to come back do not all come back in the same second. The operator's routes, the
//! health checks and an admitted fan's order, pass check and redemption are never shed: the
//! first two must answer under load, the last are as few as the admission rate makes them.
//!
//! The bound adapts (additive increase, multiplicative decrease, as TCP finds a link's
//! rate): `MAX_STORE_CALLS` is its ceiling, but a request that took longer than [`LATE`]
//! shrinks it by a quarter (at most once per [`CALM`]), and every prompt one grows it by one.
//! A fixed bound large enough for a fast machine lets a starved one queue seconds of work
//! (the store's calls then time out at 2 s); a bound that follows how late answers are sheds
//! just enough to keep them prompt, whatever the machine.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::AppError;
use crate::metrics::Metrics;

/// The shortest and longest `Retry-After` of a shed request, in seconds.
const RETRY_SECONDS: (u64, u64) = (1, 5);

/// A request answered later than this after it went to work says the instance or its store
/// has more than it can do promptly: the bound shrinks. A quarter of the store's 2 s timeout.
pub(crate) const LATE: Duration = Duration::from_millis(500);

/// The bound shrinks at most once this often: the requests already at work when it shrank
/// finish late too, and must not shrink it again for the same crowd.
pub(crate) const CALM: Duration = Duration::from_millis(250);

/// The bound never shrinks below this (or the ceiling, if lower): a few requests always go.
pub(crate) const FLOOR: u32 = 16;

/// The bound and what it counts. Cheap to clone; every clone is the same bound.
#[derive(Clone)]
pub struct Shed {
    /// `None`: no bound (`MAX_STORE_CALLS=0`).
    bound: Option<Arc<Bound>>,
    metrics: Arc<Metrics>,
}

/// The adaptive bound: how many may be at work, how many are.
#[derive(Debug)]
pub(crate) struct Bound {
    ceiling: u32,
    limit: AtomicU32,
    at_work: AtomicU32,
    /// Milliseconds since `start` when the bound last shrank (0: never).
    shrunk_at_ms: AtomicU64,
    start: Instant,
}

impl Bound {
    /// A bound of `ceiling`, starting there.
    pub(crate) fn new(ceiling: u32) -> Self {
        Bound {
            ceiling,
            limit: AtomicU32::new(ceiling),
            at_work: AtomicU32::new(0),
            shrunk_at_ms: AtomicU64::new(0),
            start: Instant::now(),
        }
    }

    /// How many may be at work now.
    pub(crate) fn limit(&self) -> u32 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Takes a place if one is free under the bound.
    pub(crate) fn try_enter(&self) -> bool {
        let limit = self.limit();
        self.at_work
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives the place back, for a request that took `took`, `now` being when it ended.
    pub(crate) fn leave(&self, took: Duration, now: Instant) {
        self.at_work.fetch_sub(1, Ordering::AcqRel);
        if took > LATE {
            let now_ms = now.saturating_duration_since(self.start).as_millis() as u64 + 1;
            let last = self.shrunk_at_ms.load(Ordering::Acquire);
            let calm = CALM.as_millis() as u64;
            if (last == 0 || now_ms >= last + calm)
                && self
                    .shrunk_at_ms
                    .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                let floor = FLOOR.min(self.ceiling);
                let _ = self
                    .limit
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| {
                        Some((l - l / 4).max(floor))
                    });
            }
        } else {
            let ceiling = self.ceiling;
            let _ = self
                .limit
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| {
                    (l < ceiling).then_some(l + 1)
                });
        }
    }
}

impl Shed {
    /// At most `max` of the crowd's requests at work at once, fewer while answers are late;
    /// 0: no bound.
    pub fn new(max: u32, metrics: Arc<Metrics>) -> Self {
        let bound = (max > 0).then(|| Arc::new(Bound::new(max)));
        metrics.crowd_limit(max);
        Shed { bound, metrics }
    }

    /// Runs `request` if a place is free, else answers 503 at once. The place is held until
    /// the handler has answered (a stream's head): what a stream does afterwards is the hub's.
    pub(crate) async fn run(self, request: Request, next: Next) -> Response {
        let Some(bound) = &self.bound else {
            return next.run(request).await;
        };
        if !bound.try_enter() {
            self.metrics.shed();
            let wait = rand::random_range(RETRY_SECONDS.0..=RETRY_SECONDS.1);
            return AppError::Overloaded(Duration::from_secs(wait)).into_response();
        }
        // Given back even if the request is dropped half-way (the fan went away).
        let place = Place {
            bound: bound.clone(),
            since: Instant::now(),
        };
        let _counted = self.metrics.at_work();
        let response = next.run(request).await;
        self.metrics.crowd_limit(bound.limit());
        drop(place);
        response
    }
}

/// A place under the bound, given back when dropped.
struct Place {
    bound: Arc<Bound>,
    since: Instant,
}

impl Drop for Place {
    fn drop(&mut self) {
        let now = Instant::now();
        self.bound
            .leave(now.saturating_duration_since(self.since), now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: Duration = Duration::from_millis(5);

    fn fill(bound: &Bound) -> u32 {
        let mut n = 0;
        while bound.try_enter() {
            n += 1;
        }
        n
    }

    #[test]
    fn late_answers_shrink_the_bound_once_per_calm_and_prompt_ones_grow_it_back() {
        let bound = Bound::new(1024);
        assert_eq!(fill(&bound), 1024);
        let t0 = bound.start + Duration::from_secs(1);
        // A crowd finishing late together shrinks the bound by a quarter, once.
        for i in 0..100 {
            bound.leave(LATE * 2, t0 + Duration::from_millis(i));
        }
        assert_eq!(bound.limit(), 768);
        // Once calm has passed, late again: another quarter.
        bound.leave(LATE * 2, t0 + CALM + Duration::from_millis(100));
        assert_eq!(bound.limit(), 576);
        // 923 still at work: none may enter until enough leave.
        assert!(!bound.try_enter());
        // Prompt answers grow it back by one each, never past the ceiling.
        for _ in 0..923 {
            bound.leave(PROMPT, t0);
        }
        assert_eq!(bound.limit(), 1024);
        assert_eq!(fill(&bound), 1024);
    }

    #[test]
    fn the_bound_never_shrinks_below_its_floor() {
        let bound = Bound::new(100);
        let mut at = bound.start;
        for _ in 0..50 {
            assert!(bound.try_enter());
            at += CALM * 2;
            bound.leave(LATE * 4, at);
        }
        assert_eq!(bound.limit(), FLOOR);
        assert_eq!(fill(&bound), FLOOR);
        // A ceiling under the floor is the floor.
        let small = Bound::new(2);
        assert!(small.try_enter());
        small.leave(LATE * 4, small.start + CALM);
        assert_eq!(small.limit(), 2);
    }
}
