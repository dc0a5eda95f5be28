//! Who is here, as this instance sees it: the tickets it holds a live stream of, and those
//! polled here, gathered between reports so that the store hears of presence once a second
//! per show, never once per fan (docs/presence.md).
//!
//! A ticket's streams are counted from the moment the hub registers one until its guard is
//! dropped; only the changes between none and some are news ([`Attendance::came`] and
//! [`Attendance::went`]), and a stream that closes and reopens within one report is none.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use crate::model::ShowId;
use crate::store::Attendance;

/// One show's presence on this instance.
#[derive(Default)]
struct ShowLedger {
    /// Live streams per ticket.
    streams: HashMap<Uuid, u32>,
    /// Tickets whose first stream opened since the last report.
    came: HashSet<Uuid>,
    /// Tickets whose last stream closed since the last report.
    went: HashSet<Uuid>,
    /// Tickets polled since the last report.
    polled: HashSet<Uuid>,
}

/// Every show's presence on this instance.
#[derive(Default)]
pub(super) struct Ledger {
    shows: HashMap<ShowId, ShowLedger>,
}

impl Ledger {
    /// A live stream of `ticket` opened.
    pub(super) fn opened(&mut self, show: &ShowId, ticket: Uuid) {
        let ledger = self.shows.entry(show.clone()).or_default();
        let n = ledger.streams.entry(ticket).or_default();
        *n += 1;
        if *n == 1 && !ledger.went.remove(&ticket) {
            ledger.came.insert(ticket);
        }
    }

    /// A live stream of `ticket` closed.
    pub(super) fn closed(&mut self, show: &ShowId, ticket: Uuid) {
        let Some(ledger) = self.shows.get_mut(show) else {
            return;
        };
        let Some(n) = ledger.streams.get_mut(&ticket) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            ledger.streams.remove(&ticket);
            if !ledger.came.remove(&ticket) {
                ledger.went.insert(ticket);
            }
        }
    }

    /// `ticket` was polled. A bounded set a show: a flood of made-up tickets costs no more.
    pub(super) fn polled(&mut self, show: &ShowId, ticket: Uuid) {
        const MOST_POLLED: usize = 200_000;
        let ledger = self.shows.entry(show.clone()).or_default();
        if ledger.polled.len() < MOST_POLLED {
            ledger.polled.insert(ticket);
        }
    }

    /// Every show's news since the last report, which it clears; shows with nothing to say
    /// are left out, and forgotten once nothing of theirs is held.
    pub(super) fn report(&mut self) -> Vec<(ShowId, Attendance)> {
        let mut out = Vec::new();
        self.shows.retain(|show, ledger| {
            let news = Attendance {
                came: ledger.came.drain().collect(),
                went: ledger.went.drain().collect(),
                polled: ledger.polled.drain().collect(),
                streaming: !ledger.streams.is_empty(),
            };
            let keep = news.streaming;
            if !news.is_empty() {
                out.push((show.clone(), news));
            }
            keep
        });
        out
    }

    /// News that could not be reported goes back, to go with the next report.
    pub(super) fn unreport(&mut self, show: ShowId, news: Attendance) {
        let ledger = self.shows.entry(show).or_default();
        for t in news.came {
            if !ledger.streams.contains_key(&t) {
                // It came and went before the store heard of either.
                ledger.went.remove(&t);
            } else if !ledger.went.remove(&t) {
                ledger.came.insert(t);
            }
        }
        for t in news.went {
            if !ledger.streams.contains_key(&t) && !ledger.came.remove(&t) {
                ledger.went.insert(t);
            }
        }
        ledger.polled.extend(news.polled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show() -> ShowId {
        "show-1".parse().unwrap()
    }

    #[test]
    fn only_the_first_stream_opening_and_the_last_closing_are_news() {
        let mut l = Ledger::default();
        let t = Uuid::new_v4();
        l.opened(&show(), t);
        l.opened(&show(), t);
        let r = l.report();
        assert_eq!(r[0].1.came, [t]);
        assert!(r[0].1.streaming);
        l.closed(&show(), t);
        let r = l.report();
        assert!(r[0].1.went.is_empty(), "one stream is still open");
        assert!(r[0].1.streaming);
        l.closed(&show(), t);
        let r = l.report();
        assert_eq!(r[0].1.went, [t]);
        assert!(!r[0].1.streaming);
        assert!(l.report().is_empty(), "nothing held, nothing to say");
    }

    #[test]
    fn a_stream_that_closes_and_opens_again_within_a_report_is_no_news() {
        let mut l = Ledger::default();
        let t = Uuid::new_v4();
        l.opened(&show(), t);
        l.report();
        l.closed(&show(), t);
        l.opened(&show(), t);
        let r = l.report();
        assert!(r[0].1.came.is_empty() && r[0].1.went.is_empty());
        // And one that opens and closes within a report was never here as far as the
        // store knows.
        let u = Uuid::new_v4();
        l.opened(&show(), u);
        l.closed(&show(), u);
        let r = l.report();
        assert!(r[0].1.came.is_empty() && r[0].1.went.is_empty());
    }

    #[test]
    fn news_that_failed_goes_with_the_next_report_unless_it_changed_meanwhile() {
        let mut l = Ledger::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        l.opened(&show(), a);
        l.opened(&show(), b);
        l.polled(&show(), b);
        let (s, news) = l.report().remove(0);
        // b's stream closed before the retry: it came and went, which is no news.
        l.closed(&show(), b);
        l.unreport(s, news);
        let r = l.report();
        assert_eq!(r[0].1.came, [a]);
        assert!(r[0].1.went.is_empty());
        assert_eq!(r[0].1.polled, [b]);
    }
}
