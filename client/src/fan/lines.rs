//! The fan's output: one line per change a person would notice, worded as the waiting page
//! words it (numbers and waits by [`waiting_room::words`]).

use std::fmt::Display;
use std::io::Write;
use std::time::{Duration, SystemTime};

use reqwest::Url;
use waiting_room::model::{Paused, TicketStatus, TicketView};
use waiting_room::protocol::{ADMISSION_HEADER, EventName};
use waiting_room::words::{countdown, thousands, wait_words};

use crate::follow::Push;
use crate::text::{clock, span};

/// The human half of a status line.
pub(super) fn describe(push: &Push) -> String {
    let t = &push.ticket;
    match push.kind {
        EventName::Waiting => waiting(t),
        EventName::Admitted => {
            let valid = t
                .expires_in_seconds
                .map(|s| format!(" · valid for {}", span(Duration::from_secs(s))))
                .unwrap_or_default();
            format!(
                "your turn{valid} · order with header {ADMISSION_HEADER}: {}",
                t.ticket_id
            )
        }
        // `EXPIRED` (a place released while its fan was away) and `LOST` come with why.
        EventName::Expired if t.status == TicketStatus::Expired => t
            .message
            .clone()
            .unwrap_or_else(|| "your place was released: you were away for too long".into()),
        EventName::Expired => "the admission ran out".into(),
        EventName::Unknown => match &t.message {
            Some(why) => format!("ticket {} is not in the queue: {why}", t.ticket_id),
            None => format!("ticket {} is not in the queue", t.ticket_id),
        },
        EventName::Closed => {
            "the waiting room stepped aside: no queue now, go on to the shop".into()
        }
        EventName::Ended => match &t.reason {
            Some(why) => format!("the on-sale has ended: {why}"),
            None => "the on-sale has ended".into(),
        },
    }
}

/// Where a waiting fan stands: `position 1,204 · about 20–30 minutes`, and why the queue
/// stands still when it does (as the waiting page says it).
fn waiting(t: &TicketView) -> String {
    if t.pre_queue == Some(true) {
        // No place before the draw: the countdown, and the number the draw goes by.
        let opens = match t.opens_in_seconds {
            Some(0) | None => "opening now: drawing the order".to_owned(),
            Some(s) => format!(
                "opens in {}, then a draw gives everyone here a place",
                countdown(s)
            ),
        };
        let arrival = t.arrival.map(|a| format!(" · arrival {}", thousands(a)));
        return format!("pre-queue · {opens}{}", arrival.unwrap_or_default());
    }
    let range = t.eta_min_seconds.zip(t.eta_max_seconds);
    let wait = t.eta_seconds.map(|s| wait_words(s, range));
    let parts = match t.paused {
        // Before the opening the wait counts from it, not from now.
        Some(Paused::Pending) => [
            Some("not open yet".to_owned()),
            wait.map(|w| format!("{w} once it opens")),
        ],
        // Nobody knows when a pause ends: no wait is promised.
        Some(Paused::Paused) => [
            Some("paused by the organiser: every place is kept".to_owned()),
            None,
        ],
        Some(Paused::Full) => [
            wait,
            Some("paused: every place at the checkout is taken".to_owned()),
        ],
        None => [wait, None],
    };
    let stock = t
        .stock_left
        .map(|left| format!("{} seats left", thousands(left)));
    let parts: Vec<String> = t
        .position
        .map(|p| format!("position {}", thousands(p)))
        .into_iter()
        .chain(parts.into_iter().flatten())
        .chain(stock)
        .collect();
    if parts.is_empty() {
        "in the queue".into()
    } else {
        parts.join(" · ")
    }
}

/// A server as the user typed it, without the slash the URL parser adds.
pub(super) fn shown(url: &Url) -> &str {
    url.as_str().trim_end_matches('/')
}

/// One output line: `12:00:03  waiting   position 1,204 · about a minute`.
pub(super) fn line<W: Write>(out: &mut W, word: &str, text: impl Display) {
    // Flushed per line, so a pipe (`| tee`, a test) sees each update as it happens. A closed
    // stdout is no reason to stop following.
    let _ = writeln!(out, "{}  {word:<9} {text}", clock(SystemTime::now()));
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use uuid::Uuid;

    #[test]
    fn status_lines_read_like_sentences() {
        // From JSON, as the server sends it: fields the model gains later need no change here.
        let ticket = |json: serde_json::Value| -> TicketView {
            let mut json = json;
            json["ticketId"] = Uuid::nil().to_string().into();
            serde_json::from_value(json).unwrap()
        };
        let waiting = Push {
            kind: EventName::Waiting,
            id: None,
            ticket: ticket(json!({"status": "WAITING", "position": 1204, "etaSeconds": 61})),
        };
        assert_eq!(describe(&waiting), "position 1,204 · about a minute");
        let admitted = Push {
            kind: EventName::Admitted,
            id: None,
            ticket: ticket(json!({"status": "ADMITTED", "expiresInSeconds": 298})),
        };
        assert!(describe(&admitted).starts_with("your turn · valid for 4 min 58 s"));
        let released = Push {
            kind: EventName::Expired,
            id: None,
            ticket: ticket(
                json!({"status": "EXPIRED", "message": "your place was released: away too long"}),
            ),
        };
        assert_eq!(
            describe(&released),
            "your place was released: away too long"
        );
        let ran_out = Push {
            kind: EventName::Expired,
            id: None,
            ticket: ticket(json!({"status": "UNKNOWN"})),
        };
        assert_eq!(describe(&ran_out), "the admission ran out");
        let mut out = Vec::new();
        line(&mut out, "waiting", describe(&waiting));
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.ends_with("  waiting   position 1,204 · about a minute\n"),
            "{text:?}"
        );
    }

    #[test]
    fn an_uncertain_wait_is_a_range_and_a_standstill_says_why() {
        let waiting = |json: serde_json::Value| {
            let mut json = json;
            json["ticketId"] = Uuid::nil().to_string().into();
            json["status"] = "WAITING".into();
            waiting(&serde_json::from_value(json).unwrap())
        };
        assert_eq!(
            waiting(
                json!({"position": 95, "etaSeconds": 1500, "etaMinSeconds": 1200, "etaMaxSeconds": 1800})
            ),
            "position 95 · about 20–30 minutes"
        );
        assert_eq!(
            waiting(json!({"preQueue": true, "opensInSeconds": 3725, "arrival": 1204})),
            "pre-queue · opens in 1:02:05, then a draw gives everyone here a place · arrival 1,204"
        );
        assert_eq!(
            waiting(json!({"preQueue": true, "opensInSeconds": 0, "arrival": 7})),
            "pre-queue · opening now: drawing the order · arrival 7"
        );
        assert_eq!(
            waiting(
                json!({"position": 95, "etaSeconds": 1500, "etaMinSeconds": 1200, "etaMaxSeconds": 1800, "paused": "full"})
            ),
            "position 95 · about 20–30 minutes · paused: every place at the checkout is taken"
        );
        assert_eq!(
            waiting(json!({"position": 31, "etaSeconds": 2, "paused": "pending"})),
            "position 31 · not open yet · less than a minute once it opens"
        );
        assert_eq!(
            waiting(json!({"position": 3, "paused": "pending"})),
            "position 3 · not open yet"
        );
        assert_eq!(
            waiting(json!({"position": 3, "paused": "paused", "stockLeft": 1200})),
            "position 3 · paused by the organiser: every place is kept · 1,200 seats left"
        );
        assert_eq!(waiting(json!({})), "in the queue");
    }
}
