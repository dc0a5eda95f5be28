//! The admitter: once a second, for every open show, let the next `rate` fans in.
//!
//! Exactly one instance admits at a time. Instances compete for a lease in the store; the
//! holder gets a fencing token that the admission script checks, so a paused or partitioned
//! old leader is refused. The script also serves each show at most once per second of the
//! store's clock, so even a hand-over race cannot admit 2N in one second.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::Clock;
use crate::draw;
use crate::metrics::{Metrics, StoreCaller};
use crate::model::ShowId;
use crate::notify::{Call, CallEvent, Channel, Notifier, check_subscription};
use crate::store::{
    AdmitOutcome, AdmitterLease, Closing, Draws, DueCalls, Queue, Result, Shows, Throttling,
};
use crate::throttle;

/// What the admitter asks of the store: the lease ([`AdmitterLease`]), the open shows
/// ([`Shows`]), the admission step ([`Queue`]), the scheduled openings ([`Draws`]) and the
/// rate in force behind a checkout ([`Throttling`]). Any store with those parts is one.
pub trait AdmitterStore: AdmitterLease + Shows + Queue + Draws + Throttling {}

impl<T: AdmitterLease + Shows + Queue + Draws + Throttling + ?Sized> AdmitterStore for T {}

/// How long a lease lasts without renewal. The leader renews every half second, so a dead
/// leader is replaced within this plus half a second.
pub const LEASE_TTL: Duration = Duration::from_secs(2);

/// What one admission step did, across all open shows.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Per show that admitted anyone: how many.
    pub admitted: Vec<(ShowId, u64)>,
    /// Shows already served this second by someone else.
    pub already_served: usize,
    /// The highest fence a show refused our token with: a newer leader exists, or the
    /// lease's counter fell behind. The next lease asks for a token above it.
    pub fenced: Option<u64>,
    /// Shows whose step failed (a store error); the others were served all the same.
    pub failed: Vec<ShowId>,
    /// Per show whose tick made calls due: the calls to send.
    pub calls: Vec<(ShowId, DueCalls)>,
}

/// One admission step: every open show admits its rate, guarded by `fence`. One show's
/// refusal or error never keeps the others from their tick. A show refused because this
/// instance's clock runs a little ahead of the store's (the store is still in the second it
/// last served) is tried again as soon as the store's next second begins.
#[tracing::instrument(skip_all)]
pub async fn admit_once(store: &(impl Shows + Queue + ?Sized), fence: u64) -> Result<TickReport> {
    Ok(admit_shows(store, &store.open_shows().await?, fence).await)
}

/// One admission step over `shows` (the open shows, listed once for the tick).
async fn admit_shows(store: &(impl Queue + ?Sized), shows: &[ShowId], fence: u64) -> TickReport {
    let mut report = TickReport::default();
    for show in shows.iter().cloned() {
        let mut outcome = store.admit(&show, fence).await;
        if let Ok(AdmitOutcome::AlreadyThisSecond { next_in }) = outcome
            && next_in <= CLOCK_SKEW_RETRY
        {
            tokio::time::sleep(next_in + Duration::from_millis(5)).await;
            outcome = store.admit(&show, fence).await;
        }
        if let Ok(AdmitOutcome::Admitted { calls, .. }) = &mut outcome
            && !calls.calls.is_empty()
        {
            report.calls.push((show.clone(), std::mem::take(calls)));
        }
        match outcome {
            Ok(AdmitOutcome::Admitted { count, .. }) if count > 0 => {
                report.admitted.push((show, count));
            }
            Ok(AdmitOutcome::Admitted { .. } | AdmitOutcome::NotServed) => {}
            Ok(AdmitOutcome::AlreadyThisSecond { .. }) => report.already_served += 1,
            Ok(AdmitOutcome::Fenced { fence }) => {
                report.fenced = report.fenced.max(Some(fence));
            }
            Err(e) => {
                tracing::warn!(%show, error = %e, "admission step failed");
                report.failed.push(show);
            }
        }
    }
    report
}

/// Opens every scheduled show whose time has come: closes its pre-queue, works out the draw
/// key from the committed seed, the participants digest and the beacon, and draws and opens
/// it. Each step is fenced and idempotent: a leader that dies half-way leaves the next one to
/// finish the very same draw.
pub async fn open_due(store: &(impl Draws + ?Sized), fence: u64, now_ms: u64) {
    let due = match store.due(now_ms).await {
        Ok(due) => due,
        Err(e) => return tracing::warn!(error = %e, "cannot list the shows due to open"),
    };
    for show in due {
        if let Err(e) = open_scheduled(store, &show, fence).await {
            tracing::warn!(%show, error = %e, "scheduled opening failed; retrying next tick");
        }
    }
}

/// Applies every schedule's change that is due (docs/events.md), whatever its show's phase:
/// the settings in force, and the phase an event starts (it may open a show, pause it or end
/// it). Each call is fenced and idempotent, as a tick is.
pub async fn apply_events_due(store: &(impl Shows + ?Sized), fence: u64, now_ms: u64) {
    let due = match store.events_due(now_ms).await {
        Ok(due) => due,
        Err(e) => return tracing::warn!(error = %e, "cannot list the schedules due"),
    };
    for show in due {
        if let Err(e) = store.apply_due_events(&show, fence).await {
            tracing::warn!(%show, error = %e, "a schedule's change failed; retrying next tick");
        }
    }
}

/// Opens one scheduled show whose time has come; true when this call drew it.
pub async fn open_scheduled(
    store: &(impl Draws + ?Sized),
    show: &ShowId,
    fence: u64,
) -> Result<bool> {
    let (participants, seed, beacon_value) = match store.close_pre_queue(show, fence).await? {
        Closing::Ready {
            participants,
            seed,
            beacon_value,
        } => (participants, seed, beacon_value),
        Closing::AwaitingBeacon { participants } => {
            tracing::info!(%show, participants, "pre-queue closed; the draw waits for the beacon");
            return Ok(false);
        }
        Closing::Fenced | Closing::NotDue | Closing::Drawn | Closing::NotScheduled => {
            return Ok(false);
        }
    };
    // A million arrivals hash in tens of milliseconds: off the async threads all the same.
    let digest = tokio::task::spawn_blocking(move || draw::participants_digest(participants))
        .await
        .map_err(|e| crate::store::StoreError::Protocol(format!("digest: {e}")))?;
    let key = draw::draw_key(&seed, &digest, &beacon_value);
    let drawn = store.apply_draw(show, fence, &digest, &key).await?;
    if drawn {
        tracing::info!(%show, participants, %digest, "pre-queue drawn; on-sale open");
    }
    Ok(drawn)
}

/// A show found already served with less than this left of the store's second is tried
/// again once that second ends: our clock is ahead of the store's by about that much. A
/// longer wait means another admitter served it this second, and our next tick comes anyway.
pub const CLOCK_SKEW_RETRY: Duration = Duration::from_millis(400);

/// Runs the admitter until `shutdown`: competes for the lease every half second and, while
/// holding it, admits once a second (and at once on taking over).
pub async fn run(
    store: Arc<impl AdmitterStore + ?Sized + 'static>,
    notifier: Option<Notifier>,
    instance: String,
    metrics: Arc<Metrics>,
    clock: Clock,
    shutdown: CancellationToken,
) {
    let mut token: Option<u64> = None;
    // The highest fence a show refused us with; every next token is above it.
    let mut fenced = 0;
    // The checkouts' health checks run beside the ticks; the admitter waits for them to end.
    let checks = TaskTracker::new();
    loop {
        // Wake at .05 and .55 of each wall-clock second: admissions land early in a second of
        // the store's clock, far from its edges, so scheduling jitter never skips a second.
        let next = (clock.now_ms() / 500 + 1) * 500 + 50;
        tokio::select! {
            _ = clock.sleep_until_ms(next) => {}
            _ = shutdown.cancelled() => break,
        }
        let on_the_second = next % 1000 < 500;
        let held = match store.lease(&instance, LEASE_TTL, fenced).await {
            Ok(t) => t,
            Err(e) => {
                metrics.store_error(StoreCaller::Admitter);
                tracing::warn!(error = %e, "admitter lease check failed");
                None
            }
        };
        let fresh = held.is_some() && held != token;
        if fresh {
            tracing::info!(instance, token = held, "this instance is now the admitter");
        } else if token.is_some() && held.is_none() {
            tracing::info!(instance, "this instance is no longer the admitter");
        }
        token = held;
        metrics.set_leader(token.is_some());
        let Some(fence) = token else { continue };
        if !(on_the_second || fresh) {
            continue;
        }
        // Scheduled shows whose time has come open first, so their tick is this one; so do
        // shows a schedule's event opens.
        open_due(store.as_ref(), fence, clock.now_ms()).await;
        apply_events_due(store.as_ref(), fence, clock.now_ms()).await;
        // The checkouts are asked beside the tick, never in its way: what they answer sets
        // the rate in force for the next tick.
        let shows = match store.open_shows().await {
            Ok(shows) => shows,
            Err(e) => {
                metrics.store_error(StoreCaller::Admitter);
                tracing::warn!(error = %e, "admission tick failed");
                continue;
            }
        };
        checks.spawn(throttle::follow_checkouts(store.clone(), shows.clone()));
        let mut report = admit_shows(store.as_ref(), &shows, fence).await;
        for (show, count) in &report.admitted {
            metrics.admitted(show, *count);
        }
        if let Some(notifier) = &notifier {
            for (show, calls) in report.calls.drain(..) {
                send_calls(notifier, show, calls);
            }
        }
        for _ in &report.failed {
            metrics.admitter_error();
        }
        if let Some(seen) = report.fenced {
            // Either a newer leader exists (then our lease is gone and the next check says
            // so) or the counter fell behind a show's fence: the next lease call heals it
            // with a token above `seen`.
            tracing::warn!(instance, fence, seen, "a show refused our fencing token");
            metrics.admitter_error();
            fenced = fenced.max(seen);
        }
    }
    if token.is_some() {
        // Hand over at once instead of making the next leader wait out the lease.
        if let Err(e) = store.release_lease(&instance).await {
            tracing::warn!(error = %e, "could not release the admitter lease");
        }
    }
    metrics.set_leader(false);
    checks.close();
    checks.wait().await;
}

/// Hands the calls a tick made due to the notifier, which sends them beside the ticks. A
/// channel that no longer reads (a subscription the show's `pushServices` no longer allow, a
/// webhook with no `notifyUrl` left) is not called.
fn send_calls(notifier: &Notifier, show: ShowId, due: DueCalls) {
    let services: Arc<[String]> = due.push_services.unwrap_or_default().into();
    for c in due.calls {
        let channel = if c.channel == crate::notify::WEBHOOK_CHANNEL {
            match &due.notify_url {
                Some(url) => Channel::Webhook(url.clone()),
                None => continue,
            }
        } else {
            match check_subscription(c.channel.as_bytes(), &services) {
                Ok(subscription) => Channel::WebPush {
                    subscription,
                    push_services: services.clone(),
                },
                Err(e) => {
                    tracing::debug!(%show, error = %e, "a call's subscription no longer reads");
                    continue;
                }
            }
        };
        let call = Call {
            show: show.clone(),
            ticket: c.ticket,
            event: if c.admitted {
                CallEvent::Admitted
            } else {
                CallEvent::Soon
            },
            position: c.position,
            eta_seconds: c.eta_seconds,
        };
        notifier.call(channel, call);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, Queue, Shows, StoreSettings};

    /// A store admitting one fan a second, with one open show and `fans` fans queued.
    async fn store_with_fans(fans: usize) -> (MemoryStore, ShowId) {
        let store = MemoryStore::new(StoreSettings {
            default_rate: 1,
            admission_ttl: Duration::from_secs(300),
            max_active_buyers: 0,
            arrival_window: Duration::from_secs(60),
        });
        let show: ShowId = "skew".parse().unwrap();
        store.open(&show).await.unwrap();
        for _ in 0..fans {
            store.join(&show).await.unwrap();
        }
        (store, show)
    }

    /// How long until the store's current second ends, asked by an admission it refuses
    /// because that second was served already.
    async fn next_in(store: &MemoryStore, show: &ShowId) -> Duration {
        match store.admit(show, 1).await.unwrap() {
            AdmitOutcome::AlreadyThisSecond { next_in } => next_in,
            other => panic!("the second was served already, yet: {other:?}"),
        }
    }

    /// Serves the show in the store's current second, then lets tokio's (paused) clock run
    /// on until exactly `remaining` of that second is left: the situation of an admitter
    /// whose clock runs ahead of the store's.
    async fn served_with_remaining(store: &MemoryStore, show: &ShowId, remaining: Duration) {
        assert!(matches!(
            store.admit(show, 1).await.unwrap(),
            AdmitOutcome::Admitted { count: 1, .. }
        ));
        // Align on the start of the store's next second, whatever the wall clock said.
        tokio::time::advance(next_in(store, show).await).await;
        assert!(matches!(
            store.admit(show, 1).await.unwrap(),
            AdmitOutcome::Admitted { count: 1, .. }
        ));
        assert_eq!(next_in(store, show).await, Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(1) - remaining).await;
        assert_eq!(next_in(store, show).await, remaining);
    }

    #[tokio::test(start_paused = true)]
    async fn a_show_served_this_second_by_a_slower_store_clock_is_retried_when_it_ends() {
        let (store, show) = store_with_fans(5).await;
        served_with_remaining(&store, &show, Duration::from_millis(300)).await;

        let started = tokio::time::Instant::now();
        let report = admit_once(&store, 1).await.unwrap();
        let waited = started.elapsed();

        assert_eq!(
            report,
            TickReport {
                admitted: vec![(show.clone(), 1)],
                ..TickReport::default()
            },
            "the retry admits in the store's next second"
        );
        assert!(
            waited >= Duration::from_millis(300) && waited <= Duration::from_millis(320),
            "waited for the rest of the store's second, and hardly more: {waited:?}"
        );
        // The retry landed early in the new second, which is now served.
        let left = next_in(&store, &show).await;
        assert!(left >= Duration::from_millis(980), "{left:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_retry_covers_skew_up_to_its_bound_and_no_further() {
        // Exactly the bound left: still retried.
        let (store, show) = store_with_fans(5).await;
        served_with_remaining(&store, &show, CLOCK_SKEW_RETRY).await;
        let started = tokio::time::Instant::now();
        let report = admit_once(&store, 1).await.unwrap();
        assert_eq!(report.admitted, vec![(show.clone(), 1)]);
        assert!(started.elapsed() >= CLOCK_SKEW_RETRY);

        // More left than clock skew explains (another admitter served this second): counted
        // as served, at once, without waiting for the second to end.
        for remaining in [
            CLOCK_SKEW_RETRY + Duration::from_millis(1),
            Duration::from_secs(1),
        ] {
            let (store, show) = store_with_fans(5).await;
            served_with_remaining(&store, &show, remaining).await;
            let started = tokio::time::Instant::now();
            let report = admit_once(&store, 1).await.unwrap();
            assert_eq!(
                report,
                TickReport {
                    already_served: 1,
                    ..TickReport::default()
                },
                "{remaining:?} left"
            );
            assert_eq!(
                started.elapsed(),
                Duration::ZERO,
                "{remaining:?} left: no wait"
            );
            assert_eq!(next_in(&store, &show).await, remaining, "nothing admitted");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_admitter_takes_the_lease_and_admits_its_rate_every_second_of_its_clock() {
        let (store, show) = store_with_fans(10).await;
        let store = Arc::new(store);
        let metrics = Arc::new(Metrics::default());
        let shutdown = CancellationToken::new();
        let admitter = tokio::spawn(run(
            store.clone(),
            None,
            "a".into(),
            metrics.clone(),
            Clock::tokio(),
            shutdown.clone(),
        ));
        // Three seconds of paused time: a tick on taking over, then one each second.
        tokio::time::sleep(Duration::from_millis(3_020)).await;
        let admitted = store.stats(&show).await.unwrap().admitted_valid;
        assert!(
            (3..=4).contains(&admitted),
            "{admitted} admitted in 3 s at 1 a second"
        );
        assert!(
            metrics
                .render(&[])
                .contains("waiting_room_admitter_leader 1")
        );
        // A second admitter on the same store waits its turn.
        let other = tokio::spawn(run(
            store.clone(),
            None,
            "b".into(),
            Arc::new(Metrics::default()),
            Clock::tokio(),
            shutdown.clone(),
        ));
        tokio::time::sleep(Duration::from_secs(2)).await;
        let later = store.stats(&show).await.unwrap().admitted_valid;
        assert!(
            (admitted + 1..=admitted + 3).contains(&later),
            "one leader: {later}"
        );
        shutdown.cancel();
        admitter.await.unwrap();
        other.await.unwrap();
        assert!(
            metrics
                .render(&[])
                .contains("waiting_room_admitter_leader 0")
        );
    }
}
