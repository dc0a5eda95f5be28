//! Push cadence: fans far back are pushed less often while their pages count down, and no
//! push is ever wrong nor any page's count. In the hub against the embedded store, tick by
//! tick on tokio's paused clock (`hub.rs`), and across three server processes on one Redis
//! (`instances.rs`).

mod hub;
mod instances;

use waiting_room::model::{Pace, TicketState, TicketView};

/// What a waiting page shows `seconds` after it was told `last`: counted down by
/// `countdownPerSecond` a second, never below 1 (wait.js `counted`).
pub fn counted(last: &TicketView, seconds: u64) -> TicketView {
    let Some(per) = last.countdown_per_second else {
        return last.clone();
    };
    let (Some(position), Some(arrival)) = (last.position, last.arrival) else {
        return last.clone();
    };
    let position = position.saturating_sub(u64::from(per) * seconds).max(1);
    TicketState::Waiting { position, arrival }.view(last.ticket_id, &Pace::at_rate(per))
}
