//! `waiting-room-client verify` against a real server: a scheduled show that opened by itself
//! is fair (exit 0, with the arrival's drawn place), a show nobody made cannot be read (exit 2).

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use waiting_room::protocol::routes;

use crate::helpers::*;

/// Runs `verify` with `args`: its exit code and output.
async fn verify(args: &[&str]) -> (i32, String) {
    client("verify", args).await
}

#[tokio::test]
async fn a_drawn_show_verifies_and_names_where_an_arrival_was_drawn() {
    let app = spawn_app().await;
    // Time for twenty joins before the opening, on a slow machine.
    let opens = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(3000);
    let opens = opens.to_string();
    let made = app
        .as_operator(Method::PUT, &routes::show(routes::SHOW, "fair"))
        .json(&json!({"opensAt": opens, "admitPerSecond": 5}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    app.join_many("fair", 20).await;
    tokio::time::sleep(Duration::from_millis(5200)).await;
    // Fans who joined after the opening queue behind the pre-queue.
    app.join_many("fair", 3).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;

    let url = base(&app).to_string();
    let (code, out) = verify(&["--url", &url, "--show", "fair", "--arrival", "7"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("FAIR: fair"), "{out}");
    assert!(out.contains("20 arrivals in the pre-queue"), "{out}");
    assert!(out.contains("arrival 7: drawn to place"), "{out}");

    let (code, out) = verify(&["--url", &url, "--show", "nobody"]).await;
    assert_eq!(code, 2, "{out}");
}
