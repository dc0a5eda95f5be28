//! How honest the first ETA was: each fan's first ETA (told with its join, or with its first
//! push that had one) against the time it was really admitted (its first `admitted`).
//! With `--rate-change`, the same for the first ETA each fan was told once the first change
//! was made (pushed with the new pace, or with its join if it joined later): whether ETAs
//! follow the change, which no first ETA told before it could foresee.
//!
//! The error of one fan is `(real wait − first ETA) / real wait`: 0 when told exactly,
//! negative when admitted earlier than told, 0.5 when it waited twice as long as told. It
//! counts for fans whose real wait is over `--eta-min-wait` (10 s): on shorter waits the
//! ETA's whole seconds and the tick's phase are most of the error. Absolute errors in
//! seconds are given over every admitted fan as well. A fan that stepped away (`--away`)
//! waited as long as its absence made it: its ETA is not measured.

mod csv;

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;
use waiting_room::model::{Paused, TicketView};
use waiting_room::words::thousands;

use super::choices::Choice;
pub(super) use csv::{points, write_csv};

/// The first ETA a fan was told, and when. Kept small: a run may record a million fans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Told {
    /// Seconds since the run started.
    pub at: f32,
    pub position: Option<u32>,
    pub eta: u32,
    /// The honest range, when the server gave one (`etaMinSeconds`, `etaMaxSeconds`).
    pub eta_min: Option<u32>,
    pub eta_max: Option<u32>,
    pub paused: Option<Paused>,
}

fn small(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Told {
    /// What `ticket` told at `at`; `None` when it gave no ETA.
    pub fn of(at: f32, ticket: &TicketView) -> Option<Told> {
        Some(Told {
            at,
            position: ticket.position.map(small),
            eta: small(ticket.eta_seconds?),
            eta_min: ticket.eta_min_seconds.map(small),
            eta_max: ticket.eta_max_seconds.map(small),
            paused: ticket.paused,
        })
    }
}

/// One fan that joined: what it was first told, when it was admitted, what it did.
#[derive(Clone, Debug)]
pub struct FanRecord {
    pub fan: u64,
    pub choice: Choice,
    pub ticket: Option<Uuid>,
    pub first: Option<Told>,
    /// The first ETA told once the first `--rate-change` was made.
    pub retold: Option<Told>,
    /// Seconds since the run started, at its first `admitted`.
    pub admitted_at: Option<f32>,
    /// The order's HTTP status, 0 when none came (buyers only).
    pub order_status: Option<u16>,
    /// A stayer told its admission expired.
    pub expired: bool,
    /// The server's last answer to its join was 429: it was waiting to ask again.
    pub throttled: bool,
    /// It stepped away while waiting (`--away`): how long it waited is its own doing, so its
    /// ETA is not held against it.
    pub stepped_away: bool,
}

impl FanRecord {
    pub fn new(fan: u64, choice: Choice) -> FanRecord {
        FanRecord {
            fan,
            choice,
            ticket: None,
            first: None,
            retold: None,
            admitted_at: None,
            order_status: None,
            expired: false,
            throttled: false,
            stepped_away: false,
        }
    }

    /// The ETA `which` and the real wait from then to the admission, in seconds.
    fn measured(&self, which: Which) -> Option<(Told, f64)> {
        if self.stepped_away {
            return None;
        }
        let told = match which {
            Which::First => self.first,
            Which::AfterRateChange => self.retold,
        }?;
        let wait = (f64::from(self.admitted_at?) - f64::from(told.at)).max(0.0);
        Some((told, wait))
    }
}

/// Which ETA of each fan is held against its real wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The first it was told.
    First,
    /// The first it was told once the first `--rate-change` was made.
    AfterRateChange,
}

impl Which {
    /// How the plot's title names it.
    fn name(self) -> &'static str {
        match self {
            Which::First => "First ETA",
            Which::AfterRateChange => "ETA told after the rate change",
        }
    }
}

/// `(real wait − told) / real wait`; `None` for a wait of nothing.
fn relative_error(told: f64, wait: f64) -> Option<f64> {
    (wait > 0.0).then(|| (wait - told) / wait)
}

/// The ETA figures of a run (the report's `eta` object).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EtaReport {
    /// Which ETA: `first`, or `afterRateChange`.
    #[serde(skip)]
    pub which: Option<Which>,
    /// Fans whose error counts: told an ETA, admitted, and waited over `minWaitSeconds`.
    pub fans: u64,
    /// `--eta-min-wait`.
    pub min_wait_seconds: f64,
    /// Of those fans, |real wait − first ETA| / real wait: 0.05 is 5 %. `null` with no fans.
    pub p50_abs_error: Option<f64>,
    /// The same, 90th percentile.
    pub p90_abs_error: Option<f64>,
    /// Shares of those fans admitted earlier (real wait under the ETA) and later than told.
    pub early: Option<f64>,
    /// Share admitted later than told.
    pub late: Option<f64>,
    /// Of those fans, the ones told a range (`etaMinSeconds`–`etaMaxSeconds`) first, and the
    /// share of them whose real wait fell inside it.
    pub ranged: u64,
    /// Share of the ranged whose wait fell inside the range.
    pub in_range: Option<f64>,
    /// Every fan told an ETA and admitted, whatever its wait.
    pub measured: u64,
    /// Of those, |real wait − first ETA| in seconds.
    pub p50_abs_error_seconds: Option<f64>,
    /// The same, 90th percentile.
    pub p90_abs_error_seconds: Option<f64>,
}

/// The `q` quantile of `values` by nearest rank; `None` when empty.
fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = (q * values.len() as f64).ceil() as usize;
    Some(values[rank.clamp(1, values.len()) - 1])
}

fn round(v: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (v * scale).round() / scale
}

fn share(n: u64, of: u64) -> Option<f64> {
    (of > 0).then(|| round(n as f64 / of as f64, 4))
}

impl EtaReport {
    /// The figures of each fan's first ETA.
    pub fn of(records: &[FanRecord], min_wait: Duration) -> EtaReport {
        EtaReport::of_which(records, min_wait, Which::First)
    }

    /// The figures of the ETA `which`.
    pub fn of_which(records: &[FanRecord], min_wait: Duration, which: Which) -> EtaReport {
        let min_wait = min_wait.as_secs_f64();
        let mut seconds = Vec::new();
        let mut errors = Vec::new();
        let (mut early, mut late, mut ranged, mut in_range) = (0, 0, 0, 0);
        for (told, wait) in records.iter().filter_map(|r| r.measured(which)) {
            let eta = f64::from(told.eta);
            seconds.push((wait - eta).abs());
            if wait <= min_wait {
                continue;
            }
            let Some(error) = relative_error(eta, wait) else {
                continue;
            };
            errors.push(error.abs());
            if wait < eta {
                early += 1;
            } else if wait > eta {
                late += 1;
            }
            if let (Some(lo), Some(hi)) = (told.eta_min, told.eta_max) {
                ranged += 1;
                if (f64::from(lo)..=f64::from(hi)).contains(&wait) {
                    in_range += 1;
                }
            }
        }
        let fans = errors.len() as u64;
        let at = |v: &mut Vec<f64>, q, places| quantile(v, q).map(|x| round(x, places));
        EtaReport {
            which: Some(which),
            fans,
            min_wait_seconds: min_wait,
            p50_abs_error: at(&mut errors, 0.5, 4),
            p90_abs_error: at(&mut errors, 0.9, 4),
            early: share(early, fans),
            late: share(late, fans),
            ranged,
            in_range: share(in_range, ranged),
            measured: seconds.len() as u64,
            p50_abs_error_seconds: at(&mut seconds, 0.5, 3),
            p90_abs_error_seconds: at(&mut seconds, 0.9, 3),
        }
    }

    /// The plot's title: the figure a reader looks for first.
    pub fn title(&self) -> String {
        let what = self.which.unwrap_or(Which::First).name();
        match self.p90_abs_error {
            Some(p90) => format!(
                "{what} vs real wait: p90 error {} over {} fans waiting over {}",
                percent(p90),
                thousands(self.fans),
                seconds(self.min_wait_seconds)
            ),
            None => format!(
                "{what} vs real wait: no fan waited over {}",
                seconds(self.min_wait_seconds)
            ),
        }
    }
}

fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p < 10.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

fn seconds(s: f64) -> String {
    format!("{} s", round(s, 2))
}

impl fmt::Display for EtaReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.measured == 0 {
            return f.write_str("no fan was both told an ETA and admitted");
        }
        let wait = seconds(self.min_wait_seconds);
        match (self.p50_abs_error, self.p90_abs_error) {
            (Some(p50), Some(p90)) => {
                write!(
                    f,
                    "p50 {} · p90 {} off for {} fans waiting over {wait} · {} admitted earlier, {} later than told",
                    percent(p50),
                    percent(p90),
                    thousands(self.fans),
                    percent(self.early.unwrap_or_default()),
                    percent(self.late.unwrap_or_default()),
                )?;
                if let Some(in_range) = self.in_range {
                    write!(
                        f,
                        " · {} inside the range told ({} fans)",
                        percent(in_range),
                        thousands(self.ranged)
                    )?;
                }
                f.write_str("; ")?;
            }
            _ => write!(f, "no fan waited over {wait}; ")?,
        }
        write!(
            f,
            "p50 {} · p90 {} off over all {} admitted",
            seconds(self.p50_abs_error_seconds.unwrap_or_default()),
            seconds(self.p90_abs_error_seconds.unwrap_or_default()),
            thousands(self.measured)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn fan(i: u64, told_at: f32, eta: u32, admitted_at: Option<f32>) -> FanRecord {
        FanRecord {
            ticket: Some(Uuid::new_v4()),
            first: Some(Told {
                at: told_at,
                position: Some(i as u32 + 1),
                eta,
                eta_min: None,
                eta_max: None,
                paused: None,
            }),
            admitted_at,
            ..FanRecord::new(i, Choice::Stay)
        }
    }

    #[test]
    fn errors_count_waits_over_the_minimum_and_say_early_or_late() {
        let records = vec![
            // Told 21 s, waited 20: 5 % early.
            fan(0, 0.0, 21, Some(20.0)),
            // Told 10 s, waited 20: 50 % late.
            fan(1, 0.0, 10, Some(20.0)),
            // Told 12 s, waited 12.5: 4 % late.
            fan(2, 0.5, 12, Some(13.0)),
            // Waited 3 s: seconds only.
            fan(3, 0.0, 2, Some(3.0)),
            // Never admitted: not measured.
            fan(4, 0.0, 30, None),
        ];
        let eta = EtaReport::of(&records, Duration::from_secs(10));
        assert_eq!(eta.fans, 3);
        assert_eq!(eta.measured, 4);
        assert_eq!(eta.p50_abs_error, Some(0.05));
        assert_eq!(eta.p90_abs_error, Some(0.5));
        assert_eq!(eta.early, Some(0.3333));
        assert_eq!(eta.late, Some(0.6667));
        assert_eq!(eta.p50_abs_error_seconds, Some(1.0));
        assert_eq!(eta.p90_abs_error_seconds, Some(10.0));
        assert_eq!((eta.ranged, eta.in_range), (0, None));
        let line = eta.to_string();
        assert!(
            line.starts_with("p50 5.0 % · p90 50 % off for 3 fans waiting over 10 s"),
            "{line}"
        );
        assert!(line.contains("33 % admitted earlier, 67 % later"), "{line}");
        assert!(eta.title().contains("p90 error 50 %"), "{}", eta.title());

        let every_wait = EtaReport::of(&records, Duration::ZERO);
        assert_eq!(every_wait.fans, 4);
    }

    #[test]
    fn ranges_are_checked_and_nothing_measured_is_null() {
        let mut ranged = fan(0, 0.0, 20, Some(25.0));
        ranged.first.as_mut().unwrap().eta_min = Some(15);
        ranged.first.as_mut().unwrap().eta_max = Some(30);
        let mut missed = fan(1, 0.0, 20, Some(40.0));
        missed.first.as_mut().unwrap().eta_min = Some(15);
        missed.first.as_mut().unwrap().eta_max = Some(30);
        let eta = EtaReport::of(&[ranged, missed], Duration::from_secs(10));
        assert_eq!((eta.ranged, eta.in_range), (2, Some(0.5)));
        assert_eq!(
            points(&[fan(0, 0.0, 20, Some(25.0))], Which::First)[0].range,
            None
        );

        let none = EtaReport::of(&[fan(0, 0.0, 5, None)], Duration::from_secs(10));
        assert_eq!(none.fans, 0);
        assert_eq!(none.p90_abs_error, None);
        assert_eq!(none.to_string(), "no fan was both told an ETA and admitted");
        let json = serde_json::to_value(&none).unwrap();
        for field in ["fans", "p50AbsError", "p90AbsError", "early", "late"] {
            assert!(json.get(field).is_some(), "{field} in {json}");
        }
        assert!(json["p90AbsError"].is_null());
    }

    #[test]
    fn the_eta_told_after_a_rate_change_is_measured_on_its_own() {
        // Told 10 s at the start; the rate halved at 5 s and it was told 30 s more then; it
        // was admitted at 35 s: the first ETA was 71 % off, the one after the change exact.
        let mut record = fan(0, 0.0, 10, Some(35.0));
        record.retold = Some(Told {
            at: 5.0,
            eta: 30,
            ..record.first.unwrap()
        });
        let never_retold = fan(1, 0.0, 2, Some(2.0));
        let records = [record, never_retold];
        let first = EtaReport::of(&records, Duration::from_secs(10));
        assert_eq!(first.p90_abs_error, Some(0.7143));
        let after = EtaReport::of_which(&records, Duration::from_secs(10), Which::AfterRateChange);
        assert_eq!((after.fans, after.measured), (1, 1));
        assert_eq!(after.p90_abs_error, Some(0.0));
        assert!(
            after
                .title()
                .starts_with("ETA told after the rate change vs real wait: p90 error 0.0 %"),
            "{}",
            after.title()
        );
        assert_eq!(points(&records, Which::AfterRateChange).len(), 1);
    }
}
