//! The report's samples: one a tick that was served, what the tick saw, paged in order, and
//! none of another incarnation.

use std::time::Duration;

use waiting_room::model::ShowId;
use waiting_room::store::{AdmitOutcome, QueueStore, Sample};

use super::{open_with_fans, rate};
use crate::support::backend::{Backend, settings, store};
use crate::support::show;

all_stores!(
    each_tick_leaves_one_sample_of_what_it_saw,
    samples_page_on_after_a_sample_in_order,
    a_deleted_show_made_again_starts_with_no_samples,
    a_refused_tick_leaves_no_sample,
);

/// Every sample of `sh`, oldest first.
async fn all_samples(s: &dyn QueueStore, sh: &ShowId) -> Vec<Sample> {
    s.samples(sh, None, 1_000).await.unwrap()
}

/// One served tick of `sh`: waits out the store's second when it already had one (how long
/// the store says), so the tick runs whatever the machine's speed. Fans let in.
async fn tick(s: &dyn QueueStore, sh: &ShowId) -> u64 {
    for _ in 0..10 {
        match s.admit(sh, 1).await.unwrap() {
            AdmitOutcome::Admitted { count, .. } => return count,
            AdmitOutcome::AlreadyThisSecond { next_in } => {
                tokio::time::sleep(next_in + Duration::from_millis(5)).await;
            }
            other => panic!("{sh}: the tick was not served: {other:?}"),
        }
    }
    panic!("{sh}: no tick served in ten tries");
}

/// What a sample says, as the test expects it: arrivals, queued, admitted, head, rate.
fn figures(s: &Sample) -> (u64, u64, u64, u64, u32) {
    (s.arrivals, s.queued, s.admitted, s.head, s.pace.rate)
}

async fn each_tick_leaves_one_sample_of_what_it_saw(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (sh, tickets) = open_with_fans(s.as_ref(), "sampled", 5).await;
    let epoch = s.status(&sh, tickets[4]).await.unwrap().epoch;
    assert!(
        all_samples(s.as_ref(), &sh).await.is_empty(),
        "no tick, no sample"
    );

    // Five waiting, two a tick.
    assert_eq!(tick(s.as_ref(), &sh).await, 2);
    let samples = all_samples(s.as_ref(), &sh).await;
    assert_eq!(samples.len(), 1, "{samples:?}");
    assert_eq!(figures(&samples[0]), (5, 3, 2, 2, 2), "{samples:?}");
    assert_eq!(samples[0].epoch, epoch);
    assert_eq!((samples[0].laned, samples[0].active), (0, 2));

    // One more arrives; the next tick takes two of the four.
    s.join(&sh).await.unwrap();
    assert_eq!(tick(s.as_ref(), &sh).await, 2);
    // A rate of its own, in force at the next tick: the last two are let in.
    s.configure(&sh, rate(3)).await.unwrap();
    assert_eq!(tick(s.as_ref(), &sh).await, 2);
    // A tick that lets nobody in is sampled too: the pace moved.
    assert_eq!(tick(s.as_ref(), &sh).await, 0);

    let samples = all_samples(s.as_ref(), &sh).await;
    let seen: Vec<_> = samples.iter().map(figures).collect();
    assert_eq!(
        seen,
        [
            (5, 3, 2, 2, 2),
            (6, 2, 2, 4, 2),
            (6, 0, 2, 6, 3),
            (6, 0, 0, 6, 3),
        ],
        "{samples:?}"
    );
    for pair in samples.windows(2) {
        assert!(pair[0].id < pair[1].id, "{samples:?}");
        // One tick a second of the store's clock, each sampled at its own.
        assert!(pair[0].at_ms / 1000 < pair[1].at_ms / 1000, "{samples:?}");
    }
    assert!(samples.iter().all(|x| x.epoch == epoch && x.laned == 0));
    assert_eq!(samples[3].active, 6, "six admitted, none done buying");
}

async fn samples_page_on_after_a_sample_in_order(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (sh, _) = open_with_fans(s.as_ref(), "paged", 5).await;
    for _ in 0..5 {
        assert_eq!(tick(s.as_ref(), &sh).await, 1);
    }
    let whole = all_samples(s.as_ref(), &sh).await;
    assert_eq!(whole.len(), 5, "{whole:?}");
    assert_eq!(
        whole.iter().map(|x| x.head).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );

    let first = s.samples(&sh, None, 2).await.unwrap();
    assert_eq!(first, whole[..2]);
    let next = s.samples(&sh, Some(first[1].id), 2).await.unwrap();
    assert_eq!(next, whole[2..4]);
    let rest = s.samples(&sh, Some(next[1].id), 10).await.unwrap();
    assert_eq!(rest, whole[4..], "the rest, in order");
    let past = s.samples(&sh, Some(rest[0].id), 10).await.unwrap();
    assert!(past.is_empty(), "nothing after the last: {past:?}");
    // Another show's samples are its own.
    s.open(&show("other")).await.unwrap();
    assert!(all_samples(s.as_ref(), &show("other")).await.is_empty());
}

async fn a_deleted_show_made_again_starts_with_no_samples(backend: Backend) {
    let (s, _redis) = store(backend, settings(2, Duration::from_secs(60))).await;
    let (sh, _) = open_with_fans(s.as_ref(), "again", 3).await;
    tick(s.as_ref(), &sh).await;
    tick(s.as_ref(), &sh).await;
    assert_eq!(all_samples(s.as_ref(), &sh).await.len(), 2);

    assert!(s.delete(&sh).await.unwrap());
    assert!(
        all_samples(s.as_ref(), &sh).await.is_empty(),
        "a deleted show keeps no samples"
    );
    let made = s.open(&sh).await.unwrap();
    assert!(made.created, "{made:?}");
    assert!(
        all_samples(s.as_ref(), &sh).await.is_empty(),
        "the new show starts with none"
    );
    s.join(&sh).await.unwrap();
    assert_eq!(tick(s.as_ref(), &sh).await, 1);
    let samples = all_samples(s.as_ref(), &sh).await;
    assert_eq!(samples.len(), 1, "{samples:?}");
    assert_eq!(figures(&samples[0]), (1, 0, 1, 1, 2), "counted afresh");
    assert_eq!(samples[0].epoch, made.epoch, "the new incarnation's");
}

async fn a_refused_tick_leaves_no_sample(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (sh, _) = open_with_fans(s.as_ref(), "refused", 10).await;
    tick(s.as_ref(), &sh).await;
    let mut sampled = 1;

    // A second tick in the same second of the store's clock is refused and leaves nothing.
    // Should the second end between the two calls, the one after is a tick like any other,
    // sampled; try again.
    let mut refused = false;
    for _ in 0..10 {
        match s.admit(&sh, 1).await.unwrap() {
            AdmitOutcome::AlreadyThisSecond { .. } => {
                refused = true;
                break;
            }
            AdmitOutcome::Admitted { .. } => sampled += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(refused, "no tick refused in ten tries");
    assert_eq!(all_samples(s.as_ref(), &sh).await.len(), sampled);

    // A show not served (paused, then closed) is not ticked: no sample either.
    s.pause(&sh).await.unwrap();
    assert_eq!(s.admit(&sh, 1).await.unwrap(), AdmitOutcome::NotServed);
    s.close(&sh).await.unwrap();
    // Past the second of the last tick, so only the show's phase can refuse it.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(s.admit(&sh, 1).await.unwrap(), AdmitOutcome::NotServed);
    assert_eq!(all_samples(s.as_ref(), &sh).await.len(), sampled);

    // Served again, sampled again.
    s.open(&sh).await.unwrap();
    tick(s.as_ref(), &sh).await;
    assert_eq!(all_samples(s.as_ref(), &sh).await.len(), sampled + 1);
}
