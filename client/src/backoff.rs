//! The delays between attempts: exponential, capped, with jitter, so that fans a server
//! dropped all at once do not all come back at the same instant. The arithmetic is
//! [`backon`]'s; this module only says which delays the clients want.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// Delays whose ceiling doubles from `base` up to `cap`, each drawn at random from the upper
/// half of its ceiling ("equal jitter": never zero, so a dead server is not hammered, yet
/// spread out). Without a limit on attempts: the caller decides when to stop.
///
/// backon's jitter adds up to one more delay on top of the delay, so asking it for half the
/// ceiling gives `[ceiling / 2, ceiling)`.
pub fn equal_jitter(base: Duration, cap: Duration) -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(base / 2)
        .with_max_delay(cap.max(base) / 2)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times()
}

/// A backoff that can start over: the delays of [`equal_jitter`], counted, and back to the
/// first after something worked.
#[derive(Debug)]
pub struct Backoff {
    policy: ExponentialBuilder,
    delays: ExponentialBackoff,
    cap: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff starting at `base` and never waiting `cap` or longer.
    pub fn new(base: Duration, cap: Duration) -> Self {
        let policy = equal_jitter(base, cap);
        Backoff {
            policy,
            delays: policy.build(),
            cap: cap.max(base),
            failures: 0,
        }
    }

    /// The delay before the next attempt; each call counts one more failure.
    pub fn next_delay(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        // Without a limit on attempts or on their total, backon always has a next delay.
        self.delays.next().unwrap_or(self.cap)
    }

    /// Back to the first delay, after something worked.
    pub fn reset(&mut self) {
        self.delays = self.policy.build();
        self.failures = 0;
    }

    /// Failures counted since the last reset.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_within_jitter_and_stop_at_the_cap() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        let bounds = [
            (50, 100),
            (100, 200),
            (200, 400),
            (400, 800),
            (500, 1000),
            (500, 1000),
        ];
        for (low, high) in bounds {
            // backon counts in f32 seconds: a microsecond either way is rounding.
            let d = b.next_delay().as_micros();
            let (low, high) = (low * 1000 - 1, high * 1000 + 1);
            assert!((low..=high).contains(&d), "{d} µs not in {low}..={high}");
        }
        assert_eq!(b.failures(), 6);
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
        assert_eq!(b.failures(), 1);
    }

    #[test]
    fn jitter_spreads_delays() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(1));
            seen.insert(b.next_delay());
        }
        assert!(seen.len() > 10, "only {} distinct delays", seen.len());
    }
}
