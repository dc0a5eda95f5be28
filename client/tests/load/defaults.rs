//! `waiting-room-client load` against a server with its default limits per client address
//! (`JOIN_RATE_LIMIT` 5 a second, `MAX_STREAMS_PER_CLIENT` 20, `MAX_CONNECTIONS_PER_CLIENT`
//! half of `MAX_CONNECTIONS`): the binary spreads its fans over loopback source addresses, so
//! none is throttled; from one address the server throttles it, and the report says so.

use std::time::Duration;

use serde_json::Value;
use waiting_room::config::Config;
use waiting_room_client::load::sources;

use super::scratch;
use crate::helpers::*;
use crate::support::app::spawn_app_with;
use crate::support::backend::Backend;

/// The server's settings as a bare `waiting-room` start has them, on loopback port 0 with
/// the test's operator token.
fn default_settings() -> Config {
    #[derive(clap::Parser)]
    struct Server {
        #[command(flatten)]
        config: Config,
    }
    let config = <Server as clap::Parser>::try_parse_from(["waiting-room"])
        .expect("the defaults parse")
        .config;
    // What the spread is sized for is what the server does by default (and nothing in this
    // test's environment changed it).
    assert_eq!(config.join_rate_limit, sources::SERVER_JOINS_PER_SECOND);
    assert_eq!(
        u64::from(config.max_streams_per_client),
        sources::SERVER_STREAMS
    );
    assert_eq!(config.max_connections_per_client, None);
    assert_eq!(config.trusted_proxy_hops, 0);
    Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        admin_token: Some(TOKEN.into()),
        ..config
    }
}

/// Runs `waiting-room-client load` against `app` with `flags`, `--json`: its report.
async fn load(app: &TestApp, flags: &[&str]) -> Value {
    let outputs: Vec<String> = ["timeline.csv", "plot.svg", "eta.csv", "eta.svg"]
        .iter()
        .map(|name| scratch(name).display().to_string())
        .collect();
    let url = base(app).to_string();
    let mut args = vec!["load", "--url", &url, "--admin-token", TOKEN, "--json"];
    args.extend(["--quiet", "--csv", &outputs[0], "--plot", &outputs[1]]);
    args.extend(["--eta-csv", &outputs[2], "--eta-plot", &outputs[3]]);
    args.extend(flags);
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
        .args(&args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the run ends by its --duration")
        .unwrap();
    for path in &outputs {
        std::fs::remove_file(path).ok();
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "load failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn count(report: &Value, field: &str) -> u64 {
    report[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {report}"))
}

/// Every outcome a fan can end in, added up.
fn outcomes(report: &Value) -> u64 {
    [
        "not_started",
        "join_failed",
        "throttled",
        "joining",
        "join_only",
        "admitted",
        "unknown",
        "expired",
        "released",
        "lost",
        "unfinished",
    ]
    .iter()
    .map(|field| count(report, field))
    .sum()
}

#[tokio::test]
async fn a_run_against_default_limits_spreads_over_loopback_and_every_fan_joins() {
    let app = spawn_app_with(Backend::Redis, default_settings()).await;

    // 300 fans at 100 joins a second: 50 addresses (2 joins a second, 6 fans each), far
    // under 5 joins a second with bursts of 10, and 20 streams, however the joins bunch up.
    let report = load(
        &app,
        &[
            "--show",
            "crowd",
            "--fans",
            "300",
            "--join-rate",
            "100",
            "--open",
            "--admit-per-second",
            "100",
            "--duration",
            "90s",
        ],
    )
    .await;

    assert_eq!(count(&report, "source_ips"), sources::spread(300, 100));
    assert_eq!(count(&report, "source_ips"), 50);
    assert_eq!(count(&report, "join_throttled"), 0, "{report}");
    assert_eq!(count(&report, "joined"), 300, "{report}");
    assert_eq!(count(&report, "admitted"), 300, "{report}");
    assert_eq!(count(&report, "stream_errors"), 0, "{report}");
    assert_eq!(outcomes(&report), 300, "{report}");
    let stats = app.stats("crowd").await;
    assert_eq!(stats["joined"], 300, "{stats}");
    assert_eq!(stats["queueLength"], 0, "{stats}");
}

#[tokio::test]
async fn a_run_from_one_address_is_throttled_and_reports_who_never_joined() {
    let app = spawn_app_with(Backend::Redis, default_settings()).await;
    app.create("one-address").await;

    // 60 fans joining at once from one address, for 3 s: the server lets 10 through at once
    // and 5 a second after, so at most ~25 join however fast this machine is.
    let report = load(
        &app,
        &[
            "--show",
            "one-address",
            "--fans",
            "60",
            "--join-rate",
            "200",
            "--join-only",
            "--no-source-spread",
            "--duration",
            "3s",
        ],
    )
    .await;

    let joined = count(&report, "joined");
    assert_eq!(count(&report, "source_ips"), 1, "{report}");
    assert!((1..=30).contains(&joined), "{report}");
    assert_eq!(count(&report, "join_only"), joined, "{report}");
    // The rest never joined: counted as such, not as fans waiting in the queue.
    let (throttled, joining) = (count(&report, "throttled"), count(&report, "joining"));
    assert_eq!(throttled + joining, 60 - joined, "{report}");
    assert!(throttled >= 1, "{report}");
    assert!(count(&report, "join_throttled") >= throttled, "{report}");
    assert_eq!(count(&report, "unfinished"), 0, "{report}");
    assert_eq!(count(&report, "not_started"), 0, "{report}");
    assert_eq!(outcomes(&report), 60, "{report}");
    // The server's count agrees: only the fans reported joined are in its queue.
    let stats = app.stats("one-address").await;
    assert_eq!(stats["queueLength"], joined, "{stats}");
}

#[tokio::test]
async fn joins_the_server_sheds_are_asked_again_when_told_and_every_fan_joins() {
    let app = spawn_app_with(
        Backend::Redis,
        Config {
            // One crowd request at work at a time: while one join waits on the store, the
            // others are shed (503 with Retry-After).
            max_store_calls: 1,
            ..default_settings()
        },
    )
    .await;
    app.create("shed").await;
    let run = load(
        &app,
        &[
            "--show",
            "shed",
            "--fans",
            "40",
            "--join-rate",
            "4",
            "--join-only",
            "--no-source-spread",
            "--duration",
            "90s",
        ],
    );
    // Once joins flow, Redis holds every write for 4 s: the join then sent waits at work,
    // and those after it (4 a second) are shed until the pause ends by itself.
    let pause = async {
        wait_for_stats(&app, "shed", Duration::from_secs(60), |s| s["joined"] != 0).await;
        let redis = app.redis.as_ref().unwrap().server();
        redis.pause_writes(4000).await;
    };
    let (report, ()) = tokio::join!(run, pause);

    // Shed joins were told when to come back, waited, and joined: none failed.
    assert!(count(&report, "join_shed") >= 1, "{report}");
    assert_eq!(count(&report, "joined"), 40, "{report}");
    assert_eq!(count(&report, "join_only"), 40, "{report}");
    assert_eq!(count(&report, "join_failed"), 0, "{report}");
    assert_eq!(outcomes(&report), 40, "{report}");
    let stats = app.stats("shed").await;
    assert_eq!(stats["joined"], 40, "{stats}");
    assert_eq!(stats["queueLength"], 40, "{stats}");
}

#[tokio::test]
async fn a_stream_the_server_sheds_is_told_when_to_come_back_over_sse_and_websocket() {
    use waiting_room::model::ShowId;
    use waiting_room_client::follow::{FollowError, PushStream};

    let app = spawn_app_with(
        Backend::Redis,
        Config {
            max_store_calls: 1,
            ..default_settings()
        },
    )
    .await;
    app.create("streams").await;
    let ticket: uuid::Uuid = app.join_ok("streams").await["ticketId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let show: ShowId = "streams".parse().unwrap();
    // Redis holds every write: a join goes to work and stays, and the one place is taken.
    let redis = app.redis.as_ref().unwrap().server();
    redis.pause_writes(20_000).await;
    let stuck = {
        let client = app.client.clone();
        let url = app.url(&waiting_room::protocol::routes::show(
            waiting_room::protocol::routes::JOIN,
            "streams",
        ));
        tokio::spawn(async move { client.post(url).send().await })
    };
    let url = base(&app);
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let shed = loop {
        match PushStream::sse(&client, &url, &show, ticket, None).await {
            Err(FollowError::Busy(wait)) => break wait,
            _ => {
                assert!(tokio::time::Instant::now() < deadline, "never shed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert!((1..=5).contains(&shed.as_secs()), "{shed:?}");
    match PushStream::ws(&url, &show, ticket, None).await {
        Err(FollowError::Busy(wait)) => assert!((1..=5).contains(&wait.as_secs()), "{wait:?}"),
        Err(e) => panic!("the WebSocket was refused otherwise: {e}"),
        Ok(_) => panic!("the WebSocket opened past the bound"),
    }
    // Once the store answers, the stuck join ends and the streams open.
    redis.unpause().await;
    stuck.await.unwrap().unwrap();
    let opened = PushStream::sse(&client, &url, &show, ticket, None).await;
    assert!(opened.is_ok(), "{:?}", opened.err());
}
