//! The push contract with real clients: an SSE reader over HTTP and tokio-tungstenite.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod handover;
mod instances;
mod memory;
mod pubsub;
mod sharded;
mod sse;
mod websocket;

const WAIT: Duration = Duration::from_secs(5);

/// Sleeps to the middle of a wall-clock second: admission ticks land early in a second, so
/// nothing moves between now and the next 400 ms.
async fn mid_second() {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        % 1000;
    let wait = if ms < 450 { 450 - ms } else { 1450 - ms };
    tokio::time::sleep(Duration::from_millis(wait)).await;
}
