//! Durations and clock times for the command-line clients' lines (numbers and waits are
//! worded by [`waiting_room::words`], as the waiting page words them).

use std::time::{Duration, SystemTime};

/// A length of time for a status line: `4 min 58 s`, `12 s`, `350 ms`.
pub(crate) fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{} ms", d.as_millis()),
        1..=59 => format!("{s} s"),
        60..=3599 if s.is_multiple_of(60) => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// The local wall-clock time of `at` as `HH:MM:SS`, the time column of `fan`'s output.
pub(crate) fn clock(at: SystemTime) -> String {
    match jiff::ZonedDateTime::try_from(at) {
        Ok(t) => t.strftime("%H:%M:%S").to_string(),
        // Only a clock before 1970 or past 9999 gets here; the line is still worth printing.
        Err(_) => "--:--:--".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_short() {
        assert_eq!(span(Duration::from_millis(350)), "350 ms");
        assert_eq!(span(Duration::from_secs(12)), "12 s");
        assert_eq!(span(Duration::from_secs(300)), "5 min");
        assert_eq!(span(Duration::from_secs(298)), "4 min 58 s");
        assert_eq!(span(Duration::from_secs(3720)), "1 h 2 min");
    }

    #[test]
    fn clock_has_the_time_column_shape() {
        let c = clock(SystemTime::now());
        assert_eq!(c.len(), 8, "{c}");
        assert_eq!(c.as_bytes()[2], b':');
    }
}
