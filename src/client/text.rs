//! Numbers and durations written the way a person reads them.

use std::time::{Duration, SystemTime};

/// `1204` as `1,204`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A wait rounded the way one would say it: `about 40 seconds`, `about 3 minutes`,
/// `about 1 h 20 min`.
pub fn about(seconds: u64) -> String {
    match seconds {
        0..=1 => "about a second".into(),
        2..=59 => format!("about {seconds} seconds"),
        60..=89 => "about 1 minute".into(),
        // Round to the nearest minute: ETA is an estimate, seconds would be false precision.
        90..=3569 => format!("about {} minutes", (seconds + 30) / 60),
        _ => {
            let minutes = (seconds + 30) / 60;
            match minutes % 60 {
                0 => format!("about {} h", minutes / 60),
                m => format!("about {} h {m} min", minutes / 60),
            }
        }
    }
}

/// A length of time for a status line: `4 min 58 s`, `12 s`, `350 ms`.
pub fn span(d: Duration) -> String {
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
pub fn clock(at: SystemTime) -> String {
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
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1204), "1,204");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }

    #[test]
    fn waits_read_naturally() {
        assert_eq!(about(1), "about a second");
        assert_eq!(about(40), "about 40 seconds");
        assert_eq!(about(61), "about 1 minute");
        assert_eq!(about(150), "about 3 minutes");
        assert_eq!(about(3600), "about 1 h");
        assert_eq!(about(4800), "about 1 h 20 min");
    }

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
