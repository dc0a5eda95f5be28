//! An arrival curve: fans arriving each second. From a CSV (`second,arrivals` a line, or
//! one count a line), or a named shape: `spike:N:S` (N fans in S seconds, most in the first
//! moments, as at 10:00) or `flat:N:S` (N fans spread evenly over S seconds).

use std::fmt;

/// The longest curve: a day of seconds.
pub const MAX_SECONDS: usize = 86_400;
/// The most fans a curve may bring. Every one of them is a ticket in the simulated store's
/// memory: the 2,000,000-fan spike took 913 MB, about 460 bytes a fan, so 10,000,000 fans
/// take about 4.6 GB, as much as a box running the simulation may be asked to hold.
pub const MAX_FANS: u64 = 10_000_000;

/// Fans arriving in each second, from second 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Curve(Vec<u64>);

impl Curve {
    /// Arrivals a second, from second 0.
    pub fn seconds(&self) -> &[u64] {
        &self.0
    }

    /// Every fan the curve brings.
    pub fn fans(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The curve at `factor` of its size (a rehearsal on a smaller box): each second's share,
    /// its rounding carried on, so the total is `factor` × the whole, rounded.
    pub fn scaled(&self, factor: f64) -> Curve {
        Curve(rounded(self.0.iter().map(|&n| n as f64 * factor)))
    }

    /// A curve from the text of a CSV: `second,arrivals` lines (seconds ascending, gaps are
    /// seconds nobody came), or one count a line; blank lines and `#` comments are skipped. A
    /// first line with letters is a header: one that names `arrivals` (and `t` or `second`)
    /// picks those columns, so a report's CSV (`GET …/report?format=csv`) replays its sale.
    pub fn from_csv(text: &str) -> Result<Curve, CurveError> {
        let mut counts: Vec<u64> = Vec::new();
        let mut fans: u64 = 0;
        // The header's columns for the second and the arrivals, when it names them.
        let mut columns: Option<(Option<usize>, usize)> = None;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| CurveError(format!("line {}: {why}: {line:.60}", i + 1));
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if counts.is_empty()
                && columns.is_none()
                && line.chars().any(|c| c.is_ascii_alphabetic())
            {
                let at = |name: &str| cells.iter().position(|c| c.eq_ignore_ascii_case(name));
                columns = at("arrivals").map(|n| (at("t").or_else(|| at("second")), n));
                if columns.is_none() && i > 0 {
                    return Err(bad("not whole numbers"));
                }
                continue;
            }
            let picked: Vec<&str> = match columns {
                Some((second, n)) => match (second.map(|s| cells.get(s)), cells.get(n)) {
                    (Some(Some(s)), Some(n)) => vec![s, n],
                    (None, Some(n)) => vec![n],
                    _ => return Err(bad("fewer columns than the header")),
                },
                None => cells,
            };
            let numbers: Vec<u64> = picked
                .iter()
                .map(|c| c.parse::<u64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad("not whole numbers"))?;
            let (second, n) = match numbers[..] {
                [n] => (counts.len(), n),
                [s, n] => (usize::try_from(s).unwrap_or(usize::MAX), n),
                _ => return Err(bad("one or two numbers a line")),
            };
            if second < counts.len() {
                return Err(bad("seconds must ascend"));
            }
            if second >= MAX_SECONDS {
                return Err(bad("past a day (second 86399 at most)"));
            }
            fans = fans.saturating_add(n);
            if fans > MAX_FANS {
                return Err(bad("more than 10,000,000 fans in all"));
            }
            counts.resize(second, 0);
            counts.push(n);
        }
        if fans == 0 {
            return Err(CurveError("the curve brings no fan".into()));
        }
        Ok(Curve(counts))
    }

    /// A named shape: `spike:N:S` or `flat:N:S`.
    pub fn shape(text: &str) -> Result<Curve, CurveError> {
        let bad = || {
            CurveError(format!(
                "{text:.60}: a shape is spike:FANS:SECONDS or flat:FANS:SECONDS \
                 (1 to 10,000,000 fans, 1 to 86400 seconds)"
            ))
        };
        let mut parts = text.split(':');
        let (Some(kind), Some(fans), Some(seconds), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let fans: u64 = fans.replace('_', "").parse().map_err(|_| bad())?;
        let seconds: usize = seconds.parse().map_err(|_| bad())?;
        if !(1..=MAX_FANS).contains(&fans) || !(1..=MAX_SECONDS).contains(&seconds) {
            return Err(bad());
        }
        // Weights of each second: even, or falling away from the first (a tenth of the
        // seconds brings about a quarter of the fans: e^(-3t/S)).
        let weights: Vec<f64> = match kind {
            "flat" => vec![1.0; seconds],
            "spike" => (0..seconds)
                .map(|t| (-3.0 * t as f64 / seconds as f64).exp())
                .collect(),
            _ => return Err(bad()),
        };
        let total: f64 = weights.iter().sum();
        Ok(Curve(rounded(
            weights.iter().map(|w| fans as f64 * w / total),
        )))
    }
}

/// Whole fans from shares of them, each second's rounding carried to the next, so the total
/// is the shares' sum, rounded.
fn rounded(shares: impl Iterator<Item = f64>) -> Vec<u64> {
    let mut carry = 0.0;
    shares
        .map(|exact| {
            let exact = exact + carry;
            let whole = exact.round().max(0.0);
            carry = exact - whole;
            whole as u64
        })
        .collect()
}

/// A curve that cannot be read, with the reason.
#[derive(Debug, PartialEq, Eq)]
pub struct CurveError(pub String);

impl fmt::Display for CurveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CurveError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_reads_with_a_header_gaps_and_comments() {
        let c = Curve::from_csv("second,arrivals\n0,5\n# lull\n\n3,7\n").unwrap();
        assert_eq!(c.seconds(), &[5, 0, 0, 7]);
        assert_eq!(Curve::from_csv("4\n6\n").unwrap().seconds(), &[4, 6]);
    }

    #[test]
    fn a_reports_csv_replays_its_arrivals() {
        let report = "t,at_ms,arrivals,queued\r\n0,1000,30,10\r\n1,2000,5,0\r\n3,4000,2,0\r\n";
        assert_eq!(Curve::from_csv(report).unwrap().seconds(), &[30, 5, 0, 2]);
        let e = Curve::from_csv("t,arrivals\n0\n").unwrap_err();
        assert!(e.0.contains("line 2: fewer columns"), "{e}");
    }

    #[test]
    fn a_hostile_csv_is_refused_with_its_line() {
        for (text, why) in [
            ("0,5\n0,6\n", "line 2: seconds must ascend"),
            ("0,5\nx,6\n", "line 2: not whole numbers"),
            ("0,5,1\n", "line 1: one or two numbers"),
            ("86400,1\n", "past a day"),
            ("0,10000001\n", "more than 10,000,000"),
            ("0,9000000\n1,1000001\n", "line 2: more than 10,000,000"),
            ("0,-1\n", "not whole numbers"),
            ("", "no fan"),
            ("0,0\n", "no fan"),
        ] {
            let e = Curve::from_csv(text).unwrap_err();
            assert!(e.0.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn shapes_bring_every_fan_a_spike_up_front() {
        let spike = Curve::shape("spike:2000000:60").unwrap();
        assert_eq!(spike.fans(), 2_000_000);
        assert_eq!(spike.seconds().len(), 60);
        let first_tenth: u64 = spike.seconds()[..6].iter().sum();
        assert!(
            first_tenth > 400_000 && first_tenth < 600_000,
            "{first_tenth}"
        );
        let flat = Curve::shape("flat:1000:7").unwrap();
        assert_eq!(flat.fans(), 1000);
        assert!(flat.seconds().iter().all(|&n| n == 142 || n == 143));
        assert_eq!(Curve::shape("flat:10000000:60").unwrap().fans(), MAX_FANS);
        for bad in [
            "spike:0:60",
            "ramp:10:10",
            "spike:10",
            "flat:10:86401",
            "flat:a:1",
            "flat:10000001:60",
        ] {
            assert!(Curve::shape(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_scaled_curve_keeps_its_total_share() {
        let c = Curve::shape("spike:90000:120").unwrap().scaled(0.1);
        assert_eq!(c.fans(), 9000);
        assert_eq!(c.seconds().len(), 120);
    }
}
