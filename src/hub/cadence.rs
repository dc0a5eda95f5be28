//! Push cadence: which fans a change is pushed to, so that 90,000 fans do not cost 90,000
//! writes a second while every figure a page shows stays within the bounds of
//! [`crate::model::TicketView::agrees_with`].
//!
//! Under a steady pace the ticket JSON carries `countdownPerSecond` and `lastTickSecond`:
//! the page counts its position down by `countdownPerSecond` at each tick, one a second from
//! `lastTickSecond` on, in the phase it learnt from the pushes that came right after a tick,
//! and works its ETA out from it. The hub knows from the state it last pushed a fan what that
//! page shows now, compares it with the truth at every recompute and pushes when they
//! disagree: a rate change, a pause or a full cap, a tick that let in fewer (or a second
//! without a tick), an admission, and leaves ahead once they come to more than a twentieth of
//! the fan's position (the front twenty places at every leave). When they agree a fan is
//! pushed only on its cadence: the front `PUSH_FRONT` places every tick, and further back
//! every `ceil(position / PUSH_FRONT)` ticks (at most [`MAX_PUSH_EVERY`]), spread over the
//! ticks by arrival; that push also tells the leaves ahead, so a leave reaches every page
//! within 30 ticks, and a crowd leaving steadily costs no push per fan behind each leaver.
//! A fan is also pushed on the first tick after it begins to follow, so its page learns the
//! ticks' phase; and a fan pushed in a burst (a tick that pushed more than [`BURST`] fans
//! here and over twice the tick before: the opening, a rate change) once more within
//! [`AFTER_BURST`] ticks, spread by arrival, since a push that waited behind thousands teaches
//! its page a late phase.

use crate::model::{Pace, Sale, TicketState, TicketView};

/// Fans at or ahead of this place are pushed every tick by default (`PUSH_FRONT`).
pub const DEFAULT_PUSH_FRONT: u64 = 1000;

/// The most ticks a fan whose count is right goes without a push.
pub const MAX_PUSH_EVERY: u64 = 30;

/// While a queue stands still (pending, paused, full) no tick re-tells its pages; the leaves
/// ahead they were not told are told this long after the first of them.
pub const LAG_REFRESH: std::time::Duration = std::time::Duration::from_secs(10);

/// A tick that pushed more fans than this on one instance, and over twice the tick before,
/// is a burst.
pub(super) const BURST: usize = 2_000;

/// Fans pushed in a burst are pushed again within this many ticks.
pub(super) const AFTER_BURST: u64 = 5;

/// What a fan's page knows of the ticks' phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// No push right after a tick yet.
    Unknown,
    /// Only from a push in a burst, likely late.
    Late,
    /// From a push right after a quiet tick.
    Known,
}

/// The moment of one recompute.
#[derive(Clone, Copy, Debug)]
pub(super) struct Moment {
    /// The store's second of the show's last tick, if it had one.
    pub(super) tick_sec: Option<u64>,
    /// This recompute follows a tick.
    pub(super) on_tick: bool,
    /// `PUSH_FRONT` (0: every fan every tick).
    pub(super) front: u64,
    /// A refresh of a queue standing still: leaves ahead not told yet are told now.
    pub(super) refresh: bool,
}

impl Moment {
    /// Whether `truth`, the fan's state now, goes out to a page that was told `last` and
    /// knows the ticks' `phase` so well.
    pub(super) fn should_push(&self, last: &TicketView, phase: Phase, truth: &TicketView) -> bool {
        let Some(shown) = counted(last, self.tick_sec) else {
            return true; // what the page shows cannot be known: tell it
        };
        if !shown.agrees_with(truth) || (self.refresh && shown.position != truth.position) {
            return true;
        }
        let (Some(position), Some(arrival), Some(_)) =
            (truth.position, truth.arrival, truth.countdown_per_second)
        else {
            return false; // nothing counts down: nothing to refresh
        };
        self.on_tick
            && match phase {
                Phase::Unknown => true,
                Phase::Late => self.due(position, arrival) || self.spread(arrival, AFTER_BURST),
                Phase::Known => self.due(position, arrival),
            }
    }

    /// A fan whose count is right is pushed on this tick anyway: the front every tick, the
    /// rest every `ceil(position / front)` ticks, spread by arrival.
    fn due(&self, position: u64, arrival: u64) -> bool {
        if self.front == 0 || position <= self.front {
            return true;
        }
        self.spread(arrival, position.div_ceil(self.front).min(MAX_PUSH_EVERY))
    }

    /// One tick in `every`, which one by arrival.
    fn spread(&self, arrival: u64, every: u64) -> bool {
        (self.tick_sec.unwrap_or(0) + arrival).is_multiple_of(every)
    }
}

/// What a page told `last` shows once the show's last tick is `tick_sec`: the same state, or,
/// counting down, the position `countdownPerSecond` lower for each second since
/// `lastTickSecond` (never below 1: the admission is pushed), its ETA skipping the same
/// `awayAhead`. `None` when that cannot be known.
pub(super) fn counted(last: &TicketView, tick_sec: Option<u64>) -> Option<TicketView> {
    let Some(per_second) = last.countdown_per_second else {
        return Some(last.clone());
    };
    let tick_sec = tick_sec?;
    let seconds = tick_sec.checked_sub(last.last_tick_second?)?;
    let position = last
        .position?
        .checked_sub(u64::from(per_second) * seconds)
        .filter(|&p| p >= 1)?;
    let state = TicketState::Waiting {
        position,
        arrival: last.arrival?,
    };
    let pace = Pace {
        tick_sec: Some(tick_sec),
        ..Pace::at_rate(per_second)
    };
    let mut view = state.view(last.ticket_id, &pace, &Sale::open());
    if let Some(away) = last.away_ahead {
        view.away_ahead = Some(away);
        view.eta_seconds = Some(pace.eta_skipping(position, away).seconds);
    }
    Some(view)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn view(position: u64, rate: u32, tick_sec: u64) -> TicketView {
        let pace = Pace {
            tick_sec: Some(tick_sec),
            ..Pace::at_rate(rate)
        };
        TicketState::Waiting {
            position,
            arrival: 7,
        }
        .view(Uuid::nil(), &pace, &Sale::open())
    }

    fn moment(tick_sec: u64, on_tick: bool) -> Moment {
        Moment {
            tick_sec: Some(tick_sec),
            on_tick,
            front: 100,
            refresh: false,
        }
    }

    #[test]
    fn a_right_count_is_not_pushed_off_cadence_and_a_wrong_one_always() {
        let last = view(5_000, 10, 10);
        // Five ticks on, the page shows 4,950: the truth, and 5,000 is 50 ticks' worth back.
        for sec in 11..=15 {
            let truth = view(5_000 - 10 * (sec - 10), 10, sec);
            let due = (sec + 7).is_multiple_of(30);
            assert_eq!(
                moment(sec, true).should_push(&last, Phase::Known, &truth),
                due
            );
            // One more fan gone ahead: the page shows one place too many, within a
            // twentieth, told on its cadence; a twentieth and one more, pushed at once.
            let truth = 5_000 - 10 * (sec - 10);
            let lagging = view(truth - 1, 10, sec);
            assert!(!moment(sec, false).should_push(&last, Phase::Known, &lagging));
            let wrong = view(truth - truth / 20 - 1, 10, sec);
            assert!(moment(sec, false).should_push(&last, Phase::Known, &wrong));
        }
        // A rate change: the count stops being right.
        assert!(moment(12, false).should_push(&last, Phase::Known, &view(4_980, 5, 12)));
        // A second without a tick: counted 4,980, the truth still 4,990.
        assert!(moment(12, true).should_push(&last, Phase::Known, &view(4_990, 10, 11)));
        // Near the front: every tick.
        let front = view(90, 10, 10);
        assert!(moment(11, true).should_push(&front, Phase::Known, &view(80, 10, 11)));
        // In the front twenty places every leave ahead, at once.
        let close = view(19, 10, 10);
        assert!(moment(10, false).should_push(&close, Phase::Known, &view(18, 10, 10)));
        // Not yet in phase: pushed on the next tick, so its page learns the phase.
        assert!(moment(11, true).should_push(&last, Phase::Unknown, &view(4_990, 10, 11)));
        // After a burst: again within five ticks, one in five each tick.
        let after: Vec<bool> = (11..16)
            .map(|sec| {
                let truth = view(5_000 - 10 * (sec - 10), 10, sec);
                moment(sec, true).should_push(&last, Phase::Late, &truth)
            })
            .collect();
        assert_eq!(after.iter().filter(|&&p| p).count(), 1, "{after:?}");
        // Between ticks a right count is never pushed.
        assert!(!moment(11, false).should_push(&last, Phase::Unknown, &view(4_990, 10, 11)));
    }

    #[test]
    fn a_count_skipping_away_fans_is_pushed_only_when_its_eta_drifts() {
        let away = |position: u64, passed_over: u32, away_milli: u16, sec: u64| {
            let pace = Pace {
                tick_sec: Some(sec),
                away_milli,
                passed_over,
                ..Pace::at_rate(10)
            };
            TicketState::Waiting {
                position,
                arrival: 7,
            }
            .view(Uuid::nil(), &pace, &Sale::open())
        };
        // 1,000 places ahead, 100 passed over and three in ten of the 900 queued away: 370
        // skipped, 631 let in first (this fan the last) at 10 a tick.
        let last = away(1_001, 100, 300, 10);
        assert_eq!((last.away_ahead, last.eta_seconds), (Some(370), Some(64)));
        // Ten ticks on, 100 let in and 43 more passed over: the share of those queued ahead
        // is the same, and the page's count agrees with the truth. Nothing is pushed.
        let truth = away(901, 143, 300, 20);
        assert_eq!((truth.away_ahead, truth.eta_seconds), (Some(370), Some(54)));
        assert_eq!(counted(&last, Some(20)).unwrap().eta_seconds, Some(54));
        assert!(!moment(20, false).should_push(&last, Phase::Known, &truth));
        // A few more fans away than the page counted: a second off, not pushed.
        assert!(!moment(20, false).should_push(&last, Phase::Known, &away(901, 143, 310, 20)));
        // Half the queue gone away: the ETA is far off, pushed.
        assert!(moment(20, false).should_push(&last, Phase::Known, &away(901, 143, 500, 20)));
        // A position too high by more than a twentieth is pushed whatever the ETA says; one
        // leave ahead is told on the cadence.
        assert!(moment(20, false).should_push(&last, Phase::Known, &away(855, 143, 300, 20)));
        assert!(!moment(20, false).should_push(&last, Phase::Known, &away(900, 143, 300, 20)));
    }

    #[test]
    fn front_zero_pushes_everyone_every_tick() {
        let m = Moment {
            front: 0,
            ..moment(11, true)
        };
        assert!(m.should_push(&view(5_000, 10, 10), Phase::Known, &view(4_990, 10, 11)));
    }
}
