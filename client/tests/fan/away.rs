//! `fan --away-after`: the fan binary steps away and comes back, against a show whose
//! presence rules (docs/presence.md) keep an away fan's place for `awayHoldSeconds`, and
//! release it after.
//!
//! Fans ahead are held present by the test's own streams, so the fan's turn comes only ticks
//! after the show opens: it steps away (a second after following) before its turn can come.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use waiting_room::model::expired_message;

use crate::helpers::*;
use crate::support::sse::SseReader;

/// A show of `settings` with `ahead` fans in it, each held present by a stream of the test's
/// (kept open while the streams are).
async fn show_with_fans_ahead(
    app: &Api,
    name: &str,
    settings: serde_json::Value,
    ahead: usize,
) -> Vec<SseReader> {
    app.configure(name, settings).await;
    let mut streams = Vec::new();
    for ticket in app.join_many(name, ahead).await {
        streams.push(app.events(name, &ticket).await);
    }
    streams
}

/// The fan binary with `args`, its stdout readable line by line as it runs.
fn start_fan(args: &[&str]) -> (tokio::process::Child, Output, tokio::task::JoinHandle<()>) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
        .arg("fan")
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the client binary starts");
    let stdout = child.stdout.take().unwrap();
    let out = Output::default();
    let reader = tokio::spawn({
        let mut out = out.clone();
        async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = writeln!(out, "{line}");
            }
        }
    });
    (child, out, reader)
}

/// Runs the fan on `show` stepping away after 1 s for `away_for` seconds; opens the show once
/// it follows; its exit code, stdout lines and stderr.
async fn fan_away(app: &Api, show: &str, away_for: &str) -> (Option<i32>, Vec<String>, String) {
    let url = base(app);
    let (child, out, reader) = start_fan(&[
        "--url",
        url.as_str(),
        "--show",
        show,
        "--away-after",
        "1",
        "--away-for",
        away_for,
    ]);
    out.wait_for("following", Duration::from_secs(15)).await;
    app.open(show).await;
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the fan ends within a minute")
        .unwrap();
    reader.await.unwrap();
    (
        output.status.code(),
        out.lines(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn index_of(words: &[String], word: &str) -> usize {
    words
        .iter()
        .position(|w| w == word)
        .unwrap_or_else(|| panic!("no {word} line in {words:?}"))
}

/// Away 4 s, well inside a hold of a minute: its place is kept, and once back it follows the
/// same ticket again and is admitted (passed over while away and let in first, or in turn).
#[tokio::test]
async fn a_fan_back_within_the_hold_keeps_its_place_and_is_admitted() {
    let app = spawn_app().await;
    let show = "away-and-back";
    let settings = json!({"admitPerSecond": 1, "presenceGraceSeconds": 1, "awayHoldSeconds": 60});
    let _ahead = show_with_fans_ahead(&app, show, settings, 5).await;

    let (code, lines, stderr) = fan_away(&app, show, "4").await;
    assert_eq!(code, Some(0), "{lines:#?}\n{stderr}");
    let words = words(&lines);
    let (away, back) = (index_of(&words, "away"), index_of(&words, "back"));
    assert_eq!(words[..2], ["joined", "following"], "{lines:#?}");
    assert!(words[2..away].iter().all(|w| w == "waiting"), "{lines:#?}");
    assert!(lines[0].contains("position 6"), "{}", lines[0]);
    assert_eq!(back, away + 1, "{lines:#?}");
    assert!(
        lines[away].contains("back in 4 s") && lines[back].contains("after 4 s away"),
        "{lines:#?}"
    );
    // Following the same ticket again, over the same transport, until admitted.
    assert_eq!(words[back + 1], "following", "{lines:#?}");
    assert!(lines[back + 1].contains("over SSE"), "{}", lines[back + 1]);
    assert_eq!(words.last().unwrap(), "admitted", "{lines:#?}");
    assert_eq!(words.iter().filter(|w| *w == "away").count(), 1);
}

/// Away 6 s with a hold of 2 s: the place is released while the fan is away, and on coming
/// back it is told `EXPIRED` and why, and exits 8.
#[tokio::test]
async fn a_fan_away_longer_than_the_hold_is_told_its_place_was_released() {
    let app = spawn_app().await;
    let show = "away-too-long";
    let settings = json!({"admitPerSecond": 1, "presenceGraceSeconds": 1, "awayHoldSeconds": 2});
    // Its turn would come twenty ticks after the opening: long after the hold.
    let _ahead = show_with_fans_ahead(&app, show, settings, 20).await;

    let (code, lines, stderr) = fan_away(&app, show, "6").await;
    assert_eq!(code, Some(8), "{lines:#?}\n{stderr}");
    let words = words(&lines);
    let back = index_of(&words, "back");
    assert_eq!(index_of(&words, "away") + 1, back, "{lines:#?}");
    assert_eq!(
        words[back + 1..],
        ["following", "expired"],
        "told at once on coming back: {lines:#?}"
    );
    let why = expired_message(2);
    assert!(lines.last().unwrap().ends_with(&why), "{lines:#?}");
    assert!(
        stderr.contains("expired") && stderr.contains(&why),
        "{stderr}"
    );
}
