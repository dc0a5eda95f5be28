//! The order book: orders placed through the gate, one per hold.

mod calls;
mod reply;

use async_trait::async_trait;
use uuid::Uuid;

use super::Result;
use crate::model::{NewOrder, Order, ShowId};

/// Orders, and the gate they pass on the way in.
#[async_trait]
pub trait OrderBook: Send + Sync {
    /// Places an order through the gate, in one step: while the show is open, `ticket` must
    /// be an admission of it that has not bought yet (it then stops counting as an active
    /// buyer). A hold belongs to its show; the same request again answers its order.
    async fn place_order(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome>;
    /// Places an order with a signed pass for `ticket`, which the gate verified: as
    /// [`OrderBook::place_order`] for that ticket (the admission must still run here: a pass
    /// buys no more than its ticket id would), and the admission still buys once.
    async fn place_order_with_pass(&self, order: &NewOrder, ticket: Uuid) -> Result<OrderOutcome>;
    /// An order by id.
    async fn get_order(&self, id: Uuid) -> Result<Option<Order>>;
    /// Spends the admission of `ticket` for a checkout outside, once: it must be a running
    /// admission of the show's current epoch that neither ordered nor was redeemed. Spent,
    /// it places no order, is handed no pass and its place goes to the next fan.
    async fn redeem(&self, show: &ShowId, ticket: Uuid) -> Result<Redeemed>;
}

/// What a redemption did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redeemed {
    /// Spent now: the admission's arrival number and the show's epoch.
    Now {
        /// The admitted fan's arrival number (the audit names buyers by it).
        arrival: u64,
        /// The show's incarnation the admission belonged to.
        epoch: u64,
    },
    /// Spent before, by an order or a redemption.
    Before,
    /// No running admission of this show's epoch.
    NotAdmitted,
}

/// What the store did with an order.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderOutcome {
    /// A new order.
    Created(Order),
    /// The very same request was placed before: its order.
    Repeated(Order),
    /// The hold was ordered with something else (`hold`), the admission already bought
    /// (`admission`), or every seat of the stock has an order (`sold out`).
    Conflict(&'static str),
    /// The gate refused: the show is open and the ticket is not a valid admission of it.
    Forbidden,
}

/// What makes two order requests "the same request" for a hold: the admission that placed
/// it (when the show was gated), the email and the amount, normalised.
pub fn order_fingerprint(order: &NewOrder) -> String {
    format!("{}|{}", order.customer_email, order.amount.normalize())
}
