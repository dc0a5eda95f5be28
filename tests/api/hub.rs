//! The hub against the store it mirrors: random joins, leaves, ticks and rate changes, and
//! after each one every followed fan's pushed state equals what a poll answers.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;
use waiting_room::hub::{DEFAULT_PUSH_FRONT, Hub, HubParts, Update};
use waiting_room::metrics::Metrics;
use waiting_room::model::TicketStatus;
use waiting_room::pass::PassCache;
use waiting_room::store::{MemoryStore, Queue, QueueStore, ShowSettings, Shows};

use crate::support::backend::settings;
use crate::support::show;

/// A small deterministic generator, so a failure replays the same way.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

struct Follower {
    ticket: Uuid,
    updates: BoxStream<'static, Update>,
    latest: Option<Update>,
}

#[tokio::test(start_paused = true)]
async fn pushed_states_equal_polled_states_through_random_changes() {
    let store = Arc::new(MemoryStore::new(settings(3, Duration::from_secs(3600))));
    let dyn_store: Arc<dyn QueueStore> = store.clone();
    let shutdown = CancellationToken::new();
    let hub = Hub::new(
        dyn_store.clone(),
        dyn_store.clone(),
        Arc::new(Metrics::default()),
        HubParts {
            pass_cache: Arc::new(PassCache::new(3600)),
            push_front: DEFAULT_PUSH_FRONT,
            tasks: TaskTracker::new(),
            shutdown: shutdown.clone(),
        },
    );
    tokio::spawn(hub.clone().run());
    tokio::time::sleep(Duration::from_millis(10)).await; // let the hub subscribe
    let sh = show("rnd");
    store.open(&sh).await.unwrap();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut followers: Vec<Follower> = Vec::new();
    let mut fence = 1;

    for step in 0..400 {
        match rng.below(10) {
            0..=3 => {
                let j = store.join(&sh).await.unwrap();
                // Follow about half of the fans, like the half with the page open.
                if rng.below(2) == 0 {
                    let updates = hub
                        .follow(&sh, j.ticket, shutdown.clone())
                        .await
                        .unwrap()
                        .boxed();
                    followers.push(Follower {
                        ticket: j.ticket,
                        updates,
                        latest: None,
                    });
                }
            }
            4..=5 if !followers.is_empty() => {
                let i = rng.below(followers.len() as u64) as usize;
                store.leave(&sh, followers[i].ticket).await.unwrap();
            }
            6 => {
                // A leave by a fan nobody here follows.
                let j = store.join(&sh).await.unwrap();
                store.leave(&sh, j.ticket).await.unwrap();
            }
            7..=8 => {
                tokio::time::advance(Duration::from_secs(1)).await;
                fence += rng.below(2); // leaders change now and then
                store.admit(&sh, fence).await.unwrap();
            }
            _ => {
                let settings = ShowSettings {
                    admit_per_second: Some(1 + rng.below(5) as u32),
                    max_active_buyers: None,
                    ..ShowSettings::default()
                };
                store.configure(&sh, settings).await.unwrap();
            }
        }
        // Let the hub catch up (leaves are folded for a moment), then compare every live
        // follower with a poll.
        tokio::time::sleep(waiting_room::hub::LEAVE_FOLD * 2).await;
        for f in &mut followers {
            while let Some(Some(u)) = f.updates.next().now_or_never() {
                f.latest = Some(u);
            }
            let status = store.status(&sh, f.ticket).await.unwrap();
            let polled = status.state.view(f.ticket, &status.pace, &status.sale);
            let pushed = f.latest.as_ref().expect("the first state comes at once");
            let pushed = pushed.view(f.ticket);
            if pushed.status == TicketStatus::Waiting {
                assert_eq!(pushed, polled, "step {step}: pushed and polled differ");
            } else if polled.status == TicketStatus::Waiting {
                panic!(
                    "step {step}: pushed {:?} while still waiting: {polled:?}",
                    pushed
                );
            }
        }
    }
    let admitted = followers
        .iter()
        .filter(|f| {
            f.latest
                .as_ref()
                .is_some_and(|u| u.shown_as() == TicketStatus::Admitted)
        })
        .count();
    assert!(admitted > 10, "the walk admitted followed fans: {admitted}");
    shutdown.cancel();
}
