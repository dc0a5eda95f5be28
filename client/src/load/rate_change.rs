//! `--rate-change AFTER:RATE`: the operator changes the show's rate while the run goes on
//! (`PUT …/config {"admitPerSecond":RATE}` on the first `--url`, AFTER into the run), so a
//! run can measure how honest ETAs stay across a live change. With `--announce-rate-changes`
//! the change is announced at the start instead (`{"rateChangeAt","rateChangeTo"}`) and the
//! server makes it at its time.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use waiting_room::protocol::routes;

use super::run::Run;
use crate::follow;

/// The most a show's rate may be (the server refuses more).
const MAX_RATE: u32 = 10_000;

/// One change asked for: at `after` into the run, set the rate to `rate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateChange {
    /// How far into the run.
    pub after: Duration,
    /// The rate from then on, a second.
    pub rate: u32,
}

impl FromStr for RateChange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = || format!("'{s}' is not AFTER:RATE (try 30s:10)");
        let (after, rate) = s.split_once(':').ok_or_else(usage)?;
        let after = waiting_room::words::parse_duration(after).map_err(|_| usage())?;
        let rate: u32 = rate.trim().parse().map_err(|_| usage())?;
        if after > Duration::from_secs(3600) {
            return Err(format!("'{s}': a change comes at most 1h into the run"));
        }
        if !(1..=MAX_RATE).contains(&rate) {
            return Err(format!("'{s}': the rate is from 1 to {MAX_RATE} a second"));
        }
        Ok(RateChange { after, rate })
    }
}

/// What became of one change (the report's `rate_changes`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RateChangeDone {
    /// As asked: seconds into the run, and the new rate.
    pub after_seconds: f64,
    /// The new rate, a second.
    pub rate: u32,
    /// Seconds into the run when the server answered; `null` when the run ended first or no
    /// answer came.
    pub at_seconds: Option<f64>,
    /// The answer's HTTP status (200 when the rate was set); `null` when none came.
    pub status: Option<u16>,
    /// Why it did not happen, when it did not.
    pub error: Option<String>,
}

impl RateChangeDone {
    fn pending(change: RateChange) -> Self {
        RateChangeDone {
            after_seconds: change.after.as_secs_f64(),
            rate: change.rate,
            at_seconds: None,
            status: None,
            error: Some("the run ended first".into()),
        }
    }
}

impl fmt::Display for RateChangeDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/s asked at {} s", self.rate, self.after_seconds)?;
        match (self.at_seconds, self.status, &self.error) {
            (Some(at), Some(200), _) => write!(f, ", set at {at:.2} s"),
            (_, Some(status), _) => write!(f, ", refused ({status})"),
            (_, None, Some(error)) => write!(f, ", not set: {error}"),
            _ => write!(f, ", not set"),
        }
    }
}

/// Makes each change in `changes` at its time into the run on its first server (or, when
/// `announce`, announces it at once for that time), until `stop`; returns what became of
/// each, in the order asked. The first change made is marked on the run's counters at its
/// time (the ETAs told after it are measured on their own).
pub(super) async fn run(
    run: Arc<Run>,
    token: String,
    changes: Vec<RateChange>,
    announce: bool,
    stop: CancellationToken,
) -> Vec<RateChangeDone> {
    let (client, base, show, start) = (run.sources.first(), &run.urls[0], &run.show, run.start);
    let mut order: Vec<usize> = (0..changes.len()).collect();
    order.sort_by_key(|&i| changes[i].after);
    let mut done: Vec<RateChangeDone> = changes
        .iter()
        .copied()
        .map(RateChangeDone::pending)
        .collect();
    let url = follow::show_url(base, routes::CONFIG, show);
    for i in order {
        let change = changes[i];
        let body = if announce {
            let wall = jiff::Timestamp::now()
                + (start + change.after).saturating_duration_since(std::time::Instant::now());
            serde_json::json!({ "rateChangeAt": wall.to_string(), "rateChangeTo": change.rate })
        } else {
            tokio::select! {
                _ = tokio::time::sleep_until((start + change.after).into()) => {}
                _ = stop.cancelled() => break,
            }
            serde_json::json!({ "admitPerSecond": change.rate })
        };
        let answer = client
            .put(url.clone())
            .bearer_auth(&token)
            .json(&body)
            .timeout(follow::CONNECT_TIMEOUT)
            .send()
            .await;
        let entry = &mut done[i];
        match answer {
            Ok(response) => {
                // An announced change is made at its time, not when it was announced.
                let at = if announce {
                    change.after
                } else {
                    start.elapsed()
                };
                if response.status().is_success() {
                    run.counters
                        .rate_changed_us
                        .fetch_min(at.as_micros() as u64, Ordering::Relaxed);
                }
                entry.at_seconds = Some(round_ms(at));
                entry.status = Some(response.status().as_u16());
                entry.error = (!response.status().is_success())
                    .then(|| format!("{base} answered {}", response.status()));
                let _ = response.bytes().await;
            }
            Err(e) => entry.error = Some(format!("cannot reach {base}: {e}")),
        }
        // Debug only: what became of the change is in the report.
        tracing::debug!(rate = change.rate, error = ?entry.error, "rate change");
    }
    done
}

fn round_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_after_colon_rate() {
        assert_eq!(
            "30s:10".parse(),
            Ok(RateChange {
                after: Duration::from_secs(30),
                rate: 10
            })
        );
        assert_eq!(
            "1m30s:5".parse::<RateChange>().unwrap().after,
            Duration::from_secs(90)
        );
        for bad in ["30s", "30:10", "30s:0", "30s:x", "2h:5", "30s:20000", ":5"] {
            assert!(bad.parse::<RateChange>().is_err(), "{bad}");
        }
    }

    #[test]
    fn what_became_of_a_change_reads_plainly() {
        let change = RateChange {
            after: Duration::from_secs(30),
            rate: 10,
        };
        let mut done = RateChangeDone::pending(change);
        assert_eq!(
            done.to_string(),
            "10/s asked at 30 s, not set: the run ended first"
        );
        done.at_seconds = Some(30.012);
        done.status = Some(200);
        done.error = None;
        assert_eq!(done.to_string(), "10/s asked at 30 s, set at 30.01 s");
    }
}
