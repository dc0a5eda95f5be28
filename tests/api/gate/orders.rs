//! Orders through the gate: a hold is its show's, an admission buys once.

use reqwest::StatusCode;

use super::{admitted_fan, json_of};
use crate::support::app::spawn_app;
use crate::support::backend::Backend;

both_stores!(holds_belong_to_their_show, one_admission_places_one_order,);

async fn holds_belong_to_their_show(backend: Backend) {
    let app = spawn_app(backend).await;
    app.open("show-42").await;
    // A show whose gate is lifted (closed): anyone orders there.
    app.create("side").await;
    app.close("side").await;
    // The attacker orders hold-0100 on a show with no gate (a made-up one is 404 now).
    let made_up = app
        .order_as("made-up", "hold-0100", "mallory@example.com", None)
        .await;
    assert_eq!(made_up.status(), StatusCode::NOT_FOUND);
    json_of(made_up).await;
    let theirs = app
        .order_as("side", "hold-0100", "mallory@example.com", None)
        .await;
    assert_eq!(theirs.status(), StatusCode::CREATED);
    // The admitted fan of show-42 ordering hold-0100 gets an order of its own.
    let fan = admitted_fan(&app, "show-42").await;
    let mine = app.order("show-42", "hold-0100", Some(&fan)).await;
    assert_eq!(mine.status(), StatusCode::CREATED);
    let mine = json_of(mine).await;
    assert_eq!(mine["customerEmail"], "caio@example.com");
    assert_eq!(mine["showId"], "show-42");
    // The very same request again is the same order, 200.
    let again = app.order("show-42", "hold-0100", Some(&fan)).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(json_of(again).await["id"], mine["id"]);
    // Anything else on that hold is 409, and says nothing of the order.
    let other = app
        .order_as("side", "hold-0100", "eve@example.com", None)
        .await;
    assert_eq!(other.status(), StatusCode::CONFLICT);
    let body = json_of(other).await;
    let text = body.to_string();
    assert!(
        !text.contains("mallory") && !text.contains("caio"),
        "{text}"
    );
    assert_eq!(body["status"], 409);
    app.stop().await;
}

async fn one_admission_places_one_order(backend: Backend) {
    let app = spawn_app(backend).await;
    app.open("show-42").await;
    let fan = admitted_fan(&app, "show-42").await;
    let first = app.order("show-42", "hold-0101", Some(&fan)).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    let first = json_of(first).await;
    // Spent: the ticket is admitted no more and is handed no fresh pass.
    let after = app.ticket("show-42", &fan).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    let after = json_of(after).await;
    assert_eq!(after["status"], "UNKNOWN", "{after}");
    assert!(after.get("pass").is_none(), "{after}");
    for hold in ["hold-0102", "hold-0103"] {
        let more = app.order("show-42", hold, Some(&fan)).await;
        assert_eq!(more.status(), StatusCode::CONFLICT, "{hold}");
        let msg = json_of(more).await["message"].as_str().unwrap().to_owned();
        assert!(msg.contains("one admission"), "{msg}");
    }
    // Retries of the one order still answer it.
    let retry = app.order("show-42", "hold-0101", Some(&fan)).await;
    assert_eq!(retry.status(), StatusCode::OK);
    assert_eq!(json_of(retry).await["id"], first["id"]);
    // Racing twins: of many different holds sent at once with one admission, one wins.
    let other_fan = admitted_fan(&app, "show-42").await;
    let racers = (0..8).map(|i| {
        let hold = format!("race-{i}");
        let app = &app;
        let fan = other_fan.clone();
        async move {
            app.order_as("show-42", &hold, "ana@example.com", Some(&fan))
                .await
                .status()
        }
    });
    let statuses = futures::future::join_all(racers).await;
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::CREATED || *s == StatusCode::CONFLICT)
    );
    // Buying frees the place: the show counts no active buyer left.
    assert_eq!(app.stats("show-42").await["admittedValid"], 0);
    app.stop().await;
}
