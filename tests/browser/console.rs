//! The operator console in a real browser: sign-in, live figures and chart, open, close and
//! rate changes.

use std::time::Duration;

use fantoccini::Client;
use serde_json::{Value, json};

use crate::helpers::*;

/// A figure on a show's card, as a number.
async fn figure(client: &Client, show: &str, name: &str) -> Option<u64> {
    client
        .text_of(&format!("[data-show='{show}'] [data-figure='{name}']"))
        .await?
        .replace(',', "")
        .parse()
        .ok()
}

#[tokio::test]
async fn an_operator_signs_in_opens_a_show_changes_its_rate_and_watches_the_chart() {
    let app = spawn_app().await;
    let show = app.queued_show("arena", 400).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        client.goto(&app.url("/admin")).await.unwrap();
        assert!(
            client.visible("#login").await,
            "the console asks for the token first"
        );
        assert!(!client.visible("#console").await);

        // A wrong token is refused, and nothing of the console shows.
        client.fill("#token", "not-the-token").await;
        client.click_on("#login-button").await;
        eventually("the refusal", SHORT, || async {
            client
                .text_of("#login-error")
                .await
                .filter(|t| t == "That token was refused.")
        })
        .await;
        assert!(!client.visible("#console").await);

        client.fill("#token", &app.admin_token).await;
        client.click_on("#login-button").await;
        eventually("the console", SHORT, || async {
            client.visible("#console").await.then_some(())
        })
        .await;
        eventually("the live feed", SHORT, || async {
            (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
        })
        .await;
        let kept = client
            .eval("return sessionStorage.getItem('waiting-room:operator-token')")
            .await;
        assert_eq!(
            kept,
            Value::String(app.admin_token.clone()),
            "the token is kept for the tab"
        );

        // Watch the closed show: its card shows the queue the API reports.
        client.fill("#watch-show", &show).await;
        client.click_on("#watch-button").await;
        let card = format!("[data-show='{show}']");
        eventually("the show's figures", SHORT, || async {
            figure(&client, &show, "queueLength")
                .await
                .filter(|q| *q == 400)
        })
        .await;
        assert_eq!(
            client.text_of(&format!("{card} .badge")).await.as_deref(),
            Some("Not open yet")
        );
        assert_eq!(figure(&client, &show, "admitPerSecond").await, Some(2));

        // Open it.
        client.click_on(&format!("{card} [data-action=open]")).await;
        eventually("the open badge", SHORT, || async {
            client
                .text_of(&format!("{card} .badge"))
                .await
                .filter(|b| b == "Open")
        })
        .await;
        assert_eq!(app.stats(&show).await["open"], true);

        // Change the rate through the form: the API and the card agree.
        client.fill(&format!("{card} .rate-form input"), "7").await;
        client.click_on(&format!("{card} .rate-form button")).await;
        eventually("the new rate on the card", SHORT, || async {
            figure(&client, &show, "admitPerSecond")
                .await
                .filter(|r| *r == 7)
        })
        .await;
        assert_eq!(app.stats(&show).await["admitPerSecond"], 7);
        let said = client
            .text_of(&format!("{card} .form-message"))
            .await
            .unwrap();
        assert!(said.starts_with("Rate set to 7 per second"), "got {said}");

        // The chart fills from the live feed: the queue falls and admissions show as bars.
        eventually("a chart with history", Duration::from_secs(40), || async {
            let samples: u64 = client
                .attr_of(&format!("{card} .chart-svg"), "data-samples")
                .await?
                .parse()
                .ok()?;
            let bars = client
                .eval(&format!(
                    "return document.querySelectorAll(\"{card} .admit-bar\").length"
                ))
                .await
                .as_u64()?;
            // Twenty seconds of history: enough to see the queue fall in the screenshot.
            (samples >= 20 && bars >= 10).then_some(())
        })
        .await;
        let queue = figure(&client, &show, "queueLength").await.unwrap();
        assert!(queue < 400, "admissions drain the queue, shown {queue}");
        let line = client
            .attr_of(&format!("{card} .queue-line"), "points")
            .await
            .unwrap();
        assert!(
            line.split(' ').count() >= 20,
            "one point per sample: {line}"
        );
        let label = client
            .attr_of(&format!("{card} .chart-svg"), "aria-label")
            .await
            .unwrap();
        assert!(
            label.contains("in the queue now"),
            "the chart describes itself: {label}"
        );
        client
            .eval("document.activeElement.blur(); window.scrollTo(0, 0); return null")
            .await;
        screenshot(&client, "console").await;

        // A reload keeps the session; signing out forgets the token.
        client.refresh().await.unwrap();
        eventually("the console after a reload", SHORT, || async {
            client
                .visible(&format!("{card} .badge"))
                .await
                .then_some(())
        })
        .await;
        assert!(!client.visible("#login").await);

        // Pause it: nobody is admitted, the gate stays shut.
        client
            .click_on(&format!("{card} [data-action=pause]"))
            .await;
        eventually("the paused badge", SHORT, || async {
            client
                .text_of(&format!("{card} .badge"))
                .await
                .filter(|b| b == "Paused")
        })
        .await;
        assert_eq!(app.stats(&show).await["phase"], "paused");

        // Lifting the gate asks first: declined, nothing changes.
        client
            .eval("window.confirm = () => false; return null")
            .await;
        client
            .click_on(&format!("{card} [data-action=close]"))
            .await;
        assert_eq!(app.stats(&show).await["phase"], "paused");
        client
            .eval("window.confirm = () => true; return null")
            .await;
        client
            .click_on(&format!("{card} [data-action=close]"))
            .await;
        eventually("the closed badge", SHORT, || async {
            client
                .text_of(&format!("{card} .badge"))
                .await
                .filter(|b| b == "Closed: no gate")
        })
        .await;
        assert_eq!(app.stats(&show).await["phase"], "closed");

        // End it with a reason, and set a stock on the way.
        client
            .fill(&format!("{card} .stock-form input"), "60000")
            .await;
        client.click_on(&format!("{card} .stock-form button")).await;
        eventually("the stock on the card", SHORT, || async {
            client
                .text_of(&format!("{card} [data-figure=stockWords]"))
                .await
                .filter(|t| t.contains("60,000"))
        })
        .await;
        assert_eq!(app.stats(&show).await["stock"], 60000);
        client
            .eval("window.prompt = () => 'postponed'; return null")
            .await;
        client.click_on(&format!("{card} [data-action=end]")).await;
        eventually("the ended badge", SHORT, || async {
            client
                .text_of(&format!("{card} .badge"))
                .await
                .filter(|b| b == "Ended: postponed")
        })
        .await;
        let stats = app.stats(&show).await;
        assert_eq!(
            (&stats["phase"], &stats["reason"]),
            (&json!("ended"), &json!("postponed"))
        );

        client.click_on("#logout").await;
        assert!(client.visible("#login").await);
        let kept = client
            .eval("return sessionStorage.getItem('waiting-room:operator-token')")
            .await;
        assert_eq!(kept, Value::Null, "signing out forgets the token");
    })
    .await;
}
