//! `waiting-room fan` against real servers: as a library call and as the real binary.

use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;
use tokio::sync::mpsc;
use uuid::Uuid;
use waiting_room::client::fan::{self, FanArgs, FanError};
use waiting_room::client::follow::Transport;
use waiting_room::config::Config;

use crate::helpers::*;

/// Arrange 30 fans ahead at 20 a second in a show that is created but not open, start the
/// fan, open the show once it has joined: it must be told 31 and that the show is not open
/// yet, then 31 again once it opens (the same place, but the queue now moves), 11 after the
/// first tick, and admitted after the second. Rate changes while closed push new ETAs that
/// read the same ("less than a minute" at 11 or 20 a second): those print nothing.
async fn fan_is_pushed_its_place_then_admitted(transport: Transport) {
    let app = spawn_app().await;
    let show_name = format!("fan-{}", transport.name());
    app.create(&show_name).await;
    for _ in 0..30 {
        app.join(&show_name).await;
    }
    let out = Output::default();
    let args = FanArgs::new(vec![app.base()], show(&show_name), transport);
    let fan = tokio::spawn({
        let mut out = out.clone();
        async move { fan::run(&args, &mut out).await }
    });
    app.wait_for_stats(&show_name, Duration::from_secs(5), |s| {
        s["queueLength"] == 31
    })
    .await;
    out.wait_for("waiting", Duration::from_secs(5)).await;
    // ETA 3 s, then 2 s again: two pushes, the same words.
    for rate in [11, 20] {
        app.configure(&show_name, json!({ "admitPerSecond": rate }))
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(out.lines().len(), 3, "{}", out.text());

    between_ticks().await;
    app.open(&show_name).await;
    let admission = tokio::time::timeout(Duration::from_secs(10), fan)
        .await
        .expect("admitted within two ticks")
        .unwrap()
        .expect("the fan ends admitted");

    let lines = out.lines();
    assert_eq!(
        words(&lines),
        [
            "joined",
            "following",
            "waiting",
            "waiting",
            "waiting",
            "admitted"
        ],
        "{lines:#?}"
    );
    assert!(lines[0].contains("position 31"), "{}", lines[0]);
    assert!(
        lines[1].contains(&format!("over {}", transport.name())),
        "{}",
        lines[1]
    );
    assert_eq!(waiting_positions(&lines), [31, 31, 11]);
    assert!(
        lines[2].ends_with("position 31 · not open yet · less than a minute once it opens"),
        "{}",
        lines[2]
    );
    // Open: the same place, told without the pause.
    assert!(
        lines[3].ends_with("position 31 · less than a minute"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].ends_with("position 11 · less than a minute"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].contains(&admission.ticket.to_string()),
        "{}",
        lines[5]
    );
    assert_eq!(admission.server, app.base());
    assert_eq!(admission.connections, 1);
    let ttl = admission
        .expires_in
        .expect("an admission says how long it lasts");
    assert!(
        ttl > Duration::from_secs(290) && ttl <= Duration::from_secs(300),
        "{ttl:?}"
    );
}

#[tokio::test]
async fn fan_over_sse_is_pushed_its_place_then_admitted() {
    fan_is_pushed_its_place_then_admitted(Transport::Sse).await;
}

#[tokio::test]
async fn fan_over_websocket_is_pushed_its_place_then_admitted() {
    fan_is_pushed_its_place_then_admitted(Transport::Ws).await;
}

#[tokio::test]
async fn the_binary_follows_over_websocket_and_exits_0_once_admitted() {
    let app = spawn_app().await;
    app.open("bin-show").await;
    let output = tokio::time::timeout(
        Duration::from_secs(15),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room"))
            .args([
                "fan",
                "--url",
                app.base().as_str(),
                "--show",
                "bin-show",
                "--ws",
            ])
            .env("RUST_LOG", "warn")
            .output(),
    )
    .await
    .expect("the fan exits within 15 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    assert_eq!(
        words(&lines).first().map(String::as_str),
        Some("joined"),
        "{stdout}"
    );
    assert_eq!(
        words(&lines).last().map(String::as_str),
        Some("admitted"),
        "{stdout}"
    );
    assert!(stdout.contains("over WebSocket"), "{stdout}");
    assert_eq!(app.stats("bin-show").await["joined"], 1);
}

#[tokio::test]
async fn the_binary_exits_non_zero_with_a_clear_message_for_an_unknown_ticket() {
    let app = spawn_app().await;
    // The show exists: it is the ticket that is unknown.
    app.create("s1").await;
    let ticket = Uuid::new_v4().to_string();
    let output = tokio::time::timeout(
        Duration::from_secs(15),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room"))
            .args([
                "fan",
                "--url",
                app.base().as_str(),
                "--show",
                "s1",
                "--ticket",
                &ticket,
            ])
            .output(),
    )
    .await
    .expect("the fan exits within 15 s")
    .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&ticket) && stderr.contains("not in show s1's queue"),
        "{stderr}"
    );
}

/// A show nobody created is not a queue to wait in: the join is refused with the server's
/// word (exit 5, not the 3 of a ticket that left a real queue), and nothing is created.
#[tokio::test]
async fn the_binary_refuses_a_show_nobody_created_with_a_clear_message() {
    let app = spawn_app().await;
    let output = tokio::time::timeout(
        Duration::from_secs(15),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room"))
            .args(["fan", "--url", app.base().as_str(), "--show", "nobody"])
            .env("RUST_LOG", "warn")
            .output(),
    )
    .await
    .expect("the fan exits within 15 s")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("404") && stderr.contains("no on-sale named nobody"),
        "{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("joined"),
        "no ticket was handed out"
    );
    assert!(
        !app.exists("nobody").await,
        "a refused join creates nothing"
    );
}

#[tokio::test]
async fn a_show_nobody_created_is_refused_at_once_over_both_transports() {
    let app = spawn_app().await;
    for transport in [Transport::Sse, Transport::Ws] {
        // Following a ticket: the stream is refused, not reported as an unknown ticket.
        let mut args = FanArgs::new(vec![app.base()], show("nobody"), transport);
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
    assert!(!app.exists("nobody").await);
}

#[tokio::test]
async fn an_unknown_ticket_is_an_error_over_both_transports() {
    let app = spawn_app().await;
    app.create("s1").await;
    for transport in [Transport::Sse, Transport::Ws] {
        let mut args = FanArgs::new(vec![app.base()], show("s1"), transport);
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
    let mut wrong_prefix = app.base();
    wrong_prefix.set_path("/nowhere");
    let mut args = FanArgs::new(vec![wrong_prefix, app.base()], show("s1"), Transport::Sse);
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
        let args = FanArgs::new(vec![dead.clone(), app.base()], show("fallback"), transport);
        let admission =
            tokio::time::timeout(Duration::from_secs(10), fan::run(&args, &mut out.clone()))
                .await
                .expect("admitted within 10 s")
                .expect("admitted via the second URL");
        assert_eq!(admission.server, app.base(), "{transport:?}");
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
    let router = axum::Router::new().route(
        "/orders/waiting-room/{show}/tickets/{ticket}/events",
        get(events),
    );
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
    let a = spawn_app_with(config()).await;
    let b = spawn_app_with(config()).await;
    // Created (closed) through A; B shares its Redis, so it knows the show too.
    a.create("failover").await;
    assert!(b.exists("failover").await);
    let out = Output::default();
    let args = FanArgs::new(vec![a.base(), b.base()], show("failover"), Transport::Sse);
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

    assert_eq!(admission.server, b.base());
    assert_eq!(admission.connections, 2);
    let lines = out.lines();
    let resumed = lines
        .iter()
        .find(|l| l.contains("resuming after event"))
        .cloned();
    assert!(
        resumed.is_some_and(|l| l.contains(shown(&b.base()))),
        "{lines:#?}"
    );
    assert_eq!(words(&lines).last().unwrap(), "admitted");
}
