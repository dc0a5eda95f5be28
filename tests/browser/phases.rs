//! The waiting page tells every phase of an on-sale as it happens: not open yet, paused (no
//! ETA), the gate lifted (sent on to the shop), ended (with the reason), in a real browser.

use reqwest::StatusCode;
use serde_json::json;
use waiting_room::protocol::routes;

use crate::helpers::*;

#[tokio::test]
async fn the_page_shows_pending_paused_ended_and_closed_as_they_happen() {
    let app = spawn_app().await;
    let show = app.queued_show("phases", 3).await;
    app.configure(&show, json!({"stock": 2, "maxActiveBuyers": 1}))
        .await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert!(client.visible("#not-open").await, "not open yet");
        let stock = eventually("the seats left", SHORT, || async {
            client
                .text_of("#stock-left")
                .await
                .filter(|t| !t.is_empty())
        })
        .await;
        assert!(stock.contains("2 seats"), "{stock}");
        assert!(stock.contains("3 fans ahead"), "{stock}");

        // Opened, then paused: the page says so and promises no wait.
        app.open(&show).await;
        let r = app.operator(routes::PAUSE, &show).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        eventually("the paused note", SHORT, || async {
            client.visible("#paused-note").await.then_some(())
        })
        .await;
        assert!(!client.visible("#not-open").await);
        let eta = client.text_of("#eta").await.unwrap();
        assert!(eta.contains("paused"), "no ETA while paused: {eta}");
        screenshot(&client, "phase-paused").await;

        // Ended: every waiting page is told why, at once.
        let end = routes::show(routes::END, &show);
        let r = app
            .as_operator(reqwest::Method::POST, &end)
            .json(&json!({"reason": "sold out"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        wait_for_state(&client, "ended", SHORT).await;
        let why = client.text_of("#ended-reason").await.unwrap();
        assert!(why.contains("sold out"), "{why}");
        screenshot(&client, "phase-ended").await;
        // A reload paints the end without a script's help.
        client.refresh().await.unwrap();
        wait_for_state(&client, "ended", SHORT).await;
        assert!(
            client
                .text_of("#ended-reason")
                .await
                .unwrap()
                .contains("sold out")
        );

        // Re-opened and the gate lifted: the page sends the fan on.
        app.open(&show).await;
        client.refresh().await.unwrap();
        wait_for_state(&client, "waiting", SHORT).await;
        app.close(&show).await;
        wait_for_state(&client, "closed", SHORT).await;
        assert!(client.visible("[data-panel=closed] a.button").await);
        screenshot(&client, "phase-closed").await;
    })
    .await;
}
