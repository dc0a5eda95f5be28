//! The per-instance fan-out hub: one subscription to the store's events in, the new state of
//! every local connection out, without a store command per fan.
//!
//! For each show with fans connected here the hub mirrors the small state the store publishes
//! (`head`, the early leavers above it, the rate, a version). A waiting fan's position is
//! `arrival - head - |left ∩ (head, arrival)|`, its rank + 1 in the store at the same version; walking
//! the fans in sequence order alongside the leavers recomputes all of them in
//! O(fans + leavers) per event.
//!
//! Each connection holds a `watch` receiver: the hub overwrites the latest state and never
//! waits for a reader, so a stalled client costs one value and delays nobody. What goes
//! through it is the ticket's state ([`Update`]), not words: the HTTP face renders it, and
//! signs an admission's pass, as it sends it; the hub holds no keys.
//!
//! A version gap, a lagging subscription or a reconnect marks a show as loading: the hub
//! re-reads a snapshot (one store call per show), replays what arrived meanwhile and
//! recomputes its fans. Open streams never notice beyond an update.
//!
//! Every event and snapshot carries the show's epoch: a show created anew (re-opened after
//! its state was lost, or deleted) voids every ticket of the old epoch, whose fans are told
//! `unknown`. An admission is pushed only after the store confirmed it for that ticket.
//!
//! A place a Redis failover lost (the ticket gone from the store, marked lost by a mend) goes
//! out as `unknown` whose JSON says `LOST`: at once to the streams here of the tickets this
//! instance's mend marked ([`Hub::lost`]), and to any other when the queue passes its place
//! (the confirmation of what the mirror took for an admission reads the store's status, which
//! says LOST).

mod attendance;
mod cadence;
mod follow;
mod show;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use self::attendance::Ledger;
pub use self::cadence::{DEFAULT_PUSH_FRONT, LAG_REFRESH, MAX_PUSH_EVERY};
pub use self::follow::Update;
use self::follow::{Follow, next_update};
use self::show::{Applied, Fan, Mirror, ShowFans};
use crate::clock::wall_ms;
use crate::metrics::{Metrics, StoreCaller};
use crate::model::{ShowId, TicketState, TicketStatus};
use crate::pass::PassCache;
use crate::store::{Attendance, EventKind, Feed, Queue, Result, ShowEvent, ShowSnapshot, Status};

/// The most streams one ticket holds on one instance; a newer one replaces the oldest.
pub const STREAMS_PER_TICKET: usize = 3;

/// How long leaves are gathered before the fans behind them are told.
pub const LEAVE_FOLD: Duration = Duration::from_millis(150);

/// A recompute a hub makes later ([`Hub::spawn_later`]).
#[derive(Clone, Copy)]
enum Later {
    /// Leaves folded over [`LEAVE_FOLD`].
    Fold,
    /// Pages left lagging where no tick re-tells them.
    Refresh,
}

/// The hub. Cheap to clone; every clone is the same hub.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    /// A ticket's state, and an admitted fan's signs of life.
    queue: Arc<dyn Queue>,
    /// The shows' snapshots and events, which the hub mirrors.
    feed: Arc<dyn Feed>,
    metrics: Arc<Metrics>,
    shows: Mutex<HashMap<ShowId, ShowFans>>,
    /// Who is here: streams held and polls seen, until the next presence report.
    attendance: Mutex<Ledger>,
    next_id: AtomicU64,
    /// Passes confirmed lately: told of every admission that ends, trusted only while the
    /// hub is subscribed.
    pass_cache: Arc<PassCache>,
    /// `PUSH_FRONT`: fans this far ahead are pushed every tick, those behind less often.
    front: u64,
    /// Where the hub's background work (snapshots, confirmations, folded leaves) runs, so
    /// that shutdown waits for it; and the token that ends it.
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

/// What a hub needs beside its store and metrics.
pub struct HubParts {
    /// The passes gateway mode and `GET …/pass` confirmed lately, which the hub keeps
    /// honest: every admission the feed says ended is forgotten, and all of them whenever
    /// the subscription drops.
    pub pass_cache: Arc<PassCache>,
    /// `PUSH_FRONT`: fans this far ahead are pushed every tick ([`DEFAULT_PUSH_FRONT`]; 0:
    /// every fan every tick).
    pub push_front: u64,
    /// Tracks the hub's background tasks; the server waits for them on shutdown.
    pub tasks: TaskTracker,
    /// Ends [`Hub::run`] and every retry of the hub's.
    pub shutdown: CancellationToken,
}

impl Hub {
    /// A hub, complete, that asks `queue` about tickets and mirrors what `feed` publishes
    /// (one store is usually both); call [`Hub::run`] to feed it.
    pub fn new(
        queue: Arc<dyn Queue>,
        feed: Arc<dyn Feed>,
        metrics: Arc<Metrics>,
        parts: HubParts,
    ) -> Self {
        Hub {
            inner: Arc::new(Inner {
                queue,
                feed,
                metrics,
                shows: Mutex::new(HashMap::new()),
                attendance: Mutex::new(Ledger::default()),
                next_id: AtomicU64::new(1),
                pass_cache: parts.pass_cache,
                front: parts.push_front,
                tasks: parts.tasks,
                shutdown: parts.shutdown,
            }),
        }
    }

    fn shows(&self) -> MutexGuard<'_, HashMap<ShowId, ShowFans>> {
        // Every critical section leaves the maps consistent, so a poisoned lock is usable.
        self.inner.shows.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.inner
            .attendance
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// `ticket` of `show` was polled here: its fan is present (reported with the next
    /// [`Hub::attendance`]).
    pub fn polled(&self, show: &ShowId, ticket: Uuid) {
        self.ledger().polled(show, ticket);
    }

    /// Every show's presence news since the last call: what this instance reports, once a
    /// second ([`crate::store::Presence::attend`]).
    pub fn attendance(&self) -> Vec<(ShowId, Attendance)> {
        self.ledger().report()
    }

    /// News [`Hub::attendance`] gave that the store did not take: it goes with the next.
    pub fn unreport(&self, show: ShowId, news: Attendance) {
        self.ledger().unreport(show, news);
    }

    /// Feeds the hub from the store's events until its shutdown token is cancelled,
    /// resubscribing with backoff whenever the subscription drops, and resynchronising every
    /// followed show each time.
    pub async fn run(self) {
        let shutdown = self.inner.shutdown.clone();
        let mut backoff = Duration::from_millis(100);
        loop {
            let subscribed = tokio::select! {
                s = self.inner.feed.subscribe() => s,
                _ = shutdown.cancelled() => return,
            };
            match subscribed {
                Ok(mut events) => {
                    backoff = Duration::from_millis(100);
                    // Anything may have happened while we were not listening.
                    self.resync_all();
                    // From now on every admission that ends is heard of.
                    self.inner.pass_cache.trust();
                    loop {
                        tokio::select! {
                            event = events.next() => match event {
                                Some(event) => self.on_event(event),
                                None => break,
                            },
                            _ = shutdown.cancelled() => return,
                        }
                    }
                    // Admissions may end unheard until the next subscription.
                    self.inner.pass_cache.distrust();
                    tracing::warn!("event subscription dropped; resubscribing");
                }
                Err(e) => {
                    self.inner.metrics.store_error(StoreCaller::Hub);
                    tracing::warn!(error = %e, "cannot subscribe to events; retrying");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = shutdown.cancelled() => return,
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    fn on_event(&self, event: ShowEvent) {
        let lag_ms = wall_ms().saturating_sub(event.at_ms);
        // Whoever follows the show here, its passes are checked here.
        if !event.ended.is_empty() {
            self.inner
                .pass_cache
                .ended(event.ended.iter().copied(), wall_ms() / 1000);
        }
        match event.kind {
            // A show made anew voids its old passes (they name the old epoch).
            EventKind::Reset => self.inner.pass_cache.forget_all(),
            EventKind::Spent => return,
            _ => {}
        }
        let mut shows = self.shows();
        // Shows nobody follows here are none of this instance's business.
        let Some(show) = shows.get_mut(&event.show) else {
            return;
        };
        let Some(mirror) = &mut show.state else {
            show.buffered.push(event);
            return;
        };
        match mirror.apply(&event) {
            Applied::Stale => {}
            Applied::Moved if event.kind == EventKind::Leave => {
                // A burst of leaves (a crowd giving up) is folded into one recompute.
                if !show.recompute_pending {
                    show.recompute_pending = true;
                    drop(shows);
                    self.spawn_later(event.show, Later::Fold);
                }
            }
            Applied::Moved => {
                let admitted = self.recompute(&event.show, show, event.kind == EventKind::Tick);
                drop(shows);
                self.confirm(&event.show, admitted);
                self.inner.metrics.hub_lag(lag_ms);
            }
            Applied::Gap => {
                tracing::debug!(show = %event.show, "version gap; resynchronising");
                show.state = None;
                show.buffered.push(event.clone());
                drop(shows);
                self.spawn_load(event.show);
            }
        }
    }

    /// Recomputes `show`'s fans (see [`ShowFans::recompute`]); pages it leaves showing leaves
    /// ahead they were not told, in a queue that stands still, are told [`LAG_REFRESH`] later.
    fn recompute(
        &self,
        name: &ShowId,
        show: &mut ShowFans,
        on_tick: bool,
    ) -> Vec<((u64, u64), Fan)> {
        let admitted = show.recompute(on_tick, self.front(), false);
        if show.lagging && !show.refresh_pending {
            show.refresh_pending = true;
            self.spawn_later(name.clone(), Later::Refresh);
        }
        admitted
    }

    /// Recomputes `name`'s fans later: once [`LEAVE_FOLD`] has passed, with every leave that
    /// arrived meanwhile (unless a tick did it first), or [`LAG_REFRESH`] after a recompute
    /// left pages lagging, telling them every leave ahead.
    fn spawn_later(&self, name: ShowId, later: Later) {
        let hub = self.clone();
        self.inner.tasks.spawn(async move {
            let wait = match later {
                Later::Fold => LEAVE_FOLD,
                Later::Refresh => LAG_REFRESH,
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = hub.inner.shutdown.cancelled() => return,
            }
            let mut shows = hub.shows();
            let Some(show) = shows.get_mut(&name) else {
                return;
            };
            let admitted = match later {
                // A tick recomputed in the meantime.
                Later::Fold if !show.recompute_pending => return,
                Later::Fold => hub.recompute(&name, show, false),
                Later::Refresh => {
                    show.refresh_pending = false;
                    show.recompute(false, hub.front(), true)
                }
            };
            drop(shows);
            hub.confirm(&name, admitted);
        });
    }

    /// Tells fans the mirror says were admitted what the store says: their admission (with
    /// its exact remaining time) or, for a ticket the store does not know, `unknown` (saying
    /// `LOST` for a place a failover lost). One
    /// store call per admitted fan connected here. If the store cannot answer, the stream
    /// ends and the fan's client reconnects to the truth.
    fn confirm(&self, show: &ShowId, admitted: Vec<((u64, u64), Fan)>) {
        for (key, fan) in admitted {
            let hub = self.clone();
            let show = show.clone();
            self.inner.tasks.spawn(async move {
                let mut backoff = Duration::from_millis(50);
                for _ in 0..4 {
                    match hub.inner.queue.status(&show, fan.ticket).await {
                        Ok(mut status) => {
                            if status.epoch != fan.epoch {
                                status.state = TicketState::Unknown;
                            }
                            let waits = status.state.status(&status.sale) == TicketStatus::Waiting;
                            let version = status.version;
                            let _ = fan.tx.send(status);
                            if waits {
                                // Passed over while away (parked): it still waits, ahead of
                                // the queue; followed on, and confirmed again next tick.
                                hub.reinstate(&show, key, fan, version);
                            }
                            return;
                        }
                        Err(e) => {
                            tracing::debug!(%show, error = %e, "cannot confirm an admission yet")
                        }
                    }
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = hub.inner.shutdown.cancelled() => return,
                    }
                    backoff *= 2;
                }
            });
        }
    }

    /// Follows on a fan the mirror took for admitted whom the store says still waits.
    fn reinstate(&self, name: &ShowId, key: (u64, u64), mut fan: Fan, version: u64) {
        fan.from_version = version;
        if let Some(show) = self.shows().get_mut(name) {
            show.fans.insert(key, fan);
        }
    }

    /// Reads `show` afresh: its state was created anew, or lost.
    pub fn resync(&self, name: &ShowId) {
        {
            let mut shows = self.shows();
            let Some(show) = shows.get_mut(name) else {
                return;
            };
            show.state = None;
        }
        self.spawn_load(name.clone());
    }

    fn resync_all(&self) {
        let names: Vec<ShowId> = {
            let mut shows = self.shows();
            shows.retain(|_, s| !s.fans.is_empty());
            for show in shows.values_mut() {
                show.state = None;
            }
            shows.keys().cloned().collect()
        };
        for name in names {
            self.spawn_load(name);
        }
    }

    fn spawn_load(&self, show: ShowId) {
        let hub = self.clone();
        self.inner.tasks.spawn(async move {
            let mut backoff = Duration::from_millis(50);
            loop {
                match hub.inner.feed.snapshot(&show).await {
                    Ok(snapshot) => return hub.install(&show, snapshot),
                    Err(e) => {
                        hub.inner.metrics.store_error(StoreCaller::Hub);
                        tracing::warn!(%show, error = %e, "snapshot failed; retrying");
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = hub.inner.shutdown.cancelled() => return,
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
                if !hub.shows().contains_key(&show) {
                    return;
                }
            }
        });
    }

    fn install(&self, name: &ShowId, snapshot: ShowSnapshot) {
        let mut shows = self.shows();
        let Some(show) = shows.get_mut(name) else {
            return;
        };
        if show
            .state
            .as_ref()
            .is_some_and(|m| m.epoch == snapshot.epoch && m.version >= snapshot.version)
        {
            // Another load got here first with fresher state: never move fans backwards.
            return;
        }
        let mut mirror = Mirror::from(snapshot);
        let mut gap = false;
        for event in std::mem::take(&mut show.buffered) {
            if let Applied::Gap = mirror.apply(&event) {
                // Events were lost between the snapshot and now: read again.
                gap = true;
                show.buffered.push(event);
            }
        }
        if gap {
            drop(shows);
            return self.spawn_load(name.clone());
        }
        show.state = Some(mirror);
        let admitted = self.recompute(name, show, false);
        if show.fans.is_empty() {
            shows.remove(name);
        }
        drop(shows);
        self.confirm(name, admitted);
    }

    fn front(&self) -> u64 {
        self.inner.front
    }

    /// Starts following a ticket: one store call now, none per fan afterwards.
    ///
    /// The stream yields the current state at once, then each change; it ends after
    /// `unknown`, or after `expired` once an admission runs out, or on `shutdown`.
    pub async fn follow(
        &self,
        show: &ShowId,
        ticket: Uuid,
        shutdown: CancellationToken,
    ) -> Result<impl Stream<Item = Update> + Send + 'static> {
        let status = self.inner.queue.status(show, ticket).await?;
        let (rx, guard) = match status {
            Status {
                state: TicketState::Waiting { .. } | TicketState::PreQueue { .. },
                arrival: Some(arrival),
                epoch,
                ..
            } if status.state.status(&status.sale) == TicketStatus::Waiting => {
                // The feed carries this show's events from here on (sharded pub/sub asks for
                // them); the snapshot the hub reads for it comes after. Matched by the guard.
                if let Err(e) = self.inner.feed.listen(show).await {
                    tracing::warn!(%show, error = %e, "cannot listen to a show; resubscribing");
                }
                let (rx, guard) = self.register(show, ticket, arrival, epoch, status.clone());
                (Some(rx), Some(guard))
            }
            _ => (None, None),
        };
        let follow = Follow {
            store: self.inner.queue.clone(),
            show: show.clone(),
            ticket,
            current: Update::Now(status),
            since: tokio::time::Instant::now(),
            rx,
            _guard: guard,
            first: true,
        };
        Ok(futures::stream::unfold(follow, next_update).take_until(shutdown.cancelled_owned()))
    }

    fn register(
        &self,
        name: &ShowId,
        ticket: Uuid,
        arrival: u64,
        epoch: u64,
        first: Status,
    ) -> (watch::Receiver<Status>, FanGuard) {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let first_version = first.version;
        let (tx, rx) = watch::channel(first);
        let mut shows = self.shows();
        let mut load = false;
        let show = shows.entry(name.clone()).or_insert_with(|| {
            load = true;
            ShowFans::loading()
        });
        // One ticket, a few streams (a page open in two tabs and a phone): the newest
        // replaces the oldest, whose stream ends.
        let streams = show.streams_of(arrival);
        if streams.len() >= STREAMS_PER_TICKET {
            for key in &streams[..=streams.len() - STREAMS_PER_TICKET] {
                show.fans.remove(key);
            }
        }
        show.fans.insert(
            (arrival, id),
            Fan {
                ticket,
                epoch,
                from_version: first_version,
                tx,
                place: None,
                phase: cadence::Phase::Unknown,
            },
        );
        // The mirror may already be past the version the status was read at.
        let admitted = self.recompute(name, show, false);
        drop(shows);
        self.confirm(name, admitted);
        if load {
            self.spawn_load(name.clone());
        }
        self.ledger().opened(name, ticket);
        let guard = FanGuard {
            hub: self.clone(),
            show: name.clone(),
            key: (arrival, id),
            ticket,
        };
        (rx, guard)
    }

    /// `tickets` of `show` lost their place in a failover (this instance's mend of the store
    /// marked them, see `crate::loss_witness`): the streams here that follow one are pushed `unknown`
    /// saying `LOST` now, and let go. No store call: the mend's answer said so. Streams of
    /// lost tickets this instance did not hand out are told when the queue passes their place
    /// (the admission the hub then asks the store to confirm is answered LOST).
    pub fn lost(&self, name: &ShowId, tickets: &[Uuid]) {
        if tickets.is_empty() {
            return;
        }
        let lost: HashSet<Uuid> = tickets.iter().copied().collect();
        let mut shows = self.shows();
        let Some(show) = shows.get_mut(name) else {
            return;
        };
        let (pace, sale) = show
            .state
            .as_ref()
            .map(|m| (m.pace.clone(), m.sale))
            .unwrap_or_default();
        show.fans.retain(|_, fan| {
            if !lost.contains(&fan.ticket) {
                return true;
            }
            let status = Status {
                state: TicketState::Lost,
                epoch: fan.epoch,
                arrival: None,
                pace: pace.clone(),
                sale,
                version: fan.tx.borrow().version,
            };
            fan.tx.send_replace(status);
            false
        });
    }

    /// How many connections follow a show on this instance.
    pub fn fans_of(&self, show: &ShowId) -> usize {
        self.shows().get(show).map_or(0, |s| s.fans.len())
    }

    /// How many connections follow each show on this instance (shows nobody follows left
    /// out): what the instance reports for the console's count across instances.
    pub fn fans_by_show(&self) -> Vec<(ShowId, u64)> {
        self.shows()
            .iter()
            .filter(|(_, s)| !s.fans.is_empty())
            .map(|(show, s)| (show.clone(), s.fans.len() as u64))
            .collect()
    }
}

/// Unregisters a fan when its stream is dropped.
struct FanGuard {
    hub: Hub,
    show: ShowId,
    key: (u64, u64),
    ticket: Uuid,
}

impl Drop for FanGuard {
    fn drop(&mut self) {
        self.hub.inner.feed.unlisten(&self.show);
        self.hub.ledger().closed(&self.show, self.ticket);
        let mut shows = self.hub.shows();
        if let Some(show) = shows.get_mut(&self.show) {
            show.fans.remove(&self.key);
            if show.fans.is_empty() && show.state.is_some() {
                shows.remove(&self.show);
            }
        }
    }
}
