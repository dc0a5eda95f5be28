//! A subscription that goes silent without its socket closing (a middlebox dropped the flow,
//! a node failed over behind a proxy): the hub's PINGs go unanswered, it subscribes again and
//! reads every followed show afresh, so fans get the positions they missed. A subscription
//! that is never confirmed is given up and tried again the same way.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, timeout_at};
use waiting_room::config::Config;

use crate::support::app::spawn_app_configured;
use crate::support::redis::RedisServer;
use crate::support::sse::SseReader;
use crate::support::ticket_id;

/// `PUBSUB_PING_EVERY` and `PUBSUB_PONG_WITHIN` of the Redis store (not exported).
const PING_EVERY: Duration = Duration::from_secs(5);
const PONG_WITHIN: Duration = Duration::from_secs(3);

/// What the proxy knows of one connection it relays.
#[derive(Default)]
struct Link {
    /// The client sent `SUBSCRIBE` on it.
    subscriber: AtomicBool,
    /// Redis answered something after that (the subscription's confirmation).
    confirmed: AtomicBool,
    /// Nothing is relayed any more, either way; both sockets stay open.
    frozen: AtomicBool,
    /// Both directions still open.
    open: AtomicBool,
}

/// A TCP proxy in front of Redis that can silence its subscribed connections while every
/// other connection goes on working.
struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    links: Mutex<Vec<Arc<Link>>>,
    /// Silence every connection the moment it sends `SUBSCRIBE`, before Redis sees it.
    freeze_on_sight: AtomicBool,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared: Arc<Shared> = Arc::default();
        let accept = tokio::spawn({
            let shared = shared.clone();
            async move {
                // Owned here, so aborting this task ends every relay with it.
                let mut relays = JoinSet::new();
                loop {
                    while relays.try_join_next().is_some() {}
                    let Ok((client, _)) = listener.accept().await else {
                        continue;
                    };
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        continue; // dropping `client` closes it, as a dead Redis would
                    };
                    let link = Arc::new(Link {
                        open: AtomicBool::new(true),
                        ..Link::default()
                    });
                    shared.links.lock().unwrap().push(link.clone());
                    relays.spawn(relay(client, server, link, shared.clone()));
                }
            }
        });
        Proxy {
            addr,
            shared,
            accept,
        }
    }

    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Connections on which the client sent `SUBSCRIBE`, open or not, frozen or not.
    fn subscribe_attempts(&self) -> usize {
        self.shared
            .links
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.subscriber.load(Ordering::SeqCst))
            .count()
    }

    /// Open, working connections whose subscription Redis has confirmed.
    fn live_subscriptions(&self) -> usize {
        self.shared
            .links
            .lock()
            .unwrap()
            .iter()
            .filter(|l| {
                l.open.load(Ordering::SeqCst)
                    && l.confirmed.load(Ordering::SeqCst)
                    && !l.frozen.load(Ordering::SeqCst)
            })
            .count()
    }

    /// Silences every connection that subscribed: from now on its bytes are read and
    /// dropped, both ways, and its sockets stay open. Connections made later are relayed.
    fn freeze_subscribers(&self) -> usize {
        let links = self.shared.links.lock().unwrap();
        let mut frozen = 0;
        for link in links.iter() {
            if link.subscriber.load(Ordering::SeqCst) && link.open.load(Ordering::SeqCst) {
                link.frozen.store(true, Ordering::SeqCst);
                frozen += 1;
            }
        }
        frozen
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn relay(client: TcpStream, server: TcpStream, link: Arc<Link>, shared: Arc<Shared>) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    tokio::join!(
        pump(client_read, server_write, &link, Some(&shared)),
        pump(server_read, client_write, &link, None),
    );
    link.open.store(false, Ordering::SeqCst);
}

/// `SUBSCRIBE` as a whole argument of a command (RESP bulk string), not the word inside a
/// script's text.
const SUBSCRIBE: &[u8] = b"$9\r\nSUBSCRIBE\r\n";

/// Relays one direction; `shared` is given for the client's direction only.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    link: &Link,
    shared: Option<&Shared>,
) {
    let from_client = shared.is_some();
    let mut buf = vec![0u8; 16 * 1024];
    // The last bytes the client sent, so a command split across reads is still seen.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        if from_client && !link.subscriber.load(Ordering::SeqCst) {
            tail.extend_from_slice(chunk);
            if tail
                .windows(SUBSCRIBE.len())
                .any(|w| w.eq_ignore_ascii_case(SUBSCRIBE))
            {
                if shared.is_some_and(|s| s.freeze_on_sight.load(Ordering::SeqCst)) {
                    link.frozen.store(true, Ordering::SeqCst);
                }
                link.subscriber.store(true, Ordering::SeqCst);
            }
            let keep_from = tail.len().saturating_sub(SUBSCRIBE.len() - 1);
            tail.drain(..keep_from);
        }
        if link.frozen.load(Ordering::SeqCst) {
            continue; // a black hole: nothing gets through, nothing is closed
        }
        if !from_client && link.subscriber.load(Ordering::SeqCst) {
            link.confirmed.store(true, Ordering::SeqCst);
        }
        if to.write_all(chunk).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Reads the stream until it pushes `expected`, every event on the way a `waiting` one;
/// panics at `deadline`.
async fn pushed(sse: &mut SseReader, expected: &Value, deadline: Instant, what: &str) {
    let mut seen = Vec::new();
    let found = timeout_at(deadline, async {
        while let Some(e) = sse.next(Duration::from_secs(60)).await {
            assert_eq!(e.event, "waiting", "{what}: {e:?}");
            if &e.data == expected {
                return;
            }
            seen.push(e.data);
        }
        panic!("{what}: the stream ended; saw {seen:?}");
    })
    .await;
    assert!(found.is_ok(), "{what}: {expected} never pushed");
}

#[tokio::test]
async fn a_silent_subscription_is_replaced_and_fans_get_what_they_missed() {
    let redis = RedisServer::start().await;
    let proxy = Proxy::start(format!("127.0.0.1:{}", redis.port).parse().unwrap()).await;
    let app = spawn_app_configured(Config {
        redis_url: Some(proxy.url()),
        ..Config::for_tests()
    })
    .await;
    // Created and not opened: nothing but what the test does moves the queue.
    app.create("quiet").await;
    let ahead = ticket_id(&app.join_ok("quiet").await);
    let next = ticket_id(&app.join_ok("quiet").await);
    let mine = ticket_id(&app.join_ok("quiet").await);
    let mut sse = app.events("quiet", &mine).await;
    let first = sse.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.data["position"], 3);

    let deadline = Instant::now() + Duration::from_secs(5);
    while proxy.live_subscriptions() != 1 {
        assert!(Instant::now() < deadline, "the hub never subscribed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(proxy.freeze_subscribers(), 1, "one subscription, silenced");

    // Changes the subscription never carries: one leave, one rate change.
    assert!(app.leave("quiet", &ahead).await.status().is_success());
    assert!(app.set_rate("quiet", 1).await.status().is_success());
    let changed = Instant::now();
    let expected = app.ticket_json("quiet", &mine).await;
    assert_eq!(expected["position"], 2, "{expected}");

    // The silence is real: a PING cannot have gone unanswered for long enough yet.
    let early = sse.drain(Duration::from_secs(2)).await;
    assert!(
        early.is_empty(),
        "the frozen subscription delivered {early:?}"
    );

    // Within a PING period, its PONG's wait and a resubscription, the fan has the truth.
    let bound = PING_EVERY + PONG_WITHIN + Duration::from_secs(4);
    pushed(&mut sse, &expected, changed + bound, "after the silence").await;
    let took = changed.elapsed();
    eprintln!("the missed change reached the fan {took:?} after it happened");
    assert_eq!(
        app.ticket_json("quiet", &mine).await,
        expected,
        "still true"
    );
    assert_eq!(
        proxy.live_subscriptions(),
        1,
        "the hub subscribed again, on a new connection"
    );

    // The new subscription carries events as usual: the next leave arrives at once.
    assert!(app.leave("quiet", &next).await.status().is_success());
    let expected = app.ticket_json("quiet", &mine).await;
    assert_eq!(expected["position"], 1, "{expected}");
    pushed(
        &mut sse,
        &expected,
        Instant::now() + Duration::from_secs(2),
        "over the new subscription",
    )
    .await;

    app.stop().await;
}

#[tokio::test]
async fn a_subscription_never_confirmed_is_given_up_and_tried_again() {
    let redis = RedisServer::start().await;
    let proxy = Proxy::start(format!("127.0.0.1:{}", redis.port).parse().unwrap()).await;
    // The hub's first SUBSCRIBE disappears (a node that accepts connections and answers
    // nothing): nobody will ever confirm it.
    proxy.shared.freeze_on_sight.store(true, Ordering::SeqCst);
    let app = spawn_app_configured(Config {
        redis_url: Some(proxy.url()),
        ..Config::for_tests()
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while proxy.subscribe_attempts() == 0 {
        assert!(
            Instant::now() < deadline,
            "the hub never tried to subscribe"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // From now on subscriptions go through.
    proxy.shared.freeze_on_sight.store(false, Ordering::SeqCst);
    let since = Instant::now();

    app.create("unheard").await;
    let ahead = ticket_id(&app.join_ok("unheard").await);
    let mine = ticket_id(&app.join_ok("unheard").await);
    let mut sse = app.events("unheard", &mine).await;
    let first = sse.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(first.data["position"], 2);
    assert!(app.leave("unheard", &ahead).await.status().is_success());
    let expected = app.ticket_json("unheard", &mine).await;
    assert_eq!(expected["position"], 1, "{expected}");

    // The unanswered attempt is abandoned about as soon as an unanswered PING would be, and
    // the next one (after the hub's short backoff) is confirmed and resynchronises the show.
    pushed(
        &mut sse,
        &expected,
        since + PONG_WITHIN + Duration::from_secs(4),
        "after the unanswered subscription",
    )
    .await;
    eprintln!(
        "subscribed again and pushed {:?} after the first attempt",
        since.elapsed()
    );
    assert_eq!(
        proxy.subscribe_attempts(),
        2,
        "one attempt abandoned, one live"
    );
    assert_eq!(proxy.live_subscriptions(), 1);

    app.stop().await;
}
