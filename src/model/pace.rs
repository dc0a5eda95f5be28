//! How fast a show's queue moves, and the ETA worked out from it.

use serde::{Deserialize, Serialize};

/// How fast a show's queue moves: what every ETA is worked out from, read with the ticket.
///
/// The store measures the places each admission tick offers (the rate, or fewer when a cap
/// on active buyers binds: then places free up only as fast as buyers order, give up or run
/// out) and smooths them over recent ticks; before there is history it starts from the
/// configured rate, so at a plain rate the ETA is the seed's `ceil(position / rate)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    /// The configured admissions a second.
    pub rate: u32,
    /// Places offered a second, smoothed, in thousandths.
    pub flow_milli: u64,
    /// How much that varies tick to tick (one standard deviation), in thousandths.
    pub spread_milli: u64,
    /// Why nothing moves now, if nothing does.
    pub paused: Option<Paused>,
}

/// Why a queue stands still.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Paused {
    /// The on-sale is not open (yet, or any more).
    Closed,
    /// Every place behind the gate is taken: fans are let in as buyers finish.
    Full,
}

impl Pace {
    /// A plain rate with no history: the seed's ETA.
    pub fn at_rate(rate: u32) -> Pace {
        Pace {
            rate,
            flow_milli: u64::from(rate) * 1000,
            spread_milli: 0,
            paused: None,
        }
    }

    /// The ETA of `position`, and an honest range around it when the pace is uncertain.
    pub fn eta(&self, position: u64) -> Eta {
        // Never divide by a standstill: a queue that offers no place yet still moves once
        // buyers finish, at no less than a fiftieth of a place a second in this model.
        let flow = (self.flow_milli as f64 / 1000.0).max(0.02);
        let seconds = |per_second: f64| (position as f64 / per_second).ceil() as u64;
        let eta = seconds(flow);
        let spread = self.spread_milli as f64 / 1000.0;
        // A range only when the pace wanders by more than a tenth.
        let range = (spread > flow * 0.1).then(|| {
            let fast = seconds(flow + spread);
            let slow = seconds((flow - spread).max(flow / 4.0));
            (fast.min(eta), slow.max(eta))
        });
        Eta {
            seconds: eta,
            range,
        }
    }
}

/// What a fan is told about its wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eta {
    pub seconds: u64,
    /// Shortest and longest likely wait, when the pace is uncertain.
    pub range: Option<(u64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eta(position: u64, rate: u32) -> u64 {
        Pace::at_rate(rate).eta(position).seconds
    }

    #[test]
    fn eta_at_a_plain_rate_is_little_law_rounded_up() {
        assert_eq!(eta(1, 20), 1);
        assert_eq!(eta(20, 20), 1);
        assert_eq!(eta(21, 20), 2);
        assert_eq!(eta(30_000, 500), 60);
        assert_eq!(
            Pace::at_rate(20).eta(21).range,
            None,
            "a steady pace is certain"
        );
    }

    #[test]
    fn an_uncertain_pace_gives_a_range_around_the_eta() {
        let pace = Pace {
            rate: 10,
            flow_milli: 2_000,
            spread_milli: 1_000,
            paused: None,
        };
        let eta = pace.eta(100);
        assert_eq!(eta.seconds, 50);
        assert_eq!(eta.range, Some((34, 100)));
        // A standstill still gives a finite wait.
        let stopped = Pace {
            flow_milli: 0,
            ..pace
        };
        assert_eq!(stopped.eta(1).seconds, 50);
    }
}
