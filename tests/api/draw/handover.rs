//! A leader lost half-way through a draw changes nothing: the next one finishes the same
//! draw, nobody is drawn twice or lost.

use std::time::Duration;

use waiting_room::draw::order_key;
use waiting_room::model::AuditKind;
use waiting_room::store::{Closing, Schedule};

use crate::support::backend::{Backend, settings, store};
use crate::support::show;

both_stores!(a_leader_lost_mid_draw_neither_draws_twice_nor_loses_a_fan);

async fn a_leader_lost_mid_draw_neither_draws_twice_nor_loses_a_fan(backend: Backend) {
    let (s, _redis) = store(backend, settings(100, Duration::from_secs(60))).await;
    let sh = show("mid");
    s.configure(&sh, Default::default()).await.unwrap();
    // Far enough ahead that fifty joins (a debug build, a slow machine) end before it.
    let opens = waiting_room::clock::wall_ms() + 3_000;
    let schedule = Schedule {
        opens_at_ms: Some(opens),
        ..Default::default()
    };
    s.schedule(&sh, schedule).await.unwrap();
    let mut tickets = Vec::new();
    for _ in 0..50 {
        tickets.push(s.join(&sh).await.unwrap().ticket);
    }
    assert!(matches!(
        s.close_pre_queue(&sh, 1).await.unwrap(),
        Closing::NotDue
    ));
    let due = (opens + 100).saturating_sub(waiting_room::clock::wall_ms());
    tokio::time::sleep(Duration::from_millis(due)).await;
    // Leader 1 closes the pre-queue, then dies before it draws.
    let Closing::Ready { participants, .. } = s.close_pre_queue(&sh, 1).await.unwrap() else {
        panic!("due");
    };
    assert_eq!(participants, 50);
    // A fan joining meanwhile queues behind the pre-queue.
    let late = s.join(&sh).await.unwrap();
    assert_eq!(late.arrival, 51);
    // Leader 2 takes over and finishes the very same draw.
    assert!(
        waiting_room::admitter::open_scheduled(s.as_ref(), &sh, 2)
            .await
            .unwrap()
    );
    // The old leader wakes up: fenced, nothing drawn twice; a second run finds it drawn.
    let d = s.draw(&sh).await.unwrap().unwrap();
    let drawn = d.drawn.clone().unwrap();
    assert!(
        !s.apply_draw(&sh, 1, &drawn.participants_digest, &drawn.key)
            .await
            .unwrap()
    );
    assert!(
        !waiting_room::admitter::open_scheduled(s.as_ref(), &sh, 2)
            .await
            .unwrap()
    );
    assert_eq!(d.participants, Some(50), "the size fixed when it closed");
    let p = waiting_room::draw::Permutation::new(&drawn.key, 50).unwrap();
    // Everyone is placed once: positions 1..=51 in drawn order, the late fan last.
    let mut by_place = Vec::new();
    for (i, t) in tickets.iter().chain([&late.ticket]).enumerate() {
        let st = s.status(&sh, *t).await.unwrap();
        let waiting_room::model::TicketState::Waiting { position, arrival } = st.state else {
            panic!("{:?}", st.state);
        };
        assert_eq!(arrival, i as u64 + 1);
        by_place.push((order_key(arrival, Some(&p)), position));
    }
    by_place.sort();
    let positions: Vec<u64> = by_place.iter().map(|&(_, pos)| pos).collect();
    assert_eq!(positions, (1..=51).collect::<Vec<_>>());
    let audit = s.audit(&sh, None, 10).await.unwrap();
    assert_eq!(
        audit.iter().filter(|r| r.kind == AuditKind::Draw).count(),
        1,
        "one draw"
    );
    assert!(
        s.show(&sh).await.unwrap().unwrap().open,
        "open after the draw"
    );
    // Deleted, it is no show to open any more.
    assert!(s.delete(&sh).await.unwrap());
    assert_eq!(
        s.close_pre_queue(&sh, 3).await.unwrap(),
        Closing::NotScheduled
    );
}
