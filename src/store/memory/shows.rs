//! Shows and their pace in the embedded store.

use async_trait::async_trait;

use super::MemoryStore;
use super::show::Show;
use crate::model::{AuditKind, AuditRecord, EndReason, Phase, ShowId, ShowStats};
use crate::store::{
    Configured, EventKind, Indexed, Result, ShowEvent, ShowMeta, ShowSettings, Shows,
    ThrottleControl, Throttling, not_running,
};

impl MemoryStore {
    /// Opens `s` (resuming it from a pause, a close or its end); the event to publish when
    /// that changed its pace.
    fn set_open(&self, show: &ShowId, s: &mut Show) -> Option<ShowEvent> {
        if s.is_open() {
            return None;
        }
        s.phase = Phase::Open;
        s.end_reason = None;
        s.record(AuditRecord {
            phase: Some(Phase::Open),
            ..AuditRecord::new(AuditKind::Phase, self.now_ms())
        });
        s.version += 1;
        Some(s.event(show, EventKind::Rate, &self.settings, self.now_ms()))
    }

    /// Puts a show in `phase`, as [`Show::enter`], and publishes it.
    fn enter(&self, show: &ShowId, phase: Phase, reason: Option<EndReason>) -> Result<()> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if phase == Phase::Paused && matches!(s.on_sale(), Phase::Pending | Phase::Ended) {
            return Err(not_running(show, Some(s.on_sale())));
        }
        let event = s.enter(show, phase, reason, &self.settings, now);
        drop(inner);
        if let Some(event) = event {
            self.publish(event);
        }
        Ok(())
    }
}

#[async_trait]
impl Shows for MemoryStore {
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let mut created = false;
        let s = inner.shows.entry(show.clone()).or_insert_with(|| {
            created = true;
            Show::new()
        });
        s.settings = s.settings.merged(&settings.without_schedule());
        if let Some(cap) = settings.max_active_buyers {
            s.cap = Some(cap);
        }
        if let Some(window) = settings.arrival_window() {
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
        if let Some(change) = settings.rate_change() {
            s.change = change;
        }
        if let Some(bits) = settings.join_challenge_bits {
            s.challenge_bits = bits;
        }
        if let Some(stock) = settings.stock {
            s.stock = (stock > 0).then_some(stock);
            s.record(AuditRecord {
                stock: Some(stock),
                ..AuditRecord::new(AuditKind::Stock, now)
            });
        }
        if let Some(rate) = settings.admit_per_second {
            s.rate = Some(rate);
        }
        let mut event = None;
        if settings.admit_per_second.is_some()
            || settings.rate_change().is_some()
            || settings.stock.is_some()
        {
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
        if s.schedule.as_ref().is_some_and(|d| d.drawn.is_none()) {
            return Err(crate::store::draws::opens_by_itself(show));
        }
        let configured = Configured {
            created,
            recovered: false,
            epoch: s.epoch,
        };
        let event = self.set_open(show, s);
        drop(inner);
        if let Some(event) = event {
            self.publish(event);
        }
        Ok(configured)
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        self.enter(show, Phase::Closed, None)
    }

    async fn pause(&self, show: &ShowId) -> Result<()> {
        self.enter(show, Phase::Paused, None)
    }

    async fn end(&self, show: &ShowId, reason: Option<EndReason>) -> Result<()> {
        self.enter(show, Phase::Ended, reason)
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
            .filter(|(_, s)| s.is_open())
            .map(|(id, _)| id.clone())
            .collect();
        shows.sort();
        Ok(shows)
    }

    async fn check_show(
        &self,
        show: &ShowId,
        _known_epoch: u64,
        _indexed: Indexed,
    ) -> Result<Option<ShowMeta>> {
        // This store forgets only with the process, and the process forgets with it.
        self.show(show).await
    }

    async fn stats(&self, show: &ShowId) -> Result<ShowStats> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        let pace = s.pace(&self.settings, now);
        Ok(ShowStats {
            outflow_per_second: pace.flow_milli as f64 / 1000.0,
            paused: pace.paused,
            arrival_window_seconds: s.window.unwrap_or(self.settings.arrival_window).as_secs(),
            released_untaken: s.released,
            effective_admit_per_second: s.rate(&self.settings),
            show_id: show.to_string(),
            open: s.is_open(),
            phase: pace.phase,
            reason: pace.reason,
            stock: s.stock,
            stock_left: pace.stock_left,
            lost: false,
            queue_length: s.queue.len() as u64,
            admitted_valid: s.active(now),
            admit_per_second: s.configured_rate(&self.settings),
            max_active_buyers: s.cap(&self.settings),
            joined: s.arrival,
            join_challenge_bits: s.challenge_bits,
            settings: s.settings.clone(),
        })
    }

    async fn challenge_bits(&self, show: &ShowId) -> Result<u32> {
        Ok(self.lock().show(show)?.challenge_bits)
    }
}

#[async_trait]
impl Throttling for MemoryStore {
    async fn throttle_control(&self, show: &ShowId) -> Result<ThrottleControl> {
        let mut inner = self.lock();
        let s = inner.show(show)?;
        Ok(ThrottleControl {
            health_url: s.health_url.clone(),
            lowest: s.floor,
            configured: s.configured_rate(&self.settings),
            current: s.rate(&self.settings),
        })
    }

    async fn set_throttled(&self, show: &ShowId, rate: u32) -> Result<bool> {
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
}
