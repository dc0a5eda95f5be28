//! The fan's waiting page in a real browser: joining, live position, admission by push,
//! checkout, reloads, lost and expired tickets, and every transport.

use std::time::Duration;

use fantoccini::Client;
use serde_json::{Value, json};
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use crate::helpers::*;
use crate::support::app::spawn_app_configured;
use crate::support::unique_show;

/// Reads the ticket this browser keeps for `show`.
async fn stored_ticket(client: &Client, show: &str) -> Option<String> {
    let script = format!(
        "const r = localStorage.getItem('waiting-room:ticket:{show}'); return r ? JSON.parse(r).ticketId : null;"
    );
    match client.eval(&script).await {
        Value::String(s) => Some(s),
        _ => None,
    }
}

#[tokio::test]
async fn a_fan_watches_the_queue_move_is_admitted_by_push_and_orders() {
    let app = spawn_app().await;
    // Arrange: 500 fans ahead, the on-sale created but not open yet.
    let show = app.queued_show("tour", 500).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;

        // The page joined by itself and follows the ticket over SSE.
        wait_for_state(&client, "waiting", SHORT).await;
        assert_eq!(shown_position(&client).await, Some(501));
        assert_eq!(
            client.text_of("#ahead").await.as_deref(),
            Some("500 fans are ahead of you.")
        );
        // Not open, and no opening announced: no wait is promised.
        assert_eq!(
            client.text_of("#eta").await.as_deref(),
            Some("the sale has not opened yet")
        );
        assert!(
            client.visible("#not-open").await,
            "the page says the sale has not opened"
        );
        assert_eq!(
            client.attr_of("#wait", "data-transport").await.as_deref(),
            Some("sse")
        );
        let ticket = stored_ticket(&client, &show)
            .await
            .expect("the ticket is kept in localStorage");
        assert_eq!(client.text_of("#ticket-id").await, Some(ticket.clone()));
        eventually("the live indicator", SHORT, || async {
            (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
        })
        .await;
        screenshot(&client, "waiting-not-open").await;

        // Act: open the on-sale at 2 a second: about 250 fans' worth of seconds ahead.
        app.open(&show).await;
        eventually("a wait once the sale is open", SHORT, || async {
            let eta = client.text_of("#eta").await.unwrap_or_default();
            eta.contains("minutes").then_some(())
        })
        .await;
        // A rate change is pushed to the waiting fan as a new ETA; the admitter lets 60 a
        // second through.
        app.configure(&show, json!({"admitPerSecond": 60})).await;
        eventually("the ETA to follow the new rate", SHORT, || async {
            (client.text_of("#eta").await.as_deref() == Some("less than a minute")).then_some(())
        })
        .await;
        let moved = eventually("the position to fall", SHORT, || async {
            shown_position(&client).await.filter(|p| *p < 501)
        })
        .await;
        assert!(moved >= 1, "still waiting while fans ahead go through");
        assert!(
            !client.visible("#not-open").await,
            "a moving queue is an open sale"
        );
        let progress: u64 = client
            .attr_of("#progress", "aria-valuenow")
            .await
            .and_then(|v| v.parse().ok())
            .expect("a progress value");
        assert!(progress > 0, "the progress bar moved since joining");
        screenshot(&client, "waiting").await;
        client.set_window_size(390, 844).await.unwrap();
        screenshot(&client, "waiting-phone").await;
        client.set_window_size(1100, 1000).await.unwrap();

        // Admitted by push: no reload, no poll.
        wait_for_state(&client, "admitted", Duration::from_secs(30)).await;
        assert_eq!(
            client.text_of(".turn").await.as_deref(),
            Some("It's your turn")
        );
        let countdown = client.text_of("#countdown").await.unwrap();
        assert!(
            countdown == "5:00" || countdown.starts_with("4:"),
            "the countdown shows the 5-minute admission, got {countdown}"
        );
        let hold = client
            .eval("return document.getElementById('hold-id').value")
            .await;
        let hold = hold.as_str().expect("a hold id").to_owned();
        assert!(
            hold.starts_with("hold-"),
            "the hold id is prefilled, got {hold}"
        );
        screenshot(&client, "admitted").await;

        // A bad email is caught before anything is sent.
        client.fill("#email", "not-an-email").await;
        client.click_on("#place-order").await;
        eventually("the form error", SHORT, || async {
            client.visible("#order-error").await.then_some(())
        })
        .await;
        assert_eq!(
            client.attr_of("#wait", "data-state").await.as_deref(),
            Some("admitted")
        );

        // Assert: the order goes through the gate with the admitted ticket.
        client.fill("#email", "fan@example.com").await;
        client.fill("#amount", "42.50").await;
        client.click_on("#place-order").await;
        wait_for_state(&client, "ordered", SHORT).await;
        let note = client.text_of("#order-note").await.unwrap();
        assert!(
            note.starts_with("Your order is confirmed"),
            "a 201 reads as a new order, got {note}"
        );
        let order_id = client.text_of("#order-id").await.unwrap();
        let order = routes::path(routes::ORDER, "", &order_id);
        let order: Value = app.get(&order).await.json().await.unwrap();
        assert_eq!(order["holdId"], hold.as_str());
        assert_eq!(order["customerEmail"], "fan@example.com");
        assert_eq!(order["amount"], 42.5);
        assert_eq!(
            client.text_of("#order-amount").await.as_deref(),
            Some("42.50")
        );
        screenshot(&client, "ordered").await;
    })
    .await;
}

#[tokio::test]
async fn a_reload_keeps_the_ticket_and_does_not_join_again() {
    let app = spawn_app().await;
    let show = app.queued_show("reload", 3).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        let ticket = client
            .text_of("#ticket-id")
            .await
            .expect("a ticket is shown");
        assert_eq!(shown_position(&client).await, Some(4));

        // The page also left the ticket in a cookie for its own path, so the server paints the
        // place at once after a reload (tests/browser/pages.rs checks that painting).
        let cookie = client
            .get_named_cookie("wr_ticket")
            .await
            .expect("the ticket cookie");
        assert_eq!(cookie.value(), ticket);
        assert_eq!(cookie.path(), Some(format!("/wait/{show}").as_str()));

        client.refresh().await.unwrap();
        wait_for_state(&client, "waiting", SHORT).await;
        // The script kept the same ticket rather than joining again.
        assert_eq!(client.text_of("#ticket-id").await, Some(ticket.clone()));
        assert_eq!(shown_position(&client).await, Some(4));
        assert_eq!(
            app.stats(&show).await["joined"],
            4,
            "the reload did not join again"
        );

        // A tab closed and opened again is the same browser: same place.
        let fresh = client.new_window(true).await.unwrap();
        client.close_window().await.unwrap();
        client.switch_to_window(fresh.handle).await.unwrap();
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert_eq!(client.text_of("#ticket-id").await, Some(ticket.clone()));
        assert_eq!(app.stats(&show).await["joined"], 4);

        // A link carrying the ticket is followed, then the ticket leaves the address bar so
        // that copying the address does not hand the place on.
        visit_waiting_page(
            &client,
            &app,
            &show,
            &format!("?ticket={ticket}&transport=ws"),
        )
        .await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert_eq!(client.text_of("#ticket-id").await, Some(ticket));
        let url = client.current_url().await.unwrap();
        assert_eq!(url.path(), format!("/wait/{show}"));
        assert_eq!(url.query(), Some("transport=ws"));
    })
    .await;
}

#[tokio::test]
async fn a_ticket_the_queue_forgot_is_said_so_and_the_fan_can_join_again() {
    let app = spawn_app().await;
    let show = app.queued_show("lost", 0).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        let first = stored_ticket(&client, &show).await.unwrap();

        // The ticket leaves the queue behind the page's back; the open stream says so.
        assert_eq!(app.leave(&show, &first).await.status(), 204);
        wait_for_state(&client, "unknown", SHORT).await;
        // A reload keeps saying so instead of quietly joining again.
        client.refresh().await.unwrap();
        wait_for_state(&client, "unknown", SHORT).await;
        assert!(
            client
                .visible("[data-panel=unknown] .join-form button")
                .await
        );
        screenshot(&client, "unknown").await;
        assert_eq!(app.stats(&show).await["joined"], 1);

        client
            .click_on("[data-panel=unknown] .join-form button")
            .await;
        wait_for_state(&client, "waiting", SHORT).await;
        let second = stored_ticket(&client, &show).await.unwrap();
        assert_ne!(first, second, "joining again takes a new ticket");
        assert_eq!(client.text_of("#ticket-id").await, Some(second));
        assert_eq!(shown_position(&client).await, Some(1));
    })
    .await;
}

#[tokio::test]
async fn a_place_a_failover_lost_is_said_so_whichever_way_the_page_follows() {
    let app = crate::support::app::spawn_app_with(
        crate::support::backend::Backend::Redis,
        Config {
            admit_per_second: 2,
            ..Config::for_tests()
        },
    )
    .await;
    let redis = app.redis.as_ref().unwrap().server().conn().await;

    with_browser(BrowserOptions::default(), move |client| async move {
        // Polling, Server-Sent Events (the default) and the WebSocket.
        for (query, transport) in [
            ("?transport=poll", "poll"),
            ("", "sse"),
            ("?transport=ws", "ws"),
        ] {
            let show = app.queued_show(&format!("lost-{transport}"), 0).await;
            visit_waiting_page(&client, &app, &show, query).await;
            wait_for_state(&client, "waiting", SHORT).await;
            assert_eq!(
                client.attr_of("#wait", "data-transport").await.as_deref(),
                Some(transport)
            );
            let ticket = stored_ticket(&client, &show).await.unwrap();

            // What mending a failover that lost writes leaves of a ticket: gone from the
            // queue, marked lost (src/loss_witness.rs). Its poll answers 410 LOST, which the page
            // must take as the answer it is, not as a failure to retry for ever.
            crate::helpers::lose_ticket(&redis, &show, &ticket).await;
            assert_eq!(app.ticket(&show, &ticket).await.status(), 410);
            // A stream learns it when the queue passes the lost place: the hub then asks the
            // store about the ticket it thought admitted (src/hub/mod.rs, `confirm`), and is
            // answered LOST, pushed as `unknown` saying so.
            app.join_ok(&show).await;
            app.open(&show).await;
            wait_for_state(&client, "lost", Duration::from_secs(30)).await;
            assert_eq!(
                client.text_of("[data-panel=lost] h1").await.as_deref(),
                Some("Your place was lost"),
                "over {transport}"
            );
            assert!(client.visible("[data-panel=lost] .join-form button").await);
            assert!(!client.visible("[data-panel=unknown]").await);
            assert_eq!(
                client.attr_of("#wait", "data-transport").await.as_deref(),
                Some(transport),
                "told over the transport it followed with, not a fallback"
            );
            // A reload says it from the first paint, and follows nothing.
            visit_waiting_page(&client, &app, &show, query).await;
            wait_for_state(&client, "lost", SHORT).await;
            assert_eq!(stored_ticket(&client, &show).await, Some(ticket));
        }
    })
    .await;
}

#[tokio::test]
async fn an_admission_that_runs_out_is_said_so_and_the_fan_can_join_again() {
    let app = spawn_app_configured(Config {
        admit_per_second: 10,
        admission_ttl: Duration::from_secs(3),
        ..Config::for_tests()
    })
    .await;
    let show = unique_show("expire");
    app.open(&show).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "admitted", SHORT).await;
        let first = stored_ticket(&client, &show).await.unwrap();
        wait_for_state(&client, "expired", SHORT).await;
        assert_eq!(
            client.text_of("[data-panel=expired] h1").await.as_deref(),
            Some("Your admission ran out")
        );
        // The gate agrees at once: the page ends the admission on the server's exact word,
        // never before the store does.
        let res = app.order(&show, "h1", Some(&first)).await;
        assert_eq!(
            res.status().as_u16(),
            403,
            "an expired ticket passed the gate"
        );

        client
            .click_on("[data-panel=expired] .join-form button")
            .await;
        wait_for_state(&client, "admitted", SHORT).await;
        assert_ne!(stored_ticket(&client, &show).await.unwrap(), first);
    })
    .await;
}

#[tokio::test]
async fn websocket_and_polling_follow_the_ticket_when_asked_to() {
    let app = spawn_app().await;
    let ws_show = app.queued_show("ws", 4).await;
    let poll_show = app.queued_show("poll", 4).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        for (show, transport) in [(&ws_show, "ws"), (&poll_show, "poll")] {
            visit_waiting_page(&client, &app, show, &format!("?transport={transport}")).await;
            wait_for_state(&client, "waiting", SHORT).await;
            assert_eq!(shown_position(&client).await, Some(5), "{transport}");
            assert_eq!(
                client.attr_of("#wait", "data-transport").await.as_deref(),
                Some(transport)
            );
            if transport == "poll" {
                eventually("the polling notice", SHORT, || async {
                    client
                        .text_of("#conn-text")
                        .await
                        .filter(|t| t.starts_with("Checking for updates every"))
                })
                .await;
            }
            app.open(show).await;
            // 5 fans at 2 a second: three ticks, then the page learns of it.
            wait_for_state(&client, "admitted", Duration::from_secs(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn the_waiting_page_fits_a_phone_in_dark_mode() {
    let app = spawn_app().await;
    let show = app.queued_show("phone", 1234).await;
    app.configure(&show, json!({"admitPerSecond": 5})).await;

    with_browser(BrowserOptions { dark: true }, move |client| async move {
        client.set_window_size(390, 844).await.unwrap();
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert_eq!(client.text_of("#position").await.as_deref(), Some("1,235"));
        // Not open yet: the longest words the wait line says, at phone width too.
        assert_eq!(
            client.text_of("#eta").await.as_deref(),
            Some("the sale has not opened yet")
        );
        let dark = client.eval("return matchMedia('(prefers-color-scheme: dark)').matches").await;
        assert_eq!(dark, Value::Bool(true), "the browser prefers dark");
        let background = client.eval("return getComputedStyle(document.body).backgroundColor").await;
        assert_eq!(background, "rgb(14, 16, 32)", "the dark palette is in use");
        let overflow = client
            .eval("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            .await;
        assert_eq!(overflow, 0, "nothing sticks out sideways at phone width");
        screenshot(&client, "waiting-phone-dark").await;
    })
    .await;
}

#[tokio::test]
async fn the_page_says_when_it_reconnects_and_when_a_restart_forgot_the_ticket() {
    let app = spawn_app().await;
    let show = app.queued_show("restart", 2).await;
    let bind = app.addr;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        let conn = || async { client.attr_of("#conn", "data-conn").await };
        eventually("the live indicator", SHORT, || async {
            (conn().await.as_deref() == Some("live")).then_some(())
        })
        .await;

        // The server goes away: the page keeps the place on screen and says it is reconnecting.
        app.stop().await;
        eventually("the reconnecting notice", SHORT, || async {
            (conn().await.as_deref() == Some("reconnecting")).then_some(())
        })
        .await;
        assert_eq!(
            client.text_of("#conn-text").await.as_deref(),
            Some("Connection lost. Reconnecting…")
        );
        assert_eq!(
            client.attr_of("#wait", "data-state").await.as_deref(),
            Some("waiting")
        );
        assert_eq!(shown_position(&client).await, Some(3));
        screenshot(&client, "reconnecting").await;

        // It comes back on the same address with the embedded store, which forgot every show
        // and queue; the operator creates the show again. The page reconnects by itself and
        // says the ticket is gone rather than pretending.
        let again = spawn_app_configured(Config {
            bind,
            admit_per_second: 2,
            ..Config::for_tests()
        })
        .await;
        again.create(&show).await;
        wait_for_state(&client, "unknown", Duration::from_secs(15)).await;
        assert!(
            client
                .visible("[data-panel=unknown] .join-form button")
                .await
        );
    })
    .await;
}

/// Far back in the queue the page is pushed only now and then (`PUSH_FRONT`) and counts its
/// position down by itself between pushes; at the quiet middle of every second what it shows
/// is what a poll answers.
#[tokio::test]
async fn far_back_the_page_counts_down_between_pushes_and_stays_right() {
    let app = spawn_app_configured(Config {
        admit_per_second: 2,
        push_front: 5,
        ..Config::for_tests()
    })
    .await;
    let show = app.queued_show("far", 200).await;
    app.open(&show).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        let ticket = stored_ticket(&client, &show).await.expect("a ticket");
        let mut counted = false;
        for second in 0..6 {
            mid_second().await;
            let polled = app.ticket_json(&show, &ticket).await["position"].as_u64();
            assert_eq!(
                shown_position(&client).await,
                polled,
                "second {second}: the page and the poll differ"
            );
            counted |= client.attr_of("#wait", "data-counted").await.is_some();
        }
        assert!(counted, "the page counted down by itself between pushes");
    })
    .await;
}

/// Sleeps to `.450` of the next wall-clock second: ticks land at `.050`.
async fn mid_second() {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    tokio::time::sleep(Duration::from_millis(1450 - ms % 1000)).await;
}

#[tokio::test]
async fn a_link_with_another_ticket_does_not_take_the_place_this_browser_holds() {
    let app = spawn_app().await;
    let show = app.queued_show("link", 0).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        let mine = stored_ticket(&client, &show).await.unwrap();
        assert_eq!(shown_position(&client).await, Some(1));
        // Someone else's place, handed round as a link.
        let theirs = crate::support::ticket_id(&app.join_ok(&show).await);
        visit_waiting_page(&client, &app, &show, &format!("?ticket={theirs}")).await;
        wait_for_state(&client, "waiting", SHORT).await;
        eventually("this browser's own place", SHORT, || async {
            (shown_position(&client).await == Some(1)).then_some(())
        })
        .await;
        assert_eq!(client.text_of("#ticket-id").await, Some(mine.clone()));
        assert_eq!(stored_ticket(&client, &show).await, Some(mine));
        let url = client.current_url().await.unwrap();
        assert_eq!(url.query(), None, "the link's ticket left the address bar");
    })
    .await;
}

#[tokio::test]
async fn a_fan_who_steps_away_keeps_the_place_then_is_told_when_it_is_released() {
    let app = spawn_app().await;
    // One buyer at a time, and one fan ahead (following live) who takes that place: the page's
    // fan waits. The show keeps an away fan's place 3 s past a grace of 1 s.
    let show = app.queued_show("away", 0).await;
    app.configure(
        &show,
        json!({"presenceGraceSeconds": 1, "awayHoldSeconds": 3, "admitPerSecond": 1,
               "maxActiveBuyers": 1, "arrivalWindowSeconds": 0}),
    )
    .await;
    let ahead = app.join_many(&show, 1).await.remove(0);
    let ahead_stream = app.events(&show, &ahead).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "waiting", SHORT).await;
        app.open(&show).await;
        app.wait_admitted(&show, &ahead, SHORT).await;
        drop(ahead_stream);
        let ticket = stored_ticket(&client, &show).await.unwrap();
        assert!(
            client.visible("#away-hint").await,
            "the page says the fan may close it"
        );
        // "Notify me", as far as a headless browser goes: the button is offered, and with no
        // push service reachable the page says so and keeps the fan on the page.
        assert!(client.visible("#notify").await);
        client.click_on("#notify").await;
        eventually("the notify answer", SHORT, || async {
            client.attr_of("#wait", "data-notify").await
        })
        .await;
        let said = client.text_of("#notify-status").await.unwrap_or_default();
        assert!(
            said.contains("We will notify you") || said.contains("not available"),
            "{said}"
        );

        // The fan closes the tab: its stream ends, and after the grace and the hold its place
        // is released; coming back, the page says so and why.
        client.goto("about:blank").await.unwrap();
        // Watched as the operator looks (a fan's own poll would say it is back).
        let lookup = format!("/admin/tickets/{ticket}?show={show}");
        eventually("the place released", Duration::from_secs(60), || async {
            let r = app
                .as_operator(reqwest::Method::GET, &lookup)
                .send()
                .await
                .unwrap();
            let found: Value = r.json().await.unwrap_or_default();
            (found["ticket"]["status"] == "EXPIRED").then_some(())
        })
        .await;
        visit_waiting_page(&client, &app, &show, "").await;
        wait_for_state(&client, "released", SHORT).await;
        let why = client.text_of("#released-text").await.unwrap_or_default();
        assert!(why.contains("away"), "{why}");
        screenshot(&client, "released").await;
        // Joining again takes a new place.
        client
            .click_on("[data-panel=released] .join-form button")
            .await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert_ne!(stored_ticket(&client, &show).await.unwrap(), ticket);
    })
    .await;
}
