//! When a fan knows each tick: by a push, or by its page counting down between pushes as
//! README's Push cadence words it (and `static/wait.js` does).
//!
//! A page under a steady pace holds the last state with `countdownPerSecond` and
//! `lastTickSecond`, and the ticks' phase on its own clock: the smallest gap, over its last 16
//! pushes, between a push's arrival and its `lastTickSecond`. It counts tick `s` at
//! `s·1000 + phase`. So a fan knows tick `s`
//!
//! - counted: at `s·1000 + phase`, when the page's count had reached it before the push
//!   telling it came; its latency is `phase − TICK_PHASE_MS` (the fastest push's);
//! - pushed: when the push whose `lastTickSecond` is `s` arrives, if the count had not.
//!
//! Each push also checks the count: the position the page counted for the push's tick must be
//! the pushed one, or above it by no more than the leaves ahead a page may not have been told
//! yet (`model::position_slack`), or the count was wrong (`count_wrong`: only rate changes,
//! pauses and leaves past that bound may make it so, and the server pushes those at once).
//! Ticks are accounted for when the push after them arrives; those counted after a fan's last
//! push are not (they would add samples of the same latency).

use std::collections::VecDeque;
use std::time::Duration;

use waiting_room::model::{TicketView, position_agrees};

use super::TICK_PHASE_MS;

/// How many pushes' gaps the phase is the smallest of.
const GAPS: usize = 16;

/// One fan's page count.
#[derive(Debug, Default)]
pub(crate) struct PageCount {
    /// The last counting state: position, `countdownPerSecond`, `lastTickSecond`.
    last: Option<(u64, u32, u64)>,
    /// Arrival (ms since the epoch) minus `lastTickSecond`·1000 of recent pushes.
    gaps: VecDeque<i64>,
    /// The newest tick second the fan knows.
    known: Option<u64>,
}

/// What one push taught a fan.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Learned {
    /// Each tick newly known, with its tick second and how long after the tick it was known.
    pub ticks: Vec<(u64, Duration)>,
    /// The page's count for the push's tick was not the pushed position.
    pub count_wrong: bool,
}

impl PageCount {
    /// A push of `view` arrived at `at_ms` (ms since the epoch).
    pub(crate) fn heard(&mut self, view: &TicketView, at_ms: i64) -> Learned {
        let mut learned = Learned::default();
        let (Some(per), Some(tick), Some(position)) = (
            view.countdown_per_second,
            view.last_tick_second,
            view.position,
        ) else {
            // Nothing counts down (paused, admitted, ...): the count ends here.
            self.last = None;
            return learned;
        };
        let phase = self.gaps.iter().min().copied();
        if let (Some((from, per_before, from_tick)), Some(phase)) = (self.last, phase) {
            // The ticks the page counted before this push came: up to its clock's, never
            // past the push's own (counting ahead of the store is not knowing).
            let counted_to = ((at_ms - phase).div_euclid(1000).max(0) as u64).min(tick);
            let late = Duration::from_millis((phase - TICK_PHASE_MS as i64).max(0) as u64);
            for s in from_tick + 1..=counted_to {
                if self.known.is_none_or(|k| s > k) {
                    learned.ticks.push((s, late));
                    self.known = Some(s);
                }
            }
            let seconds = tick.saturating_sub(from_tick);
            let counted = from.saturating_sub(u64::from(per_before) * seconds).max(1);
            learned.count_wrong = !position_agrees(counted, position);
        }
        if self.known.is_none_or(|k| tick > k) {
            let tick_ms = tick as i64 * 1000 + TICK_PHASE_MS as i64;
            let late = Duration::from_millis((at_ms - tick_ms).max(0) as u64);
            learned.ticks.push((tick, late));
            self.known = Some(tick);
        }
        // The oldest out first: the ring never grows past its 16 (a swarm holds one a fan).
        if self.gaps.len() == GAPS {
            self.gaps.pop_front();
        }
        self.gaps.push_back(at_ms - tick as i64 * 1000);
        self.last = Some((position, per, tick));
        learned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn view(position: u64, tick: u64) -> TicketView {
        serde_json::from_value(serde_json::json!({
            "ticketId": Uuid::nil(), "status": "WAITING", "position": position,
            "etaSeconds": position.div_ceil(10), "arrival": 9,
            "countdownPerSecond": 10, "lastTickSecond": tick,
        }))
        .unwrap()
    }

    #[test]
    fn ticks_between_pushes_are_known_when_the_page_counts_them() {
        let mut page = PageCount::default();
        // The first push, 30 ms after tick 1,000 (at .050): known 30 ms late.
        let first = page.heard(&view(500, 1_000), 1_000_080);
        assert_eq!(first.ticks, vec![(1_000, Duration::from_millis(30))]);
        assert!(!first.count_wrong);
        // Five ticks later a refresh, 40 ms after its tick: the page counted 1,001..=1,005
        // at .080 each (30 ms late) before it came.
        let refresh = page.heard(&view(450, 1_005), 1_005_090);
        let late = Duration::from_millis(30);
        assert_eq!(
            refresh.ticks,
            (1_001..=1_005).map(|s| (s, late)).collect::<Vec<_>>()
        );
        assert!(!refresh.count_wrong);
        // A correction between ticks (leaves ahead past a twentieth): no tick newly known,
        // the count was wrong.
        let correction = page.heard(&view(427, 1_005), 1_005_400);
        assert_eq!(correction.ticks, vec![]);
        assert!(correction.count_wrong);
        // One leave ahead told on the cadence: within the bound.
        let told = page.heard(&view(426, 1_005), 1_005_420);
        assert!(!told.count_wrong);
        // The phase stays the fastest push's: the next tick is counted at .080 again.
        let next = page.heard(&view(416, 1_006), 1_006_300);
        assert_eq!(next.ticks, vec![(1_006, late)]);
        assert!(!next.count_wrong);
    }

    #[test]
    fn a_push_that_beats_the_count_is_known_when_it_comes() {
        let mut page = PageCount::default();
        page.heard(&view(500, 1_000), 1_000_080);
        // Faster than the page's phase: the count had not reached tick 1,001 yet.
        let quick = page.heard(&view(490, 1_001), 1_001_060);
        assert_eq!(quick.ticks, vec![(1_001, Duration::from_millis(10))]);
        // Paused: the count ends; nothing is known from it.
        let paused: TicketView = serde_json::from_value(serde_json::json!({
            "ticketId": Uuid::nil(), "status": "WAITING", "position": 490, "etaSeconds": 49,
            "paused": "paused", "arrival": 9,
        }))
        .unwrap();
        assert_eq!(page.heard(&paused, 1_001_500), Learned::default());
    }
}
