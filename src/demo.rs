//! `--demo`: a show `demo` with thousands of simulated fans and a slow rate, so a newcomer
//! who opens `/wait/demo` watches a place in the queue fall in real time.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::ShowId;
use crate::store::{Queue, ShowSettings, Shows};

/// The demo show's id.
pub(crate) const DEMO_SHOW: &str = "demo";
/// Simulated fans queued at start.
pub(crate) const DEMO_FANS: u64 = 3000;
/// The demo's admission rate: slow enough to watch.
pub(crate) const DEMO_RATE: u32 = 25;

/// Opens the demo show, queues the simulated fans, then keeps a trickle of newcomers joining
/// behind them until `shutdown`.
pub(crate) async fn run<S: Shows + Queue + ?Sized>(store: Arc<S>, shutdown: CancellationToken) {
    let show: ShowId = DEMO_SHOW.parse().expect("a valid literal show id");
    let setup = async {
        let settings = ShowSettings {
            admit_per_second: Some(DEMO_RATE),
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
    let mut every = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = every.tick() => {
                if let Err(e) = store.join(&show).await {
                    tracing::warn!(error = %e, "demo join failed");
                }
            }
            _ = shutdown.cancelled() => return,
        }
    }
}
