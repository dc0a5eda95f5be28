//! Exponential backoff with jitter, so that fans a server dropped all at once do not all
//! come back at the same instant.

use std::time::Duration;

/// Delays that double from `base` up to `cap`, each drawn at random from its upper half
/// ("equal jitter": never zero, so a dead server is not hammered, yet spread out).
#[derive(Clone, Debug)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff starting at `base` and never waiting longer than `cap`.
    pub fn new(base: Duration, cap: Duration) -> Self {
        Backoff {
            base,
            cap: cap.max(base),
            failures: 0,
        }
    }

    /// The delay before the next attempt; each call counts one more failure.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32 << self.failures.min(20))
            .min(self.cap);
        self.failures = self.failures.saturating_add(1);
        let half = ceiling / 2;
        let jitter_ms = rand::random_range(0..=half.as_millis().max(1) as u64);
        half + Duration::from_millis(jitter_ms)
    }

    /// Back to the first delay, after something worked.
    pub fn reset(&mut self) {
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
            (50, 101),
            (100, 201),
            (200, 401),
            (400, 801),
            (500, 1001),
            (500, 1001),
        ];
        for (low, high) in bounds {
            let d = b.next_delay().as_millis();
            assert!((low..high).contains(&d), "{d} not in {low}..{high}");
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(101));
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
