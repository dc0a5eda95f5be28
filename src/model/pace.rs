//! How fast a show's queue moves, and the ETA worked out from it.

use serde::{Deserialize, Serialize};

/// How fast a show's queue moves: what every ETA is worked out from, read with the ticket.
/// Where the on-sale stands (its phase, the seats left) is a [`super::Sale`] of its own.
///
/// The store measures the places each admission tick offers (the rate, or fewer when a cap
/// on active buyers binds: then places free up only as fast as buyers order, give up or run
/// out) and smooths them over recent ticks; before there is history it starts from the
/// configured rate, so at a plain rate the ETA is the original's `ceil(position / rate)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    /// The configured admissions a second.
    pub rate: u32,
    /// Places offered a second, smoothed, in thousandths.
    pub flow_milli: u64,
    /// How much that varies tick to tick (one standard deviation), in thousandths.
    pub spread_milli: u64,
    /// Why nothing moves now, if nothing does.
    pub paused: Option<Paused>,
    /// A rate change the operator announced: every ETA counts with it.
    pub change: Option<RateChange>,
    /// The second (Unix time, the store's clock) of the show's last tick, if it had one.
    pub tick_sec: Option<u64>,
    /// Where away fans are passed over (docs/presence.md): of the queued fans, the share away
    /// at the last tick, in thousandths. Those ahead of a fan will be skipped, not let in.
    pub away_milli: u16,
    /// Where away fans are passed over: the fans passed over at the last tick who still hold
    /// their places and are not back. Each stands ahead of every queued fan and will be
    /// skipped too.
    pub passed_over: u32,
    /// Under a full cap of admissions all made lately (an opening, a crowd after a lull): how
    /// much later than in its stride the cap frees its first place, in ms. Little's law takes
    /// admissions of every age, the first freeing in half a hold; fresh ones free later, by
    /// half a hold less their mean age. Every ETA waits that much more.
    pub settle_ms: u32,
    /// The show's lanes (docs/lanes.md), the general queue among them: empty when it has
    /// none. A fan's place in its lane counts the admissions before it over every lane.
    pub lanes: super::Lanes,
}

/// An announced rate change, as seen when the pace was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateChange {
    /// How long until it takes effect (at the first tick from then).
    pub in_ms: u64,
    /// The admissions a second from then.
    pub rate: u32,
}

/// Why a queue stands still.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Paused {
    /// The on-sale is not open yet: nobody is admitted until it opens.
    Pending,
    /// The operator paused admission; every place is kept.
    Paused,
    /// Every place behind the gate is taken: fans are let in as buyers finish.
    Full,
}

impl Paused {
    /// The queue stands still until an operator opens or resumes it, nobody knows when: no
    /// ETA may pretend otherwise. A show that opens at a set time keeps its fans in the
    /// pre-queue (the opening is their countdown), so a queued fan of a show not open yet
    /// waits for an opening nobody announced: no ETA either.
    pub fn halts(self) -> bool {
        matches!(self, Paused::Paused | Paused::Pending)
    }
}

impl Pace {
    /// A plain rate with no history: the original's ETA.
    pub fn at_rate(rate: u32) -> Pace {
        Pace {
            rate,
            flow_milli: u64::from(rate) * 1000,
            spread_milli: 0,
            paused: None,
            change: None,
            tick_sec: None,
            away_milli: 0,
            passed_over: 0,
            settle_ms: 0,
            lanes: super::Lanes::default(),
        }
    }

    /// Of the `position - 1` places ahead of a fan, how many are held by fans away who will
    /// be passed over, not let in: every fan passed over already, and the share away of the
    /// queued ones. An estimate from the last tick's figures, so it stays put while the queue
    /// moves at a steady share away: the page counts its ETA down with it (`awayAhead`).
    pub fn away_ahead(&self, position: u64) -> u64 {
        let ahead = position.saturating_sub(1);
        let passed = u64::from(self.passed_over).min(ahead);
        passed + (ahead - passed) * u64::from(self.away_milli.min(1000)) / 1000
    }

    /// The ETA of `position` when `away` of the places ahead are held by fans away, who are
    /// passed over: that of the places ahead that will really be let in, and its own.
    pub fn eta_skipping(&self, position: u64, away: u64) -> Eta {
        self.eta(position.saturating_sub(away).max(1))
    }

    /// The ETA of `position`, and an honest range around it when the pace is uncertain.
    pub fn eta(&self, position: u64) -> Eta {
        // Never divide by a standstill: a queue that offers no place yet still moves once
        // buyers finish, at no less than a fiftieth of a place a second in this model.
        let flow = (self.flow_milli as f64 / 1000.0).max(0.02);
        let settle = u64::from(self.settle_ms).div_ceil(1000);
        let seconds = |per_second: f64| self.wait(position, per_second) + settle;
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

impl Pace {
    /// The places each tick lets in, when the queue moves steadily at the rate: no pause, no
    /// announced change, the measured flow exactly the rate, a tick seen. Then a waiting fan's
    /// position drops by that much a tick and its ETA is `ceil(position / rate)`.
    pub fn steady(&self) -> Option<u32> {
        let steady = self.rate > 0
            && self.paused.is_none()
            && self.change.is_none()
            && self.flow_milli == u64::from(self.rate) * 1000
            && self.spread_milli == 0
            && self.settle_ms == 0
            && self.tick_sec.is_some();
        steady.then_some(self.rate)
    }

    /// Seconds until `position` is let in at `flow` places a second, and from an announced
    /// change on at the flow it brings: the new rate, or no more than `flow` while a cap
    /// on active buyers holds the queue below the rate.
    fn wait(&self, position: u64, flow: f64) -> u64 {
        let whole = |places: f64, per_second: f64| (places / per_second).ceil();
        let Some(change) = self.change else {
            return whole(position as f64, flow) as u64;
        };
        // One tick a second: about as many ticks at the old rate as whole seconds remain.
        let before = (change.in_ms as f64 / 1000.0).round();
        let by_then = flow * before;
        if position as f64 <= by_then {
            return whole(position as f64, flow) as u64;
        }
        let capped = flow < f64::from(self.rate);
        let after = if capped {
            flow.min(f64::from(change.rate))
        } else {
            f64::from(change.rate)
        };
        (before + whole(position as f64 - by_then, after.max(0.02))).ceil() as u64
    }
}

/// What a fan is told about its wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eta {
    /// The expected wait in whole seconds, rounded up: what `etaSeconds` carries.
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
    fn fans_passed_over_and_the_share_away_count_as_away_ahead() {
        let mut pace = Pace::at_rate(10);
        assert_eq!(pace.away_ahead(101), 0, "nobody away: nobody skipped");
        pace.away_milli = 300;
        assert_eq!(pace.away_ahead(101), 30, "three in ten of the 100 ahead");
        pace.passed_over = 40;
        // The 40 passed over stand ahead of every queued fan; of the 60 queued ahead, 18.
        assert_eq!(pace.away_ahead(101), 58);
        // Near the front only those passed over are ahead, and never the fan itself.
        assert_eq!(pace.away_ahead(11), 10);
        assert_eq!(pace.away_ahead(1), 0);
        pace.away_milli = 5000;
        assert_eq!(pace.away_ahead(101), 100, "a share is never above all");
    }

    #[test]
    fn a_cap_filled_lately_frees_its_first_place_later() {
        let capped = Pace {
            flow_milli: 2_500,
            ..Pace::at_rate(10)
        };
        assert_eq!(capped.eta(25).seconds, 10);
        // Admissions made lately: the cap frees its first place 1.8 s later than in its
        // stride, and every wait with it.
        let fresh = Pace {
            settle_ms: 1_800,
            ..capped
        };
        assert_eq!(fresh.eta(25).seconds, 12);
        assert_eq!(fresh.steady(), None, "a settling cap is no steady count");
    }

    #[test]
    fn an_uncertain_pace_gives_a_range_around_the_eta() {
        let pace = Pace {
            rate: 10,
            flow_milli: 2_000,
            spread_milli: 1_000,
            ..Pace::at_rate(10)
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

    #[test]
    fn an_announced_change_counts_in_every_eta() {
        // 10 a second for 15 s more, then 5: position 100 goes before, 200 after.
        let pace = Pace {
            change: Some(RateChange {
                in_ms: 15_000,
                rate: 5,
            }),
            ..Pace::at_rate(10)
        };
        assert_eq!(pace.eta(100).seconds, 10);
        assert_eq!(pace.eta(150).seconds, 15);
        assert_eq!(pace.eta(200).seconds, 25);
        // Raised instead: faster after.
        let up = Pace {
            change: Some(RateChange {
                in_ms: 10_000,
                rate: 20,
            }),
            ..Pace::at_rate(10)
        };
        assert_eq!(up.eta(300).seconds, 20);
        // A cap holding the queue at 2 a second is not lifted by a higher rate.
        let capped = Pace {
            rate: 10,
            flow_milli: 2_000,
            spread_milli: 0,
            change: Some(RateChange {
                in_ms: 5_000,
                rate: 20,
            }),
            ..Pace::at_rate(10)
        };
        assert_eq!(capped.eta(30).seconds, 15);
    }
}
