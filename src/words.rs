//! Numbers and waits worded the way a fan reads them, in English, for the command-line
//! clients (the pages speak the fan's language, `crate::i18n`); and
//! durations as people write them, for the server's settings and the clients' flags.

use std::time::Duration;

/// A duration as people write it (`5m`, `90s`, `500ms`, `1h 30m`), through jiff's friendly
/// format (the crate that already reads `opensAt`, so no second time crate). Negative
/// durations are refused; bounds are each setting's own.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d: jiff::SignedDuration = s.trim().parse().map_err(|e: jiff::Error| e.to_string())?;
    Duration::try_from(d).map_err(|_| "must not be negative".to_owned())
}

/// A duration as people read it: `2m 30s`, `500ms`.
pub fn duration_text(d: Duration) -> String {
    let d = jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX);
    format!("{d:#}")
}

/// `1234567` as `1,234,567`.
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

/// Time until a scheduled opening as a clock: `4:05`, `1:02:03`, `3 d 04:05:06` beyond a
/// day, in English ([`crate::i18n`] words it in every language).
pub fn countdown(seconds: u64) -> String {
    english().countdown(seconds)
}

/// A wait in words a fan reads at a glance, in English.
pub fn eta_words(seconds: u64) -> String {
    english().eta_words(seconds)
}

/// A wait in words, as a range when the pace is uncertain ("about 20–30 minutes"), else as
/// [`eta_words`], in English.
pub fn wait_words(seconds: u64, range: Option<(u64, u64)>) -> String {
    english().wait_words(seconds, range)
}

fn english() -> crate::i18n::Args<'static> {
    crate::i18n::Args::of(crate::i18n::english())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_said_as_people_write_them() {
        for (text, d) in [
            ("5m", Duration::from_secs(300)),
            ("90s", Duration::from_secs(90)),
            ("500ms", Duration::from_millis(500)),
            ("1h 30m", Duration::from_secs(5400)),
            (" 2s ", Duration::from_secs(2)),
        ] {
            assert_eq!(parse_duration(text), Ok(d), "{text}");
        }
        for bad in ["", "soon", "-5s", "5"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(duration_text(Duration::from_secs(150)), "2m 30s");
        assert_eq!(duration_text(Duration::from_millis(500)), "500ms");
        assert_eq!(
            parse_duration(&duration_text(Duration::from_secs(3723))),
            Ok(Duration::from_secs(3723))
        );
    }

    #[test]
    fn waits_round_to_what_a_fan_can_use() {
        assert_eq!(eta_words(0), "any moment now");
        assert_eq!(eta_words(1), "less than a minute");
        assert_eq!(eta_words(59), "less than a minute");
        assert_eq!(eta_words(60), "about a minute");
        assert_eq!(eta_words(89), "about a minute");
        assert_eq!(eta_words(90), "about 2 minutes");
        assert_eq!(eta_words(501), "about 8 minutes");
        assert_eq!(eta_words(59 * 60 + 29), "about 59 minutes");
        assert_eq!(eta_words(60 * 60), "about 1 hour");
        assert_eq!(eta_words(70 * 60), "about 1 hour 10 minutes");
        assert_eq!(eta_words(119 * 60), "about 2 hours");
        assert_eq!(eta_words(3 * 86_400), "more than a day");
    }

    #[test]
    fn an_uncertain_wait_reads_as_a_range() {
        assert_eq!(wait_words(1500, None), "about 25 minutes");
        assert_eq!(wait_words(1500, Some((1200, 1800))), "about 20–30 minutes");
        assert_eq!(wait_words(100, Some((20, 400))), "up to 7 minutes");
        assert_eq!(wait_words(40, Some((30, 50))), "less than a minute");
        assert_eq!(wait_words(9000, Some((5400, 14400))), "about 2–4 hours");
        assert_eq!(wait_words(1500, Some((1490, 1510))), "about 25 minutes");
    }

    #[test]
    fn a_countdown_reads_as_a_clock() {
        assert_eq!(countdown(0), "0:00");
        assert_eq!(countdown(245), "4:05");
        assert_eq!(countdown(3723), "1:02:03");
        assert_eq!(
            countdown(3 * 86_400 + 4 * 3600 + 5 * 60 + 6),
            "3 d 04:05:06"
        );
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
