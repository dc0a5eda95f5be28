//! The admitter: once a second, for every open show, let the next `rate` fans in.
//!
//! Exactly one instance admits at a time. Instances compete for a lease in the store; the
//! holder gets a fencing token that the admission script checks, so a paused or partitioned
//! old leader is refused. The script also serves each show at most once per second of the
//! store's clock, so even a hand-over race cannot admit 2N in one second.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::model::ShowId;
use crate::store::{AdmitOutcome, QueueStore, Result, wall_ms};

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
    /// True if a show refused our fencing token: a newer leader exists.
    pub fenced: bool,
}

/// One admission step: every open show admits its rate, guarded by `fence`.
#[tracing::instrument(skip_all, err)]
pub async fn admit_once(store: &dyn QueueStore, fence: u64) -> Result<TickReport> {
    let mut report = TickReport::default();
    for show in store.open_shows().await? {
        match store.admit(&show, fence).await? {
            AdmitOutcome::Admitted { count, .. } if count > 0 => {
                report.admitted.push((show, count));
            }
            AdmitOutcome::Admitted { .. } => {}
            AdmitOutcome::AlreadyThisSecond => report.already_served += 1,
            AdmitOutcome::Fenced => {
                report.fenced = true;
                break;
            }
        }
    }
    Ok(report)
}

/// Runs the admitter until `shutdown`: competes for the lease every half second and, while
/// holding it, admits once a second (and at once on taking over).
pub async fn run(
    store: Arc<dyn QueueStore>,
    instance: String,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) {
    let mut token: Option<u64> = None;
    loop {
        // Wake at .05 and .55 of each wall-clock second: admissions land early in a second of
        // the store's clock, far from its edges, so scheduling jitter never skips a second.
        let now = wall_ms();
        let next = (now / 500 + 1) * 500 + 50;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(next - now)) => {}
            _ = shutdown.cancelled() => break,
        }
        let on_the_second = next % 1000 < 500;
        let held = match store.lease(&instance, LEASE_TTL).await {
            Ok(t) => t,
            Err(e) => {
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
        match admit_once(store.as_ref(), fence).await {
            Ok(report) => {
                for (show, count) in &report.admitted {
                    metrics.admitted(show, *count);
                }
                if report.fenced {
                    tracing::warn!(instance, "fenced out by a newer admitter");
                    token = None;
                    metrics.set_leader(false);
                }
            }
            Err(e) => tracing::warn!(error = %e, "admission tick failed"),
        }
    }
    if token.is_some() {
        // Hand over at once instead of making the next leader wait out the lease.
        if let Err(e) = store.release_lease(&instance).await {
            tracing::warn!(error = %e, "could not release the admitter lease");
        }
    }
    metrics.set_leader(false);
}
