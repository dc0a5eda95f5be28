//! The push cadence across three server processes on one Redis: a few hundred fans spread
//! over them, leaves on every instance, a rate change and a pause (`POST …/pause`); at the quiet middle of
//! every second each page's count (its last push, counted down by its own clock) agrees with
//! the poll (`TicketView::agrees_with`), a push received since the tick equals the poll, and in quiet seconds far-back fans
//! are pushed on fewer than a third of the ticks that moved them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use waiting_room::model::{TicketStatus, TicketView};
use waiting_room::protocol::routes;

use super::PageClock;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

/// What one page has heard: every push, with the wall-clock millisecond it arrived.
type Heard = Arc<Mutex<Vec<(u64, String, TicketView)>>>;

struct Page {
    instance: usize,
    ticket: String,
    heard: Heard,
    left: bool,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Sleeps to `.450` of the next wall-clock second: ticks land at `.050`, their pushes soon
/// after, so nothing moves around then.
async fn next_mid_second() {
    let wait = 1450 - now_ms() % 1000;
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

#[tokio::test]
async fn pages_on_three_instances_count_right_between_sparse_pushes() {
    let redis = RedisServer::start().await;
    let env = [("PUSH_FRONT", "10")];
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(ServerProcess::start(&redis.url(), 4, &env).await);
    }
    let show = "far";
    servers[0].create(show).await;
    let mut pages = Vec::new();
    for i in 0..240 {
        let api = &servers[i % 3];
        let ticket = api.join_many(show, 1).await.remove(0);
        let mut sse = api.events(show, &ticket).await;
        let heard: Heard = Arc::default();
        let into = heard.clone();
        tokio::spawn(async move {
            while let Some(e) = sse.next(Duration::from_secs(120)).await {
                let view = serde_json::from_value(e.data).unwrap();
                into.lock().unwrap().push((now_ms(), e.event, view));
            }
        });
        pages.push(Page {
            instance: i % 3,
            ticket,
            heard,
            left: false,
        });
    }
    // Opened in the quiet middle of a second: its push reaches every page well before the
    // first check, a second later.
    next_mid_second().await;
    servers[1].open(show).await;
    let (mut waiting_seconds, mut pushes_seen) = (0usize, 0usize);
    let mut last_check = now_ms();
    // A second after one where nothing but the tick happened (and not the first tick, which
    // every page hears to learn the ticks' phase).
    let mut quiet = false;
    // Polls that straddled a tick (a slow machine's batch running into the next second)
    // say nothing about the count and are not checked; the rest must be right.
    let (mut checked, mut raced) = (0usize, 0usize);
    for second in 0..14 {
        next_mid_second().await;
        let now = now_ms();
        let live: Vec<&Page> = pages.iter().filter(|p| !p.left).collect();
        let polls = futures::future::join_all(live.iter().map(|p| async {
            let before = now_ms();
            let polled = servers[p.instance].ticket_json(show, &p.ticket).await;
            (before, now_ms(), polled)
        }))
        .await;
        for (p, (before, after, polled)) in live.into_iter().zip(polls) {
            if !in_quiet_part_of_one_second(before, after) {
                raced += 1;
                continue;
            }
            checked += 1;
            let polled: TicketView = serde_json::from_value(polled).unwrap();
            // What the page had heard by the time the poll was answered.
            let heard: Vec<_> = p
                .heard
                .lock()
                .unwrap()
                .iter()
                .filter(|h| h.0 <= after)
                .cloned()
                .collect();
            let (at, event, last) = heard.last().expect("the first state comes at once");
            let mut clock = PageClock::default();
            for (at, _, view) in heard.iter() {
                clock.heard(*at as i64, view);
            }
            if polled.status != TicketStatus::Waiting {
                assert_ne!(
                    event, "waiting",
                    "second {second}: {} still waits",
                    p.ticket
                );
                continue;
            }
            if quiet {
                waiting_seconds += 1;
                pushes_seen += heard.iter().filter(|h| h.0 > last_check).count();
            }
            if *at > now - 400 {
                assert_eq!(
                    *last, polled,
                    "second {second}: a push differs from the poll"
                );
            }
            let shows = clock.shows(last, after as i64);
            assert!(
                shows.agrees_with(&polled),
                "second {second}: the page of {} on instance {} counts wrong: shows {shows:?}, \
                 the poll {polled:?} (told {last:?})",
                p.ticket,
                p.instance
            );
        }
        last_check = now;
        // Now and then a leave (on each instance in turn), a rate change, a pause and the
        // reopening.
        let i = (second * 37) % pages.len();
        quiet = true;
        if second % 3 == 1 && !pages[i].left {
            servers[second % 3].leave(show, &pages[i].ticket).await;
            pages[i].left = true;
            quiet = false;
        }
        match second {
            4 => assert_eq!(servers[2].set_rate(show, 3).await.status(), 200),
            7 => {
                let r = servers[0].operator(routes::PAUSE, show).await;
                assert_eq!(r.status(), 204);
            }
            9 => servers[2].open(show).await,
            _ => continue,
        }
        quiet = false;
    }
    let admitted = pages
        .iter()
        .filter(|p| p.heard.lock().unwrap().iter().any(|h| h.1 == "admitted"))
        .count();
    assert!(admitted >= 30, "ticks reached fans: {admitted} admitted");
    // Most polls land in the quiet part of their second; were they all to race, nothing
    // above would have been checked.
    assert!(
        checked > 4 * raced && checked > 1000,
        "{checked} polls checked, {raced} straddled a tick"
    );
    // Quiet seconds: the front ten every tick, the rest on their cadence (about a fifth).
    assert!(
        waiting_seconds > 500 && pushes_seen * 3 < waiting_seconds,
        "{pushes_seen} pushes for {waiting_seconds} waiting fan-seconds in quiet seconds"
    );
}

/// Both ends of a poll in the part of one wall-clock second where no tick moves anything:
/// after its tick (at `.050`) has been pushed, before the next one.
fn in_quiet_part_of_one_second(before_ms: u64, after_ms: u64) -> bool {
    before_ms / 1000 == after_ms / 1000 && before_ms % 1000 >= 400
}
