//! The operator console in a real browser: sign-in, the table of every show, a show's live
//! figures and chart, every setting (the form built from the settings schema), the fair
//! start's countdown, the ticket lookup, and the confirmation before each step that stops
//! admissions, lifts the gate or sends fans away.

use std::time::Duration;

use fantoccini::Client;
use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::protocol::routes;

use crate::helpers::*;
use crate::support::app::TestApp;

/// A figure on a show's card, as a number.
async fn figure(client: &Client, show: &str, name: &str) -> Option<u64> {
    client
        .text_of(&format!("[data-show='{show}'] [data-figure='{name}']"))
        .await?
        .replace(',', "")
        .parse()
        .ok()
}

/// Answers the confirmation dialog that must be open now; what it asked.
async fn confirm(client: &Client, yes: bool) -> String {
    eventually("the confirmation", SHORT, || async {
        client.visible("#confirm-dialog").await.then_some(())
    })
    .await;
    let asked = client.text_of("#confirm-text").await.unwrap_or_default();
    let button = if yes {
        "#confirm-ok"
    } else {
        "#confirm-cancel"
    };
    client.click_on(button).await;
    eventually("the dialog to close", SHORT, || async {
        (!client.visible("#confirm-dialog").await).then_some(())
    })
    .await;
    asked
}

/// Signs in with the app's token and waits for the live feed.
/// Opens `show`'s detail from its row of the table and waits for `inside` to show in its
/// card; the card's selector.
pub(crate) async fn open_card(client: &Client, show: &str, inside: &str) -> String {
    client
        .click_on(&format!("[data-row='{show}'] .row-details"))
        .await;
    let card = format!("[data-show='{show}']");
    eventually("the show's card", SHORT, || async {
        client
            .visible(&format!("{card} {inside}"))
            .await
            .then_some(())
    })
    .await;
    card
}

pub(crate) async fn sign_in(client: &Client, app: &TestApp) {
    client.goto(&app.url("/admin")).await.unwrap();
    client.fill("#token", &app.admin_token).await;
    client.click_on("#login-button").await;
    eventually("the live feed", SHORT, || async {
        (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
    })
    .await;
}

/// Watches `show` through the console's form.
pub(crate) async fn watch(client: &Client, show: &str) {
    client.fill("#watch-show", show).await;
    client.click_on("#watch-button").await;
    eventually("the show's row", SHORT, || async {
        client
            .text_of(&format!("[data-row='{show}'] [data-cell=queueLength]"))
            .await
            .filter(|q| q != "–")
    })
    .await;
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
        client
            .fill(&format!("{card} [name=admitPerSecond]"), "7")
            .await;
        client
            .click_on(&format!("{card} .settings-form [type=submit]"))
            .await;
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
        assert!(said.starts_with("Saved: admitPerSecond"), "got {said}");

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

        // Pause it, once confirmed: nobody is admitted, the gate stays shut.
        client
            .click_on(&format!("{card} [data-action=pause]"))
            .await;
        confirm(&client, true).await;
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
            .click_on(&format!("{card} [data-action=close]"))
            .await;
        let asked = confirm(&client, false).await;
        assert!(asked.contains("Lift the gate of"), "asked {asked}");
        assert_eq!(app.stats(&show).await["phase"], "paused");
        client
            .click_on(&format!("{card} [data-action=close]"))
            .await;
        confirm(&client, true).await;
        eventually("the closed badge", SHORT, || async {
            client
                .text_of(&format!("{card} .badge"))
                .await
                .filter(|b| b == "Closed: no gate")
        })
        .await;
        assert_eq!(app.stats(&show).await["phase"], "closed");

        // End it with a reason, and set a stock on the way.
        client.fill(&format!("{card} [name=stock]"), "60000").await;
        client
            .click_on(&format!("{card} .settings-form [type=submit]"))
            .await;
        eventually("the stock on the card", SHORT, || async {
            client
                .text_of(&format!("{card} [data-figure=stockWords]"))
                .await
                .filter(|t| t.contains("60,000"))
        })
        .await;
        assert_eq!(app.stats(&show).await["stock"], 60000);
        client.click_on(&format!("{card} [data-action=end]")).await;
        eventually("the end's dialog", SHORT, || async {
            client.visible("#confirm-reason").await.then_some(())
        })
        .await;
        client.fill("#confirm-reason", "postponed").await;
        confirm(&client, true).await;
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

#[tokio::test]
async fn the_console_tables_every_show_edits_any_setting_and_finds_a_ticket() {
    let app = spawn_app().await;
    // Five shows: two open at their own rates, one with seats, one scheduled, one closed.
    let arena = app.queued_show("arena", 1800).await;
    app.configure(&arena, json!({"admitPerSecond": 12, "stock": 20000}))
        .await;
    app.open(&arena).await;
    let club = app.queued_show("club", 240).await;
    app.configure(&club, json!({"admitPerSecond": 3})).await;
    app.open(&club).await;
    let stadium = app.queued_show("stadium", 0).await;
    let opens_at = jiff::Timestamp::now() + jiff::SignedDuration::from_mins(45);
    app.configure(
        &stadium,
        json!({"opensAt": opens_at.to_string(), "drawBeacon": "drand quicknet round 9000000"}),
    )
    .await;
    let early = app.join_many(&stadium, 40).await;
    let hall = app.queued_show("hall", 75).await;
    let theatre = app.queued_show("theatre", 12).await;
    // Fans following live, for the "fans live" column.
    let mut following = Vec::new();
    for ticket in app.join_many(&club, 3).await {
        following.push(app.events(&club, &ticket).await);
    }
    let waiting = app.join_ok(&hall).await;
    let ticket = waiting["ticketId"].as_str().unwrap().to_owned();

    with_browser(BrowserOptions::default(), move |client| async move {
        sign_in(&client, &app).await;
        for show in [&stadium, &hall, &theatre] {
            watch(&client, show).await;
        }

        // One row per show, open ones by themselves, each with the API's figures.
        let rows = client
            .eval("return document.querySelectorAll('#show-rows tr').length")
            .await;
        assert_eq!(rows, json!(5));
        let cell = |show: &str, name: &str| format!("[data-row='{show}'] [data-cell={name}]");
        eventually("the club's fans live", SHORT, || async {
            client
                .text_of(&cell(&club, "fans"))
                .await
                .filter(|f| f == "3")
        })
        .await;
        assert_eq!(
            client.text_of(&cell(&hall, "queueLength")).await.as_deref(),
            Some("76")
        );
        assert_eq!(
            client.text_of(&cell(&club, "rate")).await.as_deref(),
            Some("3/s")
        );
        let seats: u64 = client
            .text_of(&cell(&arena, "seats"))
            .await
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        assert!((1..=20_000).contains(&seats), "seats left: {seats}");
        let when = client
            .text_of(&format!("[data-row='{stadium}'] .row-when"))
            .await
            .unwrap();
        assert!(when.starts_with("opens in 4"), "the countdown: {when}");
        // Only the selected show's card shows: a table, not a column of cards.
        let shown = client
            .eval(
                "return [...document.querySelectorAll('.show-card')].filter(c => !c.hidden).length",
            )
            .await;
        assert_eq!(shown, json!(1));

        // The scheduled show's detail: countdown, pre-queue, commitment, beacon.
        let card = open_card(&client, &stadium, ".settings-form").await;
        eventually("the fair start", SHORT, || async {
            client
                .text_of(&format!("{card} [data-draw=preQueue]"))
                .await
                .filter(|p| p == "40 fans")
        })
        .await;
        let countdown = client
            .text_of(&format!("{card} [data-draw=countdown]"))
            .await
            .unwrap();
        assert!(
            countdown.starts_with("4") && countdown.contains(':'),
            "{countdown}"
        );
        assert_eq!(
            client
                .text_of(&format!("{card} [data-draw=state]"))
                .await
                .as_deref(),
            Some("Pre-queue taking fans")
        );
        let commitment = client
            .attr_of(&format!("{card} [data-draw=commitment]"), "title")
            .await
            .unwrap();
        let draw: Value = app
            .get(&routes::show(routes::DRAW, &stadium))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(draw["commitment"], commitment.as_str());
        assert_eq!(early.len(), 40);

        // Every setting through the form: the show changes, as the API says.
        let card = open_card(&client, &hall, ".settings-form").await;
        // A field being typed in keeps the focus while samples arrive: moving the card on
        // every sample took it, and the rest of what was typed went nowhere.
        client
            .click_on(&format!("{card} [name=checkoutHealthUrl]"))
            .await;
        let samples = || async {
            client
                .attr_of(&format!("{card} .chart-svg"), "data-samples")
                .await
                .and_then(|n| n.parse::<u64>().ok())
        };
        let before = samples().await.unwrap_or(0);
        eventually("two more samples", SHORT, || async {
            samples().await.filter(|n| *n >= before + 2)
        })
        .await;
        assert_eq!(
            client.eval("return document.activeElement.name").await,
            json!("checkoutHealthUrl")
        );
        for (name, value) in [
            ("admitPerSecond", "40"),
            ("maxActiveBuyers", "500"),
            ("arrivalWindowSeconds", "30"),
            ("joinChallengeBits", "6"),
            ("minAdmitPerSecond", "5"),
            ("checkoutHealthUrl", "http://127.0.0.1:9/health"),
        ] {
            client.fill(&format!("{card} [name={name}]"), value).await;
        }
        client
            .click_on(&format!("{card} .settings-form [type=submit]"))
            .await;
        eventually("the saved settings", SHORT, || async {
            client
                .text_of(&format!("{card} .form-message"))
                .await
                .filter(|m| m.starts_with("Saved:"))
        })
        .await;
        let stats = app.stats(&hall).await;
        assert_eq!(
            (
                &stats["admitPerSecond"],
                &stats["maxActiveBuyers"],
                &stats["arrivalWindowSeconds"],
                &stats["joinChallengeBits"],
            ),
            (&json!(40), &json!(500), &json!(30), &json!(6))
        );
        eventually("the health URL from the feed", SHORT, || async {
            client
                .eval(&format!(
                    "return document.querySelector(\"{card} [name=checkoutHealthUrl]\").value"
                ))
                .await
                .as_str()
                .filter(|u| *u == "http://127.0.0.1:9/health")
                .map(|_| ())
        })
        .await;

        // Support looks a ticket up: its show and place.
        client.fill("#lookup-ticket", &ticket).await;
        client.click_on("#lookup-button").await;
        eventually("the ticket found", SHORT, || async {
            client
                .text_of("#lookup-show")
                .await
                .filter(|s| s == hall.as_str())
        })
        .await;
        assert_eq!(
            client.text_of("#lookup-status").await.as_deref(),
            Some("Waiting")
        );
        assert_eq!(
            client.text_of("#lookup-position").await.as_deref(),
            Some("76")
        );
        assert_eq!(
            client.text_of("#lookup-arrival").await.as_deref(),
            Some("76")
        );

        // The picture for the README: the arena's detail with a chart of some history.
        let card = open_card(&client, &arena, ".settings-form").await;
        eventually("a chart with history", Duration::from_secs(40), || async {
            let samples: u64 = client
                .attr_of(&format!("{card} .chart-svg"), "data-samples")
                .await?
                .parse()
                .ok()?;
            (samples >= 15).then_some(())
        })
        .await;
        client.set_window_size(1100, 1900).await.unwrap();
        client
            .eval("document.activeElement.blur(); window.scrollTo(0, 0); return null")
            .await;
        screenshot(&client, "console").await;

        let card = open_card(&client, &hall, "[data-action=end]").await;

        // Ending and deleting ask first; declined, nothing happens.
        client.click_on(&format!("{card} [data-action=end]")).await;
        let asked = confirm(&client, false).await;
        assert!(asked.starts_with("End the on-sale of"), "{asked}");
        client
            .click_on(&format!("{card} [data-action=delete]"))
            .await;
        let asked = confirm(&client, false).await;
        assert!(asked.starts_with(&format!("Delete {hall}?")), "{asked}");
        assert_eq!(app.stats(&hall).await["phase"], "pending");
        // Confirmed, the show goes, and so does its row.
        client
            .click_on(&format!("{card} [data-action=delete]"))
            .await;
        confirm(&client, true).await;
        eventually("the row gone", SHORT, || async {
            (!client.visible(&format!("[data-row='{hall}']")).await).then_some(())
        })
        .await;
        let gone = app.as_operator(reqwest::Method::GET, &routes::show(routes::STATS, &hall));
        assert_eq!(gone.send().await.unwrap().status().as_u16(), 404);

        // A phone: the table becomes one block per show, nothing wider than the screen.
        client.set_window_size(390, 900).await.unwrap();
        eventually("the phone layout", SHORT, || async {
            let fits = client
                .eval("return document.documentElement.scrollWidth <= window.innerWidth")
                .await;
            let stacked = client
                .eval("return getComputedStyle(document.querySelector('#show-rows tr')).display")
                .await;
            (fits == json!(true) && stacked == json!("grid")).then_some(())
        })
        .await;
        client
            .eval("document.getElementById('show-table').scrollIntoView(); return null")
            .await;
        screenshot(&client, "console-phone").await;
        drop(following);
    })
    .await;
}

/// The settings schema the server describes in `/openapi.json`: each setting's schema by name.
async fn settings_schema(app: &TestApp) -> Value {
    let doc: Value = app.get(routes::OPENAPI).await.json().await.unwrap();
    doc["components"]["schemas"]["ShowSettings"]["properties"].clone()
}

/// The highest value a setting's schema allows, among its kinds of value.
fn schema_maximum(setting: &Value) -> u64 {
    let kinds = setting["anyOf"].as_array().cloned();
    kinds
        .unwrap_or_else(|| vec![setting.clone()])
        .iter()
        .filter_map(|kind| kind["maximum"].as_u64())
        .max()
        .expect("a maximum")
}

/// `n` as the console writes it, `10,000`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[tokio::test]
async fn the_settings_form_is_built_from_the_settings_schema() {
    let app = spawn_app().await;
    let show = app.queued_show("venue", 3).await;
    let schema = settings_schema(&app).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        sign_in(&client, &app).await;
        watch(&client, &show).await;
        let card = open_card(&client, &show, "[name=maxQueueLength]").await;
        let field = |name: &str| format!("{card} .settings-form [name={name}]");

        // A field per setting of the schema, and none other.
        let names = client
            .eval(&format!(
                "return [...document.querySelector(\"{card} .settings-form\").elements]\
                 .filter(e => e.name).map(e => e.name).sort()"
            ))
            .await;
        let mut settings: Vec<&String> = schema.as_object().unwrap().keys().collect();
        settings.sort_unstable();
        assert_eq!(names, json!(settings));

        // A setting the page names nowhere: labelled from its name, its description as the
        // help the input is described by, typed and bounded by its schema.
        let label = client
            .eval(&format!(
                "const i = document.querySelector(\"{}\"); return i.labels[0].textContent",
                field("maxQueueLength")
            ))
            .await;
        assert_eq!(label, json!("Max queue length"));
        let help = client
            .eval(&format!(
                "const i = document.querySelector(\"{}\"); \
                 return document.getElementById(i.getAttribute('aria-describedby')).textContent",
                field("maxQueueLength")
            ))
            .await;
        let about = schema["maxQueueLength"]["description"].as_str().unwrap();
        assert_eq!(help.as_str(), Some(about.replace('`', "").as_str()));
        let most = schema_maximum(&schema["maxQueueLength"]);
        assert_eq!(
            client
                .attr_of(&field("maxQueueLength"), "type")
                .await
                .as_deref(),
            Some("number")
        );
        assert_eq!(
            client.attr_of(&field("maxQueueLength"), "max").await,
            Some(most.to_string())
        );

        // A rate above the schema's maximum is not sent, and the message names the bound.
        let fastest = schema_maximum(&schema["admitPerSecond"]);
        assert_eq!(
            client.attr_of(&field("admitPerSecond"), "max").await,
            Some(fastest.to_string())
        );
        client
            .fill(&field("admitPerSecond"), &(fastest + 1).to_string())
            .await;
        client
            .click_on(&format!("{card} .settings-form [type=submit]"))
            .await;
        let said = client
            .text_of(&format!("{card} .form-message"))
            .await
            .unwrap();
        assert!(
            said.contains(&format!("1 to {}", grouped(fastest))),
            "{said}"
        );
        assert_eq!(app.stats(&show).await["admitPerSecond"], 2);
        client.fill(&field("admitPerSecond"), "2").await;

        // Bound the queue to the three fans in it, through the form: the next join is refused.
        client.fill(&field("maxQueueLength"), "3").await;
        client
            .click_on(&format!("{card} .settings-form [type=submit]"))
            .await;
        eventually("the saved setting", SHORT, || async {
            client
                .text_of(&format!("{card} .form-message"))
                .await
                .filter(|m| m == "Saved: maxQueueLength.")
        })
        .await;
        assert_eq!(app.stats(&show).await["settings"]["maxQueueLength"], 3);
        assert_eq!(
            app.join(&show).await.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "a full queue refuses the join"
        );

        // Filled from the show's stats: a fresh page shows what is in force.
        client.refresh().await.unwrap();
        let card = open_card(&client, &show, "[name=maxQueueLength]").await;
        eventually("the bound from the stats", SHORT, || async {
            client
                .eval(&format!(
                    "return document.querySelector(\"{card} [name=maxQueueLength]\").value"
                ))
                .await
                .as_str()
                .filter(|v| *v == "3")
                .map(|_| ())
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn the_console_draws_a_shows_schedule_as_a_timeline() {
    let app = spawn_app().await;
    let show = app.queued_show("festival", 2).await;
    let at =
        |secs: i64| (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs)).to_string();
    app.configure(
        &show,
        json!({"events": [
            {"name": "presale", "startsAt": at(-60), "endsAt": at(3600),
             "settings": {"admitPerSecond": 7}},
            {"startsAt": at(7200), "settings": {"admitPerSecond": 12, "maxActiveBuyers": 40}},
        ]}),
    )
    .await;

    with_browser(BrowserOptions::default(), move |client| async move {
        sign_in(&client, &app).await;
        watch(&client, &show).await;
        let card = open_card(&client, &show, ".timeline").await;
        let event = |n: u32| format!("{card} .timeline [data-event='{n}']");
        // The presale runs: marked so, with what it sets; the next is named by its place and
        // counted down to.
        eventually("the running event", SHORT, || async {
            client
                .attr_of(&event(1), "class")
                .await
                .filter(|c| c.contains("event-running"))
        })
        .await;
        let first = client.text_of(&event(1)).await.unwrap();
        assert!(
            first.contains("presale")
                && first.contains("admit per second 7")
                && first.contains("running"),
            "{first}"
        );
        let second = client.text_of(&event(2)).await.unwrap();
        assert!(
            second.contains("Event 2")
                && second.contains("max active buyers 40")
                && second.contains("for good")
                && second.contains("in "),
            "{second}"
        );
        assert_eq!(
            client.attr_of(&event(2), "class").await.as_deref(),
            Some("event event-upcoming")
        );
        // The schedule's next change of rate (the presale's end, back to the show's own 3) is
        // announced as the schedule's, which no button withdraws (the console hears of it
        // with the show's next change).
        app.configure(&show, json!({"admitPerSecond": 3})).await;
        eventually("the scheduled change", SHORT, || async {
            client
                .text_of(&format!("{card} .announced"))
                .await
                .filter(|t| t.starts_with("Scheduled: 3/s"))
        })
        .await;
        assert!(!client.visible(&format!("{card} .withdraw")).await);
        // The schedule removed: the timeline goes.
        app.configure(&show, json!({"events": []})).await;
        eventually("the timeline hidden", SHORT, || async {
            (!client.visible(&format!("{card} .timeline")).await).then_some(())
        })
        .await;
    })
    .await;
}
