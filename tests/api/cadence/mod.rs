//! Push cadence: fans far back are pushed less often while their pages count down, no push
//! is ever wrong, and every page's count agrees with the poll (`TicketView::agrees_with`). In
//! the hub against the embedded store, tick by tick on tokio's paused clock (`hub.rs`),
//! across three server processes on one Redis (`instances.rs`), and what a leave costs with
//! 10,000 fans on two (`leaves.rs`).

mod hub;
mod instances;
mod leaves;

use waiting_room::model::{Pace, Sale, TicketState, TicketView};

/// A waiting page's count, as README's Push cadence words it (and wait.js does): the ticks'
/// phase is the smallest gap seen between a push's arrival (on the page's own clock, in ms)
/// and its `lastTickSecond`; from the last state told, the position drops by
/// `countdownPerSecond` for each tick second since its `lastTickSecond`, never below 1.
#[derive(Default)]
pub struct PageClock {
    offset: Option<i64>,
}

impl PageClock {
    /// A push arrived at `at_ms`.
    pub fn heard(&mut self, at_ms: i64, view: &TicketView) {
        if let Some(tick) = view.last_tick_second {
            let gap = at_ms - tick as i64 * 1000;
            self.offset = Some(self.offset.map_or(gap, |o| o.min(gap)));
        }
    }

    /// What the page told `last` shows at `now_ms`.
    pub fn shows(&self, last: &TicketView, now_ms: i64) -> TicketView {
        let (Some(per), Some(tick), Some(offset)) = (
            last.countdown_per_second,
            last.last_tick_second,
            self.offset,
        ) else {
            return last.clone();
        };
        let (Some(position), Some(arrival)) = (last.position, last.arrival) else {
            return last.clone();
        };
        let now_tick = (now_ms - offset).div_euclid(1000).max(tick as i64) as u64;
        let position = position
            .saturating_sub(u64::from(per) * (now_tick - tick))
            .max(1);
        let pace = Pace {
            tick_sec: Some(now_tick),
            ..Pace::at_rate(per)
        };
        TicketState::Waiting { position, arrival }.view(last.ticket_id, &pace, &Sale::open())
    }
}
