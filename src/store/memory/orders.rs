//! Orders through the gate in the embedded store, as `order.lua` places them.

use async_trait::async_trait;
use uuid::Uuid;

use super::MemoryStore;
use crate::model::{AuditKind, AuditRecord, EndReason, NewOrder, Order, Phase, ShowId};
use crate::store::{OrderBook, OrderOutcome, Redeemed, Result, StoreError, order_fingerprint};

#[async_trait]
impl OrderBook for MemoryStore {
    async fn place_order(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome> {
        self.place(order, ticket)
    }

    async fn place_order_with_pass(&self, order: &NewOrder, ticket: Uuid) -> Result<OrderOutcome> {
        self.place(order, Some(ticket))
    }

    async fn get_order(&self, id: Uuid) -> Result<Option<Order>> {
        Ok(self.lock().orders.get(&id).cloned())
    }

    /// As `redeem.lua`.
    async fn redeem(&self, show: &ShowId, ticket: Uuid) -> Result<Redeemed> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(show)?;
        if s.spent.contains(&ticket) {
            return Ok(Redeemed::Before);
        }
        if !s.admitted_now(ticket, now) {
            return Ok(Redeemed::NotAdmitted);
        }
        let arrival = s.spend(ticket, now, &self.settings);
        s.record(AuditRecord {
            arrival: Some(arrival),
            ..AuditRecord::new(AuditKind::Redeem, now)
        });
        let epoch = s.epoch;
        let ended = s.ended_event(show, ticket, &self.settings, now);
        drop(inner);
        self.publish(ended);
        Ok(Redeemed::Now { arrival, epoch })
    }
}

impl MemoryStore {
    /// As `order.lua`, with the admission `ticket` (named by its id or by a verified pass).
    fn place(&self, order: &NewOrder, ticket: Option<Uuid>) -> Result<OrderOutcome> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let s = inner.show(&order.show_id)?;
        // As `order.lua`: the gate is shut in every phase but closed.
        let gated = s.on_sale().gated();
        // A hold answers the very same request again, and only that.
        let ticket = if gated { ticket } else { None };
        let fingerprint = format!(
            "{}|{}",
            ticket.map(|t| t.to_string()).unwrap_or_default(),
            order_fingerprint(order)
        );
        if let Some((id, was)) = s.holds.get(&order.hold_id) {
            if *was != fingerprint {
                return Ok(OrderOutcome::Conflict("hold"));
            }
            let id = *id;
            let found = inner.orders.get(&id).cloned();
            return found
                .map(OrderOutcome::Repeated)
                .ok_or_else(|| StoreError::Protocol(format!("hold points at missing order {id}")));
        }
        if s.stock_left() == Some(0) {
            return Ok(OrderOutcome::Conflict("sold out"));
        }
        // The buyer's arrival number, for the public record (0: no admission, no gate).
        let mut arrival = 0;
        let mut ended = None;
        if gated {
            if ticket.is_some_and(|t| s.spent.contains(&t)) {
                return Ok(OrderOutcome::Conflict("admission"));
            }
            let Some(ticket) = ticket.filter(|&t| s.admitted_now(t, now)) else {
                return Ok(OrderOutcome::Forbidden);
            };
            arrival = s.spend(ticket, now, &self.settings);
            ended = Some(s.ended_event(&order.show_id, ticket, &self.settings, now));
        }
        let created = Order::confirmed(order, now);
        s.holds
            .insert(order.hold_id.clone(), (created.id, fingerprint));
        s.record(AuditRecord {
            arrival: Some(arrival),
            ..AuditRecord::new(AuditKind::Order, now)
        });
        // The last seat sold ends the on-sale.
        let sold_out = if s.stock_left() == Some(0) {
            s.enter(
                &order.show_id,
                Phase::Ended,
                Some(EndReason::sold_out()),
                &self.settings,
                now,
            )
        } else {
            None
        };
        inner.orders.insert(created.id, created.clone());
        drop(inner);
        if let Some(event) = ended {
            self.publish(event);
        }
        if let Some(event) = sold_out {
            self.publish(event);
        }
        Ok(OrderOutcome::Created(created))
    }
}
