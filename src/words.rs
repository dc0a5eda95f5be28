//! Numbers and waits worded the way a fan reads them, for the waiting page, its script
//! (`static/wait.js` words them the same way) and the command-line fan client alike.

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

/// A wait in words a fan reads at a glance. `static/wait.js` words it the same way.
pub fn eta_words(seconds: u64) -> String {
    match seconds {
        0 => "any moment now".into(),
        1..=59 => "less than a minute".into(),
        _ => {
            let minutes = (seconds + 30) / 60;
            if minutes == 1 {
                return "about a minute".into();
            }
            if minutes < 60 {
                return format!("about {minutes} minutes");
            }
            if minutes >= 24 * 60 {
                return "more than a day".into();
            }
            // Past an hour, to the nearest five minutes: more precision would be a lie.
            let rounded = (minutes + 2) / 5 * 5;
            let (hours, rest) = (rounded / 60, rounded % 60);
            let hours = if hours == 1 {
                "1 hour".to_owned()
            } else {
                format!("{hours} hours")
            };
            if rest == 0 {
                format!("about {hours}")
            } else {
                format!("about {hours} {rest} minutes")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
