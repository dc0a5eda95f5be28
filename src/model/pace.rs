//! How fast a show's queue moves, and the ETA worked out from it.

use serde::{Deserialize, Serialize};

/// How fast a show's queue moves: what every ETA is worked out from, read with the ticket.
///
/// The store measures the places each admission tick offers (the rate, or fewer when a cap
/// on active buyers binds: then places free up only as fast as buyers order, give up or run
/// out) and smooths them over recent ticks; before there is history it starts from the
/// configured rate, so at a plain rate the ETA is the original's `ceil(position / rate)`.
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
    /// A rate change the operator announced: every ETA counts with it.
    pub change: Option<RateChange>,
    /// The second (Unix time, the store's clock) of the show's last tick, if it had one.
    pub tick_sec: Option<u64>,
    /// Where the on-sale stands: what the gate does and what a waiting fan is told.
    pub phase: Phase,
    /// Seats still for sale, when the show has a stock.
    pub stock_left: Option<u64>,
    /// Why an ended show ended, when the operator said.
    pub reason: Option<EndReason>,
}

/// Where an on-sale stands. The gate is shut in every phase but [`Phase::Closed`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Made, not opened yet (or scheduled, waiting for its opening and draw): fans may
    /// queue, nobody is admitted, nobody buys without an admission.
    #[default]
    Pending,
    /// Admitting at the show's rate.
    Open,
    /// The operator stopped admission for a while: every place is kept, the gate stays shut.
    Paused,
    /// The original's `close`: no on-sale running, no gate. Waiting fans are sent on.
    Closed,
    /// Over (sold out, or ended by the operator): joins are refused, the gate stays shut;
    /// fans admitted before may finish within their admission.
    Ended,
}

impl Phase {
    /// Whether an order needs an admission (every phase but `Closed`).
    pub fn gated(self) -> bool {
        self != Phase::Closed
    }

    /// The word on the wire (`open`, `paused`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Open => "open",
            Phase::Paused => "paused",
            Phase::Closed => "closed",
            Phase::Ended => "ended",
        }
    }
}

/// Why a show ended (`{"reason":"sold out"}`): at most [`EndReason::MAX`] bytes of printable
/// text, kept inline so that a [`Pace`] stays a plain copyable value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EndReason {
    len: u8,
    bytes: [u8; EndReason::MAX],
}

impl EndReason {
    /// The longest reason, in bytes.
    pub const MAX: usize = 64;

    /// The reason, or `None` when it is empty, too long or holds control characters.
    pub fn new(text: &str) -> Option<EndReason> {
        let text = text.trim();
        if text.is_empty() || text.len() > Self::MAX || text.chars().any(char::is_control) {
            return None;
        }
        let mut bytes = [0; Self::MAX];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Some(EndReason {
            len: text.len() as u8,
            bytes,
        })
    }

    /// The reason a show that sells its last seat ends with.
    pub fn sold_out() -> EndReason {
        EndReason::new(SOLD_OUT).expect("a valid reason")
    }

    /// The reason as the operator gave it, trimmed (what `"reason"` carries).
    pub fn as_str(&self) -> &str {
        // Built from a `&str` cut at its own length: always valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// The reason of a show that sold its last seat.
pub const SOLD_OUT: &str = "sold out";

impl std::fmt::Debug for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EndReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EndReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        EndReason::new(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "reason: 1 to {} bytes of printable text",
                EndReason::MAX
            ))
        })
    }
}

impl utoipa::PartialSchema for EndReason {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .max_length(Some(EndReason::MAX))
            .into()
    }
}

impl utoipa::ToSchema for EndReason {}

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
    /// The queue stands still until an operator resumes it, nobody knows when: no ETA may
    /// pretend otherwise. (Before the opening the ETA counts from the opening, and says so
    /// with `pending`.)
    pub fn halts(self) -> bool {
        self == Paused::Paused
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
            phase: Phase::Open,
            stock_left: None,
            reason: None,
        }
    }

    /// The ETA of `position`, and an honest range around it when the pace is uncertain.
    pub fn eta(&self, position: u64) -> Eta {
        // Never divide by a standstill: a queue that offers no place yet still moves once
        // buyers finish, at no less than a fiftieth of a place a second in this model.
        let flow = (self.flow_milli as f64 / 1000.0).max(0.02);
        let seconds = |per_second: f64| self.wait(position, per_second);
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
