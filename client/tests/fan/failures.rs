//! How the fan ends when it cannot be admitted, and how it finds its way back: refusals that
//! are final at once, another `--url` when one is dead, giving up, `Last-Event-ID` on a
//! dropped stream, and failing over to another instance.

use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;
use tokio::sync::mpsc;
use uuid::Uuid;
use waiting_room::config::Config;
use waiting_room::protocol::routes;
use waiting_room_client::fan::{self, FanArgs, FanError};
use waiting_room_client::follow::Transport;

use crate::helpers::*;
use crate::support::redis::RedisServer;

#[tokio::test]
async fn a_show_nobody_created_is_refused_at_once_over_both_transports() {
    let app = spawn_app().await;
    for transport in [Transport::Sse, Transport::Ws] {
        // Following a ticket: the stream is refused, not reported as an unknown ticket.
        let mut args = FanArgs::new(vec![base(&app)], show("nobody"), transport);
        args.ticket = Some(Uuid::new_v4());
        let err = tokio::time::timeout(Duration::from_secs(5), fan::run(&args, &mut Vec::new()))
            .await
            .expect("a refusal is final at once")
            .unwrap_err();
        assert!(
            matches!(&err, FanError::Refused(m) if m.contains("404") && m.contains("no on-sale named nobody")),
            "{transport:?}: {err:?}"
        );
        // Joining: refused likewise.
        args.ticket = None;
        let err = tokio::time::timeout(Duration::from_secs(5), fan::run(&args, &mut Vec::new()))
            .await
            .expect("a refusal is final at once")
            .unwrap_err();
        assert!(
            matches!(&err, FanError::Refused(m) if m.contains("join answered 404") && m.contains("no on-sale named nobody")),
            "{transport:?}: {err:?}"
        );
    }
    assert!(!exists(&app, "nobody").await);
}

#[tokio::test]
async fn an_unknown_ticket_is_an_error_over_both_transports() {
    let app = spawn_app().await;
    app.create("s1").await;
    for transport in [Transport::Sse, Transport::Ws] {
        let mut args = FanArgs::new(vec![base(&app)], show("s1"), transport);
        let ticket = Uuid::new_v4();
        args.ticket = Some(ticket);
        let err = fan::run(&args, &mut Vec::new()).await.unwrap_err();
        assert!(
            matches!(&err, FanError::Unknown { ticket: t, .. } if *t == ticket),
            "{transport:?}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_client_error_from_the_server_is_final_and_not_retried_elsewhere() {
    let app = spawn_app().await;
    app.create("s1").await;
    // The first server answers 404 (no such route under that path prefix); were it
    // retried, the second would answer `unknown` for this random ticket instead.
    let mut wrong_prefix = base(&app);
    wrong_prefix.set_path("/nowhere");
    let mut args = FanArgs::new(vec![wrong_prefix, base(&app)], show("s1"), Transport::Sse);
    args.ticket = Some(Uuid::new_v4());
    let err = tokio::time::timeout(Duration::from_secs(5), fan::run(&args, &mut Vec::new()))
        .await
        .expect("a refusal is final at once")
        .unwrap_err();
    assert!(
        matches!(&err, FanError::Refused(m) if m.contains("404")),
        "{err:?}"
    );
}

#[tokio::test]
async fn when_the_first_url_is_dead_the_fan_uses_the_second() {
    let app = spawn_app().await;
    app.open("fallback").await;
    for transport in [Transport::Sse, Transport::Ws] {
        let dead = dead_url();
        let out = Output::default();
        let args = FanArgs::new(vec![dead.clone(), base(&app)], show("fallback"), transport);
        let admission =
            tokio::time::timeout(Duration::from_secs(10), fan::run(&args, &mut out.clone()))
                .await
                .expect("admitted within 10 s")
                .expect("admitted via the second URL");
        assert_eq!(admission.server, base(&app), "{transport:?}");
        let lines = out.lines();
        // The join went to the dead server first, and moved on at once (no wait: the
        // second server had not been tried yet).
        assert_eq!(words(&lines)[0], "lost", "{lines:#?}");
        assert!(
            lines[0].contains(shown(&dead)) && lines[0].contains("in 0 ms"),
            "{}",
            lines[0]
        );
        assert!(words(&lines).contains(&"joined".to_owned()), "{lines:#?}");
        assert_eq!(words(&lines).last().unwrap(), "admitted");
    }
}

#[tokio::test]
async fn the_fan_gives_up_when_no_server_answers() {
    let args = FanArgs {
        give_up_after: Duration::from_millis(600),
        ..FanArgs::new(vec![dead_url(), dead_url()], show("s1"), Transport::Sse)
    };
    let out = Output::default();
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(10), fan::run(&args, &mut out.clone()))
        .await
        .expect("gives up by itself")
        .unwrap_err();
    assert!(
        matches!(&err, FanError::GaveUp { last, .. } if last.contains("refused")),
        "{err:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(600));
    // It kept trying meanwhile, alternating servers.
    assert!(out.lines().len() >= 3, "{}", out.text());
}

/// A fake server whose first stream sends one event and drops: the fan must reconnect and
/// send the event's id back as `Last-Event-ID`.
#[tokio::test]
async fn after_a_dropped_stream_the_fan_reconnects_with_last_event_id() {
    let ticket = Uuid::new_v4();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel::<Option<String>>();
    let events = move |headers: HeaderMap| {
        let seen_tx = seen_tx.clone();
        async move {
            let last = headers
                .get("last-event-id")
                .map(|v| v.to_str().unwrap().to_owned());
            let first = last.is_none();
            seen_tx.send(last).unwrap();
            // Comments, a retry and a two-line data field: the parser must cope with all.
            let body = if first {
                format!(
                    ": hello\nretry: 50\nevent: waiting\nid: 7\ndata: {}\n\n",
                    json!({"ticketId": ticket, "status": "WAITING", "position": 2, "etaSeconds": 1})
                )
            } else {
                format!(
                    "event: admitted\nid: 8\ndata: {{\"ticketId\":\"{ticket}\",\ndata: \"status\":\"ADMITTED\",\"expiresInSeconds\":300}}\n\n"
                )
            };
            ([("content-type", "text/event-stream")], body).into_response()
        }
    };
    let router = axum::Router::new().route(routes::EVENTS, get(events));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let mut args = FanArgs::new(vec![base], show("s1"), Transport::Sse);
    args.ticket = Some(ticket);
    let out = Output::default();
    let admission =
        tokio::time::timeout(Duration::from_secs(10), fan::run(&args, &mut out.clone()))
            .await
            .expect("admitted within 10 s")
            .expect("admitted on the second stream");

    assert_eq!(seen_rx.recv().await.unwrap(), None);
    assert_eq!(seen_rx.recv().await.unwrap().as_deref(), Some("7"));
    assert_eq!(admission.connections, 2);
    assert_eq!(admission.expires_in, Some(Duration::from_secs(300)));
    let lines = out.lines();
    assert_eq!(
        words(&lines),
        ["following", "waiting", "lost", "following", "admitted"],
        "{lines:#?}"
    );
    assert!(lines[3].contains("resuming after event 7"), "{}", lines[3]);
}

/// Two instances on one Redis: the fan follows on A; A stops; the fan carries on on B, where
/// the same ticket is known, and is admitted there.
#[tokio::test]
async fn the_fan_fails_over_to_another_instance_and_resumes() {
    let redis = RedisServer::start().await;
    let config = || Config {
        redis_url: Some(redis.url()),
        ..Config::for_tests()
    };
    let a = spawn_app_configured(config()).await;
    let b = spawn_app_configured(config()).await;
    // Created (closed) through A; B shares its Redis, so it knows the show too.
    a.create("failover").await;
    assert!(exists(&b, "failover").await);
    let out = Output::default();
    let args = FanArgs::new(vec![base(&a), base(&b)], show("failover"), Transport::Sse);
    let fan = tokio::spawn({
        let mut out = out.clone();
        async move { fan::run(&args, &mut out).await }
    });
    out.wait_for("waiting", Duration::from_secs(5)).await;

    a.stop().await;
    out.wait_for("lost", Duration::from_secs(5)).await;
    b.open("failover").await;
    let admission = tokio::time::timeout(Duration::from_secs(10), fan)
        .await
        .expect("admitted within 10 s")
        .unwrap()
        .expect("admitted via B");

    assert_eq!(admission.server, base(&b));
    assert_eq!(admission.connections, 2);
    let lines = out.lines();
    let resumed = lines
        .iter()
        .find(|l| l.contains("resuming after event"))
        .cloned();
    assert!(
        resumed.is_some_and(|l| l.contains(shown(&base(&b)))),
        "{lines:#?}"
    );
    assert_eq!(words(&lines).last().unwrap(), "admitted");
}
