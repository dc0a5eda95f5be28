//! `waiting-room-client apply` and `export` against a real server: a file made true, a
//! second apply that changes nothing, a dry run that changes nothing, only what differs sent,
//! the file written back, and files or settings the server would refuse named before or as
//! they are.

use std::process::Command;

use serde_json::json;
use waiting_room_client::shows::{self, Change, Server, ServerArgs};

use crate::helpers::*;

fn server(app: &Api) -> Server {
    Server::new(&ServerArgs {
        url: base(app),
        admin_token: TOKEN.to_owned(),
    })
    .unwrap()
}

const FILE: &str = r#"
# Two shows, one with a schedule.
shows:
  fest:
    admitPerSecond: 7
    stock: 100
    events:
      - name: presale
        startsAt: 2027-06-01T09:00:00Z
        endsAt: 2027-06-01T10:00:00Z
        settings: {admitPerSecond: 3, joinChallengeBits: 4}
      - name: general
        startsAt: 2027-06-01T10:00:00Z
        settings: {admitPerSecond: 12}
  tour:
    maxActiveBuyers: 5
"#;

#[tokio::test]
async fn apply_makes_the_server_match_the_file_and_a_second_apply_changes_nothing() {
    let app = spawn_app().await;
    app.configure("other", json!({"admitPerSecond": 2})).await;
    let file = shows::parse(FILE).unwrap();
    let server = server(&app);

    // Dry: both would be made, neither is.
    let dry = shows::apply(&server, &file, true).await.unwrap();
    assert!(dry.changed());
    assert!(matches!(dry.changes[0], (ref s, Change::Create(_)) if s == "fest"));
    assert!(!exists(&app, "fest").await && !exists(&app, "tour").await);
    assert_eq!(dry.left_alone, ["other"]);
    let said = &dry.lines(true)[0];
    assert!(
        said.starts_with("fest: would be made with ")
            && ["admitPerSecond", "stock", "events"]
                .iter()
                .all(|f| said.contains(f)),
        "{said}"
    );

    let made = shows::apply(&server, &file, false).await.unwrap();
    assert!(made.changed());
    let fest = app.stats("fest").await;
    assert_eq!(fest["admitPerSecond"], 7, "{fest}");
    assert_eq!(fest["settings"]["events"][1]["name"], "general", "{fest}");
    assert_eq!(app.stats("tour").await["maxActiveBuyers"], 5);

    // Again: nothing differs, nothing is sent.
    let again = shows::apply(&server, &file, false).await.unwrap();
    assert!(!again.changed(), "{:?}", again.changes);
    assert_eq!(
        again.lines(false),
        [
            "fest: as in the file",
            "tour: as in the file",
            "other: not in the file, left alone"
        ]
    );

    // One setting changed in the file: that one is sent, with what the server had.
    let edited = shows::parse(&FILE.replace("admitPerSecond: 7", "admitPerSecond: 9")).unwrap();
    let once = shows::apply(&server, &edited, false).await.unwrap();
    assert_eq!(
        once.changes[0].1,
        Change::Update(vec![("admitPerSecond".into(), Some(json!(7)), json!(9))])
    );
    assert_eq!(once.changes[1].1, Change::Same);
    assert_eq!(app.stats("fest").await["admitPerSecond"], 9);

    // Written back: the file's shows as applied, and the one it left alone.
    let exported = shows::export(&server).await.unwrap();
    assert_eq!(exported.shows["fest"], edited.shows["fest"]);
    assert_eq!(exported.shows["tour"], edited.shows["tour"]);
    assert_eq!(exported.shows["other"].admit_per_second, Some(2));
    // And taken back as it is: nothing to change.
    let text = yaml_serde::to_string(&exported).unwrap();
    let round = shows::apply(&server, &shows::parse(&text).unwrap(), false)
        .await
        .unwrap();
    assert!(!round.changed(), "{:?}", round.changes);
    app.stop().await;
}

#[tokio::test]
async fn files_and_settings_the_server_would_refuse_are_named() {
    let app = spawn_app().await;
    let server = server(&app);
    // Before anything is sent: a misspelt setting, a show id the server cannot take.
    let misspelt = shows::parse("shows:\n  fest:\n    admitPerSec: 3\n").unwrap_err();
    assert!(
        format!("{misspelt:#}").contains("admitPerSec"),
        "{misspelt:#}"
    );
    let bad_id = shows::parse("shows:\n  \"a/b\": {}\n").unwrap_err();
    assert!(format!("{bad_id:#}").contains("a/b"), "{bad_id:#}");
    let not_a_file = shows::parse("- just\n- a list\n").unwrap_err();
    assert!(!format!("{not_a_file:#}").is_empty());

    // The server's refusal, in its words, names the show; what came before it stays made.
    let file = shows::parse(
        "shows:\n  a-good: {admitPerSecond: 4}\n  b-bad: {admitPerSecond: 0}\n  c-after: {}\n",
    )
    .unwrap();
    let refused = shows::apply(&server, &file, false).await.unwrap_err();
    let said = format!("{refused:#}");
    assert!(
        said.contains("b-bad") && said.contains("admitPerSecond"),
        "{said}"
    );
    assert!(exists(&app, "a-good").await);
    assert!(!exists(&app, "c-after").await);
    app.stop().await;
}

/// The real binary: `export` writes the file `apply` takes, with the token from the
/// environment, and `apply --dry-run` prints what it would do.
#[tokio::test]
async fn the_binary_exports_and_applies_with_the_token_from_the_environment() {
    let app = spawn_app().await;
    app.configure("hall", json!({"admitPerSecond": 6, "maxQueueLength": 500}))
        .await;
    let dir = std::env::temp_dir().join(format!("wr-shows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shows.yaml");
    let url = base(&app).to_string();
    // Run off the runtime: the server answers on it meanwhile.
    let out = tokio::task::spawn_blocking({
        let path = path.clone();
        move || {
            run(&url, &["export", "--out", path.to_str().unwrap()]);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.contains("hall:") && text.contains("maxQueueLength: 500"),
                "{text}"
            );
            std::fs::write(
                &path,
                text.replace("admitPerSecond: 6", "admitPerSecond: 8"),
            )
            .unwrap();
            run(&url, &["apply", path.to_str().unwrap(), "--dry-run"])
        }
    })
    .await
    .unwrap();
    assert_eq!(out, "hall: admitPerSecond would change 6 → 8\n");
    // Dry: nothing changed.
    assert_eq!(app.stats("hall").await["admitPerSecond"], 6);
    std::fs::remove_dir_all(&dir).ok();
    app.stop().await;
}

/// The client binary with `args` against `url`, the operator token in its environment: its
/// standard output, once it succeeded.
fn run(url: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_waiting-room-client"))
        .args(args)
        .args(["--url", url])
        .env("ADMIN_TOKEN", TOKEN)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {text}{err}");
    text
}

/// Lanes in the file, and their codes by file reference: sent once, and a second apply adds
/// none (the spent codes stay spent).
#[tokio::test]
async fn apply_sends_a_shows_codes_once() {
    let app = spawn_app().await;
    let dir = std::env::temp_dir().join(format!("wr-apply-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("presale.csv");
    std::fs::write(
        &csv,
        "code,lane,uses\nPRESALE-0001,presale\nPRESALE-0002,presale,2\n",
    )
    .unwrap();
    let text = format!(
        "shows:\n  fest:\n    lanes: [{{name: presale, share: 80}}]\ncodes:\n  fest: {}\n",
        csv.display()
    );
    let file = shows::parse(&text).unwrap();
    let server = server(&app);
    let dry = shows::apply(&server, &file, true).await.unwrap();
    assert!(
        dry.lines(true)
            .iter()
            .any(|l| l.starts_with("fest: codes would be sent"))
    );
    let made = shows::apply(&server, &file, false).await.unwrap();
    assert_eq!(made.codes[0].counts, Some((2, 0)));
    let stats = app.stats("fest").await;
    assert_eq!(stats["settings"]["lanes"][0]["share"], 80, "{stats}");
    let again = shows::apply(&server, &file, false).await.unwrap();
    assert!(!again.changed(), "{:?} {:?}", again.changes, again.codes);
    assert_eq!(again.codes[0].counts, Some((0, 2)));
    // A file with a bad line: named, the rest added.
    std::fs::write(&csv, "PRESALE-0003,presale\nbad line\n").unwrap();
    let refused = shows::apply(&server, &file, false).await.unwrap_err();
    assert!(format!("{refused:#}").contains("line 2"), "{refused:#}");
    std::fs::remove_dir_all(&dir).unwrap();
    app.stop().await;
}
