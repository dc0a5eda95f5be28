//! The gate and the orders behind it.

use std::time::Duration;

use rust_decimal::Decimal;
use waiting_room::store::{OrderOutcome, ShowSettings, StoreError};

use super::order;
use crate::support::backend::{Backend, settings, store};
use crate::support::show;

all_stores!(
    the_gate_knows_admitted_tickets_of_that_show_only,
    orders_are_idempotent_per_hold,
    holds_belong_to_their_show_and_one_admission_buys_once,
);

async fn the_gate_knows_admitted_tickets_of_that_show_only(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (a, b) = (show("a"), show("b"));
    s.open(&a).await.unwrap();
    s.open(&b).await.unwrap();
    let first = s.join(&a).await.unwrap().ticket;
    let second = s.join(&a).await.unwrap().ticket;
    assert!(
        !s.is_admitted(&a, first).await.unwrap(),
        "waiting is not admitted"
    );
    s.admit(&a, 1).await.unwrap();
    assert!(s.is_admitted(&a, first).await.unwrap());
    assert!(!s.is_admitted(&a, second).await.unwrap());
    assert!(
        !s.is_admitted(&b, first).await.unwrap(),
        "a ticket opens its own show only"
    );
    assert!(
        !s.is_admitted(&a, uuid::Uuid::new_v4()).await.unwrap(),
        "forged tickets fail"
    );
}

async fn orders_are_idempotent_per_hold(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let sh = show("show-42");
    // Closed: no gate, but the show must exist.
    let req = order("show-42", "hold-0100", "caio@example.com");
    assert!(matches!(
        s.place_order(&req, None).await,
        Err(StoreError::NoSuchShow(_))
    ));
    s.configure(&sh, ShowSettings::default()).await.unwrap();
    // Made, not opened: the gate is shut.
    assert_eq!(
        s.place_order(&req, None).await.unwrap(),
        OrderOutcome::Forbidden
    );
    s.close(&sh).await.unwrap();
    let OrderOutcome::Created(order_1) = s.place_order(&req, None).await.unwrap() else {
        panic!("a new hold is a new order")
    };
    assert_eq!(order_1.hold_id, "hold-0100");
    assert_eq!(order_1.amount, Decimal::new(350, 0));
    assert_eq!(
        s.place_order(&req, None).await.unwrap(),
        OrderOutcome::Repeated(order_1.clone()),
        "the same request again answers the same order"
    );
    let other = order("show-42", "hold-0100", "mallory@example.com");
    assert_eq!(
        s.place_order(&other, None).await.unwrap(),
        OrderOutcome::Conflict("hold")
    );
    assert_eq!(s.get_order(order_1.id).await.unwrap(), Some(order_1));
    assert_eq!(s.get_order(uuid::Uuid::new_v4()).await.unwrap(), None);
}

async fn holds_belong_to_their_show_and_one_admission_buys_once(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (gated, free) = (show("show-42"), show("side"));
    s.open(&gated).await.unwrap();
    s.configure(&free, ShowSettings::default()).await.unwrap();
    s.close(&free).await.unwrap();
    let fan = s.join(&gated).await.unwrap().ticket;
    let next = s.join(&gated).await.unwrap().ticket;
    s.admit(&gated, 1).await.unwrap();
    // An attacker orders hold-0100 on another show first: that hold is the other show's.
    let theirs = order("side", "hold-0100", "mallory@example.com");
    assert!(matches!(
        s.place_order(&theirs, None).await.unwrap(),
        OrderOutcome::Created(_)
    ));
    let mine = order("show-42", "hold-0100", "caio@example.com");
    let OrderOutcome::Created(placed) = s.place_order(&mine, Some(fan)).await.unwrap() else {
        panic!("the admitted fan's hold on its own show is new")
    };
    assert_eq!(placed.customer_email, "caio@example.com");
    // A retry is the same order; the same admission for another hold is refused.
    assert_eq!(
        s.place_order(&mine, Some(fan)).await.unwrap(),
        OrderOutcome::Repeated(placed)
    );
    let more = order("show-42", "hold-0101", "caio@example.com");
    assert_eq!(
        s.place_order(&more, Some(fan)).await.unwrap(),
        OrderOutcome::Conflict("admission")
    );
    // Another admitted fan may not take over the hold either.
    assert_eq!(
        s.place_order(&mine, Some(next)).await.unwrap(),
        OrderOutcome::Conflict("hold")
    );
    // Without an admission the gate refuses, and a forged one too.
    assert_eq!(
        s.place_order(&more, None).await.unwrap(),
        OrderOutcome::Forbidden
    );
    assert_eq!(
        s.place_order(&more, Some(uuid::Uuid::new_v4()))
            .await
            .unwrap(),
        OrderOutcome::Forbidden
    );
    assert!(matches!(
        s.place_order(&more, Some(next)).await.unwrap(),
        OrderOutcome::Created(_)
    ));
}
