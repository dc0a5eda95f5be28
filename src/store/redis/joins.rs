//! Group commit of joins (issue 21): the joins of one show that arrive while the instance's
//! previous call for that show is out are gathered into the next call, one `join.lua` call
//! for all of them (one `INCRBY` for their sequence numbers, one `ZADD`, the pace worked out
//! once), and each fan is answered from its own part of the reply. A join that finds no call
//! out for its show goes at once, alone: nothing waits for company, so an idle show pays no
//! latency, and under load a call carries what arrived during one round trip (at most
//! [`MOST_JOINS`]).
//!
//! Per show, at most one call is out: a task of its own makes the calls while joins are
//! pending and ends when none are. A fan's refusal (a proof spent, say) is its own; an error
//! of the whole call (Redis, a show not live) is every one of its fans'. With
//! `REDIS_WAIT_REPLICAS` the call goes through the write confirmer like any script
//! (`durable.rs`), so a gathered call is confirmed by `WAIT` before any of its fans is
//! answered. One show's keys share a hash tag, so a call touches one Redis Cluster slot.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use redis::aio::ConnectionLike;
use tokio::sync::oneshot;

use super::RedisStore;
use super::queue::JoinArgs;
use crate::model::ShowId;
use crate::store::{Joined, Result, StoreError};

/// The most joins one call carries.
pub(super) const MOST_JOINS: usize = 256;

/// A join's answer: its ticket (`true`: the one its key kept), or why not.
type Answer = Result<(Joined, bool)>;

/// A join waiting for its show's next call.
struct Pending {
    join: JoinArgs,
    answer: oneshot::Sender<Answer>,
}

/// The joins waiting, by show; a show is listed exactly while a task makes its calls.
#[derive(Default)]
pub(super) struct Gathering {
    shows: Mutex<HashMap<ShowId, Vec<Pending>>>,
}

impl Gathering {
    fn lock(&self) -> MutexGuard<'_, HashMap<ShowId, Vec<Pending>>> {
        // Nothing done under the lock can leave the map half changed.
        self.shows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `join` to its show's next call; whether the show had no task (the caller starts
    /// one).
    fn add(&self, show: &ShowId, join: Pending) -> bool {
        let mut shows = self.lock();
        match shows.get_mut(show) {
            Some(pending) => {
                pending.push(join);
                false
            }
            None => {
                shows.insert(show.clone(), vec![join]);
                true
            }
        }
    }

    /// The show's next joins (at most [`MOST_JOINS`]), oldest first; none when nothing is
    /// pending, and then the show's task is done (unlisted under the same lock).
    fn next(&self, show: &ShowId) -> Vec<Pending> {
        let mut shows = self.lock();
        let Some(pending) = shows.get_mut(show) else {
            return Vec::new();
        };
        if pending.is_empty() {
            shows.remove(show);
            return Vec::new();
        }
        let n = pending.len().min(MOST_JOINS);
        pending.drain(..n).collect()
    }
}

/// Unlists a show whose task ended other than by running out of joins (a panic, or the
/// runtime shutting down): its pending joins are dropped, so their fans get an error, and
/// the next join starts a task afresh.
struct Unlist {
    gathering: Arc<Gathering>,
    show: Option<ShowId>,
}

impl Drop for Unlist {
    fn drop(&mut self) {
        if let Some(show) = self.show.take() {
            self.gathering.lock().remove(&show);
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// Joins `show` in its next call (gathered with the others that arrive meanwhile).
    pub(super) async fn join_gathered(&self, show: &ShowId, join: JoinArgs) -> Answer {
        let (answer, answered) = oneshot::channel();
        if self.joins.add(show, Pending { join, answer }) {
            tokio::spawn(self.clone().make_calls(show.clone()));
        }
        answered
            .await
            .map_err(|_| StoreError::Protocol("the join was dropped unanswered".into()))?
    }

    /// The show's task: one call after another while joins are pending.
    async fn make_calls(self, show: ShowId) {
        let mut unlist = Unlist {
            gathering: self.joins.clone(),
            show: Some(show.clone()),
        };
        loop {
            let batch = self.joins.next(&show);
            if batch.is_empty() {
                // `next` unlisted the show: a join from now on starts a new task.
                unlist.show = None;
                return;
            }
            let (joins, answers): (Vec<_>, Vec<_>) =
                batch.into_iter().map(|p| (p.join, p.answer)).unzip();
            match self.join_call(&show, joins).await {
                Ok(outcomes) => {
                    for (answer, outcome) in answers.into_iter().zip(outcomes) {
                        // A fan that stopped waiting is nobody to answer.
                        let _ = answer.send(outcome);
                    }
                }
                Err(e) => {
                    for answer in answers {
                        let _ = answer.send(Err(e.clone()));
                    }
                }
            }
        }
    }
}
