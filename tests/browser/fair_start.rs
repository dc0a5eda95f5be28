//! A scheduled on-sale in the browser: the pre-queue counts down to the opening, then shows
//! the place the draw gave.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use waiting_room::protocol::routes;

use crate::helpers::*;
use crate::support::unique_show;

#[tokio::test]
async fn the_pre_queue_counts_down_then_shows_the_drawn_place() {
    let app = spawn_app().await;
    let show = unique_show("draw");
    // A minute ahead, so that the page surely joins the pre-queue however slowly the browser
    // starts; the opening is then moved closer, which the page is pushed.
    let in_secs =
        |s: i64| (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(s)).to_string();
    let opens_at = in_secs(60);
    let made = app
        .as_operator(Method::PUT, &routes::show(routes::SHOW, &show))
        .json(&json!({"opensAt": opens_at, "admitPerSecond": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    app.join_many(&show, 199).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "prequeue", SHORT).await;
        assert_eq!(client.text_of("#arrival").await.as_deref(), Some("200"));
        let seconds = |text: Option<String>| {
            let text = text.expect("a countdown");
            let (m, s) = text.split_once(':').expect("m:ss");
            m.parse::<u64>().unwrap() * 60 + s.parse::<u64>().unwrap()
        };
        let first = seconds(client.text_of("#opens-in").await);
        assert!((4..=60).contains(&first), "{first}");
        screenshot(&client, "pre-queue").await;
        eventually("the countdown to move", SHORT, || async {
            (seconds(client.text_of("#opens-in").await) < first).then_some(())
        })
        .await;
        // The operator brings the opening forward: the page is told at once.
        let moved = app
            .as_operator(Method::PUT, &routes::show(routes::CONFIG, &show))
            .json(&json!({ "opensAt": in_secs(3) }))
            .send()
            .await
            .unwrap();
        assert_eq!(moved.status(), 200);
        eventually("the moved opening", SHORT, || async {
            (seconds(client.text_of("#opens-in").await) <= 3).then_some(())
        })
        .await;

        // The opening: the page shows the drawn place by itself, as the server has it (or,
        // drawn among the very first, the admission).
        let state = eventually("the drawn place", Duration::from_secs(15), || async {
            let state = client.attr_of("#wait", "data-state").await?;
            ["waiting", "admitted"]
                .contains(&state.as_str())
                .then_some(state)
        })
        .await;
        let ticket = client
            .eval(&format!(
                "return JSON.parse(localStorage.getItem('waiting-room:ticket:{show}')).ticketId;"
            ))
            .await;
        let ticket = ticket.as_str().unwrap().to_owned();
        let polled = app.ticket_json(&show, &ticket).await;
        if state == "admitted" {
            // Drawn among the very first: the server has it admitted too.
            assert_eq!(polled["status"], "ADMITTED", "{polled}");
            return;
        }
        let shown = shown_position(&client).await.expect("a place");
        let polled = polled["position"].as_u64().expect("waiting");
        assert!(
            polled <= shown && shown <= polled + 1,
            "shown {shown}, polled {polled} (one tick apart at most)"
        );
        screenshot(&client, "drawn-place").await;
    })
    .await;
}
