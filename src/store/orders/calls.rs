//! Orders through the gate as the store calls them (on Redis and on the embedded store
//! alike): the order under its own key, the hold and the step through the gate in the show's
//! `order.lua`, redemption in `redeem.lua`.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::AsyncCommands;
use redis::aio::ConnectionLike;
use uuid::Uuid;

use super::reply::{OrderReply, RedeemReply};
use super::{OrderBook, OrderOutcome, Redeemed, order_fingerprint};
use crate::model::{NewOrder, Order, ShowId};
use crate::store::redis::{RedisStore, ShowScript, TicketArgs, show_script};
use crate::store::{Result, StoreError, wall_ms};

static ORDER: LazyLock<ShowScript> = show_script!("order");
static REDEEM: LazyLock<ShowScript> = show_script!("redeem");

/// `order.lua`'s own arguments: the hold the order claims, the admission it buys with (by id
/// or by a verified pass; absent: the hold's own), the order's fingerprint (a replay with
/// other contents is refused) and the id of the order written ahead.
#[derive(serde::Serialize)]
struct OrderArgs<'a> {
    hold: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket: Option<Uuid>,
    fingerprint: String,
    order: String,
}

/// An order's key, outside every show's slot: `GET /orders/{id}` knows no show.
fn order_key(id: Uuid) -> String {
    format!("wr:order:{id}")
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> OrderBook for RedisStore<C> {
    async fn place_order(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome> {
        self.place(order, ticket).await
    }

    async fn place_order_with_pass(&self, order: &NewOrder, ticket: Uuid) -> Result<OrderOutcome> {
        self.place(order, Some(ticket)).await
    }

    async fn get_order(&self, id: Uuid) -> Result<Option<Order>> {
        let mut conn = self.conn.clone();
        let json: Option<String> = conn.get(order_key(id)).await?;
        json.map(|j| serde_json::from_str(&j).map_err(|e| StoreError::Protocol(e.to_string())))
            .transpose()
    }

    async fn redeem(&self, show: &ShowId, ticket: Uuid) -> Result<Redeemed> {
        let r: RedeemReply = self.run(&REDEEM, show, &TicketArgs { ticket }).await?;
        Ok(r.into())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// `order.lua` with the admission `ticket` (named by its id or by a verified pass).
    async fn place(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome> {
        let mut conn = self.conn.clone();
        let created = Order::confirmed(order, wall_ms());
        let json =
            serde_json::to_string(&created).map_err(|e| StoreError::Protocol(e.to_string()))?;
        // The order first, then the step through the gate that claims the hold: a crash in
        // between leaves an order nobody references, never a hold pointing at nothing. The
        // order's key lives outside the show's slot (`GET /orders/{id}` knows no show).
        let _: () = conn.set(order_key(created.id), &json).await?;
        let args = OrderArgs {
            hold: &order.hold_id,
            ticket,
            fingerprint: order_fingerprint(order),
            order: created.id.to_string(),
        };
        let r = match self.run(&ORDER, &order.show_id, &args).await {
            // Refused before it wrote anything: the order written ahead is nobody's.
            Err(e @ (StoreError::NoSuchShow(_) | StoreError::ShowLost(_))) => Err(e),
            // Unanswered or unreadable, the script may have claimed the hold with this order:
            // it stays.
            r => Ok(r?),
        };
        let outcome = match r {
            Ok(OrderReply::Created { order: id }) if id == created.id.to_string() => {
                return Ok(OrderOutcome::Created(created));
            }
            Ok(OrderReply::Created { order: id }) => Err(StoreError::Protocol(format!(
                "order: placed {id}, not the order {} sent",
                created.id
            ))),
            Ok(OrderReply::Repeated { order: id }) => match id.parse() {
                Ok(id) => self.get_order(id).await.and_then(|found| {
                    found.map(OrderOutcome::Repeated).ok_or_else(|| {
                        StoreError::Protocol(format!("hold points at missing order {id}"))
                    })
                }),
                Err(_) => Err(StoreError::Protocol(format!("hold points at {id}"))),
            },
            Ok(OrderReply::Conflict { why }) => Ok(OrderOutcome::Conflict(match why.as_str() {
                "hold" => "hold",
                "sold out" => "sold out",
                _ => "admission",
            })),
            Ok(OrderReply::Forbidden) => Ok(OrderOutcome::Forbidden),
            Err(e) => Err(e),
        };
        // Not placed: the order written ahead is nobody's.
        let _: i64 = conn.del(order_key(created.id)).await?;
        outcome
    }
}
