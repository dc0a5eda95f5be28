//! The hub on the push cadence, tick by tick: random joins, leaves, rate changes and
//! pauses; every push equals the poll at its version, every page's count agrees with the
//! poll at every tick and between (`TicketView::agrees_with`: exact, but for leaves ahead
//! not told yet, at most a twentieth of the position), and far-back fans are pushed less
//! than every tick.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;
use waiting_room::hub::{Hub, HubParts, Update};
use waiting_room::metrics::Metrics;
use waiting_room::model::TicketStatus;
use waiting_room::pass::PassCache;
use waiting_room::store::{MemoryStore, Queue, QueueStore, ShowSettings, Shows};

use super::PageClock;
use crate::support::backend::settings;
use crate::support::show;

/// A page following one ticket: the last state pushed, and when it came.
struct Page {
    ticket: Uuid,
    updates: BoxStream<'static, Update>,
    last: Option<Update>,
    clock: PageClock,
}

/// The page's own clock: ms on tokio's (paused) clock since `start`.
fn ms(start: Instant) -> i64 {
    (Instant::now() - start).as_millis() as i64
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Takes every push waiting for each page, checks each against the poll at its version,
/// then checks what each page shows now against the poll. Returns the pushes taken.
async fn check(
    store: &MemoryStore,
    start: Instant,
    pages: &mut [Page],
    when: Option<&str>,
) -> usize {
    let sh = show("far");
    let mut pushes = 0;
    for p in pages.iter_mut() {
        let status = store.status(&sh, p.ticket).await.unwrap();
        let polled = status.state.view(p.ticket, &status.pace, &status.sale);
        // Unconstrained: tokio's cooperative budget would hold back pushes that are there.
        while let Some(Some(u)) = tokio::task::unconstrained(p.updates.next()).now_or_never() {
            pushes += 1;
            if u.view(p.ticket).status == TicketStatus::Waiting && u.version() == status.version {
                assert_eq!(
                    u.view(p.ticket),
                    polled,
                    "{when:?}: a push differs from the poll"
                );
            }
            p.clock.heard(ms(start), &u.view(p.ticket));
            p.last = Some(u);
        }
        let last = p.last.as_ref().expect("the first state comes at once");
        let Some(when) = when else {
            continue; // a second without a tick: pages counted one the store never made
        };
        if polled.status != TicketStatus::Waiting {
            continue;
        }
        let shows = p.clock.shows(&last.view(p.ticket), ms(start));
        assert!(
            shows.agrees_with(&polled),
            "{when}: the page of {} counts wrong: shows {shows:?}, the poll {polled:?} (told {:?})",
            p.ticket,
            last.view(p.ticket)
        );
    }
    pushes
}

#[tokio::test(start_paused = true)]
async fn pages_count_right_between_sparse_pushes() {
    let store = Arc::new(MemoryStore::new(settings(3, Duration::from_secs(3600))));
    let dyn_store: Arc<dyn QueueStore> = store.clone();
    let shutdown = CancellationToken::new();
    let hub = Hub::new(
        dyn_store.clone(),
        dyn_store,
        Arc::new(Metrics::default()),
        HubParts {
            pass_cache: Arc::new(PassCache::new(3600)),
            push_front: 4,
            tasks: TaskTracker::new(),
            shutdown: shutdown.clone(),
        },
    );
    tokio::spawn(hub.clone().run());
    tokio::time::sleep(Duration::from_millis(10)).await;
    let sh = show("far");
    // The pages here are the hub's streams, with no presence report (which the server's
    // loop sends): fans are admitted in turn, present or not.
    let in_turn = ShowSettings {
        away_hold_seconds: Some(0),
        ..ShowSettings::default()
    };
    store.configure(&sh, in_turn).await.unwrap();
    store.open(&sh).await.unwrap();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let start = Instant::now();
    let mut pages = Vec::new();
    for _ in 0..200 {
        let j = store.join(&sh).await.unwrap();
        let updates = hub.follow(&sh, j.ticket, shutdown.clone()).await.unwrap();
        pages.push(Page {
            ticket: j.ticket,
            updates: updates.boxed(),
            last: None,
            clock: PageClock::default(),
        });
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    check(&store, start, &mut pages, Some("joined")).await;
    let (mut waiting_ticks, mut tick_pushes, mut paused) = (0, 0, None);
    let mut tick = Instant::now() + Duration::from_secs(1);
    for second in 0..40 {
        // The tick, exactly a second after the last: pages count in whole seconds from it.
        // Now and then a second goes without one (a leader hand-over): pages count on, and
        // the next tick corrects them.
        tokio::time::sleep_until(tick).await;
        let missed = second > 3 && rng.below(6) == 0;
        if !missed {
            store.admit(&sh, 1).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        let when = format!("tick {second}");
        let when = (!missed).then_some(when.as_str());
        waiting_ticks += pages.iter().filter(|p| waiting(p)).count();
        tick_pushes += check(&store, start, &mut pages, when).await;
        // Something happens between ticks, now and then.
        tokio::time::sleep(Duration::from_millis(100)).await;
        match rng.below(16) {
            0 => {
                let i = rng.below(pages.len() as u64) as usize;
                store.leave(&sh, pages[i].ticket).await.unwrap();
            }
            2 => {
                let j = store.join(&sh).await.unwrap();
                store.leave(&sh, j.ticket).await.unwrap();
            }
            3 if second > 5 => {
                let rate = Some(1 + rng.below(3) as u32);
                let settings = ShowSettings {
                    admit_per_second: rate,
                    ..ShowSettings::default()
                };
                store.configure(&sh, settings).await.unwrap();
            }
            4 if second > 5 && paused.is_none() => {
                store.close(&sh).await.unwrap();
                paused = Some(second + 2);
            }
            _ if paused.is_some_and(|until| until <= second) => {
                store.open(&sh).await.unwrap();
                paused = None;
            }
            _ => {}
        }
        tokio::time::sleep(waiting_room::hub::LEAVE_FOLD * 2).await;
        let when = format!("after tick {second}");
        check(
            &store,
            start,
            &mut pages,
            (!missed).then_some(when.as_str()),
        )
        .await;
        tick += Duration::from_secs(1);
    }
    let admitted = pages
        .iter()
        .filter(|p| {
            p.last
                .as_ref()
                .is_some_and(|l| l.shown_as() == TicketStatus::Admitted)
        })
        .count();
    assert!(
        admitted >= 20,
        "the walk admitted followed fans: {admitted}"
    );
    // Far back, pages count: ticks reach waiting fans without a push most of the time.
    assert!(
        tick_pushes * 3 < waiting_ticks,
        "{tick_pushes} pushes on ticks for {waiting_ticks} waiting fan-ticks"
    );
    shutdown.cancel();
}

fn waiting(p: &Page) -> bool {
    p.last
        .as_ref()
        .is_some_and(|l| l.shown_as() == TicketStatus::Waiting)
}
