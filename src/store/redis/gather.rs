//! Group commit: the calls of one kind for one show that arrive while the
//! instance's previous such call for that show is out are gathered into the next call, one
//! script call for all of them, and each caller is answered from its own part of the reply.
//! Joins gather this way (`join.lua`: one `INCRBY` for their sequence numbers, one `ZADD`, the
//! pace worked out once), and so do status reads (`status.lua`: the show's meta, version and
//! pace read once for every ticket), the two bursts of an on-sale: every fan joins at 10:00,
//! then every fan's page opens its stream and reads its ticket.
//!
//! A call that finds none of its kind out for its show goes at once, alone: nothing waits for
//! company, so an idle show pays no latency. Under load a call carries what arrived while the
//! previous one was out, and a busy show's calls (the previous one carried more than one) start
//! at most one a window (`REDIS_GATHER_WINDOW`, [`WINDOW`] by default): a round trip is often
//! shorter than that, and a call's own cost to Redis and to the instance is the same whatever
//! it carries, so company is worth a millisecond or two (at most [`MOST`] a call; when a full
//! call is waiting as the last one returns, it goes at once). Per show and kind, at most one
//! call is out: a task of its own makes the calls while some are pending and ends when none
//! are. One caller's refusal (a proof spent, say) is its own; an error of the whole call (Redis, a show not live) is every
//! one of its callers'. With `REDIS_WAIT_REPLICAS` the call goes through the write confirmer
//! like any script (`durable.rs`), so a gathered call is confirmed by `WAIT` before any of its
//! callers is answered. One show's keys share a hash tag, so a call touches one Redis Cluster
//! slot.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::ConnectionLike;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::RedisStore;
use crate::model::ShowId;
use crate::store::{Result, StoreError};

/// The most callers one call carries.
pub(super) const MOST: usize = 256;

/// The least time between the starts of two calls of a busy show (of one kind) unless set
/// otherwise, so each carries what arrived in that time: the joins that arrive within a
/// millisecond or two. Measured in BENCHMARKS.md ("Join throughput").
pub const WINDOW: Duration = Duration::from_millis(2);

/// One call for a show's gathered items: each one's answer, in their order (the call's error
/// when it failed as a whole).
pub(in crate::store) type Call<C, T, A> =
    fn(RedisStore<C>, ShowId, Vec<T>) -> BoxFuture<'static, Result<Vec<Result<A>>>>;

/// Every kind of gathered call of one store, each made on first use: a kind is named by the
/// types of what its callers ask and are answered (a join: its arguments, and its ticket), so
/// that the concern that gathers (the queue) declares its kinds itself.
#[derive(Default)]
pub(in crate::store) struct Gatherings {
    kinds: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Gatherings {
    /// The callers of the kind that asks `T` and is answered `A`.
    fn of<T: Send + 'static, A: Send + 'static>(&self) -> Arc<Gathering<T, A>> {
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        let kind = kinds
            .entry(TypeId::of::<Gathering<T, A>>())
            .or_insert_with(|| Arc::new(Gathering::<T, A>::default()))
            .clone();
        drop(kinds);
        kind.downcast()
            .unwrap_or_else(|_| unreachable!("a kind is kept under its own type"))
    }
}

/// A caller waiting for its show's next call: what it asks, and where its answer goes.
struct Pending<T, A> {
    item: T,
    answer: oneshot::Sender<Result<A>>,
}

/// The callers of one kind waiting, by show; a show is listed exactly while a task makes its
/// calls.
struct Gathering<T, A> {
    shows: Mutex<HashMap<ShowId, Vec<Pending<T, A>>>>,
}

impl<T, A> Default for Gathering<T, A> {
    fn default() -> Self {
        Gathering {
            shows: Mutex::default(),
        }
    }
}

impl<T, A> Gathering<T, A> {
    fn lock(&self) -> MutexGuard<'_, HashMap<ShowId, Vec<Pending<T, A>>>> {
        // Nothing done under the lock can leave the map half changed.
        self.shows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a caller to its show's next call; whether the show had no task (the caller
    /// starts one).
    fn add(&self, show: &ShowId, caller: Pending<T, A>) -> bool {
        let mut shows = self.lock();
        match shows.get_mut(show) {
            Some(pending) => {
                pending.push(caller);
                false
            }
            None => {
                shows.insert(show.clone(), vec![caller]);
                true
            }
        }
    }

    /// The show's next callers (at most [`MOST`]), oldest first; none when nothing is
    /// pending, and then the show's task is done (unlisted under the same lock).
    fn next(&self, show: &ShowId) -> Vec<Pending<T, A>> {
        let mut shows = self.lock();
        let Some(pending) = shows.get_mut(show) else {
            return Vec::new();
        };
        if pending.is_empty() {
            shows.remove(show);
            return Vec::new();
        }
        let n = pending.len().min(MOST);
        pending.drain(..n).collect()
    }

    /// Whether a full call of the show's callers is waiting.
    fn full(&self, show: &ShowId) -> bool {
        self.lock().get(show).is_some_and(|p| p.len() >= MOST)
    }
}

/// Unlists a show whose task ended other than by running out of callers (a panic, or the
/// runtime shutting down): its pending callers are dropped, so they get an error, and the
/// next caller starts a task afresh.
struct Unlist<'g, T, A> {
    gathering: &'g Gathering<T, A>,
    show: Option<ShowId>,
}

impl<T, A> Drop for Unlist<'_, T, A> {
    fn drop(&mut self) {
        if let Some(show) = self.show.take() {
            self.gathering.lock().remove(&show);
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// Asks `item` of `show` in the next `call` of its kind (gathered with the others of its
    /// kind that arrive meanwhile); its answer.
    pub(in crate::store) async fn gathered<T, A>(
        &self,
        show: &ShowId,
        item: T,
        call: Call<C, T, A>,
    ) -> Result<A>
    where
        T: Send + 'static,
        A: Send + 'static,
    {
        let gathering = self.gatherings.of::<T, A>();
        let (answer, answered) = oneshot::channel();
        if gathering.add(show, Pending { item, answer }) {
            self.tasks
                .spawn(make_calls(self.clone(), gathering, show.clone(), call));
        }
        answered
            .await
            .map_err(|_| StoreError::Protocol("a gathered call was dropped unanswered".into()))?
    }
}

/// The task of one show and kind: one call after another while callers are pending.
async fn make_calls<C, T, A>(
    store: RedisStore<C>,
    gathering: Arc<Gathering<T, A>>,
    show: ShowId,
    call: Call<C, T, A>,
) where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    let mut unlist = Unlist {
        gathering: &gathering,
        show: Some(show.clone()),
    };
    loop {
        let batch = gathering.next(&show);
        if batch.is_empty() {
            // `next` unlisted the show: a caller from now on starts a new task.
            unlist.show = None;
            return;
        }
        let busy = batch.len() > 1;
        let started = Instant::now();
        let (items, answers): (Vec<_>, Vec<_>) =
            batch.into_iter().map(|p| (p.item, p.answer)).unzip();
        match call(store.clone(), show.clone(), items).await {
            Ok(outcomes) => {
                for (answer, outcome) in answers.into_iter().zip(outcomes) {
                    // A caller that stopped waiting is nobody to answer.
                    let _ = answer.send(outcome);
                }
            }
            Err(e) => {
                for answer in answers {
                    let _ = answer.send(Err(e.clone()));
                }
            }
        }
        if busy && !store.gather_window.is_zero() && !gathering.full(&show) {
            tokio::time::sleep_until(started + store.gather_window).await;
        }
    }
}
