//! The admitter's lease and its fencing tokens.

use std::time::Duration;

use waiting_room::store::AdmitOutcome;

use super::{next_second, open_with_fans};
use crate::support::backend::{Backend, settings, store};

all_stores!(
    a_stale_fencing_token_is_refused,
    one_lease_holder_at_a_time,
    a_lease_heals_past_a_fence_it_met,
);

async fn a_stale_fencing_token_is_refused(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let (sh, _) = open_with_fans(s.as_ref(), "s1", 3).await;
    assert!(matches!(
        s.admit(&sh, 5).await.unwrap(),
        AdmitOutcome::Admitted { count: 1, .. }
    ));
    next_second().await;
    assert_eq!(
        s.admit(&sh, 4).await.unwrap(),
        AdmitOutcome::Fenced { fence: 5 },
        "the refusal names the fence to beat"
    );
    assert!(matches!(
        s.admit(&sh, 5).await.unwrap(),
        AdmitOutcome::Admitted { count: 1, .. }
    ));
    assert_eq!(s.stats(&sh).await.unwrap().queue_length, 1);
}

async fn one_lease_holder_at_a_time(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    // Long enough for the calls before the wait, on a slow machine; the wait outlasts it.
    let ttl = Duration::from_millis(1000);
    let a = s
        .lease("a", ttl, 0)
        .await
        .unwrap()
        .expect("a free lease is taken");
    assert_eq!(s.lease("b", ttl, 0).await.unwrap(), None);
    assert_eq!(
        s.lease("a", ttl, 0).await.unwrap(),
        Some(a),
        "renewal keeps the token"
    );
    s.release_lease("b").await.unwrap(); // not b's to release
    assert_eq!(s.lease("b", ttl, 0).await.unwrap(), None);
    s.release_lease("a").await.unwrap();
    let b = s
        .lease("b", ttl, 0)
        .await
        .unwrap()
        .expect("a released lease is free");
    assert!(b > a, "each new holder gets a larger fencing token");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let c = s
        .lease("a", ttl, 0)
        .await
        .unwrap()
        .expect("an expired lease is free");
    assert!(c > b);
}

async fn a_lease_heals_past_a_fence_it_met(backend: Backend) {
    let (s, _redis) = store(backend, settings(1, Duration::from_secs(60))).await;
    let ttl = Duration::from_secs(5);
    let token = s.lease("a", ttl, 0).await.unwrap().unwrap();
    // A show fenced far above the counter (the counter's keys were lost, say).
    let healed = s.lease("a", ttl, token + 40).await.unwrap().unwrap();
    assert!(
        healed > token + 40,
        "{healed} must pass the fence {}",
        token + 40
    );
    assert_eq!(
        s.lease("a", ttl, token + 40).await.unwrap(),
        Some(healed),
        "a token past the floor is simply renewed"
    );
    assert_eq!(
        s.lease("b", ttl, healed + 10).await.unwrap(),
        None,
        "a floor never takes another holder's lease"
    );
}
