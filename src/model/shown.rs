//! What a waiting page may show between pushes against the truth a poll answers
//! (docs/push.md, "Push cadence"): the rule the hub pushes by, and the load generators and
//! the tests hold every page to.
//!
//! A page counts its position down from the last state it was told. The count is exact but
//! for two things, each bounded:
//!
//! - **Leaves ahead.** A fan who leaves moves everyone behind it one place up. A page may go
//!   on showing a position too high by up to a twentieth of the true one
//!   ([`position_slack`]): the front twenty places are told every leave, a fan at 1,000 after
//!   50 leaves ahead, a fan at 100,000 after 5,000. The cadence tells every page the truth
//!   anyway within `ceil(position / PUSH_FRONT)` ticks (at most 30), so a leave reaches a
//!   far-back page within 30 s, and a crowd leaving steadily costs no push per fan behind.
//!   A page never shows a position lower than the truth, and the stock warning (a position
//!   past the seats left) is told at once when a leave ends it.
//! - **Estimates.** Where the position is not exact, or away fans are passed over (the ETA
//!   skips about `awayAhead` places, a share that moves at every tick), the ETA may be off by
//!   a second or a twentieth.

use super::TicketView;

/// A page may show a position too high by a `1 / LEAVE_SLACK` share of the true one.
pub const LEAVE_SLACK: u64 = 20;

/// How many places too high a page may show a fan whose true position is `position`: leaves
/// ahead it has not been told yet (0 in the front twenty places).
pub fn position_slack(position: u64) -> u64 {
    position / LEAVE_SLACK
}

/// Whether a page showing position `shown` to a fan truly at `truth` is within the bound:
/// never lower, and at most [`position_slack`] higher.
pub fn position_agrees(shown: u64, truth: u64) -> bool {
    shown
        .checked_sub(truth)
        .is_some_and(|ahead| ahead <= position_slack(truth))
}

impl TicketView {
    /// Whether a page showing `self` shows `truth` within the bounds above: every figure
    /// alike, but the position (leaves ahead not told yet) and the ETAs (estimates).
    pub fn agrees_with(&self, truth: &TicketView) -> bool {
        let exact = match (self.position, truth.position) {
            (Some(shown), Some(true_position)) => {
                let stock_warning_ended = truth
                    .stock_left
                    .is_some_and(|left| true_position <= left && left < shown);
                if !position_agrees(shown, true_position) || stock_warning_ended {
                    return false;
                }
                shown == true_position
            }
            (shown, true_position) => shown == true_position,
        };
        if exact && self.away_ahead.is_none() && truth.away_ahead.is_none() {
            return self == truth;
        }
        let close = |shown: Option<u64>, truth: Option<u64>| match (shown, truth) {
            (Some(a), Some(b)) => a.abs_diff(b) <= (b / 20).max(1),
            (a, b) => a == b,
        };
        close(self.eta_seconds, truth.eta_seconds)
            && close(self.eta_min_seconds, truth.eta_min_seconds)
            && close(self.eta_max_seconds, truth.eta_max_seconds)
            && TicketView {
                position: truth.position,
                eta_seconds: truth.eta_seconds,
                eta_min_seconds: truth.eta_min_seconds,
                eta_max_seconds: truth.eta_max_seconds,
                away_ahead: truth.away_ahead,
                ..self.clone()
            } == *truth
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Pace, Sale, TicketState};
    use uuid::Uuid;

    fn view(position: u64, sale: &Sale) -> TicketView {
        let pace = Pace {
            tick_sec: Some(100),
            ..Pace::at_rate(10)
        };
        TicketState::Waiting {
            position,
            arrival: 7,
        }
        .view(Uuid::nil(), &pace, sale)
    }

    #[test]
    fn a_page_may_lag_leaves_by_a_twentieth_and_never_run_ahead() {
        let open = Sale::open();
        // The front twenty places are exact.
        assert!(view(19, &open).agrees_with(&view(19, &open)));
        assert!(!view(20, &open).agrees_with(&view(19, &open)));
        assert!(view(21, &open).agrees_with(&view(20, &open)));
        // Far back: up to a twentieth too high, never lower.
        assert!(view(1_050, &open).agrees_with(&view(1_000, &open)));
        assert!(!view(1_051, &open).agrees_with(&view(1_000, &open)));
        assert!(!view(999, &open).agrees_with(&view(1_000, &open)));
        assert!(view(104_000, &open).agrees_with(&view(100_000, &open)));
        assert_eq!(position_slack(100_000), 5_000);
        // Another status, or another arrival, is never close.
        let mut other = view(1_010, &open);
        other.arrival = Some(8);
        assert!(!other.agrees_with(&view(1_000, &open)));
    }

    #[test]
    fn a_leave_that_ends_the_stock_warning_is_told_at_once() {
        let mut sale = Sale::open();
        sale.stock_left = Some(1_000);
        // Told 1,010 (past the seats left); truly 1,000 now: the warning ended.
        assert!(!view(1_010, &sale).agrees_with(&view(1_000, &sale)));
        // Both past the seats: within the slack.
        assert!(view(1_040, &sale).agrees_with(&view(1_001, &sale)));
    }
}
