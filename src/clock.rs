//! One clock for the admitter, the hub and the console: milliseconds since the Unix epoch,
//! which tests can pause.
//!
//! A server runs on the wall clock ([`Clock::Wall`]): the admitter wakes on wall-clock
//! seconds because the store serves each show once per second of Redis' clock, which NTP
//! keeps close to ours. Tests run on [`Clock::tokio`]: wall time at its creation, advanced by
//! tokio's clock, so `tokio::time::pause()` and `advance()` move it too and a test of the
//! admitter needs no real seconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where the time comes from.
#[derive(Clone, Copy, Debug, Default)]
pub enum Clock {
    /// The system's wall clock.
    #[default]
    Wall,
    /// The wall clock at `anchor`, advanced by tokio's clock since.
    Tokio {
        /// The wall clock when this clock was made, in ms since the Unix epoch.
        anchor_ms: u64,
        /// Tokio's time at that moment: what has elapsed since is added to `anchor_ms`.
        anchor: tokio::time::Instant,
    },
}

impl Clock {
    /// A clock that starts at the wall clock now and follows tokio's (pausable) time.
    pub fn tokio() -> Clock {
        Clock::Tokio {
            anchor_ms: wall_ms(),
            anchor: tokio::time::Instant::now(),
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        match self {
            Clock::Wall => wall_ms(),
            Clock::Tokio { anchor_ms, anchor } => anchor_ms + anchor.elapsed().as_millis() as u64,
        }
    }

    /// Sleeps until this clock reads `at_ms` (at once if it already does).
    pub async fn sleep_until_ms(&self, at_ms: u64) {
        let wait = at_ms.saturating_sub(self.now_ms());
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// Milliseconds since the Unix epoch by the system's wall clock.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `ms` since the Unix epoch as RFC 3339 in UTC (`2026-01-01T00:00:00.123Z`); empty when out
/// of range.
pub fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_rfc3339_in_utc() {
        assert_eq!(rfc3339(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
    }

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_stands_still_until_time_is_advanced() {
        let clock = Clock::tokio();
        let start = clock.now_ms();
        assert_eq!(clock.now_ms(), start);
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(clock.now_ms(), start + 1500);
        clock.sleep_until_ms(start + 2000).await;
        assert_eq!(clock.now_ms(), start + 2000);
    }

    #[test]
    fn the_wall_clock_is_after_2020() {
        assert!(Clock::Wall.now_ms() > 1_577_836_800_000);
    }
}
