//! This instance's share of the console's "fans live", and of presence: once a second the
//! hub's count of fans following each show goes to the store, where the console's feed sums
//! every instance's, and so does the hub's news of who is here (streams opened and closed,
//! polls; docs/presence.md). One write per instance a second, and one per show with news,
//! however many fans it holds.

use std::time::Duration;

use tokio::time::MissedTickBehavior;

use super::super::AppState;
use crate::store::StoreError;

/// How often an instance reports its fans.
pub(crate) const REPORT_EVERY: Duration = Duration::from_secs(1);

/// How long a report holds: several missed reports before an instance counts as gone.
pub(crate) const REPORT_TTL: Duration = Duration::from_secs(5);

/// Reports this instance's live fans every [`REPORT_EVERY`] under `instance` until the
/// server stops, then reports none (its streams have ended), so the sum drops at once.
pub(crate) async fn report_fans(state: AppState, instance: String) {
    let mut every = tokio::time::interval(REPORT_EVERY);
    every.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = state.life.shutdown.cancelled() => break,
        }
        let fans = state.hub.fans_by_show();
        let mut result = state.store.report_fans(&instance, &fans, REPORT_TTL).await;
        for (show, news) in state.hub.attendance() {
            match state
                .store
                .attend(&show, &instance, news.clone(), REPORT_TTL)
                .await
            {
                Ok(back) => state.metrics.presence_reported(back),
                // A show deleted or lost meanwhile has no fans to be present.
                Err(StoreError::NoSuchShow(_) | StoreError::ShowLost(_)) => {}
                Err(e) => {
                    state.hub.unreport(show, news);
                    result = Err(e);
                }
            }
        }
        match result {
            Ok(()) => failing = false,
            // Said once per outage: the store's own errors are logged elsewhere too.
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "cannot report this instance's live fans");
            }
            Err(_) => {}
        }
    }
    // The streams have ended: their fans are last seen now, at once rather than when this
    // instance's report runs out.
    let last = async {
        let _ = state.store.report_fans(&instance, &[], REPORT_TTL).await;
        for (show, news) in state.hub.attendance() {
            let _ = state.store.attend(&show, &instance, news, REPORT_TTL).await;
        }
    };
    let _ = tokio::time::timeout(REPORT_EVERY, last).await;
}
