//! Runs that must not start: results it cannot write, a show nobody created, a server off
//! loopback, a missing token, shares or changes that cannot be. Nothing is sent to the server.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use waiting_room_client::follow::Transport;
use waiting_room_client::load::{self, LoadArgs};

use super::{args, assert_untouched, clean_up};
use crate::helpers::*;

#[tokio::test]
async fn a_run_whose_results_cannot_be_written_fails_before_it_starts() {
    let app = spawn_app().await;
    app.create("unwritable").await;
    let unwritable = || Some(PathBuf::from("/nonexistent-dir/eta.csv"));
    for args in [
        LoadArgs {
            csv: PathBuf::from("/nonexistent-dir/timeline.csv"),
            ..args(&app, "unwritable", 5, Transport::Sse)
        },
        LoadArgs {
            eta_csv: unwritable(),
            ..args(&app, "unwritable", 5, Transport::Sse)
        },
    ] {
        let err = load::run(&args, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("cannot write"), "{err}");
        clean_up(&args);
    }
    // Nothing was sent: not the rate, not the open, not a join.
    assert_untouched(&app, "unwritable").await;
}

/// A show as `create` left it: closed, the server's default rate, nobody joined.

#[tokio::test]
async fn a_run_against_a_show_nobody_created_fails_before_it_starts() {
    let app = spawn_app().await;
    for join_only in [false, true] {
        let args = LoadArgs {
            open: false,
            admit_per_second: None,
            join_only,
            ..args(&app, "nobody", 5, Transport::Sse)
        };
        let err = tokio::time::timeout(
            Duration::from_secs(5),
            load::run(&args, CancellationToken::new()),
        )
        .await
        .expect("it fails at once")
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("show nobody does not exist. An operator creates it (PUT /orders/waiting-room/nobody), or run with --open"),
            "{err}"
        );
        assert!(err.contains(shown(&base(&app))), "names the server: {err}");
        clean_up(&args);
    }
    // Its joins were never sent, and nothing created the show.
    assert!(!exists(&app, "nobody").await);

    // `--admit-per-second` alone creates it, closed, with that rate, and fans can join.
    let args = LoadArgs {
        open: false,
        admit_per_second: Some(7),
        join_only: true,
        ..args(&app, "nobody", 5, Transport::Sse)
    };
    let report = load::run(&args, CancellationToken::new()).await.unwrap();
    assert_eq!(report.joined, 5, "{report}");
    let stats = app.stats("nobody").await;
    assert_eq!(stats["open"], false, "{stats}");
    assert_eq!(stats["admitPerSecond"], 7, "{stats}");
    assert_eq!(stats["queueLength"], 5, "{stats}");
    clean_up(&args);
}

#[tokio::test]
async fn a_run_refuses_servers_off_loopback_and_opening_without_a_token() {
    let app = spawn_app().await;
    app.create("s1").await;
    let mut remote = args(&app, "s1", 1, Transport::Sse);
    remote.urls = vec!["http://192.0.2.1:8080".parse().unwrap()];
    let err = load::run(&remote, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("loopback"), "{err}");

    let tokenless = LoadArgs {
        admin_token: None,
        ..args(&app, "s1", 1, Transport::Sse)
    };
    let err = load::run(&tokenless, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("operator token"), "{err}");
    clean_up(&tokenless);
    // Nothing was sent: the show was never opened nor joined.
    assert_untouched(&app, "s1").await;
}

/// A run whose admitted fans buy, abandon or stay: with a 2 s admission, stayers are told
/// `expired` within the run.

#[tokio::test]
async fn buy_and_abandon_cannot_add_up_to_more_than_everyone() {
    let app = spawn_app().await;
    app.create("greedy").await;
    let args = LoadArgs {
        buy: Some(0.75),
        abandon: Some(0.5),
        ..args(&app, "greedy", 5, Transport::Sse)
    };
    let err = load::run(&args, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("add up to more than 1"), "{err}");
    assert_untouched(&app, "greedy").await;
    clean_up(&args);
}

#[tokio::test]
async fn a_rate_change_needs_the_token_and_a_time_within_the_run() {
    let app = spawn_app().await;
    app.create("changes").await;
    let change = |s: &str| vec![s.parse().unwrap()];
    for (args, says) in [
        (
            LoadArgs {
                admin_token: None,
                open: false,
                admit_per_second: None,
                rate_changes: change("1s:5"),
                ..args(&app, "changes", 5, Transport::Sse)
            },
            "--rate-change needs the operator token",
        ),
        (
            LoadArgs {
                rate_changes: change("30s:5"),
                ..args(&app, "changes", 5, Transport::Sse)
            },
            "--rate-change at 30s comes after the run's --duration of 30s",
        ),
    ] {
        let err = load::run(&args, CancellationToken::new())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
        clean_up(&args);
    }
    assert_untouched(&app, "changes").await;
}
