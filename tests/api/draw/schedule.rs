//! What an operator may set about a fair start, and when; a beacon named in advance holds
//! the draw until its value is given.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use waiting_room::draw;
use waiting_room::protocol::routes;

use super::{draw_of, draw_when, drawn, in_secs, make, scheduled};
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;

both_stores!(
    schedules_refuse_what_does_not_fit,
    a_beacon_named_in_advance_holds_the_draw_until_its_value,
);

async fn schedules_refuse_what_does_not_fit(backend: Backend) {
    let app = spawn_app_with(backend, config(5, Duration::from_secs(300))).await;
    for (body, why) in [
        (json!({"opensAt": "tomorrow"}), "opensAt"),
        (json!({"opensAt": "2020-01-01T00:00:00Z"}), "future"),
        (json!({"opensAt": in_secs(400.0 * 86400.0)}), "a year"),
        (
            json!({"opensAt": in_secs(60.0), "drawBeacon": ""}),
            "drawBeacon",
        ),
        (
            json!({"opensAt": in_secs(60.0), "drawBeacon": "a\nb"}),
            "drawBeacon",
        ),
        (json!({"opensAt": 17}), "JSON body"),
    ] {
        let (status, body) = make(&app, "bad", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["message"].as_str().unwrap().contains(why), "{body}");
    }
    // Nothing was made by the refused calls.
    assert_eq!(
        app.get(&routes::show(routes::DRAW, "bad")).await.status(),
        404
    );

    // A show fans joined in arrival order cannot be turned into a draw afterwards.
    app.create("plain").await;
    app.join_ok("plain").await;
    let late = app
        .put_config("plain", &json!({"opensAt": in_secs(60.0)}))
        .await;
    assert_eq!(late.status(), StatusCode::CONFLICT);
    let no_draw = app.get(&routes::show(routes::DRAW, "plain")).await;
    assert_eq!(no_draw.status(), StatusCode::NOT_FOUND);
    let body: serde_json::Value = no_draw.json().await.unwrap();
    assert!(
        body["message"].as_str().unwrap().contains("has no draw"),
        "{body}"
    );
    // Nor can an open one.
    app.open("live").await;
    let open = app
        .put_config("live", &json!({"opensAt": in_secs(60.0)}))
        .await;
    assert_eq!(open.status(), StatusCode::CONFLICT);

    // A scheduled show opens by itself, not by hand; its opening may move until it closes.
    scheduled(&app, "later", 60.0, 5).await;
    let commitment = draw_of(&app, "later").await.commitment;
    let opened = app.operator(routes::OPEN, "later").await;
    assert_eq!(opened.status(), StatusCode::CONFLICT);
    let moved = app
        .put_config("later", &json!({"opensAt": in_secs(120.0)}))
        .await;
    assert_eq!(moved.status(), StatusCode::OK);
    let after = draw_of(&app, "later").await;
    assert_eq!(
        after.commitment, commitment,
        "moving the opening keeps the seed"
    );
    // A beacon's value before the pre-queue closed would let its publisher steer the draw.
    let early = app
        .put_config(
            "later",
            &json!({"drawBeacon": "drand quicknet round 1", "drawBeaconValue": "ab"}),
        )
        .await;
    assert_eq!(early.status(), StatusCode::CONFLICT);

    // The audit's paging is checked.
    for bad in [
        "limit=0",
        "limit=1001",
        "after=x",
        "after=1-",
        "after=%2B1-0",
        "page=2",
    ] {
        let r = app
            .get(&format!("{}?{bad}", routes::show(routes::AUDIT, "later")))
            .await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    let r = app.get(&routes::show(routes::AUDIT, "nobody")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = app.get(&routes::show(routes::DRAW, "nobody")).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

async fn a_beacon_named_in_advance_holds_the_draw_until_its_value(backend: Backend) {
    let app = spawn_app_with(backend, config(5, Duration::from_secs(300))).await;
    let (status, _) = make(
        &app,
        "beacon",
        json!({"opensAt": in_secs(1.5), "drawBeacon": "drand quicknet round 99"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let early = app.join_ok("beacon").await;
    // Closed at its time (the admitter's first tick after it), waiting for the beacon: no
    // place yet, the countdown at zero.
    let d = draw_when(&app, "beacon", Duration::from_secs(10), "closed", |d| {
        serde_json::to_value(d.state).unwrap() == "closed"
    })
    .await;
    assert_eq!(d.participants, Some(1));
    assert_eq!(d.beacon.as_deref(), Some("drand quicknet round 99"));
    let t = app
        .ticket_json("beacon", early["ticketId"].as_str().unwrap())
        .await;
    assert_eq!(t["preQueue"], true, "{t}");
    assert_eq!(t["opensInSeconds"], 0, "{t}");
    // Who joins now queues behind the pre-queue.
    let late = app.join_ok("beacon").await;
    assert_eq!(late["position"], 2, "{late}");
    // Too late to name another beacon; the value is now taken.
    let rename = app
        .put_config("beacon", &json!({"drawBeacon": "another"}))
        .await;
    assert_eq!(rename.status(), StatusCode::CONFLICT);
    let value = "8f1a6c0e2b5d4f3a";
    let given = app
        .put_config("beacon", &json!({"drawBeaconValue": value}))
        .await;
    assert_eq!(given.status(), StatusCode::OK);
    let d = drawn(&app, "beacon", Duration::from_secs(4)).await;
    assert_eq!(d.beacon_value.as_deref(), Some(value));
    assert_eq!(
        d.draw_key.as_deref(),
        Some(
            draw::draw_key(
                d.seed.as_deref().unwrap(),
                d.participants_digest.as_deref().unwrap(),
                value
            )
            .as_str()
        )
    );
    let again = app
        .as_operator(Method::PUT, &routes::show(routes::CONFIG, "beacon"))
        .json(&json!({"drawBeaconValue": "other"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        again.status(),
        StatusCode::CONFLICT,
        "the value is fixed once drawn"
    );
    app.wait_admitted(
        "beacon",
        early["ticketId"].as_str().unwrap(),
        Duration::from_secs(4),
    )
    .await;
}
