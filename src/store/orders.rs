//! The order book: orders placed through the gate, one per hold.

use async_trait::async_trait;
use uuid::Uuid;

use super::Result;
use crate::model::{NewOrder, Order};

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
