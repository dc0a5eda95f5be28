//! What an admitted fan does (`--buy`, `--abandon`, the rest stay), and who steps away while
//! waiting (`--away`), decided per fan.

use std::time::Duration;

use serde::Serialize;

/// What an admitted fan does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// `POST /orders` with its admission, then stop.
    Buy,
    /// Close the stream at once, never order.
    Abandon,
    /// Keep following until the admission expires, never order.
    Stay,
}

impl Choice {
    pub fn name(self) -> &'static str {
        match self {
            Choice::Buy => "buy",
            Choice::Abandon => "abandon",
            Choice::Stay => "stay",
        }
    }
}

/// Who buys, abandons or stays: `--buy` and `--abandon` shares of the fans, the rest stay.
///
/// Fan `i` takes the point `u = ((i·k mod n) + ½) / n` (with `k` coprime to `n`, near `n`
/// over the golden ratio) and buys when `u < buy`, abandons when `u < buy + abandon`: over
/// the whole run exactly `buy·n` fans buy (rounded to the nearest, a half down), and buyers
/// are spread along the queue instead of all at its head. The same run makes the same
/// choices.
#[derive(Clone, Copy, Debug)]
pub(super) struct Choices {
    buy: f64,
    abandon: f64,
    fans: u64,
    stride: u64,
}

impl Choices {
    /// Without either share every fan abandons (it stops following once admitted, as before
    /// these flags); with one, the other is 0.
    pub(super) fn new(
        buy: Option<f64>,
        abandon: Option<f64>,
        fans: u64,
    ) -> Result<Choices, String> {
        let (buy, abandon) = match (buy, abandon) {
            (None, None) => (0.0, 1.0),
            (buy, abandon) => (buy.unwrap_or(0.0), abandon.unwrap_or(0.0)),
        };
        let valid = |f: f64| (0.0..=1.0).contains(&f);
        if !valid(buy) || !valid(abandon) {
            return Err("--buy and --abandon are fractions from 0 to 1".into());
        }
        if buy + abandon > 1.0 + 1e-9 {
            return Err(format!(
                "--buy {buy} and --abandon {abandon} add up to more than 1 (the rest stay)"
            ));
        }
        let fans = fans.max(1);
        Ok(Choices {
            buy,
            abandon,
            fans,
            stride: stride(fans, 0.618_033_988_75),
        })
    }

    /// What fan `i` does once admitted.
    pub(super) fn of(&self, i: u64) -> Choice {
        let u = point(i, self.fans, self.stride);
        if u < self.buy {
            Choice::Buy
        } else if u < self.buy + self.abandon {
            Choice::Abandon
        } else {
            Choice::Stay
        }
    }
}

/// Who steps away while waiting (`--away`), when and for how long: exactly the share of the
/// fans (rounded as [`Choices`] rounds), spread along the queue as buyers are, on a stride of
/// its own (near `n` times √2 − 1) so that who steps away says nothing of what a fan does once
/// admitted.
#[derive(Clone, Copy, Debug)]
pub(super) struct Away {
    share: f64,
    fans: u64,
    stride: u64,
    /// How long after its join was answered a fan steps away.
    pub after: Duration,
    /// How long it stays away.
    pub absence: Duration,
}

impl Away {
    pub(super) fn new(share: f64, fans: u64, after: Duration, absence: Duration) -> Away {
        let fans = fans.max(1);
        Away {
            share,
            fans,
            stride: stride(fans, 0.414_213_562_37),
            after,
            absence,
        }
    }

    /// Whether fan `i` steps away.
    pub(super) fn steps_away(&self, i: u64) -> bool {
        point(i, self.fans, self.stride) < self.share
    }
}

/// A stride near `fans · ratio` and coprime to `fans`: `i · stride mod fans` visits every fan
/// once, neighbours far apart.
fn stride(fans: u64, ratio: f64) -> u64 {
    let mut stride = ((fans as f64 * ratio).round() as u64).max(1);
    while gcd(stride, fans) != 1 {
        stride += 1;
    }
    stride
}

/// Fan `i`'s point in `(0, 1)`: `((i · stride mod fans) + ½) / fans`.
fn point(i: u64, fans: u64, stride: u64) -> f64 {
    let spread = (u128::from(i % fans) * u128::from(stride) % u128::from(fans)) as f64;
    (spread + 0.5) / fans as f64
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(choices: &Choices, fans: u64) -> [u64; 3] {
        let mut n = [0; 3];
        for i in 0..fans {
            n[choices.of(i) as usize] += 1;
        }
        n
    }

    #[test]
    fn choices_take_exactly_their_shares_spread_along_the_queue() {
        for fans in [1, 2, 3, 7, 40, 60, 1000, 19_950] {
            let choices = Choices::new(Some(0.5), Some(0.25), fans).unwrap();
            let [buy, abandon, stay] = tally(&choices, fans);
            // The nearest whole number of fans, a half rounded down.
            let share = |f: f64| (f * fans as f64 - 0.5).ceil() as u64;
            assert_eq!(buy, share(0.5), "{fans} fans");
            assert_eq!(buy + abandon, share(0.75), "{fans} fans");
            assert_eq!(buy + abandon + stay, fans);
        }
        // Not the first half buying: each quarter of the queue has its share of buyers.
        let choices = Choices::new(Some(0.5), Some(0.25), 400).unwrap();
        for quarter in 0..4 {
            let buyers = (quarter * 100..(quarter + 1) * 100)
                .filter(|&i| choices.of(i) == Choice::Buy)
                .count();
            assert!((40..=60).contains(&buyers), "quarter {quarter}: {buyers}");
        }
    }

    #[test]
    fn the_away_share_is_exact_spread_and_apart_from_the_buyers() {
        let away = |share, fans| Away::new(share, fans, Duration::ZERO, Duration::ZERO);
        for fans in [1, 3, 40, 1000, 90_000] {
            let a = away(0.1, fans);
            let n = (0..fans).filter(|&i| a.steps_away(i)).count() as u64;
            assert_eq!(n, (0.1 * fans as f64 - 0.5).ceil() as u64, "{fans} fans");
        }
        assert!((0..10).all(|i| away(1.0, 10).steps_away(i)));
        assert!(!(0..10).any(|i| away(0.0, 10).steps_away(i)));
        // Half buy, a fifth step away: about half of those who step away buy.
        let (a, choices) = (
            away(0.2, 1000),
            Choices::new(Some(0.5), None, 1000).unwrap(),
        );
        let buyers = (0..1000)
            .filter(|&i| a.steps_away(i) && choices.of(i) == Choice::Buy)
            .count();
        assert!((70..=130).contains(&buyers), "{buyers} of 200");
    }

    #[test]
    fn without_either_share_every_fan_stops_once_admitted() {
        let choices = Choices::new(None, None, 10).unwrap();
        assert_eq!(tally(&choices, 10), [0, 10, 0]);
        let buyers_only = Choices::new(Some(1.0), None, 10).unwrap();
        assert_eq!(tally(&buyers_only, 10), [10, 0, 0]);
        let stayers = Choices::new(Some(0.0), None, 10).unwrap();
        assert_eq!(tally(&stayers, 10), [0, 0, 10]);
        assert!(Choices::new(Some(0.75), Some(0.5), 10).is_err());
    }
}
