//! Every 503 says when to come back: fans calling every route a fan calls (joins by JSON and
//! by the page's form, polls, the page, streams opened over SSE and WebSocket, orders,
//! redemptions, pass checks) while a Redis primary behind Sentinel is SIGKILLed, the
//! replica promoted, and writes wait for a replica to confirm them again.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::RequestBuilder;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use waiting_room::protocol::{ADMISSION_HEADER, IDEMPOTENCY_KEY, routes};

use crate::failover::join_until_placed;
use crate::support::api::Api;
use crate::support::sentinel::SentinelGroup;
use crate::support::ticket_id;

/// One answer a caller got: its status, and whether it said when to come back.
#[derive(Clone, Copy, Debug)]
struct Seen {
    status: u16,
    retry_after: bool,
}

/// Every answer, by the kind of call that got it.
type Answers = Arc<Mutex<BTreeMap<&'static str, Vec<Seen>>>>;

/// The calls that write: each is refused (503) from the primary's death until a replica
/// confirms writes again, whatever the machine's speed, so each must meet a 503.
const WRITES: [&str; 4] = ["join", "page join", "order", "redeem"];

/// What a call of `kind` answers now: its status, and whether it carries `Retry-After`.
async fn call(api: &Api, kind: &str, n: u64, t: &Tickets) -> Seen {
    let wait = &t.waiting;
    let send = |request: RequestBuilder| async move {
        let r = request
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .unwrap_or_else(|e| panic!("a {kind} hung or broke during the failover: {e}"));
        Seen {
            status: r.status().as_u16(),
            retry_after: r.headers().contains_key("retry-after"),
        }
    };
    let url = |path: String| api.url(&path);
    let c = &api.client;
    match kind {
        "join" => {
            let path = routes::show(routes::JOIN, WAITING);
            send(
                c.post(url(path))
                    .header(IDEMPOTENCY_KEY, uuid::Uuid::new_v4().to_string()),
            )
            .await
        }
        "page join" => send(c.post(url(routes::show(routes::WAIT_JOIN, WAITING)))).await,
        "order" => {
            let order = serde_json::json!({
                "showId": ADMITTING, "holdId": format!("h{n}"),
                "customerEmail": "caio@example.com", "amount": 350.00,
            });
            let request = c.post(url(routes::ORDERS.into())).json(&order);
            send(request.header(ADMISSION_HEADER, &t.ordering)).await
        }
        "redeem" => {
            let path = routes::show(routes::REDEEM, ADMITTING);
            send(c.post(url(path)).header(ADMISSION_HEADER, &t.redeeming)).await
        }
        "poll" => send(c.get(url(routes::ticket(routes::TICKET, WAITING, wait)))).await,
        "page" => {
            let path = format!("{}?ticket={wait}", routes::show(routes::WAIT_PAGE, WAITING));
            send(c.get(url(path))).await
        }
        // The head alone: a stream that opened is dropped at once.
        "sse" => send(c.get(url(routes::ticket(routes::EVENTS, WAITING, wait)))).await,
        "pass check" => {
            let path = routes::show(routes::PASS_CHECK, ADMITTING);
            send(c.get(url(path)).header(ADMISSION_HEADER, &t.pass)).await
        }
        "websocket" => {
            let connect = tokio_tungstenite::connect_async(api.ws_url(WAITING, wait));
            match tokio::time::timeout(Duration::from_secs(5), connect).await {
                Ok(Ok((mut socket, response))) => {
                    let _ = socket.close(None).await;
                    Seen {
                        status: response.status().as_u16(),
                        retry_after: false,
                    }
                }
                Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => Seen {
                    status: response.status().as_u16(),
                    retry_after: response.headers().contains_key("retry-after"),
                },
                Ok(Err(e)) => panic!("a WebSocket handshake broke during the failover: {e}"),
                Err(_) => panic!("a WebSocket handshake hung during the failover"),
            }
        }
        other => unreachable!("{other}"),
    }
}

/// The show whose fans wait (never opened), and the one that admits them.
const WAITING: &str = "ra-wait";
const ADMITTING: &str = "ra-admit";

/// The tickets the callers use.
struct Tickets {
    /// Waits in [`WAITING`]: polled, its page shown, followed.
    waiting: String,
    /// Admitted in [`ADMITTING`]: orders are placed with it.
    ordering: String,
    /// Admitted in [`ADMITTING`]: a checkout outside redeems it.
    redeeming: String,
    /// Another admission's pass, for the pass check.
    pass: String,
}

#[tokio::test]
async fn every_503_during_a_sentinel_failover_says_when_to_come_back() {
    let mut group = SentinelGroup::start().await;
    let server = group.durable_server(50).await;
    server.create(WAITING).await;
    server.open(ADMITTING).await;
    let admitted = server.join_many(ADMITTING, 3).await;
    let mut passes = Vec::new();
    for t in &admitted {
        let v = server
            .wait_admitted(ADMITTING, t, Duration::from_secs(20))
            .await;
        passes.push(v["pass"].as_str().expect("an admission's pass").to_owned());
    }
    let tickets = Arc::new(Tickets {
        waiting: ticket_id(&server.join_ok(WAITING).await),
        ordering: admitted[0].clone(),
        redeeming: admitted[1].clone(),
        pass: passes[2].clone(),
    });

    // Several fans of every kind, calling again 50 ms after each answer.
    let answers = Answers::default();
    let stop = CancellationToken::new();
    let kinds = WRITES
        .into_iter()
        .chain(["poll", "page", "sse", "websocket", "pass check"]);
    let mut callers = Vec::new();
    for kind in kinds.clone().chain(["join", "poll"]) {
        let (api, answers, stop, tickets) = (
            (*server).clone(),
            answers.clone(),
            stop.clone(),
            tickets.clone(),
        );
        callers.push(tokio::spawn(async move {
            for n in 0.. {
                if stop.is_cancelled() {
                    break;
                }
                let seen = call(&api, kind, n, &tickets).await;
                answers.lock().unwrap().entry(kind).or_default().push(seen);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }
    let refused = |kind: &str| {
        let answers = answers.lock().unwrap();
        let seen = answers.get(kind).map(Vec::as_slice).unwrap_or_default();
        seen.iter().any(|s| s.status == 503)
    };

    // The primary dies; its port is held so that no other test's redis-server takes it.
    let old_primary = group.primary.port;
    group.primary.stop();
    let held = std::net::TcpListener::bind(("127.0.0.1", old_primary))
        .expect("the dead primary's port is free");
    // Until the Sentinels promoted the replica, the server followed, and every kind of write
    // was refused at least once (none can be confirmed while no replica runs).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let followed = server
            .metrics()
            .await
            .contains("waiting_room_redis_failovers_total 1");
        if followed && WRITES.iter().all(|k| refused(k)) {
            break;
        }
        let waiting: Vec<_> = WRITES.iter().filter(|k| !refused(k)).collect();
        assert!(
            Instant::now() < deadline,
            "followed the failover: {followed}; never refused: {waiting:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The old primary's node comes back as the new one's replica: writes are confirmed again.
    let new_primary = group.primary_port().await.unwrap();
    drop(held);
    group
        .primary
        .restart_with(&["--replicaof", "127.0.0.1", &new_primary.to_string()])
        .await;
    join_until_placed(&server, WAITING, "after-the-failover").await;
    stop.cancel();
    for caller in callers {
        caller.await.expect("a caller panicked");
    }

    let answers = answers.lock().unwrap();
    let mut without = BTreeMap::new();
    let mut refusals = 0;
    for (kind, seen) in answers.iter() {
        for s in seen {
            assert!(s.status < 500 || s.status == 503, "{kind} answered {s:?}");
            if s.status == 503 {
                refusals += 1;
                if !s.retry_after {
                    *without.entry(*kind).or_insert(0) += 1;
                }
            }
        }
    }
    assert!(refusals > 0);
    assert!(
        without.is_empty(),
        "503s without Retry-After, by call: {without:?}"
    );
    eprintln!(
        "{refusals} answers 503, by call: {:?}",
        answers
            .iter()
            .map(|(k, v)| (k, v.iter().filter(|s| s.status == 503).count()))
            .collect::<Vec<_>>()
    );
}
