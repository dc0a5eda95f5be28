//! `waiting-room-client fan` against real servers: as a library call and as the real binary.

mod away;
mod failures;

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;
use waiting_room_client::fan::{self, FanArgs};
use waiting_room_client::follow::Transport;

use crate::helpers::*;

/// Arrange 30 fans ahead at 20 a second in a show that is created but not open, start the
/// fan, open the show once it has joined: it must be told 31 and that the show is not open
/// yet, then 31 again once it opens (the same place, but the queue now moves), 11 after the
/// first tick, and admitted after the second. Rate changes while closed tell no wait (nobody
/// announced an opening), so the lines read the same: those print nothing.
async fn fan_is_pushed_its_place_then_admitted(transport: Transport) {
    let app = spawn_app().await;
    let show_name = format!("fan-{}", transport.name());
    app.create(&show_name).await;
    for _ in 0..30 {
        app.join_ok(&show_name).await;
    }
    let out = Output::default();
    let args = FanArgs::new(vec![base(&app)], show(&show_name), transport);
    let fan = tokio::spawn({
        let mut out = out.clone();
        async move { fan::run(&args, &mut out).await }
    });
    wait_for_stats(&app, &show_name, Duration::from_secs(5), |s| {
        s["queueLength"] == 31
    })
    .await;
    out.wait_for("waiting", Duration::from_secs(5)).await;
    // Two rate changes: no wait is told before the opening, so nothing new to print.
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
        lines[2].ends_with("position 31 · not open yet"),
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
    assert_eq!(admission.server, base(&app));
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

/// The client binary reads none of the server's settings: a shell set up to run a server
/// (here with settings no server would start with) runs the fan all the same.
#[tokio::test]
async fn the_binary_follows_over_websocket_and_exits_0_once_admitted() {
    let app = spawn_app().await;
    app.open("bin-show").await;
    let output = tokio::time::timeout(
        Duration::from_secs(15),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
            .args([
                "fan",
                "--url",
                base(&app).as_str(),
                "--show",
                "bin-show",
                "--ws",
            ])
            .env("RUST_LOG", "warn")
            .env("ADMIT_PER_SECOND", "0")
            .env("BIND", "not-an-address")
            .env("REDIS_URL", "not-a-url")
            .env("ADMISSION_TTL", "forever")
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
        tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
            .args([
                "fan",
                "--url",
                base(&app).as_str(),
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
        tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
            .args(["fan", "--url", base(&app).as_str(), "--show", "nobody"])
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
        !exists(&app, "nobody").await,
        "a refused join creates nothing"
    );
}
