//! The embedded store: the Redis model in one process, for a single instance.
//!
//! Not durable: a restart forgets every queue, admission and order. Time runs on tokio's
//! clock, so tests can pause and advance it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;
use uuid::Uuid;

use super::{
    AdmitOutcome, EventKind, Joined, QueueStore, Result, ShowEvent, ShowSnapshot, Status,
    StoreSettings, wall_ms,
};
use crate::model::{NewOrder, Order, ShowId, ShowStats, TicketState};

/// The in-process store. Cheap to share behind an `Arc`.
pub struct MemoryStore {
    settings: StoreSettings,
    inner: Mutex<Inner>,
    events: broadcast::Sender<ShowEvent>,
    /// Wall clock at `start`, so `now_ms` is epoch-based yet follows tokio's (pausable) clock.
    epoch_ms: u64,
    start: Instant,
}

#[derive(Default)]
struct Inner {
    open: HashSet<ShowId>,
    shows: HashMap<ShowId, Show>,
    orders: HashMap<Uuid, Order>,
    holds: HashMap<String, Uuid>,
    lease: Option<Lease>,
    fence_counter: u64,
    /// Per client: the theoretical arrival time of its next join (GCRA, as in `limit.lua`).
    join_tat: HashMap<IpAddr, f64>,
}

struct Lease {
    holder: String,
    token: u64,
    until_ms: u64,
}

#[derive(Default)]
struct Show {
    seq: u64,
    head: u64,
    version: u64,
    rate: Option<u32>,
    cap: Option<u32>,
    fence: u64,
    last_second: Option<u64>,
    queue: BTreeMap<u64, Uuid>,
    seq_of: HashMap<Uuid, u64>,
    left: BTreeSet<u64>,
    /// Admitted ticket → when its admission runs out (ms).
    admitted: HashMap<Uuid, u64>,
    /// Admitted tickets that have not ordered yet: the active buyers (as `admissions` in Redis).
    buying: HashSet<Uuid>,
}

impl Show {
    fn rate(&self, settings: &StoreSettings) -> u32 {
        self.rate.unwrap_or(settings.default_rate)
    }

    fn cap(&self, settings: &StoreSettings) -> u32 {
        self.cap.unwrap_or(settings.max_active_buyers)
    }

    /// Admitted, not expired, not yet bought.
    fn active(&self, now_ms: u64) -> u64 {
        self.buying
            .iter()
            .filter(|t| self.admitted.get(t).is_some_and(|&until| until > now_ms))
            .count() as u64
    }

    fn state(&self, ticket: Uuid, now_ms: u64) -> (TicketState, Option<u64>) {
        if let Some(&seq) = self.seq_of.get(&ticket) {
            // rank + 1 without walking the queue: everything up to `head` is gone, and so are
            // the early leavers between `head` and `seq`.
            let gone = self.left.range(self.head + 1..seq).count() as u64;
            let position = seq - self.head - gone;
            return (TicketState::Waiting { position }, Some(seq));
        }
        match self.admitted.get(&ticket) {
            Some(&until) if until > now_ms => (
                TicketState::Admitted {
                    expires_in_ms: until - now_ms,
                },
                None,
            ),
            _ => (TicketState::Unknown, None),
        }
    }

    fn event(
        &self,
        show: &ShowId,
        kind: EventKind,
        settings: &StoreSettings,
        now_ms: u64,
    ) -> ShowEvent {
        ShowEvent {
            show: show.clone(),
            version: self.version,
            kind,
            head: self.head,
            left: None,
            rate: self.rate(settings),
            admitted: 0,
            ttl_ms: settings.admission_ttl.as_millis() as u64,
            at_ms: now_ms,
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new(settings: StoreSettings) -> Self {
        let (events, _) = broadcast::channel(4096);
        MemoryStore {
            settings,
            inner: Mutex::new(Inner::default()),
            events,
            epoch_ms: wall_ms(),
            start: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch_ms + self.start.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps half-written in a way that
        // matters more than stopping every request would, so carry on with the data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, event: ShowEvent) {
        // No subscriber is fine: nobody is listening yet.
        let _ = self.events.send(event);
    }
}

#[async_trait]
impl QueueStore for MemoryStore {
    async fn open(&self, show: &ShowId) -> Result<()> {
        self.lock().open.insert(show.clone());
        Ok(())
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        self.lock().open.remove(show);
        Ok(())
    }

    async fn is_open(&self, show: &ShowId) -> Result<bool> {
        Ok(self.lock().open.contains(show))
    }

    async fn open_shows(&self) -> Result<Vec<ShowId>> {
        let mut shows: Vec<_> = self.lock().open.iter().cloned().collect();
        shows.sort();
        Ok(shows)
    }

    async fn join(&self, show: &ShowId) -> Result<Joined> {
        let ticket = Uuid::new_v4();
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.shows.entry(show.clone()).or_default();
        s.seq += 1;
        let seq = s.seq;
        s.queue.insert(seq, ticket);
        s.seq_of.insert(ticket, seq);
        let (state, _) = s.state(ticket, now);
        Ok(Joined {
            ticket,
            seq,
            status: Status {
                state,
                seq: Some(seq),
                rate: s.rate(&self.settings),
                version: s.version,
            },
        })
    }

    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        let now = self.now_ms();
        let inner = self.lock();
        let Some(s) = inner.shows.get(show) else {
            return Ok(Status {
                state: TicketState::Unknown,
                seq: None,
                rate: self.settings.default_rate,
                version: 0,
            });
        };
        let (state, seq) = s.state(ticket, now);
        Ok(Status {
            state,
            seq,
            rate: s.rate(&self.settings),
            version: s.version,
        })
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let Some(s) = inner.shows.get_mut(show) else {
            return Ok(false);
        };
        if let Some(seq) = s.seq_of.remove(&ticket) {
            s.queue.remove(&seq);
            s.left.insert(seq);
            s.version += 1;
            let mut event = s.event(show, EventKind::Leave, &self.settings, now);
            event.left = Some(seq);
            drop(inner);
            self.publish(event);
            return Ok(true);
        }
        // Giving an admission back frees capacity; nobody's position moves.
        s.buying.remove(&ticket);
        Ok(s.admitted.remove(&ticket).is_some_and(|until| until > now))
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let now = self.now_ms();
        let inner = self.lock();
        Ok(inner
            .shows
            .get(show)
            .and_then(|s| s.admitted.get(&ticket))
            .is_some_and(|&until| until > now))
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let now = self.now_ms();
        let ttl_ms = self.settings.admission_ttl.as_millis() as u64;
        let mut inner = self.lock();
        let s = inner.shows.entry(show.clone()).or_default();
        if fence < s.fence {
            return Ok(AdmitOutcome::Fenced);
        }
        s.fence = fence;
        let second = now / 1000;
        if s.last_second.is_some_and(|last| second <= last) {
            return Ok(AdmitOutcome::AlreadyThisSecond);
        }
        s.last_second = Some(second);
        s.admitted.retain(|_, until| *until > now);
        let admitted = &s.admitted;
        s.buying.retain(|t| admitted.contains_key(t));
        let mut places = s.rate(&self.settings) as usize;
        let cap = s.cap(&self.settings);
        if cap > 0 {
            places = places.min(cap.saturating_sub(s.active(now) as u32) as usize);
        }
        let mut count = 0;
        while count < places {
            let Some((seq, ticket)) = s.queue.pop_first() else {
                break;
            };
            s.seq_of.remove(&ticket);
            s.admitted.insert(ticket, now + ttl_ms);
            s.buying.insert(ticket);
            s.head = seq;
            count += 1;
        }
        if count == 0 {
            return Ok(AdmitOutcome::Admitted {
                count: 0,
                event: None,
            });
        }
        let head = s.head;
        s.left = s.left.split_off(&(head + 1));
        s.version += 1;
        let mut event = s.event(show, EventKind::Tick, &self.settings, now);
        event.admitted = count as u64;
        drop(inner);
        self.publish(event.clone());
        Ok(AdmitOutcome::Admitted {
            count: count as u64,
            event: Some(event),
        })
    }

    async fn set_rate(&self, show: &ShowId, rate: u32) -> Result<()> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.shows.entry(show.clone()).or_default();
        s.rate = Some(rate);
        s.version += 1;
        let event = s.event(show, EventKind::Rate, &self.settings, now);
        drop(inner);
        self.publish(event);
        Ok(())
    }

    async fn set_max_active_buyers(&self, show: &ShowId, cap: u32) -> Result<()> {
        self.lock().shows.entry(show.clone()).or_default().cap = Some(cap);
        Ok(())
    }

    async fn bought(&self, show: &ShowId, ticket: Uuid) -> Result<()> {
        if let Some(s) = self.lock().shows.get_mut(show) {
            s.buying.remove(&ticket);
        }
        Ok(())
    }

    async fn stats(&self, show: &ShowId) -> Result<ShowStats> {
        let now = self.now_ms();
        let inner = self.lock();
        let open = inner.open.contains(show);
        let s = inner.shows.get(show);
        Ok(ShowStats {
            show_id: show.to_string(),
            open,
            queue_length: s.map_or(0, |s| s.queue.len() as u64),
            admitted_valid: s.map_or(0, |s| s.active(now)),
            admit_per_second: s.map_or(self.settings.default_rate, |s| s.rate(&self.settings)),
            max_active_buyers: s.map_or(self.settings.max_active_buyers, |s| s.cap(&self.settings)),
            joined: s.map_or(0, |s| s.seq),
        })
    }

    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot> {
        let inner = self.lock();
        let ttl_ms = self.settings.admission_ttl.as_millis() as u64;
        Ok(match inner.shows.get(show) {
            Some(s) => ShowSnapshot {
                version: s.version,
                head: s.head,
                left: s.left.iter().copied().collect(),
                rate: s.rate(&self.settings),
                ttl_ms,
            },
            None => ShowSnapshot {
                version: 0,
                head: 0,
                left: Vec::new(),
                rate: self.settings.default_rate,
                ttl_ms,
            },
        })
    }

    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>> {
        // A lagging receiver skips messages; the hub sees the version gap and resynchronises.
        Ok(BroadcastStream::new(self.events.subscribe())
            .filter_map(|m| async move { m.ok() })
            .boxed())
    }

    async fn lease(&self, instance: &str, ttl: Duration) -> Result<Option<u64>> {
        let now = self.now_ms();
        let until_ms = now + ttl.as_millis() as u64;
        let mut inner = self.lock();
        match &mut inner.lease {
            Some(lease) if lease.until_ms > now => {
                if lease.holder == instance {
                    lease.until_ms = until_ms;
                    Ok(Some(lease.token))
                } else {
                    Ok(None)
                }
            }
            _ => {
                inner.fence_counter += 1;
                let token = inner.fence_counter;
                inner.lease = Some(Lease {
                    holder: instance.to_owned(),
                    token,
                    until_ms,
                });
                Ok(Some(token))
            }
        }
    }

    async fn release_lease(&self, instance: &str) -> Result<()> {
        let mut inner = self.lock();
        if inner.lease.as_ref().is_some_and(|l| l.holder == instance) {
            inner.lease = None;
        }
        Ok(())
    }

    async fn limit_join(&self, client: IpAddr, per_second: u32) -> Result<Option<Duration>> {
        let now = self.now_ms() as f64;
        let interval = 1000.0 / f64::from(per_second.max(1));
        let burst = f64::from(per_second.max(1).saturating_mul(2));
        let mut inner = self.lock();
        // Forget clients whose bucket is full again, so the map stays as small as the set of
        // clients joining right now.
        inner.join_tat.retain(|_, tat| *tat > now);
        let tat = inner.join_tat.get(&client).copied().unwrap_or(now).max(now);
        let new_tat = tat + interval;
        let allowed_at = new_tat - interval * burst;
        if allowed_at > now {
            return Ok(Some(
                Duration::from_millis((allowed_at - now).ceil() as u64),
            ));
        }
        inner.join_tat.insert(client, new_tat);
        Ok(None)
    }

    async fn place_order(&self, order: &NewOrder) -> Result<(Order, bool)> {
        let now = self.now_ms();
        let mut inner = self.lock();
        if let Some(existing) = inner
            .holds
            .get(&order.hold_id)
            .and_then(|id| inner.orders.get(id))
        {
            return Ok((existing.clone(), false));
        }
        let created = Order::confirmed(order, now);
        inner.holds.insert(order.hold_id.clone(), created.id);
        inner.orders.insert(created.id, created.clone());
        Ok((created, true))
    }

    async fn get_order(&self, id: Uuid) -> Result<Option<Order>> {
        Ok(self.lock().orders.get(&id).cloned())
    }

    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}
