//! How stale a fan's position is: from the admitter's tick that changed it to the fan
//! knowing it, for pushed and polled fans alike.
//!
//! The admitter ticks at [`TICK_PHASE_MS`] past each wall-clock second, and while a show
//! drains every tick moves every waiting fan. What a fan learns at `at` therefore changed at:
//!
//! - pushed (SSE, WebSocket): the latest tick at or before `at`. The stream carries every
//!   change, so until that tick the fan's previous state was current.
//! - polled: the first tick after the previous answer arrived. Until then the fan's state was
//!   confirmed; the server read the previous answer at or before its arrival, so the change
//!   may have come a tick earlier than counted: the figure is a lower bound, fair to polling.
//!
//! A change not made by a tick (a leave ahead, a rate change) is counted from the tick too;
//! on a draining show every tick changes every position, so those are few.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use waiting_room::model::{TicketStatus, TicketView};

use super::TICK_PHASE_MS;

/// What one fan knows of its ticket, and when that was last confirmed.
#[derive(Debug, Default)]
pub(super) struct Knowledge {
    /// Status and position of the last state heard.
    state: Option<(TicketStatus, Option<u64>)>,
    /// When the last state was heard (pushed or answered).
    heard_at: Option<SystemTime>,
}

impl Knowledge {
    /// `ticket` heard at `at`. When it tells the fan something new (a status or a position),
    /// how long the fan's knowledge had been out of date; `None` for the first state heard
    /// and for one that only confirms the last.
    pub(super) fn heard(
        &mut self,
        ticket: &TicketView,
        at: SystemTime,
        pushed: bool,
    ) -> Option<Duration> {
        let state = (ticket.status, ticket.position);
        let previous = self.heard_at.replace(at);
        let before = self.state.replace(state);
        if before.is_none() || before == Some(state) {
            return None;
        }
        let changed_at = if pushed {
            at.checked_sub(since_tick(at)).unwrap_or(at)
        } else {
            let previous = previous.unwrap_or(at);
            previous + since_tick(previous).abs_diff(Duration::from_secs(1))
        };
        Some(at.duration_since(changed_at).unwrap_or_default())
    }
}

/// How long after the latest admission tick `at` is.
pub(super) fn since_tick(at: SystemTime) -> Duration {
    let ms = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let into_second = ms.as_micros() as u64 % 1_000_000;
    let phase = TICK_PHASE_MS * 1000;
    Duration::from_micros((into_second + 1_000_000 - phase) % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn ticket(json: serde_json::Value) -> TicketView {
        serde_json::from_value(json).unwrap()
    }

    fn waiting(position: u64) -> TicketView {
        let id = Uuid::nil();
        ticket(serde_json::json!({"ticketId": id, "status": "WAITING", "position": position}))
    }

    #[test]
    fn latency_counts_from_the_tick_at_fifty_ms_past_the_second() {
        assert_eq!(since_tick(at(1_000_053)), Duration::from_millis(3));
        assert_eq!(since_tick(at(1_000_050)), Duration::ZERO);
        // Just before the next tick: nearly a second late, not negative.
        assert_eq!(since_tick(at(1_001_049)), Duration::from_millis(999));
    }

    #[test]
    fn a_push_is_as_stale_as_it_is_late_after_its_tick() {
        let mut k = Knowledge::default();
        assert_eq!(k.heard(&waiting(10), at(1_000_080), true), None);
        let late = k.heard(&waiting(9), at(1_001_080), true);
        assert_eq!(late, Some(Duration::from_millis(30)));
    }

    #[test]
    fn a_poll_learns_a_change_from_the_first_tick_after_the_last_answer() {
        let mut k = Knowledge::default();
        // Answered at .500: positions changed at the next tick, 1.050.
        assert_eq!(k.heard(&waiting(10), at(1_000_500), false), None);
        // The next poll, at 1.500, learns it 450 ms late.
        let late = k.heard(&waiting(9), at(1_001_500), false);
        assert_eq!(late, Some(Duration::from_millis(450)));
        // Nothing new: no figure.
        assert_eq!(k.heard(&waiting(9), at(1_001_700), false), None);
        // Two seconds between answers (a slow server): counted from the first tick missed.
        let late = k.heard(&waiting(7), at(1_003_700), false);
        assert_eq!(late, Some(Duration::from_millis(1_650)));
        // An answer just after a tick, of a change that came at that tick.
        let mut k = Knowledge::default();
        k.heard(&waiting(5), at(1_000_049), false);
        let late = k.heard(&waiting(4), at(1_000_060), false);
        assert_eq!(late, Some(Duration::from_millis(10)));
    }

    #[test]
    fn admission_is_news_too() {
        let mut k = Knowledge::default();
        k.heard(&waiting(1), at(1_000_500), false);
        let id = Uuid::nil();
        let admitted = ticket(serde_json::json!({"ticketId": id, "status": "ADMITTED"}));
        assert_eq!(
            k.heard(&admitted, at(1_001_250), false),
            Some(Duration::from_millis(200))
        );
    }
}
