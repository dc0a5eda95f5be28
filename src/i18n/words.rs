//! Waits and clocks in a fan's words. `static/wait.js` words pushed updates with the same
//! keys and the same steps, so the first paint and the live page never disagree.

use std::collections::BTreeMap;

use super::{Catalog, Message, Piece, english, pieces};

/// A language and the shop's own words for it, which win over the catalog's.
#[derive(Clone, Copy, Debug)]
pub struct Args<'a> {
    /// The language.
    pub catalog: &'static Catalog,
    /// The show's overrides of this language's messages.
    pub overrides: Option<&'a BTreeMap<String, Message>>,
}

impl<'a> Args<'a> {
    /// The catalog's words alone.
    pub fn of(catalog: &'static Catalog) -> Self {
        Args {
            catalog,
            overrides: None,
        }
    }

    /// The message of `key`: the show's, else the language's, else English's (a catalog
    /// test keeps every shipped language whole, so the last is for a key added since).
    pub fn message(&self, key: &str) -> Option<&'a Message> {
        self.overrides
            .and_then(|o| o.get(key))
            .or_else(|| self.catalog.messages.get(key))
            .or_else(|| english().messages.get(key))
    }

    /// The text of `key` for `count`, cut into literal pieces and slots.
    pub fn pieces(&self, key: &str, count: Option<u64>) -> Vec<Piece<'a>> {
        match self.message(key) {
            Some(message) => pieces(message.text(self.catalog.code, count)),
            None => {
                tracing::warn!(key, "a message key no catalog has");
                vec![Piece::Literal("…")]
            }
        }
    }

    /// `key` said as plain text: `{n}` is `count` in this language's digits, other slots
    /// are taken from `named` (a slot nobody names stays as written).
    pub fn say(&self, key: &str, count: Option<u64>, named: &[(&str, &str)]) -> String {
        self.fill(key, count, str::to_owned, |name| {
            named
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    /// `key` for `count` with its text written by `literal` (as it is, or escaped for HTML),
    /// `{n}` as `count` in this language's digits, another slot as `slot` fills it (one it
    /// does not stays as written, through `literal`).
    pub fn fill(
        &self,
        key: &str,
        count: Option<u64>,
        literal: impl Fn(&str) -> String,
        slot: impl Fn(&str) -> Option<String>,
    ) -> String {
        let mut out = String::new();
        for piece in self.pieces(key, count) {
            match piece {
                Piece::Literal(text) => out.push_str(&literal(text)),
                Piece::Slot("n") if count.is_some() => {
                    out.push_str(&self.catalog.number(count.unwrap_or(0)));
                }
                Piece::Slot(name) => match slot(name) {
                    Some(value) => out.push_str(&value),
                    None => out.push_str(&literal(&format!("{{{name}}}"))),
                },
            }
        }
        out
    }

    /// A number in this language.
    pub fn number(&self, n: u64) -> String {
        self.catalog.number(n)
    }

    /// A wait in words a fan reads at a glance ("about 8 minutes").
    pub fn eta_words(&self, seconds: u64) -> String {
        match seconds {
            0 => self.say("eta.now", None, &[]),
            1..=59 => self.say("eta.under_minute", None, &[]),
            _ => {
                let minutes = (seconds + 30) / 60;
                if minutes < 60 {
                    return self.say("eta.minutes", Some(minutes), &[]);
                }
                if minutes >= 24 * 60 {
                    return self.say("eta.day_plus", None, &[]);
                }
                // Past an hour, to the nearest five minutes: more precision would be a lie.
                let rounded = (minutes + 2) / 5 * 5;
                let (hours, rest) = (rounded / 60, rounded % 60);
                if rest == 0 {
                    return self.say("eta.hours", Some(hours), &[]);
                }
                let hours = self.say("eta.hour_part", Some(hours), &[]);
                let rest = self.say("eta.minute_part", Some(rest), &[]);
                self.say(
                    "eta.hours_minutes",
                    None,
                    &[("hours", &hours), ("minutes", &rest)],
                )
            }
        }
    }

    /// A wait in words, as a range when the pace is uncertain ("about 20–30 minutes"), else
    /// as [`Args::eta_words`].
    pub fn wait_words(&self, seconds: u64, range: Option<(u64, u64)>) -> String {
        let Some((low, high)) = range else {
            return self.eta_words(seconds);
        };
        let (low_m, high_m) = ((low + 30) / 60, (high + 30) / 60);
        if high_m <= 1 || low_m == high_m || high_m >= 24 * 60 {
            return self.eta_words(seconds);
        }
        let span = |key: &str, low: u64, high: u64| {
            let (low, high) = (self.number(low), self.number(high));
            self.say(key, None, &[("low", &low), ("high", &high)])
        };
        if high_m < 60 {
            return if low_m == 0 {
                self.say("eta.up_to_minutes", Some(high_m), &[])
            } else {
                span("eta.range_minutes", low_m, high_m)
            };
        }
        let (low_h, high_h) = ((low_m + 30) / 60, (high_m + 30) / 60);
        match (low_h, high_h) {
            (l, h) if l == h => self.eta_words(seconds),
            (0, h) => self.say("eta.up_to_hours", Some(h), &[]),
            (l, h) => span("eta.range_hours", l, h),
        }
    }

    /// Time until an opening as a clock: `4:05`, `1:02:03`, `3 d 04:05:06` beyond a day.
    pub fn countdown(&self, seconds: u64) -> String {
        let (d, h, m, s) = (
            seconds / 86_400,
            seconds / 3600 % 24,
            seconds / 60 % 60,
            seconds % 60,
        );
        match (d, h) {
            (0, 0) => self.catalog.digits_of(&format!("{m}:{s:02}")),
            (0, _) => self.catalog.digits_of(&format!("{h}:{m:02}:{s:02}")),
            _ => {
                let (days, hms) = (
                    self.number(d),
                    self.catalog.digits_of(&format!("{h:02}:{m:02}:{s:02}")),
                );
                self.say("clock.days", None, &[("d", &days), ("hms", &hms)])
            }
        }
    }

    /// `m:ss`, as the admission countdown shows it.
    pub fn clock(&self, seconds: u64) -> String {
        self.catalog
            .digits_of(&format!("{}:{:02}", seconds / 60, seconds % 60))
    }
}
