//! `waiting-room-client swarm`: lean fans against a real server (in-process, on the embedded
//! store), whose counts must agree with the server's own, and against one that answers
//! nonsense.

use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use waiting_room::protocol::routes;
use waiting_room_client::swarm::{self, SwarmArgs};

use crate::helpers::*;

fn args(url: reqwest::Url, show_name: &str, fans: u64, mix: &str) -> SwarmArgs {
    SwarmArgs {
        urls: vec![url],
        show: show(show_name),
        fans,
        mix: mix.parse().unwrap(),
        poll_interval: Duration::from_millis(500),
        join_rate: 1_000,
        max_pending: 64,
        duration: Duration::from_secs(60),
        source_ips: None,
        leave_per_minute: 0.0,
        return_per_minute: 0.0,
        reconnect_per_minute: 0.0,
        seed: 7,
        json: false,
        csv: None,
        no_progress: true,
    }
}

/// Waits until the swarm holds `fans` fans, or panics after `within`.
async fn wait_held(running: &swarm::Running, fans: u64, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    while running.held() < fans {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} of {fans} fans held",
            running.held()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_swarm_of_every_transport_holds_every_fan_and_is_admitted_when_the_show_opens() {
    let app = spawn_app().await;
    let name = "swarm-mix";
    app.create(name).await;
    let mut args = args(base(&app), name, 300, "sse=0.4,ws=0.4,poll=0.2");
    let timeline = std::env::temp_dir().join(format!("wr-swarm-{}.csv", uuid::Uuid::new_v4()));
    args.csv = Some(timeline.clone());

    let running = swarm::start(&args, CancellationToken::new()).await.unwrap();
    wait_held(&running, 300, Duration::from_secs(30)).await;
    app.set_rate(name, 100).await;
    app.open(name).await;
    let report = tokio::time::timeout(Duration::from_secs(60), running.finish())
        .await
        .expect("every fan is admitted, and the swarm ends with them")
        .unwrap();

    assert_eq!(report.joined, 300, "{report}");
    assert_eq!(report.held_peak, 300, "{report}");
    let by = report.held_peak_by_transport;
    assert_eq!(by.sse + by.ws + by.poll, 300, "{report}");
    assert!(by.sse > 0 && by.ws > 0 && by.poll > 0, "{report}");
    assert_eq!(report.admitted, 300, "{report}");
    assert!(report.opened, "{report}");
    assert!(report.pushes >= 240 && report.polls > 0, "{report}");
    assert!(report.knowledge.count > 0, "{report}");
    assert!(!report.knowledge_by_second.is_empty(), "{report}");
    assert_eq!(report.count_wrong, 0, "{report}");
    assert_eq!(
        report.stream_errors + report.lost + report.join_failed,
        0,
        "{report}"
    );
    assert!(
        report.rss_peak_bytes > 0 && report.bytes_per_fan > 0.0,
        "{report}"
    );
    // The report's shape is the one `knowledge-plot` reads.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["knowledge_by_second"][0].as_array().unwrap().len(), 4);
    let csv = std::fs::read_to_string(&timeline).unwrap();
    assert!(csv.starts_with("t,held,pushes,joins,leaves,returns,reconnects,knowing_p99_ms\n"));
    std::fs::remove_file(&timeline).ok();
}

#[tokio::test]
async fn fans_leave_return_and_reconnect_and_the_servers_figures_agree() {
    let app = spawn_app().await;
    let name = "swarm-churn";
    let id = name;
    app.create(id).await;
    // Slow: most fans wait the whole run, so churn has a crowd to work on.
    app.set_rate(id, 1).await;
    app.open(id).await;
    let mut args = args(base(&app), name, 200, "sse=0.5,ws=0.3,poll=0.2");
    // Shares a minute so high that a few seconds see each kind of churn many times.
    (args.leave_per_minute, args.return_per_minute) = (0.95, 0.99);
    args.reconnect_per_minute = 0.95;
    args.duration = Duration::from_secs(15);

    let report = swarm::run(&args, CancellationToken::new()).await.unwrap();

    assert_eq!(report.joined, 200, "{report}");
    assert!(report.left > 0 && report.returned > 0, "{report}");
    assert!(report.reconnects > 0, "{report}");
    assert_eq!(report.stream_errors + report.leave_failed, 0, "{report}");
    let stats = app.stats(id).await;
    let figure = |name: &str| stats[name].as_u64().unwrap();
    // A join or a leave the run stopped in flight may be the server's and not the report's.
    let close = |a: u64, b: u64| a.abs_diff(b) <= 3;
    assert!(
        close(figure("joined"), report.joined + report.returned),
        "{stats} {report}"
    );
    let gone = figure("joined") - figure("queueLength") - figure("admittedValid");
    assert!(close(gone, report.left), "{stats} {report}");
    assert!(
        report.admitted <= figure("admittedValid"),
        "{stats} {report}"
    );
}

#[tokio::test]
async fn a_server_answering_nonsense_is_counted_never_a_panic() {
    let ticket = uuid::Uuid::new_v4();
    let joined = json!({"ticketId": ticket, "status": "WAITING", "position": 1});
    let app =
        Router::new()
            .route(
                &routes::show(routes::JOIN, "bad"),
                post(move || async move {
                    (axum::http::StatusCode::ACCEPTED, axum::Json(joined.clone()))
                }),
            )
            .route(
                routes::EVENTS,
                get(|| async { "event: waiting\ndata: {not json\n\n" }),
            )
            .route(routes::WS, get(|| async { "no upgrade here" }))
            .route(routes::TICKET, get(|| async { "[]" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut args = args(url.parse().unwrap(), "bad", 30, "sse=0.4,ws=0.3,poll=0.3");
    args.duration = Duration::from_secs(3);

    let report = swarm::run(&args, CancellationToken::new()).await.unwrap();

    assert_eq!(report.joined, 30, "{report}");
    assert!(report.stream_errors >= 30, "{report}");
    assert_eq!(report.admitted + report.lost, 0, "{report}");
}

/// Runs `swarm` with `args`: its exit code and output.
async fn command(args: &[&str]) -> (i32, String) {
    client("swarm", args).await
}

#[tokio::test]
async fn a_malformed_mix_and_too_many_fans_are_refused() {
    let common = ["--url", "127.0.0.1:9", "--show", "s"];
    for (flags, says) in [
        (["--fans", "10", "--mix", "sse=0.5,ws=0.2"], "add up to"),
        (["--fans", "10", "--mix", "udp=1"], "none of sse, ws, poll"),
        (["--fans", "19001", "--mix", "sse=1"], "19001"),
    ] {
        let (code, text) = command(&[&common[..], &flags[..]].concat()).await;
        assert_eq!(code, 2, "{flags:?}: {text}");
        assert!(text.contains(says), "{flags:?}: {text}");
    }
}
