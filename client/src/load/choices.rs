//! What an admitted fan does (`--buy`, `--abandon`, the rest stay), decided per fan.

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
        let mut stride = ((fans as f64 * 0.618_033_988_75).round() as u64).max(1);
        while gcd(stride, fans) != 1 {
            stride += 1;
        }
        Ok(Choices {
            buy,
            abandon,
            fans,
            stride,
        })
    }

    /// What fan `i` does once admitted.
    pub(super) fn of(&self, i: u64) -> Choice {
        let spread =
            (u128::from(i % self.fans) * u128::from(self.stride) % u128::from(self.fans)) as f64;
        let u = (spread + 0.5) / self.fans as f64;
        if u < self.buy {
            Choice::Buy
        } else if u < self.buy + self.abandon {
            Choice::Abandon
        } else {
            Choice::Stay
        }
    }
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
