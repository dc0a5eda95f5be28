//! `--demo`: a show `demo` with thousands of simulated fans and a slow rate, so a newcomer
//! who opens `/wait/demo` watches a place in the queue fall in real time, however long the
//! server has run.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::ShowId;
use crate::store::{Queue, ShowSettings, Shows};

/// The demo show's id.
pub(crate) const DEMO_SHOW: &str = "demo";
/// Simulated fans queued at start, and the queue's length the demo keeps up.
pub(crate) const DEMO_FANS: u64 = 3000;
/// The demo's admission rate: slow enough to watch.
pub(crate) const DEMO_RATE: u32 = 25;
/// How often the queue is topped up.
const TOP_UP_EVERY: Duration = Duration::from_millis(200);
/// Most simulated joins per top-up: 250 a second, ten times the rate, so the queue refills
/// within seconds whatever an operator did, without a burst of thousands of joins at once.
const TOP_UP_MOST: u64 = 50;

/// Opens the demo show, queues the simulated fans, then keeps the queue at about
/// [`DEMO_FANS`] until `shutdown`: newcomers join behind as fans are admitted, so a real fan
/// keeps moving forward (and there is always a queue to join).
pub(crate) async fn run<S: Shows + Queue + ?Sized>(store: Arc<S>, shutdown: CancellationToken) {
    let show: ShowId = DEMO_SHOW.parse().expect("a valid literal show id");
    let setup = async {
        let settings = ShowSettings {
            admit_per_second: Some(DEMO_RATE),
            // The simulated fans never open a page: admitted in turn as if present.
            away_hold_seconds: Some(0),
            ..ShowSettings::default()
        };
        store.configure(&show, settings).await?;
        for _ in 0..DEMO_FANS {
            store.join(&show).await?;
        }
        store.open(&show).await?;
        Ok::<_, crate::store::StoreError>(())
    };
    if let Err(e) = setup.await {
        tracing::error!(error = %e, "demo setup failed");
        return;
    }
    tracing::info!("demo: {DEMO_FANS} fans queued for show '{DEMO_SHOW}'; open /wait/{DEMO_SHOW}");
    let mut every = tokio::time::interval(TOP_UP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {
                if let Err(e) = top_up(&*store, &show).await {
                    tracing::warn!(error = %e, "demo top-up failed");
                }
            }
            _ = shutdown.cancelled() => return,
        }
    }
}

/// Joins simulated fans until the queue holds [`DEMO_FANS`] again (at most [`TOP_UP_MOST`]
/// at once); answers how many joined. A show an operator ended, closed or paused is topped up
/// all the same: its queue waits for `open`.
async fn top_up<S: Shows + Queue + ?Sized>(
    store: &S,
    show: &ShowId,
) -> Result<u64, crate::store::StoreError> {
    let queued = store.stats(show).await?.queue_length;
    let missing = DEMO_FANS.saturating_sub(queued).min(TOP_UP_MOST);
    for _ in 0..missing {
        store.join(show).await?;
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TicketState;
    use crate::store::{MemoryStore, StoreSettings};

    /// Four minutes of admissions at the demo's rate would empty 3,000 fans twice over: the
    /// queue stays full, and a fan who joined at the start keeps moving until admitted.
    #[tokio::test(start_paused = true)]
    async fn the_demo_queue_stays_topped_up_while_fans_move_through() {
        let store = Arc::new(MemoryStore::new(StoreSettings {
            default_rate: 1,
            admission_ttl: Duration::from_secs(300),
            max_active_buyers: 0,
            arrival_window: Duration::from_secs(60),
        }));
        let stop = CancellationToken::new();
        let demo = tokio::spawn(run(store.clone(), stop.clone()));
        let show: ShowId = DEMO_SHOW.parse().unwrap();
        // The demo makes its show first: until then the store knows none.
        while !matches!(store.stats(&show).await, Ok(stats) if stats.open) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let me = store.join(&show).await.unwrap();
        let mut positions = Vec::new();
        for _ in 0..240 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            store.admit(&show, 1).await.unwrap();
            if let TicketState::Waiting { position, .. } =
                store.status(&show, me.ticket).await.unwrap().state
            {
                positions.push(position);
            }
        }
        let stats = store.stats(&show).await.unwrap();
        // 240 ticks of 25: 6,000 admitted, twice what the demo started with.
        assert!(stats.joined >= 2 * DEMO_FANS, "{stats:?}");
        assert!(
            stats.queue_length >= DEMO_FANS - u64::from(DEMO_RATE) - TOP_UP_MOST,
            "the queue stays topped up: {stats:?}"
        );
        assert!(
            positions.windows(2).all(|w| w[1] < w[0]),
            "the fan's place falls every second: {positions:?}"
        );
        assert!(
            store.is_admitted(&show, me.ticket).await.unwrap(),
            "and is admitted"
        );
        stop.cancel();
        demo.await.unwrap();
    }
}
