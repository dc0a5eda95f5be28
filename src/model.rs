//! The words of the domain: show ids, tickets as fans see them, orders.
//!
//! Everything here is plain data with validation at the edge, so the store, the hub and the
//! HTTP layer agree on one shape and one JSON.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A show id as the outside may name it: `[A-Za-z0-9._-]{1,64}`.
///
/// Holding one proves the id was checked, so Redis keys built from it cannot collide with
/// other key families (no `{`, `}` or `:` can sneak into a hash tag).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ShowId(String);

impl ShowId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a show id was refused.
#[derive(Debug, thiserror::Error)]
#[error("show id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' or '-'")]
pub struct InvalidShowId;

impl FromStr for ShowId {
    type Err = InvalidShowId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let valid = (1..=64).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
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

/// Where a ticket stands, as the store knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TicketState {
    /// In the queue: `position` is rank + 1.
    Waiting { position: u64 },
    /// Let through; the admission runs out after `expires_in_ms`.
    Admitted { expires_in_ms: u64 },
    /// Never joined, left, or the admission ran out.
    Unknown,
}

/// How fast a show's queue moves: what every ETA is worked out from, read with the ticket.
///
/// The store measures the places each admission tick offers (the rate, or fewer when a cap
/// on active buyers binds: then places free up only as fast as buyers order, give up or run
/// out) and smooths them over recent ticks; before there is history it starts from the
/// configured rate, so at a plain rate the ETA is the seed's `ceil(position / rate)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pace {
    /// The configured admissions a second.
    pub rate: u32,
    /// Places offered a second, smoothed, in thousandths.
    pub flow_milli: u64,
    /// How much that varies tick to tick (one standard deviation), in thousandths.
    pub spread_milli: u64,
    /// Why nothing moves now, if nothing does.
    pub paused: Option<Paused>,
}

/// Why a queue stands still.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Paused {
    /// The on-sale is not open (yet, or any more).
    Closed,
    /// Every place behind the gate is taken: fans are let in as buyers finish.
    Full,
}

impl Pace {
    /// A plain rate with no history: the seed's ETA.
    pub fn at_rate(rate: u32) -> Pace {
        Pace {
            rate,
            flow_milli: u64::from(rate) * 1000,
            spread_milli: 0,
            paused: None,
        }
    }

    /// The ETA of `position`, and an honest range around it when the pace is uncertain.
    pub fn eta(&self, position: u64) -> Eta {
        // Never divide by a standstill: a queue that offers no place yet still moves once
        // buyers finish, at no less than a fiftieth of a place a second in this model.
        let flow = (self.flow_milli as f64 / 1000.0).max(0.02);
        let seconds = |per_second: f64| (position as f64 / per_second).ceil() as u64;
        let eta = seconds(flow);
        let spread = self.spread_milli as f64 / 1000.0;
        // A range only when the pace wanders by more than a tenth.
        let range = (spread > flow * 0.1).then(|| {
            let fast = seconds(flow + spread);
            let slow = seconds((flow - spread).max(flow / 4.0));
            (fast.min(eta), slow.max(eta))
        });
        Eta {
            seconds: eta,
            range,
        }
    }
}

/// What a fan is told about its wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eta {
    pub seconds: u64,
    /// Shortest and longest likely wait, when the pace is uncertain.
    pub range: Option<(u64, u64)>,
}

impl TicketState {
    /// The ticket JSON a fan is shown, with the ETA at the show's `pace`.
    pub fn view(self, ticket: Uuid, pace: &Pace) -> TicketView {
        let mut view = TicketView {
            ticket_id: ticket,
            status: TicketStatus::Unknown,
            position: None,
            eta_seconds: None,
            eta_min_seconds: None,
            eta_max_seconds: None,
            paused: None,
            expires_in_seconds: None,
        };
        match self {
            TicketState::Waiting { position } => {
                let eta = pace.eta(position);
                view.status = TicketStatus::Waiting;
                view.position = Some(position);
                view.eta_seconds = Some(eta.seconds);
                view.eta_min_seconds = eta.range.map(|r| r.0);
                view.eta_max_seconds = eta.range.map(|r| r.1);
                view.paused = pace.paused;
            }
            TicketState::Admitted { expires_in_ms } => {
                view.status = TicketStatus::Admitted;
                // Redis' own TTL rounding, so the two stores answer alike.
                view.expires_in_seconds = Some((expires_in_ms + 500) / 1000);
            }
            TicketState::Unknown => {}
        }
        view
    }
}

/// The status word of the ticket JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TicketStatus {
    Waiting,
    Admitted,
    Unknown,
}

/// The seed's ticket JSON, null fields omitted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketView {
    pub ticket_id: Uuid,
    pub status: TicketStatus,
    /// While waiting: the place in the queue, rank + 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
    /// While waiting: the expected wait, the position over the pace really measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<u64>,
    /// With `etaMaxSeconds`: the likely range of the wait, when the pace is uncertain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_min_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_max_seconds: Option<u64>,
    /// Why the queue stands still: `closed` or `full`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Paused>,
    /// While admitted: the seconds left to order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<u64>,
}

/// What `POST /orders` carries, before validation.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderRequest {
    pub show_id: String,
    /// The checkout's hold: 1 to 128 characters; a retry with the very same request is
    /// answered with the same order.
    pub hold_id: String,
    pub customer_email: String,
    /// Greater than 0, at most 1000000, at most two decimal places.
    pub amount: Decimal,
}

/// An order request that passed validation.
#[derive(Clone, Debug)]
pub struct NewOrder {
    pub show_id: ShowId,
    pub hold_id: String,
    pub customer_email: String,
    pub amount: Decimal,
}

impl OrderRequest {
    /// Checks every field; the error names the first one that is wrong.
    pub fn validate(self) -> Result<NewOrder, String> {
        let show_id: ShowId = self
            .show_id
            .parse()
            .map_err(|e: InvalidShowId| format!("showId: {e}"))?;
        let hold_id = self.hold_id.trim();
        if hold_id.is_empty() || hold_id.len() > 128 {
            return Err("holdId: must be 1 to 128 characters".into());
        }
        let email = self.customer_email.trim();
        if !plausible_email(email) {
            return Err("customerEmail: must be an email address like fan@example.com".into());
        }
        if self.amount <= Decimal::ZERO || self.amount > Decimal::from(1_000_000) {
            return Err("amount: must be greater than 0 and at most 1000000".into());
        }
        if self.amount.scale() > 2 {
            return Err("amount: at most two decimal places".into());
        }
        Ok(NewOrder {
            show_id,
            hold_id: hold_id.to_owned(),
            customer_email: email.to_owned(),
            amount: self.amount,
        })
    }
}

/// One `@`, something before it, a dotted domain after it, no spaces: what a form would check.
fn plausible_email(s: &str) -> bool {
    if s.len() > 254 || s.chars().any(char::is_whitespace) {
        return false;
    }
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

/// A placed order, as stored and as answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub id: Uuid,
    pub show_id: String,
    pub hold_id: String,
    pub customer_email: String,
    #[serde(with = "rust_decimal::serde::float")]
    pub amount: Decimal,
    /// `CONFIRMED`.
    pub status: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
}

impl Order {
    /// A freshly confirmed order for `req`.
    pub fn confirmed(req: &NewOrder, now_ms: u64) -> Order {
        Order {
            id: Uuid::new_v4(),
            show_id: req.show_id.to_string(),
            hold_id: req.hold_id.clone(),
            customer_email: req.customer_email.clone(),
            amount: req.amount,
            status: "CONFIRMED".into(),
            created_at: now_ms,
        }
    }
}

/// What an operator sees of one show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShowStats {
    pub show_id: String,
    pub open: bool,
    /// The store lost this show's state: it serves nothing until an operator re-opens it.
    pub lost: bool,
    pub queue_length: u64,
    /// Admitted, not expired, not yet done buying: the buyers in the system behind.
    pub admitted_valid: u64,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_ids_follow_the_spec_alphabet() {
        for ok in ["show-42", "a", "A.b_c-9", &"x".repeat(64)] {
            assert!(ok.parse::<ShowId>().is_ok(), "{ok} should be valid");
        }
        for bad in ["", "a b", "a:b", "{x}", "é", &"x".repeat(65), "a/b"] {
            assert!(bad.parse::<ShowId>().is_err(), "{bad} should be refused");
        }
    }

    fn eta(position: u64, rate: u32) -> u64 {
        Pace::at_rate(rate).eta(position).seconds
    }

    #[test]
    fn eta_at_a_plain_rate_is_little_law_rounded_up() {
        assert_eq!(eta(1, 20), 1);
        assert_eq!(eta(20, 20), 1);
        assert_eq!(eta(21, 20), 2);
        assert_eq!(eta(30_000, 500), 60);
        assert_eq!(
            Pace::at_rate(20).eta(21).range,
            None,
            "a steady pace is certain"
        );
    }

    #[test]
    fn an_uncertain_pace_gives_a_range_around_the_eta() {
        let pace = Pace {
            rate: 10,
            flow_milli: 2_000,
            spread_milli: 1_000,
            paused: None,
        };
        let eta = pace.eta(100);
        assert_eq!(eta.seconds, 50);
        assert_eq!(eta.range, Some((34, 100)));
        // A standstill still gives a finite wait.
        let stopped = Pace {
            flow_milli: 0,
            ..pace
        };
        assert_eq!(stopped.eta(1).seconds, 50);
    }

    #[test]
    fn ticket_json_omits_null_fields() {
        let id = Uuid::nil();
        let waiting =
            serde_json::to_value(TicketState::Waiting { position: 3 }.view(id, &Pace::at_rate(2)))
                .unwrap();
        assert_eq!(
            waiting,
            serde_json::json!({"ticketId": id, "status": "WAITING", "position": 3, "etaSeconds": 2})
        );
        let admitted = serde_json::to_value(
            TicketState::Admitted {
                expires_in_ms: 298_400,
            }
            .view(id, &Pace::at_rate(2)),
        )
        .unwrap();
        assert_eq!(
            admitted,
            serde_json::json!({"ticketId": id, "status": "ADMITTED", "expiresInSeconds": 298})
        );
        let unknown =
            serde_json::to_value(TicketState::Unknown.view(id, &Pace::at_rate(2))).unwrap();
        assert_eq!(
            unknown,
            serde_json::json!({"ticketId": id, "status": "UNKNOWN"})
        );
    }

    #[test]
    fn order_validation_names_the_bad_field() {
        let good = || OrderRequest {
            show_id: "show-42".into(),
            hold_id: "hold-1".into(),
            customer_email: "caio@example.com".into(),
            amount: Decimal::new(35000, 2),
        };
        assert!(good().validate().is_ok());
        let cases: Vec<(OrderRequest, &str)> = vec![
            (
                OrderRequest {
                    show_id: "bad id".into(),
                    ..good()
                },
                "showId",
            ),
            (
                OrderRequest {
                    hold_id: " ".into(),
                    ..good()
                },
                "holdId",
            ),
            (
                OrderRequest {
                    customer_email: "nope".into(),
                    ..good()
                },
                "customerEmail",
            ),
            (
                OrderRequest {
                    customer_email: "a@b".into(),
                    ..good()
                },
                "customerEmail",
            ),
            (
                OrderRequest {
                    amount: Decimal::ZERO,
                    ..good()
                },
                "amount",
            ),
            (
                OrderRequest {
                    amount: Decimal::new(-1, 0),
                    ..good()
                },
                "amount",
            ),
            (
                OrderRequest {
                    amount: Decimal::new(1001, 3),
                    ..good()
                },
                "amount",
            ),
        ];
        for (req, field) in cases {
            let err = req.validate().unwrap_err();
            assert!(err.starts_with(field), "{err} should name {field}");
        }
    }
}
