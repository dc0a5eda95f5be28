//! The embedded store: the Redis model in one process, for a single instance.
//!
//! Not durable: a restart forgets every queue, admission and order. Time runs on tokio's
//! clock, so tests can pause and advance it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
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
    AdmitOutcome, Configured, EventKind, Joined, OrderOutcome, PaceControl, QueueStore, Result,
    ShowEvent, ShowMeta, ShowSettings, ShowSnapshot, Status, StoreError, StoreSettings, new_epoch,
    order_fingerprint, pace_of, wall_ms,
};
use crate::model::{NewOrder, Order, Pace, ShowId, ShowStats, TicketState};

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
    shows: HashMap<ShowId, Show>,
    orders: HashMap<Uuid, Order>,
    lease: Option<Lease>,
    fence_counter: u64,
    /// Per client: the theoretical arrival time of its next join (GCRA, as in `limit.lua`).
    join_tat: HashMap<String, f64>,
}

struct Lease {
    holder: String,
    token: u64,
    until_ms: u64,
}

/// One show an operator made. This store never loses state, so a show is never lost here.
struct Show {
    epoch: u64,
    open: bool,
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
    /// holdId → (order, fingerprint of the request that placed it).
    holds: HashMap<String, (Uuid, String)>,
    /// Admissions that bought.
    spent: HashSet<Uuid>,
    /// The smoothed places offered a tick (`None`: no history, the rate), and their variance.
    flow_mean: Option<f64>,
    flow_var: f64,
    /// The last tick offered no place: every place was taken.
    full: bool,
    /// The show's own arrival window.
    window: Option<Duration>,
    /// Admissions released untaken.
    released: u64,
    /// Admitted ticket → when its fan last showed it was there (ms).
    seen: HashMap<Uuid, u64>,
    /// Following the checkout: its health URL, the lowest rate, the rate in force.
    health_url: Option<String>,
    floor: u32,
    pace: Option<u32>,
}

impl Show {
    fn new() -> Show {
        Show {
            epoch: new_epoch(),
            open: false,
            seq: 0,
            head: 0,
            version: 0,
            rate: None,
            cap: None,
            fence: 0,
            last_second: None,
            queue: BTreeMap::new(),
            seq_of: HashMap::new(),
            left: BTreeSet::new(),
            admitted: HashMap::new(),
            buying: HashSet::new(),
            holds: HashMap::new(),
            spent: HashSet::new(),
            flow_mean: None,
            flow_var: 0.0,
            full: false,
            window: None,
            released: 0,
            seen: HashMap::new(),
            health_url: None,
            floor: 1,
            pace: None,
        }
    }

    /// The pace, as `pace()` in `prelude.lua` works it out.
    fn pace(&self, settings: &StoreSettings) -> Pace {
        let rate = self.rate(settings);
        let mean = self
            .flow_mean
            .unwrap_or(f64::from(rate))
            .min(f64::from(rate));
        pace_of(
            rate,
            (mean * 1000.0).round() as u64,
            (self.flow_var.sqrt() * 1000.0).round() as u64,
            self.open,
            self.full,
        )
    }

    /// One tick offered `places`: the smoothed pace moves (as in `admit.lua`).
    fn measure(&mut self, places: usize, settings: &StoreSettings) {
        let rate = f64::from(self.rate(settings));
        let mean = self.flow_mean.unwrap_or(rate).min(rate);
        let delta = places as f64 - mean;
        self.flow_mean = Some(mean + 0.2 * delta);
        self.flow_var = 0.8 * (self.flow_var + 0.2 * delta * delta);
    }

    fn meta(&self) -> ShowMeta {
        ShowMeta {
            epoch: self.epoch,
            open: self.open,
            lost: false,
        }
    }

    fn admitted_now(&self, ticket: Uuid, now_ms: u64) -> bool {
        self.admitted
            .get(&ticket)
            .is_some_and(|&until| until > now_ms)
    }

    /// The rate in force: the configured one, or less while the pace follows the checkout.
    fn rate(&self, settings: &StoreSettings) -> u32 {
        let configured = self.configured_rate(settings);
        self.pace.map_or(configured, |p| p.min(configured))
    }

    fn configured_rate(&self, settings: &StoreSettings) -> u32 {
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
        let pace = self.pace(settings);
        ShowEvent {
            show: show.clone(),
            epoch: self.epoch,
            version: self.version,
            kind,
            head: self.head,
            left: None,
            rate: pace.rate,
            flow_milli: pace.flow_milli,
            spread_milli: pace.spread_milli,
            open: self.open,
            full: self.full,
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

impl MemoryStore {
    /// Opens or closes `s`; the event to publish when that changed its pace.
    fn set_open(&self, show: &ShowId, s: &mut Show, open: bool) -> Option<ShowEvent> {
        if s.open == open {
            return None;
        }
        s.open = open;
        s.version += 1;
        Some(s.event(show, EventKind::Rate, &self.settings, self.now_ms()))
    }
}

impl Inner {
    /// A show an operator made, or [`StoreError::NoSuchShow`].
    fn show(&mut self, show: &ShowId) -> Result<&mut Show> {
        self.shows
            .get_mut(show)
            .ok_or_else(|| StoreError::NoSuchShow(show.clone()))
    }
}

#[async_trait]
impl QueueStore for MemoryStore {
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let mut created = false;
        let s = inner.shows.entry(show.clone()).or_insert_with(|| {
            created = true;
            Show::new()
        });
        if let Some(cap) = settings.max_active_buyers {
            s.cap = Some(cap);
        }
        if let Some(window) = settings.arrival_window {
            s.window = Some(window);
        }
        match settings.checkout_health_url.as_deref() {
            Some("") => {
                s.health_url = None;
                s.pace = None;
            }
            Some(url) => s.health_url = Some(url.to_owned()),
            None => {}
        }
        if let Some(floor) = settings.min_admit_per_second {
            s.floor = floor;
        }
        let mut event = None;
        if let Some(rate) = settings.admit_per_second {
            s.rate = Some(rate);
            if s.cap(&self.settings) == 0 {
                s.flow_mean = Some(f64::from(rate));
                s.flow_var = 0.0;
            }
            s.version += 1;
            event = Some(s.event(show, EventKind::Rate, &self.settings, now));
        }
        let configured = Configured {
            created,
            recovered: false,
            epoch: s.epoch,
        };
        drop(inner);
        if let Some(event) = event {
            self.publish(event);
        }
        Ok(configured)
    }

    async fn open(&self, show: &ShowId) -> Result<Configured> {
        let mut inner = self.lock();
        let mut created = false;
        let s = inner.shows.entry(show.clone()).or_insert_with(|| {
            created = true;
            Show::new()
        });
        let configured = Configured {
            created,
            recovered: false,
            epoch: s.epoch,
        };
        let event = self.set_open(show, s, true);
        drop(inner);
        if let Some(event) = event {
            self.publish(event);
        }
        Ok(configured)
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        let mut inner = self.lock();
        let s = inner.show(show)?;
        let event = self.set_open(show, s, false);
        drop(inner);
        if let Some(event) = event {
            self.publish(event);
        }
        Ok(())
    }

    async fn delete(&self, show: &ShowId) -> Result<bool> {
        let now = self.now_ms();
        let Some(gone) = self.lock().shows.remove(show) else {
            return Ok(false);
        };
        // Fans following it learn that every position of it is void.
        let mut event = gone.event(show, EventKind::Reset, &self.settings, now);
        event.epoch = 0;
        event.version = 0;
        self.publish(event);
        Ok(true)
    }

    async fn show(&self, show: &ShowId) -> Result<Option<ShowMeta>> {
        Ok(self.lock().shows.get(show).map(Show::meta))
    }

    async fn shows(&self) -> Result<Vec<ShowId>> {
        let mut shows: Vec<_> = self.lock().shows.keys().cloned().collect();
        shows.sort();
        Ok(shows)
    }

    async fn open_shows(&self) -> Result<Vec<ShowId>> {
        let inner = self.lock();
        let mut shows: Vec<_> = inner
            .shows
            .iter()
            .filter(|(_, s)| s.open)
            .map(|(id, _)| id.clone())
            .collect();
        shows.sort();
        Ok(shows)
    }

    async fn check_show(&self, show: &ShowId, _known_epoch: u64) -> Result<Option<ShowMeta>> {
        // This store forgets only with the process, and the process forgets with it.
        self.show(show).await
    }

    async fn join(&self, show: &ShowId) -> Result<Joined> {
        let ticket = Uuid::new_v4();
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
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
                epoch: s.epoch,
                seq: Some(seq),
                pace: s.pace(&self.settings),
                version: s.version,
            },
        })
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
            seq,
            pace: s.pace(&self.settings),
            version: s.version,
        })
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
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
        Ok(self.lock().show(show)?.admitted_now(ticket, now))
    }

    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if !s.admitted_now(ticket, now) {
            return Ok(false);
        }
        s.seen.insert(ticket, now);
        Ok(true)
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let now = self.now_ms();
        let ttl_ms = self.settings.admission_ttl.as_millis() as u64;
        let mut inner = self.lock();
        let Some(s) = inner.shows.get_mut(show).filter(|s| s.open) else {
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
        s.admitted.retain(|_, until| *until > now);
        let admitted = &s.admitted;
        s.buying.retain(|t| admitted.contains_key(t));
        s.seen.retain(|t, _| admitted.contains_key(t));
        let mut places = s.rate(&self.settings) as usize;
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
                    s.buying.remove(&t);
                    s.admitted.remove(&t);
                    s.seen.remove(&t);
                    s.released += 1;
                }
            }
            places = places.min(cap.saturating_sub(s.active(now) as u32) as usize);
        }
        s.measure(places, &self.settings);
        s.full = cap > 0 && places == 0;
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
        let head = s.head;
        s.left = s.left.split_off(&(head + 1));
        // Every tick is published, one that admitted nobody too: the pace moved.
        s.version += 1;
        let mut event = s.event(show, EventKind::Tick, &self.settings, now);
        event.admitted = count as u64;
        let version = s.version;
        drop(inner);
        self.publish(event);
        Ok(AdmitOutcome::Admitted {
            count: count as u64,
            head,
            version,
        })
    }

    async fn stats(&self, show: &ShowId) -> Result<ShowStats> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        let pace = s.pace(&self.settings);
        Ok(ShowStats {
            outflow_per_second: pace.flow_milli as f64 / 1000.0,
            paused: pace.paused,
            arrival_window_seconds: s.window.unwrap_or(self.settings.arrival_window).as_secs(),
            released_untaken: s.released,
            effective_admit_per_second: s.rate(&self.settings),
            show_id: show.to_string(),
            open: s.open,
            lost: false,
            queue_length: s.queue.len() as u64,
            admitted_valid: s.active(now),
            admit_per_second: s.configured_rate(&self.settings),
            max_active_buyers: s.cap(&self.settings),
            joined: s.seq,
        })
    }

    async fn pace_control(&self, show: &ShowId) -> Result<PaceControl> {
        let mut inner = self.lock();
        let s = inner.show(show)?;
        Ok(PaceControl {
            health_url: s.health_url.clone(),
            floor: s.floor,
            configured: s.configured_rate(&self.settings),
            current: s.rate(&self.settings),
        })
    }

    async fn set_pace(&self, show: &ShowId, rate: u32) -> Result<bool> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if s.rate(&self.settings) == rate {
            return Ok(false);
        }
        s.pace = Some(rate);
        s.version += 1;
        let event = s.event(show, EventKind::Rate, &self.settings, now);
        drop(inner);
        self.publish(event);
        Ok(true)
    }

    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot> {
        let inner = self.lock();
        let ttl_ms = self.settings.admission_ttl.as_millis() as u64;
        Ok(match inner.shows.get(show) {
            Some(s) => ShowSnapshot {
                epoch: s.epoch,
                version: s.version,
                head: s.head,
                left: s.left.iter().copied().collect(),
                pace: s.pace(&self.settings),
                ttl_ms,
            },
            None => ShowSnapshot {
                epoch: 0,
                version: 0,
                head: 0,
                left: Vec::new(),
                pace: Pace::at_rate(self.settings.default_rate),
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

    async fn lease(&self, instance: &str, ttl: Duration, floor: u64) -> Result<Option<u64>> {
        let now = self.now_ms();
        let until_ms = now + ttl.as_millis() as u64;
        let mut inner = self.lock();
        match &mut inner.lease {
            Some(lease) if lease.until_ms > now && lease.holder != instance => Ok(None),
            Some(lease) if lease.until_ms > now && lease.token > floor => {
                lease.until_ms = until_ms;
                Ok(Some(lease.token))
            }
            _ => {
                inner.fence_counter = inner.fence_counter.max(floor) + 1;
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

    async fn limit_join(&self, client: &str, per_second: u32) -> Result<Option<Duration>> {
        let now = self.now_ms() as f64;
        let interval = 1000.0 / f64::from(per_second.max(1));
        let burst = f64::from(per_second.max(1).saturating_mul(2));
        let mut inner = self.lock();
        // Forget clients whose bucket is full again, so the map stays as small as the set of
        // clients joining right now.
        inner.join_tat.retain(|_, tat| *tat > now);
        let tat = inner.join_tat.get(client).copied().unwrap_or(now).max(now);
        let new_tat = tat + interval;
        let allowed_at = new_tat - interval * burst;
        if allowed_at > now {
            return Ok(Some(
                Duration::from_millis((allowed_at - now).ceil() as u64),
            ));
        }
        inner.join_tat.insert(client.to_owned(), new_tat);
        Ok(None)
    }

    async fn place_order(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(&order.show_id)?;
        // As `order.lua`: a hold answers the very same request again, and only that.
        let ticket = if s.open { ticket } else { None };
        let fingerprint = format!(
            "{}|{}",
            ticket.map(|t| t.to_string()).unwrap_or_default(),
            order_fingerprint(order)
        );
        if let Some((id, was)) = s.holds.get(&order.hold_id) {
            if *was != fingerprint {
                return Ok(OrderOutcome::Conflict("hold"));
            }
            let id = *id;
            let found = inner.orders.get(&id).cloned();
            return found
                .map(OrderOutcome::Repeated)
                .ok_or_else(|| StoreError::Protocol(format!("hold points at missing order {id}")));
        }
        if s.open {
            let Some(ticket) = ticket.filter(|&t| s.admitted_now(t, now)) else {
                return Ok(OrderOutcome::Forbidden);
            };
            if !s.spent.insert(ticket) {
                return Ok(OrderOutcome::Conflict("admission"));
            }
            // Done buying: the place goes to the next fan in line.
            s.buying.remove(&ticket);
        }
        let created = Order::confirmed(order, now);
        s.holds
            .insert(order.hold_id.clone(), (created.id, fingerprint));
        inner.orders.insert(created.id, created.clone());
        Ok(OrderOutcome::Created(created))
    }

    async fn get_order(&self, id: Uuid) -> Result<Option<Order>> {
        Ok(self.lock().orders.get(&id).cloned())
    }

    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}
