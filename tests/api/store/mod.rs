//! The store conformance suite: every test runs against the embedded store, a real
//! redis-server and a real three-node Redis Cluster, so the backends cannot drift apart
//! unnoticed. One file per concern of the store.

use std::time::Duration;

use rust_decimal::Decimal;
use uuid::Uuid;
use waiting_room::model::{NewOrder, OrderRequest, ShowId, TicketState};
use waiting_room::store::{QueueStore, ShowSettings};

use crate::support::show;

mod admission;
mod cost;
mod gathered;
mod lease;
mod library;
mod lost;
mod orders;
mod presence;
mod queue;
mod samples;
mod shows;

fn rate(admit_per_second: u32) -> ShowSettings {
    ShowSettings {
        admit_per_second: Some(admit_per_second),
        max_active_buyers: None,
        ..ShowSettings::default()
    }
}

fn cap(max_active_buyers: u32) -> ShowSettings {
    ShowSettings {
        admit_per_second: None,
        max_active_buyers: Some(max_active_buyers),
        ..ShowSettings::default()
    }
}

/// Sleeps until just after the start of a wall-clock second, so two admissions that must
/// share (or not share) a second do.
async fn start_of_second() {
    let ms = waiting_room_wall_ms() % 1000;
    tokio::time::sleep(Duration::from_millis(1000 - ms + 20)).await;
}

async fn next_second() {
    tokio::time::sleep(Duration::from_millis(1000)).await;
}

fn waiting_room_wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Opens `name` on `s` and queues `fans` fans; their tickets, in queue order.
async fn open_with_fans(s: &dyn QueueStore, name: &str, fans: usize) -> (ShowId, Vec<Uuid>) {
    let sh = show(name);
    s.open(&sh).await.unwrap();
    let mut tickets = Vec::with_capacity(fans);
    for _ in 0..fans {
        tickets.push(s.join(&sh).await.unwrap().ticket);
    }
    (sh, tickets)
}

async fn position(s: &dyn QueueStore, show_name: &str, t: Uuid) -> TicketState {
    s.status(&show(show_name), t).await.unwrap().state
}

fn order(show_id: &str, hold: &str, email: &str) -> NewOrder {
    OrderRequest {
        show_id: show_id.into(),
        hold_id: hold.into(),
        customer_email: email.into(),
        amount: Decimal::new(35000, 2),
    }
    .validate()
    .unwrap()
}
