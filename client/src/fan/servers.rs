//! The `--url`s, tried in turn, and the failure bookkeeping that decides when to wait and
//! when to give up.

use std::io::Write;
use std::time::{Duration, Instant};

use reqwest::Url;

use super::FanError;
use super::lines::{line, shown};
use crate::backoff::Backoff;
use crate::text::span;

/// First and longest wait between rounds of attempts.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(10);

/// The `--url`s and the failures met on them since something last worked.
pub(super) struct Servers<'a> {
    urls: &'a [Url],
    current: usize,
    /// Servers that failed in a row since the last success or the last wait.
    failed_in_round: usize,
    backoff: Backoff,
    failing_since: Option<Instant>,
    give_up_after: Duration,
}

impl<'a> Servers<'a> {
    pub(super) fn new(urls: &'a [Url], give_up_after: Duration) -> Self {
        assert!(!urls.is_empty(), "clap requires at least one --url");
        Servers {
            urls,
            current: 0,
            failed_in_round: 0,
            backoff: Backoff::new(BACKOFF_BASE, BACKOFF_CAP),
            failing_since: None,
            give_up_after,
        }
    }

    pub(super) fn current(&self) -> &Url {
        &self.urls[self.current]
    }

    /// Moves on to the next server without a failure: a fan coming back after stepping
    /// away comes back on another instance, when there are several.
    pub(super) fn next(&mut self) {
        self.current = (self.current + 1) % self.urls.len();
    }

    pub(super) fn worked(&mut self) {
        self.failing_since = None;
        self.failed_in_round = 0;
        self.backoff.reset();
    }

    /// Moves to the next server and says how long to wait first: not at all for a server
    /// not yet tried this round, a growing, jittered delay (at least the server's `retry`
    /// hint) once all have failed. Gives up once failing has lasted `give_up_after`.
    fn failed(&mut self, why: &str, hint: Option<Duration>) -> Result<Duration, FanError> {
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        if since.elapsed() >= self.give_up_after {
            return Err(FanError::GaveUp {
                after: since.elapsed(),
                last: why.to_owned(),
            });
        }
        self.current = (self.current + 1) % self.urls.len();
        self.failed_in_round += 1;
        if self.failed_in_round < self.urls.len() {
            return Ok(Duration::ZERO);
        }
        self.failed_in_round = 0;
        let delay = self.backoff.next_delay().max(hint.unwrap_or_default());
        // Never sleep past the moment of giving up: one last try happens at that moment.
        let left = self.give_up_after.saturating_sub(since.elapsed());
        Ok(delay.min(left))
    }

    /// After `from` failed: says so, waits as [`Servers::failed`] decides, and leaves the
    /// next server current (or gives up).
    pub(super) async fn move_on<W: Write>(
        &mut self,
        out: &mut W,
        from: &Url,
        why: &str,
        hint: Option<Duration>,
    ) -> Result<(), FanError> {
        let delay = self.failed(why, hint)?;
        line(
            out,
            "lost",
            format_args!(
                "{}: {why}; trying {} in {}",
                shown(from),
                shown(self.current()),
                span(delay)
            ),
        );
        tokio::time::sleep(delay).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(n: usize) -> Vec<Url> {
        (0..n)
            .map(|i| format!("http://127.0.0.1:{}", 8080 + i).parse().unwrap())
            .collect()
    }

    #[test]
    fn servers_are_tried_in_turn_and_the_wait_comes_after_a_full_round() {
        let urls = urls(3);
        let mut s = Servers::new(&urls, Duration::from_secs(60));
        assert_eq!(s.failed("x", None).unwrap(), Duration::ZERO);
        assert_eq!(s.current().port(), Some(8081));
        assert_eq!(s.failed("x", None).unwrap(), Duration::ZERO);
        assert_eq!(s.current().port(), Some(8082));
        let wait = s.failed("x", None).unwrap();
        assert!(wait > Duration::ZERO, "a full round failed, so wait");
        assert_eq!(s.current().port(), Some(8080));
        s.worked();
        assert_eq!(s.failed("x", None).unwrap(), Duration::ZERO);
    }

    #[test]
    fn a_single_server_backs_off_growing_and_honours_the_retry_hint() {
        let urls = urls(1);
        let mut s = Servers::new(&urls, Duration::from_secs(600));
        let first = s.failed("x", None).unwrap();
        assert!(first <= BACKOFF_BASE, "{first:?}");
        let hinted = s.failed("x", Some(Duration::from_secs(3))).unwrap();
        assert!(hinted >= Duration::from_secs(3), "{hinted:?}");
        for _ in 0..10 {
            s.failed("x", None).unwrap();
        }
        assert!(s.failed("x", None).unwrap() <= BACKOFF_CAP);
    }

    #[test]
    fn failing_for_too_long_gives_up_with_the_last_reason() {
        let urls = urls(2);
        let mut s = Servers::new(&urls, Duration::ZERO);
        match s.failed("connection refused", None) {
            Err(FanError::GaveUp { last, .. }) => assert_eq!(last, "connection refused"),
            other => panic!("expected to give up, got {other:?}"),
        }
    }
}
