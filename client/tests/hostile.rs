//! The clients against a hostile server: every loop and every wait a server can drive is
//! bounded. A real HTTP server (axum on a free port) answers what no waiting room would: a
//! draw of 2^50 participants, an audit whose next page is itself, a tick admitting to the end
//! of u64, a proof of work of 256 bits. Each run must end at once, and say why.

use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::json;
use waiting_room::protocol::routes;

/// Serves `app` on a free loopback port until the test ends.
async fn hostile(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// Runs the client with `args`, bounded in time: its exit code and output.
async fn client(args: &[&str]) -> (i32, String, Duration) {
    let started = Instant::now();
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the client ends by itself against a hostile server")
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text, started.elapsed())
}

fn no_draw() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"status": 404, "error": "Not Found", "message": "show x has no draw"})),
    )
}

#[tokio::test]
async fn verify_refuses_a_draw_of_two_to_the_fifty_participants() {
    let seed = "00".repeat(32);
    let draw = json!({
        "showId": "big", "opensAt": "2026-12-01T10:00:00Z", "state": "drawn",
        "algorithm": "feistel", "commitment": waiting_room::draw::commitment(&seed),
        "participants": 1u64 << 50, "participantsDigest": "00", "seed": seed,
        "drawKey": "00", "drawnAt": "2026-12-01T10:00:00Z",
    });
    let app = Router::new()
        .route(
            &routes::show(routes::DRAW, "big"),
            get(move || async move { axum::Json(draw.clone()) }),
        )
        .route(
            &routes::show(routes::AUDIT, "big"),
            get(|| async { axum::Json(json!({"records": [], "next": null})) }),
        );
    let url = hostile(app).await;
    let (code, text, took) = client(&["verify", "--url", &url, "--show", "big"]).await;
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("participants"), "{text}");
    assert!(took < Duration::from_secs(20), "hashed them all? {took:?}");
}

#[tokio::test]
async fn verify_stops_on_an_audit_that_pages_forever_or_wraps() {
    let app = Router::new()
        .route(
            &routes::show(routes::DRAW, "loop"),
            get(|| async { no_draw() }),
        )
        .route(
            &routes::show(routes::AUDIT, "loop"),
            get(|| async { axum::Json(json!({"records": [], "next": "1-0"})) }),
        )
        .route(
            &routes::show(routes::DRAW, "wrap"),
            get(|| async { no_draw() }),
        )
        .route(
            &routes::show(routes::AUDIT, "wrap"),
            get(|| async {
                axum::Json(json!({"records": [{
                    "id": "1-0", "kind": "tick", "atMs": 1000, "fence": 1, "epoch": 1,
                    "rate": 10, "admitted": [[1, u64::MAX]],
                }], "next": null}))
            }),
        );
    let url = hostile(app).await;
    let (code, text, _) = client(&["verify", "--url", &url, "--show", "loop"]).await;
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("again"), "{text}");
    let (code, text, _) = client(&["verify", "--url", &url, "--show", "wrap"]).await;
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("admitted at a rate of 10"), "{text}");
}

#[tokio::test]
async fn fan_refuses_a_proof_of_work_no_machine_can_find() {
    let app = Router::new()
        .route(
            &routes::show(routes::JOIN, "pow"),
            post(|| async {
                (
                    StatusCode::PRECONDITION_REQUIRED,
                    axum::Json(json!({"status": 428, "error": "Precondition Required",
                        "message": "this show asks a proof of work (256 bits)"})),
                )
            }),
        )
        .route(
            &routes::show(routes::CHALLENGE, "pow"),
            post(|| async {
                axum::Json(json!({"challenge": "c1.x", "bits": 256, "expiresInSeconds": 60}))
            }),
        );
    let url = hostile(app).await;
    let (code, text, took) = client(&["fan", "--url", &url, "--show", "pow"]).await;
    assert_eq!(code, 5, "{text}");
    assert!(text.contains("256 bits"), "{text}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}
