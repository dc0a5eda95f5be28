//! The pages as a browser without JavaScript gets them, and the operator feed, over plain
//! HTTP: what the server renders, its headers, and the static files' caching.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::support::sse::{SseEvent, SseReader};
use crate::support::{ticket_id, unique_show};

fn header(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_front_page_lists_open_on_sales_only() {
    let app = spawn_app().await;
    let (open, closed) = (unique_show("open"), unique_show("closed"));
    app.create(&open).await;
    app.join_many(&open, 3).await;
    app.open(&open).await;
    app.create(&closed).await;
    app.join_ok(&closed).await;

    let res = app.get("/").await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(header(&res, "cache-control"), "no-store");
    assert!(header(&res, "content-type").starts_with("text/html"));
    let body = res.text().await.unwrap();
    assert!(
        body.contains(&format!("href=\"/wait/{open}\"")),
        "links the open show"
    );
    assert!(body.contains("3 waiting"), "with its queue");
    assert!(!body.contains(&closed), "a closed show is not listed");
}

#[tokio::test]
async fn with_no_open_on_sale_the_front_page_says_so() {
    let app = spawn_app().await;
    let body = app.get("/").await.text().await.unwrap();
    assert!(body.contains("No on-sale is open right now"));
}

#[tokio::test]
async fn the_waiting_page_paints_the_place_without_javascript_and_refreshes_itself() {
    let app = spawn_app().await;
    let show = app.queued_show("paint", 1233).await;
    let ticket = ticket_id(&app.join_ok(&show).await);

    let res = app.get(&format!("/wait/{show}?ticket={ticket}")).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(header(&res, "cache-control"), "no-store");
    assert!(header(&res, "content-security-policy").contains("script-src 'nonce-"));
    assert_eq!(
        header(&res, "referrer-policy"),
        "same-origin",
        "the ticket in the URL stays here"
    );
    let body = res.text().await.unwrap();
    assert!(body.contains("data-state=\"waiting\""));
    assert!(body.contains(">1,234</span>"), "the place, grouped");
    assert!(body.contains("1,233 fans are ahead of you."));
    // Not open, and no opening announced: no wait promised.
    assert!(body.contains("<strong id=\"eta\">the sale has not opened yet</strong>"));
    assert!(body.contains("The on-sale hasn't opened yet"));
    assert!(
        body.contains("<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>"),
        "without a script the page reloads itself"
    );
    assert!(body.contains(&ticket));
}

#[tokio::test]
async fn joining_without_javascript_sets_the_cookie_that_paints_the_place() {
    let app = spawn_app().await;
    let show = app.queued_show("nojs", 2).await;

    let res = app.join_form(&show).await;
    assert_eq!(res.status().as_u16(), 303);
    let location = header(&res, "location");
    let ticket = location
        .strip_prefix(&format!("/wait/{show}?ticket="))
        .unwrap_or_else(|| panic!("redirects to the page with the ticket, got {location}"))
        .to_owned();
    let cookie = header(&res, "set-cookie");
    assert!(
        cookie.starts_with(&format!("wr_ticket={ticket};")),
        "{cookie}"
    );
    assert!(
        cookie.contains(&format!("Path=/wait/{show}")),
        "scoped to this show's page: {cookie}"
    );
    assert_eq!(app.stats(&show).await["joined"], 3);

    // The cookie alone (no query) is enough for the server to paint the place.
    let body = app
        .client
        .get(app.url(&format!("/wait/{show}")))
        .header("cookie", format!("theme=dark; wr_ticket={ticket}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("data-state=\"waiting\""));
    assert!(body.contains(">3</span>"));
    assert!(body.contains("2 fans are ahead of you."));
}

#[tokio::test]
async fn a_page_without_a_ticket_offers_to_join_and_a_lost_ticket_is_called_lost() {
    let app = spawn_app().await;
    let show = app.queued_show("fresh", 0).await;

    let body = app
        .get(&format!("/wait/{show}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(body.contains("data-state=\"new\""));
    assert!(body.contains(&format!("action=\"/wait/{show}/join\"")));
    assert!(
        !body.contains("http-equiv=\"refresh\""),
        "nothing to refresh for"
    );

    let forgotten = uuid::Uuid::new_v4();
    let body = app
        .get(&format!("/wait/{show}?ticket={forgotten}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(body.contains("data-state=\"unknown\""));
    assert!(body.contains("We can't find your ticket"));

    // Garbage in the query is ignored, not an error.
    let res = app.get(&format!("/wait/{show}?ticket=%zz")).await;
    assert_eq!(res.status().as_u16(), 200);
}

#[tokio::test]
async fn a_show_nobody_created_has_no_waiting_page_and_cannot_be_joined() {
    let app = spawn_app().await;
    let show = unique_show("nobody");
    let ticket = uuid::Uuid::new_v4();
    for path in [
        format!("/wait/{show}"),
        format!("/wait/{show}?ticket={ticket}"),
    ] {
        let res = app.get(&path).await;
        assert_eq!(res.status().as_u16(), 404, "{path}");
        assert!(
            header(&res, "content-type").starts_with("text/html"),
            "{path}"
        );
        let body = res.text().await.unwrap();
        assert!(
            body.contains("Sorry, that didn't work"),
            "the error page: {body}"
        );
        assert!(body.contains(&format!("no on-sale named {show}")), "{body}");
        assert!(!body.contains("data-state="), "no waiting page: {body}");
    }

    // The join button of a page without JavaScript: the same page, no ticket, no cookie.
    let res = app.join_form(&show).await;
    assert_eq!(res.status().as_u16(), 404);
    assert!(header(&res, "content-type").starts_with("text/html"));
    assert_eq!(header(&res, "set-cookie"), "", "no ticket handed out");
    assert!(
        res.text()
            .await
            .unwrap()
            .contains(&format!("no on-sale named {show}"))
    );

    // Nothing of it was made on the way: the operator still finds no such show.
    let stats = app
        .client
        .get(app.url(&format!("/orders/waiting-room/{show}/stats")))
        .bearer_auth(&app.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(stats.status().as_u16(), 404);
}

#[tokio::test]
async fn an_admitted_ticket_is_painted_with_its_countdown() {
    let app = spawn_app().await;
    let show = app.queued_show("painted-turn", 0).await;
    let ticket = ticket_id(&app.join_ok(&show).await);
    app.open(&show).await;
    let body = eventually("the admission", Duration::from_secs(5), || async {
        let body = app
            .get(&format!("/wait/{show}?ticket={ticket}"))
            .await
            .text()
            .await
            .ok()?;
        body.contains("data-state=\"admitted\"").then_some(body)
    })
    .await;
    assert!(body.contains("It's your turn"));
    assert!(body.contains("role=\"timer\">5:00</strong>") || body.contains("role=\"timer\">4:5"));
}

#[tokio::test]
async fn a_bad_show_id_gets_a_readable_400_page() {
    let app = spawn_app().await;
    let res = app.get("/wait/no%20spaces").await;
    assert_eq!(res.status().as_u16(), 400);
    assert!(header(&res, "content-type").starts_with("text/html"));
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("show id must be 1 to 64 characters")
    );
    // A path that is not even UTF-8 gets the same kind of page, not a bare text error.
    let res = app.get("/wait/%FF").await;
    assert_eq!(res.status().as_u16(), 400);
    assert!(header(&res, "content-type").starts_with("text/html"));
    let res = app
        .client
        .post(app.url("/wait/%FF/join"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 400);
    assert!(header(&res, "content-type").starts_with("text/html"));
}

#[tokio::test]
async fn static_files_are_cached_for_an_hour_under_versioned_urls() {
    let app = spawn_app().await;
    app.create("x").await;
    let page = app.get("/wait/x").await.text().await.unwrap();
    let script = page
        .split("src=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the page loads a script")
        .to_owned();
    assert!(
        script.starts_with("/static/wait.js?v="),
        "versioned: {script}"
    );

    for path in [script.as_str(), "/static/style.css", "/static/admin.js"] {
        let res = app.get(path).await;
        assert_eq!(res.status().as_u16(), 200, "{path}");
        assert_eq!(
            header(&res, "cache-control"),
            "public, max-age=3600",
            "{path}"
        );
    }
    assert!(header(&app.get("/static/wait.js").await, "content-type").contains("javascript"));

    let missing = app.get("/static/missing.js").await;
    assert_eq!(missing.status().as_u16(), 404);
    assert_eq!(header(&missing, "cache-control"), "", "a 404 is not cached");
}

/// Reads the first `enough` events off the stream `res`.
async fn sse_events(res: reqwest::Response, enough: usize, each: Duration) -> Vec<SseEvent> {
    let mut feed = SseReader::from_response(res);
    let mut events = Vec::new();
    while events.len() < enough {
        events.push(feed.next(each).await.expect("the stream stays open"));
    }
    events
}

#[tokio::test]
async fn the_operator_feed_needs_the_token_and_reports_queue_and_admissions() {
    let app = spawn_app().await;
    let (watched, open) = (unique_show("watched"), unique_show("busy"));
    // Named in the feed, but nobody created it.
    let ghost = unique_show("ghost");
    app.create(&open).await;
    app.join_many(&open, 30).await;
    app.configure(&open, json!({"admitPerSecond": 5})).await;
    app.open(&open).await;
    app.create(&watched).await;
    app.join_many(&watched, 2).await;
    let feed = app.url(&format!("/admin/stats/events?shows={watched},{ghost}"));

    let anonymous = app.client.get(&feed).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let wrong = app
        .client
        .get(&feed)
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let bad = app
        .client
        .get(app.url("/admin/stats/events?shows=a,b%20c"))
        .bearer_auth(&app.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    assert!(
        bad.json::<Value>().await.unwrap()["message"]
            .as_str()
            .unwrap()
            .contains("showId")
    );

    let res = app
        .client
        .get(&feed)
        .bearer_auth(&app.admin_token)
        .send()
        .await
        .unwrap();
    let events = sse_events(res, 4, Duration::from_secs(10)).await;
    assert!(events.iter().all(|e| e.event == "stats"));
    let find = |sample: &Value, show: &str| -> Value {
        sample["shows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["showId"] == show)
            .cloned()
            .unwrap_or_else(|| panic!("{show} is reported: {sample}"))
    };
    let first_watched = find(&events[0].data, &watched);
    assert_eq!(
        first_watched["open"], false,
        "a closed show is reported because it is named"
    );
    assert_eq!(first_watched["queueLength"], 2);
    assert_eq!(first_watched["connectedFans"], 0);
    for sample in events.iter().map(|e| &e.data) {
        assert!(
            !sample["shows"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["showId"] == ghost.as_str()),
            "a show nobody created has no figures: {sample}"
        );
    }
    // The open show is reported without being named, and its admissions are counted.
    let admitted: u64 = events
        .iter()
        .map(|e| {
            find(&e.data, &open)["admittedSinceLast"]
                .as_u64()
                .expect("counted")
        })
        .sum();
    let last = find(&events[3].data, &open);
    assert_eq!(last["admitPerSecond"], 5);
    let valid = last["admittedValid"].as_u64().unwrap();
    assert_eq!(
        last["queueLength"].as_u64().unwrap() + valid,
        30,
        "every fan is queued or admitted"
    );
    assert!(admitted > 0, "admissions show up in the feed");
    assert!(
        admitted <= valid,
        "the feed counts only admissions that happened ({admitted} of {valid})"
    );
}
