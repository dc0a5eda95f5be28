//! The words of the domain: show ids, tickets as fans see them, orders.
//!
//! Everything here is plain data with validation at the edge, so the store, the hub and the
//! HTTP layer agree on one shape and one JSON.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

mod bypass;
mod draw;
mod lanes;
mod order;
mod pace;
mod report;
mod sale;
mod settings;
mod shown;

pub use self::bypass::{BypassKind, BypassRequest, BypassRule, bypass_kind};
pub use self::draw::{
    AuditKind, AuditPage, AuditRecord, DrawStage, DrawView, InvalidRecordId, LaneTurn, RecordId,
    parse_ranges, ranges_text, to_ranges,
};
pub use self::lanes::{
    AccessCode, CodeKey, LANE_SPAN, LaneFigure, LaneName, LaneRule, Lanes, MAX_CODE, MAX_LANES,
    MIN_CODE, code_ok, lane_name_ok, lane_of,
};
pub use self::order::{MAX_AMOUNT, NewOrder, Order, OrderRequest, Redemption};
pub use self::pace::{Eta, Pace, Paused, RateChange};
pub use self::report::{
    Bucket, Count, EtaAccuracy, Fairness, Figures, Percentiles, PushLatency, Report, Second,
    ShareAt,
};
pub use self::sale::{EndReason, Phase, SOLD_OUT, Sale};
pub use self::settings::{
    AnnouncedRate, EventPhase, EventTimes, MAX_ACTIVE_BUYERS, MAX_ARRIVAL_WINDOW, MAX_BEACON,
    MAX_BEACON_VALUE, MAX_CHALLENGE_BITS, MAX_HEALTH_URL, MAX_RATE, MAX_STOCK, MIN_ARRIVAL_WINDOW,
    Schedule, ScheduledEvent, SettingError, ShowSettings, health_uri,
};
pub use self::shown::{LEAVE_SLACK, position_agrees, position_slack};

/// A show id as the outside may name it: `[A-Za-z0-9._-]{1,64}`, except `.` and `..` (no
/// browser can reach a page under them) and the names the server keeps for itself
/// ([`RESERVED_SHOW_IDS`]).
///
/// Holding one proves the id was checked, so Redis keys built from it cannot collide with
/// other key families (no `{`, `}` or `:` can sneak into a hash tag, and no show shares the
/// admitter's `{admitter}` tag).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ShowId(String);

impl ShowId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Hash tags and names the server uses for its own keys: no show may be named so (a show
/// `admitter` would share the lease's hash tag, and making or deleting it would wipe the
/// fencing counter). Compared without regard to case.
pub const RESERVED_SHOW_IDS: &[&str] = &["admitter"];

/// Why a show id was refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "show id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' or '-', not '.' or '..', \
     and none of the names the server keeps for itself ({})",
    RESERVED_SHOW_IDS.join(", ")
)]
pub struct InvalidShowId;

impl FromStr for ShowId {
    type Err = InvalidShowId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let valid = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
            && s != "."
            && s != ".."
            && !RESERVED_SHOW_IDS.iter().any(|r| r.eq_ignore_ascii_case(s));
        if valid {
            Ok(ShowId(s.to_owned()))
        } else {
            Err(InvalidShowId)
        }
    }
}

impl<'de> Deserialize<'de> for ShowId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for ShowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a ticket stands, as the store knows it (and as its scripts answer it: `standing()`
/// in `prelude.lua` and `status.lua`, tagged by `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TicketState {
    /// In the queue.
    Waiting {
        /// The place in the queue, rank + 1 (1: the next let through).
        position: u64,
        /// The join's arrival number (the show's counter, from 1): the audit names fans by it.
        arrival: u64,
    },
    /// In a scheduled show's pre-queue, before the draw: no place yet; the show opens in
    /// `opens_in_ms` (0: opening now, the draw is under way).
    PreQueue {
        /// The join's arrival number, which the draw orders.
        arrival: u64,
        /// Milliseconds until the show opens (0: opening now, the draw is under way).
        opens_in_ms: u64,
    },
    /// Let through; the admission runs out after `expires_in_ms`.
    Admitted {
        /// Milliseconds until the admission runs out (the store's TTL of it).
        expires_in_ms: u64,
    },
    /// Never joined, left, or the admission ran out.
    Unknown,
    /// Its fan was away longer than the show's `awayHoldSeconds` (`hold_seconds`), so its place
    /// was released: told `EXPIRED` and why, to join again.
    Expired {
        /// The hold the fan was away longer than, in seconds.
        #[serde(rename(deserialize = "away_hold_s"))]
        hold_seconds: u64,
    },
    /// Neither waiting nor admitted, and its place was lost in a Redis failover that lost
    /// writes (marked by [`crate::store::Lineage::mend`]): its fan is told so, to join again.
    /// The embedded store never loses an answered write, so never answers it.
    Lost,
}

impl TicketState {
    /// The arrival number of a queued ticket (waiting, or in a pre-queue).
    pub fn arrival(&self) -> Option<u64> {
        match *self {
            TicketState::Waiting { arrival, .. } | TicketState::PreQueue { arrival, .. } => {
                Some(arrival)
            }
            _ => None,
        }
    }

    /// The status word its fan is shown while the on-sale stands as `sale` says: the
    /// `status` of [`TicketState::view`], worked out without the rest of the JSON (a stream
    /// follows on while it is `WAITING`).
    pub fn status(self, sale: &Sale) -> TicketStatus {
        let in_queue = matches!(
            self,
            TicketState::Waiting { .. } | TicketState::PreQueue { .. }
        );
        match self {
            // A fan still in the queue of a show that closed or ended waits for nothing.
            _ if in_queue && sale.phase == Phase::Closed => TicketStatus::Closed,
            _ if in_queue && sale.phase == Phase::Ended => TicketStatus::Ended,
            TicketState::Waiting { .. } | TicketState::PreQueue { .. } => TicketStatus::Waiting,
            TicketState::Admitted { .. } => TicketStatus::Admitted,
            TicketState::Unknown => TicketStatus::Unknown,
            TicketState::Lost => TicketStatus::Lost,
            TicketState::Expired { .. } => TicketStatus::Expired,
        }
    }

    /// The ticket JSON a fan is shown, with the ETA at the show's `pace`, while its on-sale
    /// stands as `sale` says.
    pub fn view(self, ticket: Uuid, pace: &Pace, sale: &Sale) -> TicketView {
        let mut view = TicketView {
            ticket_id: ticket,
            status: self.status(sale),
            position: None,
            eta_seconds: None,
            away_ahead: None,
            eta_min_seconds: None,
            eta_max_seconds: None,
            paused: None,
            expires_in_seconds: None,
            pre_queue: None,
            opens_in_seconds: None,
            arrival: None,
            lane: None,
            pass: None,
            countdown_per_second: None,
            last_tick_second: None,
            stock_left: None,
            reason: None,
            message: None,
        };
        // A fan still in the queue of a show that closed or ended waits for nothing: it is
        // told so (and sent on, or told why it ended) instead of a place.
        match view.status {
            TicketStatus::Closed => return view,
            TicketStatus::Ended => {
                view.reason = sale.reason.map(|r| r.to_string());
                return view;
            }
            _ => {}
        }
        match self {
            TicketState::Waiting { position, arrival } => {
                let away = pace.away_ahead(position);
                // In a lane, the wait is that of the admissions over every lane before it.
                let slot = lane_of(arrival);
                let places = pace.lanes.admissions_until(slot, position);
                let eta = pace.eta_skipping(places, away);
                view.lane = pace
                    .lanes
                    .get(slot)
                    .filter(|_| slot > 0)
                    .map(|l| l.name.as_str().to_owned());
                view.position = Some(position);
                view.away_ahead = (away > 0).then_some(away);
                view.eta_seconds = Some(eta.seconds);
                view.eta_min_seconds = eta.range.map(|r| r.0);
                view.eta_max_seconds = eta.range.map(|r| r.1);
                view.paused = pace.paused;
                view.arrival = Some(arrival);
                view.stock_left = sale.stock_left;
                if pace.paused.is_some_and(Paused::halts) {
                    // Nothing moves until an operator opens or resumes it: no ETA pretends
                    // otherwise.
                    view.eta_seconds = None;
                    view.eta_min_seconds = None;
                    view.eta_max_seconds = None;
                } else {
                    // A fan passed over while away holds one of the first `passed_over`
                    // places (they stand ahead of every queued fan): back, it is let in at
                    // the next tick, and its place does not move by the rate meanwhile.
                    let passed_over = position <= u64::from(pace.passed_over);
                    // With lanes, a lane's place does not fall by the rate.
                    view.countdown_per_second =
                        pace.steady().filter(|_| !passed_over && !pace.lanes.any());
                    view.last_tick_second = view.countdown_per_second.and(pace.tick_sec);
                }
            }
            TicketState::PreQueue {
                arrival,
                opens_in_ms,
            } => {
                view.pre_queue = Some(true);
                view.opens_in_seconds = Some(opens_in_ms.div_ceil(1000));
                view.arrival = Some(arrival);
                view.stock_left = sale.stock_left;
            }
            TicketState::Admitted { expires_in_ms } => {
                // Redis' own TTL rounding, so the two stores answer alike.
                view.expires_in_seconds = Some((expires_in_ms + 500) / 1000);
            }
            TicketState::Unknown => {}
            TicketState::Lost => {
                view.message = Some(LOST_MESSAGE.to_owned());
            }
            TicketState::Expired { hold_seconds } => {
                view.message = Some(expired_message(hold_seconds));
            }
        }
        view
    }
}

/// The status word of the ticket JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TicketStatus {
    /// In the queue (`position`, `etaSeconds`) or its pre-queue (`preQueue`, `opensInSeconds`).
    Waiting,
    /// Let through: order within `expiresInSeconds`, with the ticket or its `pass` at the gate.
    Admitted,
    /// No ticket of that id: never joined, left, admission over, or the show deleted or lost.
    Unknown,
    /// The waiting room stepped aside (the on-sale was closed: no gate): go on to the shop.
    Closed,
    /// The on-sale is over (`reason` says why, when the operator said).
    Ended,
    /// The fan was away (no live page, no poll) longer than the show holds a place, so its
    /// place was released (`message` says so): join again. The poll answers it with 410, a
    /// push as the event `expired`.
    Expired,
    /// The place was lost when the store failed over (a Redis replica promoted without the
    /// last writes): join again (`message` says so). The poll answers it with 410, a push as
    /// the event `unknown`.
    Lost,
}

impl TicketStatus {
    /// Every status, in the order the variants are declared.
    pub const ALL: [TicketStatus; 7] = [
        TicketStatus::Waiting,
        TicketStatus::Admitted,
        TicketStatus::Unknown,
        TicketStatus::Closed,
        TicketStatus::Ended,
        TicketStatus::Expired,
        TicketStatus::Lost,
    ];
}

/// What a fan whose place was released after `hold_seconds` away is told, with `EXPIRED`.
pub fn expired_message(hold_seconds: u64) -> String {
    let hold = if hold_seconds >= 120 && hold_seconds.is_multiple_of(60) {
        format!("{} minutes", hold_seconds / 60)
    } else {
        format!("{hold_seconds} seconds")
    };
    format!(
        "your place was released: you were away (no open waiting page, no check) for longer \
         than the {hold} the queue keeps a place; please join again"
    )
}

/// What a fan whose place a failover lost is told, with `LOST`.
pub const LOST_MESSAGE: &str =
    "your place in the queue was lost when the waiting room's store failed over; please join again";

/// The original's ticket JSON, null fields omitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketView {
    /// The id the join handed out (a UUID): the path of every later call about the ticket.
    pub ticket_id: Uuid,
    /// Where the ticket stands; it decides which of the other fields are present.
    pub status: TicketStatus,
    /// While waiting: the place in the queue, rank + 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    /// While waiting: the expected wait, the position over the pace really measured. Absent
    /// while the queue does not move (`paused`: `pending` or `paused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<u64>,
    /// While waiting, where away fans are passed over: of the places ahead, about how many
    /// are held by fans away, who will be skipped (docs/presence.md). The position counts
    /// them; the ETA does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub away_ahead: Option<u64>,
    /// With `etaMaxSeconds`: the likely range of the wait, when the pace is uncertain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_min_seconds: Option<u64>,
    /// With `etaMinSeconds`: the longest likely wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_max_seconds: Option<u64>,
    /// Why the queue stands still: `pending` (not opened yet), `paused` (by the operator) or
    /// `full` (every place behind the gate taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Paused>,
    /// While admitted: the seconds left to order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<u64>,
    /// In a scheduled show's pre-queue: `true`, with no position until the draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_queue: Option<bool>,
    /// In the pre-queue: seconds until the show opens and the pre-queue is drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_in_seconds: Option<u64>,
    /// While waiting: the arrival number (the audit and the draw name fans by it, never by
    /// ticket id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<u64>,
    /// While waiting in a lane (docs/lanes.md): its name. The position is the place in the
    /// lane; the ETA counts every lane's admissions before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// While admitted: the signed admission pass, a JWT (EdDSA) that the gate, and any edge
    /// with the keys of `GET /.well-known/jwks.json`, check without the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    /// While waiting at a steady pace (no pause, no announced change, every tick letting in
    /// the rate): the position drops by this much at each tick, once a second, until a new
    /// state says otherwise; the ETA is then `ceil((position - awayAhead) / countdownPerSecond)`
    /// (never below one place's worth). Pages
    /// count down between pushes; the server pushes at once whenever the count would be
    /// wrong (docs/push.md: Push cadence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub countdown_per_second: Option<u32>,
    /// With `countdownPerSecond`: the second (Unix time, the store's clock) of the last tick
    /// this state includes; the count goes on from there, one tick a second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tick_second: Option<u64>,
    /// While waiting for a show with a stock: seats still for sale (fewer than the fans
    /// ahead means the wait may be for nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock_left: Option<u64>,
    /// With `ENDED`: why the on-sale ended, when the operator said (`sold out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With `LOST`: what happened, and what to do (join again), in words for the fan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Every show an operator made and has not deleted (`GET /orders/waiting-room`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShowList {
    /// Their ids, in order.
    pub shows: Vec<String>,
}

/// What an operator sees of one show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShowStats {
    /// The show, as named in the path.
    pub show_id: String,
    /// Whether the admitter serves the show now: `phase` is `open`.
    pub open: bool,
    /// Where the on-sale stands: `pending`, `open`, `paused`, `closed` or `ended`.
    pub phase: Phase,
    /// With `ENDED`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<EndReason>,
    /// Seats for sale (absent: no stock set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<u64>,
    /// Seats still for sale: the stock less the orders placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock_left: Option<u64>,
    /// The store lost this show's state: it serves nothing until an operator re-opens it.
    pub lost: bool,
    /// Tickets waiting now, those in a pre-queue included.
    pub queue_length: u64,
    /// Admitted, not expired, not yet done buying: the buyers in the system behind.
    pub admitted_valid: u64,
    /// The configured admissions a second (`effectiveAdmitPerSecond` is the rate in force).
    pub admit_per_second: u32,
    /// Cap on `admitted_valid` (0: none); admission fills only free places.
    pub max_active_buyers: u32,
    /// Tickets ever handed out for this show (the arrival counter).
    pub joined: u64,
    /// Places offered a second, smoothed over recent ticks: the pace every ETA uses.
    pub outflow_per_second: f64,
    /// Why the queue stands still, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Paused>,
    /// With a cap: how long an admission may go untaken before its place goes on.
    pub arrival_window_seconds: u64,
    /// Admissions released because nobody took them up within the arrival window.
    pub released_untaken: u64,
    /// The rate in force: `admitPerSecond`, or less while the pace follows a struggling
    /// checkout.
    pub effective_admit_per_second: u32,
    /// Leading zero bits a join's proof of work must have (0: no proof asked).
    #[serde(default)]
    pub join_challenge_bits: u32,
    /// The event of the schedule (`settings.events`) running now, by its place in the list
    /// from 1; absent: none runs, the show's own settings are in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_event: Option<u32>,
    /// The lanes (docs/lanes.md), the general queue among them, in the order a tick serves
    /// them, with the fans waiting in each (absent: the show has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<LaneStats>,
    /// What the operator set, whole: every setting sent and kept (the fields above are what
    /// is in force).
    #[serde(default)]
    pub settings: ShowSettings,
    /// Who is here (docs/presence.md).
    #[serde(default)]
    pub presence: PresenceStats,
}

/// One lane of a show, as its stats answer it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaneStats {
    /// Its name (`general`: the queue without a code).
    pub name: String,
    /// Its share of the rate, percent, while it holds fans (absent with priority).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<u8>,
    /// Served first while it holds fans.
    #[serde(default)]
    pub priority: bool,
    /// Fans waiting in it.
    pub waiting: u64,
}

/// A show's presence figures, as its stats answer them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresenceStats {
    /// Fans holding a place with no live page, unseen for longer than the grace.
    pub away: u64,
    /// Of them, those whose turn came and were passed over (their places kept).
    pub passed_over: u64,
    /// Places released after the away hold, since the show was made.
    pub released: u64,
    /// Fans who asked to be called and have not been called `admitted` yet.
    pub asked_to_be_called: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_ids_follow_the_spec_alphabet() {
        for ok in ["show-42", "a", "A.b_c-9", &"x".repeat(64)] {
            assert!(ok.parse::<ShowId>().is_ok(), "{ok} should be valid");
        }
        for bad in [
            "",
            "a b",
            "a:b",
            "{x}",
            "é",
            &"x".repeat(65),
            "a/b",
            ".",
            "..",
            "admitter",
            "Admitter",
        ] {
            assert!(bad.parse::<ShowId>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn ticket_json_omits_null_fields() {
        let id = Uuid::nil();
        let waiting = serde_json::to_value(
            TicketState::Waiting {
                position: 3,
                arrival: 7,
            }
            .view(id, &Pace::at_rate(2), &Sale::open()),
        )
        .unwrap();
        assert_eq!(
            waiting,
            serde_json::json!({"ticketId": id, "status": "WAITING", "position": 3, "etaSeconds": 2, "arrival": 7})
        );
        // A steady pace after a tick: the count's fields.
        let ticked = Pace {
            tick_sec: Some(1_700_000_000),
            ..Pace::at_rate(2)
        };
        let counting = serde_json::to_value(
            TicketState::Waiting {
                position: 3,
                arrival: 7,
            }
            .view(id, &ticked, &Sale::open()),
        )
        .unwrap();
        assert_eq!(
            counting,
            serde_json::json!({"ticketId": id, "status": "WAITING", "position": 3, "etaSeconds": 2, "arrival": 7, "countdownPerSecond": 2, "lastTickSecond": 1_700_000_000u64})
        );
        let admitted = serde_json::to_value(
            TicketState::Admitted {
                expires_in_ms: 298_400,
            }
            .view(id, &Pace::at_rate(2), &Sale::open()),
        )
        .unwrap();
        assert_eq!(
            admitted,
            serde_json::json!({"ticketId": id, "status": "ADMITTED", "expiresInSeconds": 298})
        );
        let unknown =
            serde_json::to_value(TicketState::Unknown.view(id, &Pace::at_rate(2), &Sale::open()))
                .unwrap();
        assert_eq!(
            unknown,
            serde_json::json!({"ticketId": id, "status": "UNKNOWN"})
        );
        let lost =
            serde_json::to_value(TicketState::Lost.view(id, &Pace::at_rate(2), &Sale::open()))
                .unwrap();
        assert_eq!(
            lost,
            serde_json::json!({"ticketId": id, "status": "LOST", "message": LOST_MESSAGE})
        );
    }

    #[test]
    fn a_fan_passed_over_is_told_no_count_down() {
        let pace = Pace {
            tick_sec: Some(1_700_000_000),
            passed_over: 3,
            ..Pace::at_rate(2)
        };
        let view = |position| {
            TicketState::Waiting {
                position,
                arrival: 9,
            }
            .view(Uuid::nil(), &pace, &Sale::open())
        };
        // Third of the three passed over: let in at the next tick once back, not counted
        // down by the rate.
        let passed = view(3);
        assert_eq!(
            (passed.countdown_per_second, passed.eta_seconds),
            (None, Some(1))
        );
        // The first queued fan, behind them: its place moves by the rate.
        let queued = view(4);
        assert_eq!(
            (queued.countdown_per_second, queued.away_ahead),
            (Some(2), Some(3))
        );
    }

    #[test]
    fn a_queue_nobody_opened_or_a_paused_one_tells_no_eta() {
        let id = Uuid::nil();
        let waiting = TicketState::Waiting {
            position: 3,
            arrival: 7,
        };
        for (phase, paused) in [
            (Phase::Pending, Paused::Pending),
            (Phase::Paused, Paused::Paused),
        ] {
            let pace = Pace {
                paused: Some(paused),
                ..Pace::at_rate(2)
            };
            let sale = Sale {
                phase,
                ..Sale::default()
            };
            let view = waiting.view(id, &pace, &sale);
            assert_eq!((view.position, view.paused), (Some(3), Some(paused)));
            assert_eq!(
                (
                    view.eta_seconds,
                    view.eta_min_seconds,
                    view.countdown_per_second
                ),
                (None, None, None),
                "{phase:?}"
            );
        }
        // A full cap still moves, as buyers finish: an ETA, and why it is slow.
        let full = Pace {
            paused: Some(Paused::Full),
            ..Pace::at_rate(2)
        };
        assert_eq!(waiting.view(id, &full, &Sale::open()).eta_seconds, Some(2));
    }

    #[test]
    fn the_status_word_is_the_views() {
        let states = [
            TicketState::Waiting {
                position: 1,
                arrival: 1,
            },
            TicketState::PreQueue {
                arrival: 1,
                opens_in_ms: 5,
            },
            TicketState::Admitted { expires_in_ms: 9 },
            TicketState::Unknown,
            TicketState::Expired { hold_seconds: 60 },
            TicketState::Lost,
        ];
        for state in states {
            for phase in [
                Phase::Pending,
                Phase::Open,
                Phase::Paused,
                Phase::Closed,
                Phase::Ended,
            ] {
                let sale = Sale {
                    phase,
                    ..Sale::default()
                };
                assert_eq!(
                    state.status(&sale),
                    state.view(Uuid::nil(), &Pace::at_rate(2), &sale).status,
                    "{state:?} {phase:?}"
                );
            }
        }
    }
}
