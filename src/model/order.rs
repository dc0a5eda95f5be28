//! Orders: the request `POST /orders` carries, validated at the edge, and the order stored.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{InvalidShowId, ShowId};

/// What `POST /orders` carries, before validation.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderRequest {
    /// The show the hold is in; an admission in `X-Admission-Ticket` must be of it.
    pub show_id: String,
    /// The checkout's hold: 1 to 128 characters; a retry with the very same request is
    /// answered with the same order.
    pub hold_id: String,
    /// The buyer's address: one `@`, a dotted domain, no spaces, at most 254 characters.
    pub customer_email: String,
    /// Greater than 0, at most 1000000, at most two decimal places.
    pub amount: Decimal,
}

/// The highest price an order may carry.
pub const MAX_AMOUNT: u32 = 1_000_000;

/// An order request that passed validation.
#[derive(Clone, Debug)]
pub struct NewOrder {
    /// The show, its id checked.
    pub show_id: ShowId,
    /// The checkout's hold, trimmed: 1 to 128 bytes.
    pub hold_id: String,
    /// The buyer's address, trimmed, of an email's shape.
    pub customer_email: String,
    /// The price: above 0, at most 1000000, at most two decimal places.
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
        if self.amount <= Decimal::ZERO || self.amount > Decimal::from(MAX_AMOUNT) {
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

/// An admission a checkout outside spent (`POST …/redeem`): whose, and its place in line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Redemption {
    /// The show whose admission was spent.
    pub show_id: String,
    /// The admitted ticket the checkout spent (named by it, or by its pass).
    pub ticket_id: Uuid,
    /// The fan's arrival number (as the public audit names it).
    pub arrival: u64,
}

/// A placed order, as stored and as answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    /// A random UUID, the `{id}` of `GET /orders/{id}`.
    pub id: Uuid,
    /// The show the order is for.
    pub show_id: String,
    /// The checkout's hold: a show's hold is ordered once.
    pub hold_id: String,
    /// The buyer's address, trimmed.
    pub customer_email: String,
    /// The price, a JSON number with at most two decimal places.
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

#[cfg(test)]
mod tests {
    use super::*;

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
