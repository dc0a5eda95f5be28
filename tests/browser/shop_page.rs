//! A show's own waiting page (docs/pages.md) in a real browser: the sample shop template of
//! `docs/pages/sample/` around the queue widget, in every state the widget has, over each
//! transport (SSE, WebSocket, polling); and markup that tries to run in it (a template's
//! script, a handler, an end reason, a show's words) refused or shown as text.

use std::time::Duration;

use base64::Engine;
use fantoccini::Client;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use crate::helpers::*;
use crate::support::api::Api;
use crate::support::app::spawn_app_with;
use crate::support::backend::Backend;
use crate::support::unique_show;

/// The sample shop page of `docs/pages/sample/` as `PUT …/page` takes it: its template, its
/// words (`messages.json`) and its files, base64.
pub fn sample_page() -> Value {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let messages: Value =
        serde_json::from_str(include_str!("../../docs/pages/sample/messages.json"))
            .expect("docs/pages/sample/messages.json reads");
    json!({
        "template": include_str!("../../docs/pages/sample/page.html"),
        "messages": messages,
        "files": {
            "logo.svg": b64(include_bytes!("../../docs/pages/sample/logo.svg")),
            "shop.css": b64(include_bytes!("../../docs/pages/sample/shop.css")),
        },
    })
}

/// `PUT …/{show}/page` with `page`, as it answers.
pub async fn put_page(app: &Api, show: &str, page: &Value) -> reqwest::Response {
    app.as_operator(Method::PUT, &routes::show(routes::PAGE, show))
        .json(page)
        .send()
        .await
        .unwrap()
}

/// Gives `show` the sample shop page (asserting it is kept).
pub async fn set_sample_page(app: &Api, show: &str) {
    let r = put_page(app, show, &sample_page()).await;
    let status = r.status();
    let body = r.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "the sample page is kept: {body}");
}

/// The shop's frame is around the widget: its name and tagline from its own words, its logo
/// loaded (a file of the page, served by hash), its style sheet applied, its footer, and the
/// queue widget inside its `main`.
pub async fn assert_shop_frame(client: &Client, what: &str) {
    let script = "const logo = document.getElementById('shop-logo'); \
        const band = document.querySelector('.shop-band'); \
        return { name: (document.getElementById('shop-name') || {}).textContent || null, \
                 tagline: (document.getElementById('shop-tagline') || {}).textContent || null, \
                 logo: !!logo && logo.complete && logo.naturalWidth > 0, \
                 logoSrc: logo ? logo.getAttribute('src') : null, \
                 edge: band ? getComputedStyle(band).borderBottomColor : null, \
                 queue: !!document.querySelector('main.shop-main > #wait'), \
                 links: document.querySelectorAll('.shop-footer a').length };";
    // The logo may still be on its way: wait for it, then say what the page held.
    let deadline = std::time::Instant::now() + SHORT;
    let frame = loop {
        let frame = client.eval(script).await;
        if frame["logo"] == true || std::time::Instant::now() > deadline {
            break frame;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if frame["logo"] != true {
        let url = client
            .current_url()
            .await
            .map(|u| u.to_string())
            .unwrap_or_default();
        let html = client.source().await.unwrap_or_default();
        panic!("{what}: the shop's logo never loaded at {url}: {frame}\n{html}");
    }
    assert_eq!(frame["name"], "Lumen Hall", "{what}: {frame}");
    assert_eq!(
        frame["tagline"], "Live music on the harbour since 1998",
        "{what}: {frame}"
    );
    let src = frame["logoSrc"].as_str().unwrap_or_default();
    assert!(
        src.contains("/files/") && src.ends_with(".svg"),
        "{what}: the logo is the page's file, by hash: {frame}"
    );
    // shop.css's gold edge under the header's band: the shop's style sheet loaded (CSP: 'self').
    assert_eq!(frame["edge"], "rgb(255, 211, 110)", "{what}: {frame}");
    assert_eq!(
        frame["queue"], true,
        "{what}: the widget sits in the shop's main: {frame}"
    );
    assert_eq!(frame["links"], 4, "{what}: the footer's links: {frame}");
}

/// The widget is in `state`, with that panel (and no other) shown.
pub async fn assert_panel(client: &Client, state: &str, within: Duration) {
    wait_for_state(client, state, within).await;
    let shown = client
        .eval(
            "return [...document.querySelectorAll('#wait [data-panel]')] \
             .filter(p => !!(p.offsetWidth || p.offsetHeight || p.getClientRects().length)) \
             .map(p => p.dataset.panel);",
        )
        .await;
    assert_eq!(shown, json!([state]), "only the {state} panel is shown");
}

/// Whether `text` is how the page words a wait (the `eta.*` words of the English catalog).
fn is_wait_words(text: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let range = |s: &str| {
        s.split_once('–')
            .is_some_and(|(a, b)| number(a) && number(b))
    };
    match text {
        "any moment now" | "less than a minute" | "about a minute" | "up to 1 minute" => true,
        _ => {
            let middle = text
                .strip_prefix("about ")
                .or_else(|| text.strip_prefix("up to "))
                .and_then(|t| t.strip_suffix(" minutes"));
            middle.is_some_and(|m| number(m) || range(m))
        }
    }
}

/// How long a change may take to reach the page: a polling page asks at most every 10 s.
const LIVE: Duration = Duration::from_secs(25);

/// Reads the ticket this browser keeps for `show`.
async fn stored_ticket(client: &Client, show: &str) -> String {
    let script = format!(
        "const r = localStorage.getItem('waiting-room:ticket:{show}'); return r ? JSON.parse(r).ticketId : null;"
    );
    client
        .eval(&script)
        .await
        .as_str()
        .expect("the page keeps a ticket")
        .to_owned()
}

/// The page, as a browser that never came before: nothing stored, no cookie; the show takes
/// access codes, so the page waits in `new` for the fan, who joins without one.
async fn join_afresh(client: &Client, app: &Api, show: &str, query: &str) -> String {
    client.eval("localStorage.clear(); return null;").await;
    client.delete_all_cookies().await.unwrap();
    visit_waiting_page(client, app, show, query).await;
    assert_panel(client, "new", SHORT).await;
    client
        .click_on("[data-panel='new'] .join-form button")
        .await;
    wait_for_state(client, "waiting", SHORT).await;
    stored_ticket(client, show).await
}

/// Waits until the page follows its ticket over `transport`.
async fn assert_transport(client: &Client, transport: &str) {
    eventually(
        &format!("the page to follow over {transport}"),
        SHORT,
        || async {
            (client.attr_of("#wait", "data-transport").await.as_deref() == Some(transport))
                .then_some(())
        },
    )
    .await;
}

/// A show that takes access codes (so a fresh page waits in `new`), with `ahead` fans queued
/// and the sample shop page. Presence is off unless `settings` turn it on: the fans queued by
/// the test never follow their tickets, and would be passed over as away once the grace ran
/// out (a test may wait that long for its turn at the browser).
async fn shop_show(
    app: &Api,
    prefix: &str,
    ahead: usize,
    settings: Value,
) -> (String, Vec<String>) {
    let show = unique_show(prefix);
    app.create(&show).await;
    let mut all = json!({
        "lanes": [{"name": "presale", "share": 50}],
        "arrivalWindowSeconds": 0,
        "awayHoldSeconds": 0,
    });
    for (k, v) in settings.as_object().expect("settings") {
        all[k] = v.clone();
    }
    app.configure(&show, all).await;
    let tickets = app.join_many(&show, ahead).await;
    set_sample_page(app, &show).await;
    (show, tickets)
}

/// From the pre-queue to the fan's turn, on the sample shop page over `transport`: pre-queue,
/// new, waiting (not open, then moving with an ETA), paused, full, admitted.
async fn joining_to_the_turn(transport: &'static str) {
    let app = spawn_app().await;
    // 20 fans ahead, one let in a second once open.
    let (show, _) = shop_show(&app, "shop", 20, json!({"admitPerSecond": 1})).await;
    let query = format!("?transport={transport}");

    with_browser(BrowserOptions::default(), move |client| async move {
        // A scheduled on-sale, ten minutes off: its fans wait in the pre-queue.
        let scheduled = unique_show("shop-pre");
        let opens_at = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(600)).to_string();
        let made = app
            .as_operator(Method::PUT, &routes::show(routes::SHOW, &scheduled))
            .json(&json!({ "opensAt": opens_at }))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status(), StatusCode::CREATED);
        set_sample_page(&app, &scheduled).await;

        // Pre-queue: a countdown to the opening, in the shop's frame.
        visit_waiting_page(&client, &app, &scheduled, &query).await;
        assert_panel(&client, "prequeue", SHORT).await;
        assert_shop_frame(&client, "prequeue").await;
        assert_transport(&client, transport).await;
        let opens = client.text_of("#opens-in").await.unwrap_or_default();
        assert!(
            opens.starts_with("9:") || opens.starts_with("10:"),
            "{opens}"
        );

        // New: the page offers to join (the show takes codes, so it waits for the fan).
        visit_waiting_page(&client, &app, &show, &query).await;
        assert_panel(&client, "new", SHORT).await;
        assert_shop_frame(&client, "new").await;
        assert_eq!(
            client
                .text_of("[data-panel='new'] .join-form button")
                .await
                .as_deref(),
            Some("Join the queue")
        );

        // Waiting, not open yet: the place, and no wait promised.
        client
            .click_on("[data-panel='new'] .join-form button")
            .await;
        assert_panel(&client, "waiting", SHORT).await;
        assert_transport(&client, transport).await;
        assert_shop_frame(&client, "waiting").await;
        assert_eq!(shown_position(&client).await, Some(21));
        assert_eq!(
            client.text_of("#ahead").await.as_deref(),
            Some("20 fans are ahead of you.")
        );
        assert_eq!(
            client.text_of("#eta").await.as_deref(),
            Some("the sale has not opened yet")
        );
        assert!(client.visible("#not-open").await);

        // Open: the queue moves and the wait is told.
        app.open(&show).await;
        let (position, eta) = eventually("the place to move and a wait", LIVE, || async {
            let position = shown_position(&client).await.filter(|p| *p < 21)?;
            let eta = client.text_of("#eta").await.filter(|e| is_wait_words(e))?;
            Some((position, eta))
        })
        .await;
        assert!(position >= 2, "still waiting: {position}");
        assert!(!client.visible("#not-open").await, "{eta}");
        assert_shop_frame(&client, "moving").await;

        // Paused: the place is kept, no wait promised.
        let r = app.operator(routes::PAUSE, &show).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        eventually("the paused note", LIVE, || async {
            client.visible("#paused-note").await.then_some(())
        })
        .await;
        assert_panel(&client, "waiting", SHORT).await;
        let eta = client.text_of("#eta").await.unwrap_or_default();
        assert!(eta.contains("paused"), "{eta}");
        assert!(shown_position(&client).await.is_some_and(|p| p > 1));
        assert_shop_frame(&client, "paused").await;

        // Full: every place at the checkout taken (one, by the fan let in first).
        app.configure(&show, json!({"maxActiveBuyers": 1})).await;
        app.open(&show).await;
        eventually("the full note", LIVE, || async {
            client.visible("#paused-full").await.then_some(())
        })
        .await;
        assert!(!client.visible("#paused-note").await);
        assert_panel(&client, "waiting", SHORT).await;
        assert!(shown_position(&client).await.is_some_and(|p| p > 1));
        assert_shop_frame(&client, "full").await;

        // Admitted, by raising the rate and lifting the cap: the turn and its countdown.
        app.configure(&show, json!({"maxActiveBuyers": 0, "admitPerSecond": 100}))
            .await;
        assert_panel(&client, "admitted", LIVE).await;
        assert_eq!(
            client.text_of(".turn").await.as_deref(),
            Some("It's your turn")
        );
        let countdown = client.text_of("#countdown").await.unwrap_or_default();
        assert!(
            countdown == "5:00" || countdown.starts_with("4:"),
            "{countdown}"
        );
        assert_shop_frame(&client, "admitted").await;
    })
    .await;
}

/// When the sale stops or the ticket is gone, on the sample shop page over `transport`:
/// unknown (the ticket left behind the page's back), closed, ended with a reason, lost (a
/// failover), sold out (the stock's last seat sold), and released (away too long).
async fn when_the_sale_stops(transport: &'static str) {
    let app = spawn_app_with(
        Backend::Redis,
        Config {
            admit_per_second: 2,
            ..Config::for_tests()
        },
    )
    .await;
    let redis = app.redis.as_ref().unwrap().server().conn().await;
    // One buyer at a time, taken by the fan ahead: everyone after waits, open but full.
    let (show, ahead) = shop_show(
        &app,
        "shop-stop",
        1,
        json!({"maxActiveBuyers": 1, "admitPerSecond": 10}),
    )
    .await;
    let query = format!("?transport={transport}");

    with_browser(BrowserOptions::default(), move |client| async move {
        app.open(&show).await;
        app.wait_admitted(&show, &ahead[0], SHORT).await;
        let full = || async {
            eventually("the full note", LIVE, || async {
                client.visible("#paused-full").await.then_some(())
            })
            .await;
        };
        let ticket = join_afresh(&client, &app, &show, &query).await;
        assert_transport(&client, transport).await;
        assert_eq!(shown_position(&client).await, Some(1));
        full().await;

        // Unknown: the ticket left the queue behind the page's back.
        assert_eq!(app.leave(&show, &ticket).await.status(), 204);
        assert_panel(&client, "unknown", LIVE).await;
        assert_shop_frame(&client, "unknown").await;
        client
            .click_on("[data-panel=unknown] .join-form button")
            .await;
        assert_panel(&client, "waiting", SHORT).await;
        let ticket = stored_ticket(&client, &show).await;
        full().await;

        // Closed: the waiting room stepped aside, the fan is sent on to the shop.
        app.close(&show).await;
        assert_panel(&client, "closed", LIVE).await;
        assert!(client.visible("[data-panel=closed] a.button").await);
        assert_shop_frame(&client, "closed").await;

        // Ended, with the operator's reason.
        app.open(&show).await;
        visit_waiting_page(&client, &app, &show, &query).await;
        assert_panel(&client, "waiting", SHORT).await;
        assert_eq!(
            stored_ticket(&client, &show).await,
            ticket,
            "the place was kept"
        );
        assert_transport(&client, transport).await;
        end(&app, &show, "the band is stuck in fog").await;
        assert_panel(&client, "ended", LIVE).await;
        let why = client.text_of("#ended-reason").await.unwrap_or_default();
        assert!(why.contains("the band is stuck in fog"), "{why}");
        assert_shop_frame(&client, "ended").await;

        // Lost: a failover lost the place (the queue forgot it, the lost set names it); the
        // page learns it when the queue passes that place.
        app.open(&show).await;
        visit_waiting_page(&client, &app, &show, &query).await;
        assert_panel(&client, "waiting", SHORT).await;
        assert_transport(&client, transport).await;
        crate::helpers::lose_ticket(&redis, &show, &ticket).await;
        let behind = crate::support::ticket_id(&app.join_ok(&show).await);
        app.configure(&show, json!({"maxActiveBuyers": 0})).await;
        app.wait_admitted(&show, &behind, LIVE).await;
        assert_panel(&client, "lost", Duration::from_secs(30)).await;
        assert_eq!(
            client.text_of("[data-panel=lost] h1").await.as_deref(),
            Some("Your place was lost")
        );
        assert_shop_frame(&client, "lost").await;

        // Sold out: the stock's one seat is ordered by the fan admitted first; the show ends
        // by itself, and the page says why.
        app.configure(&show, json!({"maxActiveBuyers": 1})).await;
        client.click_on("[data-panel=lost] .join-form button").await;
        assert_panel(&client, "waiting", SHORT).await;
        full().await;
        app.configure(&show, json!({"stock": 1})).await;
        let ordered = app.order(&show, "hold-last-seat", Some(&ahead[0])).await;
        assert_eq!(ordered.status(), StatusCode::CREATED);
        assert_panel(&client, "ended", LIVE).await;
        let why = client.text_of("#ended-reason").await.unwrap_or_default();
        assert!(why.contains("sold out"), "{why}");
        assert_shop_frame(&client, "sold out").await;

        // Released: away longer than the show keeps a place.
        app.configure(
            &show,
            json!({"stock": 0, "presenceGraceSeconds": 1, "awayHoldSeconds": 3}),
        )
        .await;
        app.open(&show).await;
        let ticket = join_afresh(&client, &app, &show, &query).await;
        assert_transport(&client, transport).await;
        full().await;
        client.goto("about:blank").await.unwrap();
        let lookup = format!("/admin/tickets/{ticket}?show={show}");
        eventually("the place released", Duration::from_secs(30), || async {
            let r = app.as_operator(Method::GET, &lookup).send().await.unwrap();
            let found: Value = r.json().await.unwrap_or_default();
            (found["ticket"]["status"] == "EXPIRED").then_some(())
        })
        .await;
        visit_waiting_page(&client, &app, &show, &query).await;
        assert_panel(&client, "released", LIVE).await;
        let why = client.text_of("#released-text").await.unwrap_or_default();
        assert!(why.contains("away"), "{why}");
        assert_shop_frame(&client, "released").await;
    })
    .await;
}

/// Ends `show` with `reason`, as its operator.
async fn end(app: &Api, show: &str, reason: &str) {
    let r = app
        .as_operator(Method::POST, &routes::show(routes::END, show))
        .json(&json!({ "reason": reason }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT, "end {show}");
}

#[tokio::test]
async fn the_shop_page_takes_a_fan_to_the_turn_over_sse() {
    joining_to_the_turn("sse").await;
}

#[tokio::test]
async fn the_shop_page_takes_a_fan_to_the_turn_over_a_websocket() {
    joining_to_the_turn("ws").await;
}

#[tokio::test]
async fn the_shop_page_takes_a_fan_to_the_turn_by_polling() {
    joining_to_the_turn("poll").await;
}

#[tokio::test]
async fn the_shop_page_tells_every_end_over_sse() {
    when_the_sale_stops("sse").await;
}

#[tokio::test]
async fn the_shop_page_tells_every_end_over_a_websocket() {
    when_the_sale_stops("ws").await;
}

#[tokio::test]
async fn the_shop_page_tells_every_end_by_polling() {
    when_the_sale_stops("poll").await;
}

/// The sample page's files: served by hash, the same bytes for a year, never sniffed.
#[tokio::test]
async fn the_shop_pages_files_are_served_by_hash_and_cached_for_a_year() {
    let app = spawn_app().await;
    let show = app.queued_show("shop-files", 0).await;
    set_sample_page(&app, &show).await;
    let kept: Value = app
        .as_operator(Method::GET, &routes::show(routes::PAGE, &show))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let page = app
        .get(&format!("/wait/{show}"))
        .await
        .text()
        .await
        .unwrap();
    for (name, kind) in [("logo.svg", "image/svg+xml"), ("shop.css", "text/css")] {
        let path = kept["files"][name].as_str().expect("a file's path");
        assert!(
            page.contains(&format!("\"{path}\"")),
            "the page links {name} at {path}"
        );
        let res = app.get(path).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let header = |h: &str| {
            res.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(
            header("cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert!(header("content-type").starts_with(kind), "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff");
        let sent = sample_page()["files"][name].as_str().unwrap().to_owned();
        let body = res.bytes().await.unwrap();
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(&body),
            sent,
            "{name}: the bytes sent"
        );
    }
}

#[tokio::test]
async fn markup_in_a_template_a_reason_or_a_shops_words_never_runs() {
    let app = spawn_app().await;
    let (show, _) = shop_show(&app, "inject", 0, json!({})).await;

    // A template that brings script, a handler or another way to run something is refused.
    let frame = |inside: &str| {
        format!(
            "<!doctype html><html><head>{{{{ head }}}}</head><body>{inside}{{{{ queue }}}}</body></html>"
        )
    };
    for (template, why) in [
        (frame("<script>alert(1)</script>"), "script"),
        (frame("<SCRIPT src=\"/x.js\"></SCRIPT>"), "script"),
        (frame("<img src=x onerror=alert(1)>"), "event handlers"),
        (frame("<svg/onload=alert(1)>"), "event handlers"),
        (
            frame("<a href=\"JavaScript:alert(1)\">x</a>"),
            "javascript:",
        ),
        (frame("<iframe src=\"/\"></iframe>"), "frame"),
        (frame("<style>body{}</style>"), "style"),
        (
            frame("{% autoescape false %}x{% endautoescape %}"),
            "escaping",
        ),
        (
            "<html><head>{{ head }}</head><body>no queue</body></html>".to_owned(),
            "queue",
        ),
        (
            "<html><head></head><body>{{ queue }}</body></html>".to_owned(),
            "head",
        ),
    ] {
        let r = put_page(&app, &show, &json!({ "template": template })).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{template}");
        let body: Value = r.json().await.unwrap();
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{template}: {message}");
    }
    // What was refused changed nothing: the sample page is still the show's.
    assert_eq!(
        app.get(&format!("/wait/{show}"))
            .await
            .text()
            .await
            .unwrap()
            .matches("class=\"shop-header\"")
            .count(),
        1
    );

    // A show's words are text, whatever they hold.
    let mut page = sample_page();
    page["messages"]["en"]["wait.new.join"] = json!("<b onmouseover=alert(1)>x</b>");
    let r = put_page(&app, &show, &page).await;
    assert_eq!(r.status(), StatusCode::OK);

    // A show id cannot hold markup; a path that tries gets a page that shows none of it.
    let evil_path = "/wait/%3Cimg%20src%3Dx%20onerror%3Dwindow.__pwned%3D1%3E";
    let res = app.get(evil_path).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body = res.text().await.unwrap();
    assert!(!body.contains("<img src=x"), "{body}");

    // The page's one script is ours, allowed by this answer's nonce.
    let res = app.get(&format!("/wait/{show}")).await;
    let csp = res
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = res.text().await.unwrap();
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .and_then(|s| s.split('\'').next())
        .unwrap_or_else(|| panic!("a nonce in the CSP: {csp}"));
    assert!(csp.contains("style-src 'self'"), "{csp}");
    assert_eq!(
        body.matches("<script nonce=").count(),
        1,
        "one script of ours"
    );
    assert!(body.contains(&format!("<script nonce=\"{nonce}\" src=\"/static/wait.js")));

    with_browser(BrowserOptions::default(), move |client| async move {
        let pwned = || async { client.eval("return typeof window.__pwned;").await };

        // The words, literally, as the join button's label; no element made of them.
        visit_waiting_page(&client, &app, &show, "").await;
        assert_panel(&client, "new", SHORT).await;
        assert_shop_frame(&client, "injected words").await;
        let button = "[data-panel='new'] .join-form button";
        assert_eq!(
            client.text_of(button).await.as_deref(),
            Some("<b onmouseover=alert(1)>x</b>")
        );
        let made = client
            .eval(&format!(
                "return document.querySelectorAll(\"{button} b, #wait b[onmouseover]\").length;"
            ))
            .await;
        assert_eq!(made, 0, "no element was made of the words");

        // The markup a show id cannot hold.
        client.goto(&app.url(evil_path)).await.unwrap();
        assert_eq!(
            client
                .eval("return document.querySelectorAll('img[src=x]').length;")
                .await,
            0
        );
        assert_eq!(pwned().await, "undefined");

        // An end reason with markup: pushed, then painted; text both times.
        let reason = "<img src=x onerror=window.__pwned=1>";
        visit_waiting_page(&client, &app, &show, "").await;
        assert_panel(&client, "new", SHORT).await;
        client.click_on(button).await;
        assert_panel(&client, "waiting", SHORT).await;
        eventually("the live indicator", SHORT, || async {
            (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
        })
        .await;
        end(&app, &show, reason).await;
        for how in ["pushed", "painted"] {
            assert_panel(&client, "ended", SHORT).await;
            let why = client.text_of("#ended-reason").await.unwrap_or_default();
            assert!(why.contains(reason), "{how}: {why}");
            assert_eq!(
                client
                    .eval("return document.querySelectorAll('img[src=x], #ended-reason *').length;")
                    .await,
                0,
                "{how}: no element was made of the reason"
            );
            assert_eq!(pwned().await, "undefined", "{how}");
            assert_shop_frame(&client, how).await;
            client.refresh().await.unwrap();
        }
    })
    .await;
}
