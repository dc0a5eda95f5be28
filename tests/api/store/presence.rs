//! Presence: a waiting fan is present while a live stream of its ticket is open on some
//! instance, or for the grace after its last poll or stream; with an away hold, a tick passes
//! over away fans (their places kept, ahead of every later arrival), lets them in first once
//! back, and releases a place whose fan stayed away longer than the hold.
//!
//! Real time, short settings: a grace of 1 s and a hold of 3 s; each step waits past them.

use std::time::Duration;

use uuid::Uuid;
use waiting_room::model::{ShowId, TicketState};
use waiting_room::store::{AdmitOutcome, Attendance, QueueStore, ShowSettings};

use super::{position, start_of_second};
use crate::support::backend::{Backend, settings, store};
use crate::support::show;

all_stores!(
    an_away_fan_is_passed_over_keeps_its_place_and_goes_first_once_back,
    a_place_away_longer_than_the_hold_is_released_and_said_why,
    the_fans_of_an_instance_that_stops_reporting_become_away_after_the_grace,
    a_fan_streaming_on_one_instance_stays_present_when_another_stream_ends,
    with_no_hold_fans_are_admitted_in_turn_present_or_not,
    the_eta_skips_the_fans_away_ahead,
    news_of_ten_thousand_streams_goes_in_one_report,
);

const REPORT: Duration = Duration::from_secs(5);

fn presence(grace: u64, hold: u64, rate: u32) -> ShowSettings {
    ShowSettings {
        admit_per_second: Some(rate),
        presence_grace_seconds: Some(grace),
        away_hold_seconds: Some(hold),
        ..ShowSettings::default()
    }
}

/// News of streams opened (none: the instance only renews its report).
fn came(tickets: &[Uuid]) -> Attendance {
    Attendance {
        came: tickets.to_vec(),
        streaming: true,
        ..Attendance::default()
    }
}

fn polled(tickets: &[Uuid]) -> Attendance {
    Attendance {
        polled: tickets.to_vec(),
        ..Attendance::default()
    }
}

/// A show with `n` fans joined (not open yet), under `settings`.
async fn queued(
    s: &dyn QueueStore,
    name: &str,
    settings: ShowSettings,
    n: usize,
) -> (ShowId, Vec<Uuid>) {
    let sh = show(name);
    s.configure(&sh, settings).await.unwrap();
    let mut tickets = Vec::new();
    for _ in 0..n {
        tickets.push(s.join(&sh).await.unwrap().ticket);
    }
    (sh, tickets)
}

/// One tick, at the start of the next second; how many it admitted.
async fn tick(s: &dyn QueueStore, sh: &ShowId) -> u64 {
    start_of_second().await;
    tick_now(s, sh).await
}

/// One tick now: the caller has waited for a new second since the last. A fan seen just
/// before it is within the grace however long the wait for the second was (a tick a whole
/// second after a poll would find the fan gone again, a grace of 1 s later).
async fn tick_now(s: &dyn QueueStore, sh: &ShowId) -> u64 {
    match s.admit(sh, 1).await.unwrap() {
        AdmitOutcome::Admitted { count, .. } => count,
        other => panic!("{other:?}"),
    }
}

fn admitted(state: TicketState) -> bool {
    matches!(state, TicketState::Admitted { .. })
}

async fn an_away_fan_is_passed_over_keeps_its_place_and_goes_first_once_back(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let s = s.as_ref();
    let (sh, t) = queued(s, "p1", presence(1, 60, 2), 4).await;
    // Fan 2 follows live; 1, 3 and 4 joined and went quiet.
    s.attend(&sh, "i1", came(&[t[1]]), REPORT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.open(&sh).await.unwrap();
    // Two places: 1 is away (passed over), 2 is in, 3 is away (passed over).
    assert_eq!(tick(s, &sh).await, 1);
    assert!(admitted(position(s, "p1", t[1]).await));
    assert_eq!(
        position(s, "p1", t[0]).await,
        TicketState::Waiting {
            position: 1,
            arrival: 1
        },
        "a passed-over fan keeps its place, ahead of the queue"
    );
    assert_eq!(
        position(s, "p1", t[2]).await,
        TicketState::Waiting {
            position: 2,
            arrival: 3
        }
    );
    // Fan 4 has not been reached: queued behind the two passed over.
    assert_eq!(
        position(s, "p1", t[3]).await,
        TicketState::Waiting {
            position: 3,
            arrival: 4
        }
    );
    // A later arrival, present: it stands behind every kept place.
    let late = s.join(&sh).await.unwrap();
    assert_eq!(
        late.status.state,
        TicketState::Waiting {
            position: 4,
            arrival: 5
        }
    );
    // Fan 3 comes back (a poll) and the later arrival follows live; the next tick lets fan 3
    // in before arrival 5, and fan 4 (still away) stays passed over.
    start_of_second().await;
    s.attend(&sh, "i1", polled(&[t[2]]), REPORT).await.unwrap();
    s.attend(&sh, "i1", came(&[late.ticket]), REPORT)
        .await
        .unwrap();
    assert_eq!(tick_now(s, &sh).await, 2);
    assert!(
        admitted(position(s, "p1", t[2]).await),
        "back, and in first"
    );
    assert!(admitted(position(s, "p1", late.ticket).await));
    assert!(
        !admitted(position(s, "p1", t[0]).await),
        "still away: not admitted"
    );
    assert!(
        !admitted(position(s, "p1", t[3]).await),
        "still away: not admitted"
    );
    // Back by a stream this time: in at the next tick.
    s.attend(&sh, "i1", came(&[t[0]]), REPORT).await.unwrap();
    tick(s, &sh).await;
    assert!(admitted(position(s, "p1", t[0]).await));
    assert_eq!(
        position(s, "p1", t[3]).await,
        TicketState::Waiting {
            position: 1,
            arrival: 4
        }
    );
}

async fn a_place_away_longer_than_the_hold_is_released_and_said_why(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let s = s.as_ref();
    let (sh, t) = queued(s, "p2", presence(1, 2, 1), 3).await;
    s.attend(&sh, "i1", came(&[t[2]]), REPORT).await.unwrap();
    s.open(&sh).await.unwrap();
    // Fans 1 and 2 go quiet; 1 is reached and passed over, 2 stays queued. Both are away
    // longer than grace + hold (3 s) by the tick after this wait.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    tick(s, &sh).await;
    for (i, arrival) in [(0, 1), (1, 2)] {
        assert_eq!(
            position(s, "p2", t[i]).await,
            TicketState::Expired { hold_seconds: 2 },
            "arrival {arrival} was away longer than the hold"
        );
    }
    // The present fan behind them was let in, and a later one stands first.
    assert!(admitted(position(s, "p2", t[2]).await));
    let late = s.join(&sh).await.unwrap();
    assert_eq!(
        late.status.state,
        TicketState::Waiting {
            position: 1,
            arrival: 4
        }
    );
    // Coming back after the release gives nothing back.
    s.attend(&sh, "i1", polled(&[t[0]]), REPORT).await.unwrap();
    assert_eq!(
        position(s, "p2", t[0]).await,
        TicketState::Expired { hold_seconds: 2 }
    );
}

async fn the_fans_of_an_instance_that_stops_reporting_become_away_after_the_grace(
    backend: Backend,
) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let s = s.as_ref();
    let (sh, t) = queued(s, "p3", presence(1, 60, 5), 2).await;
    // Instance i1 holds fan 1's stream and reports for one second only, then dies; i2
    // keeps reporting fan 2's.
    s.attend(&sh, "i1", came(&[t[0]]), Duration::from_secs(1))
        .await
        .unwrap();
    s.attend(&sh, "i2", came(&[t[1]]), REPORT).await.unwrap();
    s.open(&sh).await.unwrap();
    // Past i1's report (1 s) and the grace after it (1 s): fan 1 is away at the tick, which
    // reaps i1 (its fans last seen when its report ran out); fan 2 is present.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    tick(s, &sh).await;
    s.attend(&sh, "i2", came(&[]), REPORT).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    tick(s, &sh).await;
    assert!(admitted(position(s, "p3", t[1]).await));
    assert_eq!(
        position(s, "p3", t[0]).await,
        TicketState::Waiting {
            position: 1,
            arrival: 1
        },
        "the dead instance's fan is passed over, its place kept"
    );
    // It comes back on the other instance and goes in.
    s.attend(&sh, "i2", came(&[t[0]]), REPORT).await.unwrap();
    tick(s, &sh).await;
    assert!(admitted(position(s, "p3", t[0]).await));
}

async fn a_fan_streaming_on_one_instance_stays_present_when_another_stream_ends(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let s = s.as_ref();
    let (sh, t) = queued(s, "p4", presence(1, 60, 1), 1).await;
    s.attend(&sh, "i1", came(&[t[0]]), REPORT).await.unwrap();
    s.attend(&sh, "i2", came(&[t[0]]), REPORT).await.unwrap();
    let went = Attendance {
        went: vec![t[0]],
        ..Attendance::default()
    };
    s.attend(&sh, "i2", went, REPORT).await.unwrap();
    s.open(&sh).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.attend(&sh, "i1", came(&[]), REPORT).await.unwrap();
    tick(s, &sh).await;
    assert!(
        admitted(position(s, "p4", t[0]).await),
        "its stream on i1 is still open"
    );
}

async fn with_no_hold_fans_are_admitted_in_turn_present_or_not(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let s = s.as_ref();
    let (sh, t) = queued(s, "p5", presence(1, 0, 2), 3).await;
    s.open(&sh).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(tick(s, &sh).await, 2);
    assert!(admitted(position(s, "p5", t[0]).await));
    assert!(admitted(position(s, "p5", t[1]).await));
}

async fn the_eta_skips_the_fans_away_ahead(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let s = s.as_ref();
    let (sh, t) = queued(s, "p6", presence(1, 60, 2), 12).await;
    // Fans 1 and 2 went quiet, 3 and 4 poll; of 5 to 12, every other one went quiet, the
    // others follow live.
    let live: Vec<Uuid> = [5, 7, 9, 11].iter().map(|&i| t[i]).collect();
    s.attend(&sh, "i1", came(&live), REPORT).await.unwrap();
    let last = t[11];
    let view =
        |status: &waiting_room::store::Status| status.state.view(last, &status.pace, &status.sale);
    s.open(&sh).await.unwrap();
    let before = s.status(&sh, last).await.unwrap();
    assert_eq!(
        (view(&before).away_ahead, view(&before).eta_seconds),
        (None, Some(6)),
        "no tick has measured anyone away: 11 ahead and this fan, at 2 a second"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    start_of_second().await;
    s.attend(&sh, "i1", polled(&t[2..4]), REPORT).await.unwrap();
    // Two places: fans 1 and 2 are passed over, 3 and 4 (polled just now) let in.
    assert_eq!(tick_now(s, &sh).await, 2);
    let after = s.status(&sh, last).await.unwrap();
    assert_eq!(
        after.state,
        TicketState::Waiting {
            position: 10,
            arrival: 12
        },
        "the position counts every place holder, those passed over too"
    );
    assert_eq!((after.pace.passed_over, after.pace.away_milli), (2, 500));
    // Of the 9 ahead: the 2 passed over, and half of the 7 queued: 5 skipped, 5 let in
    // first (this fan the last) at 2 a second.
    let shown = view(&after);
    assert_eq!((shown.away_ahead, shown.eta_seconds), (Some(5), Some(3)));
    // Past the grace again, the fans away are the six quiet ones holding places: the two
    // let in, whose last poll is as old, hold none and are not counted.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let away = s.stats(&sh).await.unwrap().presence.away;
    assert_eq!(away, 6);
    // A quiet fan that leaves holds no place: it is no longer counted away.
    assert!(s.leave(&sh, t[10]).await.unwrap());
    assert_eq!(s.stats(&sh).await.unwrap().presence.away, away - 1);
    // With presence not heeded nobody is skipped.
    s.configure(&sh, presence(1, 0, 2)).await.unwrap();
    tick(s, &sh).await;
    let plain = s.status(&sh, last).await.unwrap();
    assert_eq!((plain.pace.passed_over, plain.pace.away_milli), (0, 0));
    assert_eq!(view(&plain).away_ahead, None);
}

/// An instance's first report after a burst names every fan it took: more values than Lua's
/// `unpack` takes at once. Taken whole, every one of them is present.
async fn news_of_ten_thousand_streams_goes_in_one_report(backend: Backend) {
    let (s, _redis) = store(backend, settings(5, Duration::from_secs(60))).await;
    let (sh, t) = queued(s.as_ref(), "burst-news", presence(1, 60, 5), 10_000).await;
    s.attend(&sh, "i1", came(&t), REPORT).await.unwrap();
    // Past the grace: a fan no report named would be away now, and passed over.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    s.open(&sh).await.unwrap();
    assert_eq!(tick(s.as_ref(), &sh).await, 5);
    for ticket in &t[..5] {
        assert!(admitted(s.status(&sh, *ticket).await.unwrap().state));
    }
    let went = Attendance {
        went: t[5..].to_vec(),
        streaming: false,
        ..Attendance::default()
    };
    s.attend(&sh, "i1", went, REPORT).await.unwrap();
}
