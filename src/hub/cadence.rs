//! Push cadence: which fans a change is pushed to, so that 90,000 fans do not cost 90,000
//! writes a second while every figure a page shows stays exact.
//!
//! Under a steady pace the ticket JSON carries `countdownPerSecond`: the page counts its
//! position down by that much at each tick (once a second from the state it was pushed) and
//! works its ETA out from it. The hub keeps, per fan, what it last pushed and at which tick
//! second, so it knows what that page shows now. At every recompute it compares that count
//! with the truth and pushes when they differ: a leave ahead, a rate change, a pause or a
//! full cap, a tick that let in fewer (or a second without a tick), an admission. When they
//! agree a fan is pushed only on its cadence: the front `PUSH_FRONT` places every tick, and
//! further back every `ceil(position / PUSH_FRONT)` ticks (at most [`MAX_PUSH_EVERY`]),
//! spread over the ticks by arrival. A page that was told something between two ticks is
//! pushed again on the next tick, so its count keeps the ticks' phase.

use crate::model::{Pace, TicketState, TicketView};

/// Fans at or ahead of this place are pushed every tick by default (`PUSH_FRONT`).
pub const DEFAULT_PUSH_FRONT: u64 = 1000;

/// The most ticks a fan whose count is right goes without a push.
pub const MAX_PUSH_EVERY: u64 = 30;

/// When a fan was last pushed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Told {
    /// The mirror it was pushed from (a reloaded mirror counts its ticks anew).
    generation: u64,
    /// The store's second of the last tick the pushed state includes.
    tick_sec: Option<u64>,
    /// Pushed right after that tick: the page counts on in the ticks' phase.
    aligned: bool,
}

/// The moment of one recompute.
#[derive(Clone, Copy, Debug)]
pub(super) struct Moment {
    pub(super) generation: u64,
    /// The store's second of the last tick the mirror holds, if it saw one.
    pub(super) tick_sec: Option<u64>,
    /// This recompute follows a tick.
    pub(super) on_tick: bool,
    /// `PUSH_FRONT` (0: every fan every tick).
    pub(super) front: u64,
}

impl Moment {
    /// What a fan pushed now has been told.
    pub(super) fn told(&self) -> Told {
        Told {
            generation: self.generation,
            tick_sec: self.tick_sec,
            aligned: self.on_tick && self.tick_sec.is_some(),
        }
    }

    /// Whether `truth`, the fan's state now, goes out to a page that was told `last`.
    pub(super) fn should_push(
        &self,
        last: &TicketView,
        told: Option<Told>,
        truth: &TicketView,
    ) -> bool {
        let Some(shown) = counted(last, told, self) else {
            return true; // what the page shows cannot be known: tell it
        };
        if shown != *truth {
            return true;
        }
        let (Some(position), Some(arrival), Some(_)) =
            (truth.position, truth.arrival, truth.countdown_per_second)
        else {
            return false; // nothing counts down: nothing to refresh
        };
        let aligned = told.is_some_and(|t| t.aligned);
        self.on_tick && (!aligned || self.due(position, arrival))
    }

    /// A fan whose count is right is pushed on this tick anyway: the front every tick, the
    /// rest every `ceil(position / front)` ticks, spread by arrival.
    fn due(&self, position: u64, arrival: u64) -> bool {
        if self.front == 0 || position <= self.front {
            return true;
        }
        let every = position.div_ceil(self.front).min(MAX_PUSH_EVERY);
        let sec = self.tick_sec.unwrap_or(0);
        (sec + arrival) % every == 0
    }
}

/// What a page told `last` at `told` shows at `now`: the same state, or, counting down, the
/// position `countdownPerSecond` lower for each tick second since (never below 1: the
/// admission is pushed). `None` when that cannot be known here.
fn counted(last: &TicketView, told: Option<Told>, now: &Moment) -> Option<TicketView> {
    let Some(per_second) = last.countdown_per_second else {
        return Some(last.clone());
    };
    let told = told?;
    if told.generation != now.generation {
        return None;
    }
    let seconds = now.tick_sec?.checked_sub(told.tick_sec?)?;
    let position = last
        .position?
        .checked_sub(u64::from(per_second) * seconds)
        .filter(|&p| p >= 1)?;
    let state = TicketState::Waiting {
        position,
        arrival: last.arrival?,
    };
    Some(state.view(last.ticket_id, &Pace::at_rate(per_second)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn view(position: u64, rate: u32) -> TicketView {
        TicketState::Waiting {
            position,
            arrival: 7,
        }
        .view(Uuid::nil(), &Pace::at_rate(rate))
    }

    fn moment(tick_sec: u64, on_tick: bool) -> Moment {
        Moment {
            generation: 1,
            tick_sec: Some(tick_sec),
            on_tick,
            front: 100,
        }
    }

    #[test]
    fn a_right_count_is_not_pushed_off_cadence_and_a_wrong_one_always() {
        let told = Some(moment(10, true).told());
        let last = view(5_000, 10);
        // Five ticks on, the page shows 4,950: the truth, and 5,000 is 50 ticks' worth back.
        for sec in 11..=15 {
            let truth = view(5_000 - 10 * (sec - 10), 10);
            let due = (sec + 7) % 30 == 0;
            assert_eq!(moment(sec, true).should_push(&last, told, &truth), due);
            // One more fan gone ahead: the count is wrong, pushed at once.
            let wrong = view(5_000 - 10 * (sec - 10) - 1, 10);
            assert!(moment(sec, false).should_push(&last, told, &wrong));
        }
        // A rate change, a pause: the count stops being right.
        assert!(moment(12, false).should_push(&last, told, &view(4_980, 5)));
        // A second without a tick: counted 4,980, the truth still 4,990.
        assert!(moment(12, true).should_push(&last, told, &view(4_990, 10)));
        // Near the front: every tick.
        let front = view(90, 10);
        assert!(moment(11, true).should_push(&front, told, &view(80, 10)));
        // Told between ticks: pushed on the next tick, so its count keeps the phase.
        let between = Some(moment(10, false).told());
        assert!(moment(11, true).should_push(&last, between, &view(4_990, 10)));
        // A reloaded mirror cannot know what the page counted.
        let other = Some(Told {
            generation: 0,
            ..moment(10, true).told()
        });
        assert!(moment(11, true).should_push(&last, other, &view(4_990, 10)));
    }

    #[test]
    fn front_zero_pushes_everyone_every_tick() {
        let m = Moment {
            front: 0,
            ..moment(11, true)
        };
        assert!(m.should_push(
            &view(5_000, 10),
            Some(moment(10, true).told()),
            &view(4_990, 10)
        ));
    }
}
