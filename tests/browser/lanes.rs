//! Lanes and access codes in a real browser (docs/lanes.md): a fan types a presale code on the
//! waiting page and waits in its lane; the console shows each lane, who waits in it, its codes
//! and their uses left, and a schedule that changes the lanes.

use reqwest::Method;
use serde_json::json;
use waiting_room::protocol::routes;

use crate::console::{open_card, sign_in, watch};
use crate::helpers::*;
use crate::support::api::Api;

/// Adds `csv`'s codes to `show`.
async fn add_codes(api: &Api, show: &str, csv: &str) {
    let r = api
        .as_operator(Method::POST, &routes::show(routes::CODES, show))
        .header("content-type", "text/csv")
        .body(csv.to_owned())
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn a_fan_types_a_presale_code_and_waits_in_its_lane() {
    let app = spawn_app().await;
    let show = app.queued_show("presale", 3).await;
    app.configure(&show, json!({"lanes": [{"name": "presale", "share": 80}]}))
        .await;
    add_codes(&app, &show, "PRESALE-42,presale\n").await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        // A show that takes codes asks for one before joining: the page waits for the fan.
        eventually("the code field", SHORT, || async {
            client.visible("#access-code").await.then_some(())
        })
        .await;
        assert_eq!(
            client.attr_of("#wait", "data-state").await.as_deref(),
            Some("new")
        );
        client.fill("#access-code", "PRESALE-42").await;
        client
            .click_on("[data-panel='new'] .join-form button")
            .await;
        wait_for_state(&client, "waiting", SHORT).await;
        // First in its lane, though three fans of the general queue joined before.
        assert_eq!(shown_position(&client).await, Some(1));
        eventually("the lane named", SHORT, || async {
            client.text_of("#lane").await.filter(|l| l == "presale")
        })
        .await;
        assert!(client.visible("#lane-name").await);
        screenshot(&client, "waiting-in-a-lane").await;
    })
    .await;
}

#[tokio::test]
async fn the_console_shows_the_lanes_their_fans_and_codes_left() {
    let app = spawn_app().await;
    let show = app.queued_show("lanes", 2).await;
    let at =
        |secs: i64| (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs)).to_string();
    app.configure(
        &show,
        json!({
            "lanes": [{"name": "presale", "share": 80}],
            "events": [{"name": "fan club first", "startsAt": at(3600), "phase": "open",
                        "settings": {"lanes": [{"name": "fan-club", "priority": true}], "codesOnly": true}}],
        }),
    )
    .await;
    add_codes(
        &app,
        &show,
        "CODE-AAAA-1,presale,2\nCODE-BBBB-2,presale\nCLUB-0001,fan-club\n",
    )
    .await;
    let joined = app
        .client
        .post(app.url(&routes::show(routes::JOIN, &show)))
        .header(waiting_room::protocol::ACCESS_CODE_HEADER, "CODE-AAAA-1")
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), reqwest::StatusCode::ACCEPTED);

    with_browser(BrowserOptions::default(), move |client| async move {
        sign_in(&client, &app).await;
        watch(&client, &show).await;
        let card = open_card(&client, &show, ".lanes").await;
        let lane = |name: &str| format!("{card} .lanes [data-lane='{name}']");
        let cell = |name: &str, n: u32| format!("{} td:nth-child({n})", lane(name));
        // The presale lane: its share, its one fan, its two codes and the two uses left.
        eventually("the presale lane's codes", SHORT, || async {
            client
                .text_of(&cell("presale", 4))
                .await
                .filter(|t| t == "2")
        })
        .await;
        assert_eq!(
            client.text_of(&cell("presale", 2)).await.as_deref(),
            Some("80 % of the rate")
        );
        assert_eq!(
            client.text_of(&cell("presale", 3)).await.as_deref(),
            Some("1")
        );
        assert_eq!(
            client.text_of(&cell("presale", 5)).await.as_deref(),
            Some("2")
        );
        // The general queue, with the two fans who joined without a code.
        assert_eq!(
            client.text_of(&cell("general", 2)).await.as_deref(),
            Some("20 % of the rate")
        );
        assert_eq!(
            client.text_of(&cell("general", 3)).await.as_deref(),
            Some("2")
        );
        // A code's lane the show does not list now is said so.
        let club = client.text_of(&cell("fan-club", 2)).await.unwrap();
        assert!(club.contains("not listed"), "{club}");
        // The schedule's event that changes the lanes, in words.
        let event = client
            .text_of(&format!("{card} .timeline [data-event='1']"))
            .await
            .unwrap();
        assert!(
            event.contains("opens the sale")
                && event.contains("lanes fan-club (first)")
                && event.contains("codes only"),
            "{event}"
        );
    })
    .await;
}
