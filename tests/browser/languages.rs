//! The built-in waiting page in each shipped language (en, fr, es, ar): `<html lang dir>`,
//! Arabic laid out right to left for real, numbers in each language's digits at first paint
//! and as the script moves them, the language picker, and how a language is chosen (`?lang=`,
//! the `wr_lang` cookie, `Accept-Language`, the show's default).

use fantoccini::{Client, Locator};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::shop_page::put_page;
use crate::support::ticket_id;

/// The number `text` writes in Arabic-Indic digits (`١٬٢٣٤`), when it is only those and the
/// Arabic thousands separator.
fn arabic_number(text: &str) -> Option<u64> {
    let mut n: u64 = 0;
    let mut digits = 0;
    for c in text.chars() {
        match c {
            '\u{0660}'..='\u{0669}' => {
                n = n * 10 + (c as u64 - 0x0660);
                digits += 1;
            }
            '\u{066C}' => {}
            _ => return None,
        }
    }
    (digits > 0).then_some(n)
}

/// How the page is laid out: its language and direction, the body's computed direction, and
/// where the header's brand and language picker stand.
async fn layout(client: &Client) -> Value {
    client
        .eval(
            "const left = (css) => { const e = document.querySelector(css); \
                                      return e ? e.getBoundingClientRect().left : null; }; \
             return { lang: document.documentElement.lang, dir: document.documentElement.dir, \
                      direction: document.body ? getComputedStyle(document.body).direction : null, \
                      brand: left('.bar .brand'), picker: left('.bar .lang-picker') };",
        )
        .await
}

#[tokio::test]
async fn the_built_in_page_speaks_each_language_and_arabic_reads_right_to_left() {
    let app = spawn_app().await;
    let show = app.queued_show("langs", 1233).await;
    // Presence off: the fans queued here never follow their tickets, and must not be passed
    // over as away when the queue moves.
    app.configure(&show, json!({"awayHoldSeconds": 0})).await;

    // First paint, before any script: the place in each language's digits and grouping.
    let fan = ticket_id(&app.join_ok(&show).await);
    for (lang, position) in [
        ("en", "1,234"),
        ("fr", "1\u{202f}234"),
        ("es", "1234"),
        ("ar", "١٬٢٣٤"),
    ] {
        let body = app
            .get(&format!("/wait/{show}?ticket={fan}&lang={lang}"))
            .await
            .text()
            .await
            .unwrap();
        assert!(
            body.contains(&format!(
                " aria-describedby=\"position-label\">{position}</span>"
            )),
            "{lang}: the place painted as {position}"
        );
    }

    with_browser(BrowserOptions::default(), move |client| async move {
        // The browser's own place, behind that fan: 1,235. The first visit joins; each next
        // one is painted by the server (the ticket's cookie), then followed by the script.
        for (lang, dir, position, ahead) in [
            ("en", "ltr", "1,235", "1,234 fans are ahead of you."),
            ("fr", "ltr", "1\u{202f}235", "1\u{202f}234"),
            ("es", "ltr", "1235", "1234"),
            ("ar", "rtl", "١٬٢٣٥", "١٬٢٣٤"),
        ] {
            visit_waiting_page(&client, &app, &show, &format!("?lang={lang}")).await;
            wait_for_state(&client, "waiting", SHORT).await;
            let shown = eventually(&format!("the place in {lang}"), SHORT, || async {
                client.text_of("#position").await.filter(|p| p == position)
            })
            .await;
            assert_eq!(shown, position);
            let words = client.text_of("#ahead").await.unwrap_or_default();
            assert!(words.contains(ahead), "{lang}: {words}");
            let page = layout(&client).await;
            assert_eq!(page["lang"], lang, "{page}");
            assert_eq!(page["dir"], dir, "{page}");
            assert_eq!(page["direction"], dir, "the body reads {dir}: {page}");
            let (brand, picker) = (
                page["brand"].as_f64().unwrap(),
                page["picker"].as_f64().unwrap(),
            );
            if dir == "rtl" {
                assert!(
                    brand > picker,
                    "mirrored: the brand stands right of the picker: {page}"
                );
            } else {
                assert!(
                    brand < picker,
                    "the brand stands left of the picker: {page}"
                );
            }
            // Text runs from the start edge of its line: the right in Arabic.
            let edges = client
                .eval(
                    "const e = document.getElementById('ahead'); const box = e.getBoundingClientRect(); \
                     const range = document.createRange(); range.selectNodeContents(e); \
                     const text = range.getBoundingClientRect(); \
                     return { start: Math.abs(text.left - box.left), end: Math.abs(box.right - text.right) };",
                )
                .await;
            let (start, end) = (edges["start"].as_f64().unwrap(), edges["end"].as_f64().unwrap());
            if dir == "rtl" {
                assert!(end < 2.0 && start > 20.0, "{lang}: the words hug the right edge: {edges}");
            } else {
                assert!(start < 2.0 && end > 20.0, "{lang}: the words hug the left edge: {edges}");
            }
            let chosen = client
                .eval("return document.getElementById('lang-select').value;")
                .await;
            assert_eq!(chosen, lang, "the picker shows the language");
        }

        // In Arabic the script moves the place in Arabic digits too, and words the wait.
        eventually("the live indicator", SHORT, || async {
            (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
        })
        .await;
        app.configure(&show, json!({"admitPerSecond": 5})).await;
        app.open(&show).await;
        let moved = eventually("the place to move, in Arabic digits", SHORT, || async {
            let text = client.text_of("#position").await?;
            arabic_number(&text)
                .filter(|p| *p < 1235)
                .map(|p| (p, text))
        })
        .await;
        assert!(moved.0 > 1, "{moved:?}");
        for part in ["#ahead", "#eta", "#conn-text"] {
            let text = client.text_of(part).await.unwrap_or_default();
            assert!(!text.is_empty(), "{part} says something");
            assert!(
                !text.chars().any(|c| c.is_ascii_digit()),
                "{part} has no ASCII digit in Arabic: {text}"
            );
        }
        let eta = client.text_of("#eta").await.unwrap_or_default();
        assert!(
            eta.chars().any(|c| ('\u{0600}'..='\u{06FF}').contains(&c)),
            "the wait in Arabic words: {eta}"
        );
        let page = layout(&client).await;
        assert_eq!(page["direction"], "rtl", "{page}");
    })
    .await;
}

#[tokio::test]
async fn the_picker_switches_the_language_and_the_choice_is_kept() {
    let app = spawn_app().await;
    let show = app.queued_show("picker", 4).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        visit_waiting_page(&client, &app, &show, "?transport=ws").await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert_eq!(layout(&client).await["lang"], "en");
        // With the script, a choice applies at once: no button to press.
        assert!(!client.visible(".lang-picker .lang-go").await);

        for (lang, dir, heading) in [
            ("fr", "ltr", "Votre place dans la file"),
            ("ar", "rtl", "مكانك في الطابور"),
            ("es", "ltr", "Tu lugar en la fila"),
        ] {
            let select = client.find(Locator::Css("#lang-select")).await.unwrap();
            select.select_by_value(lang).await.unwrap();
            let page = eventually(&format!("the page in {lang}"), SHORT, || async {
                let page = layout(&client).await;
                (page["lang"] == lang).then_some(page)
            })
            .await;
            assert_eq!(page["dir"], dir, "{page}");
            wait_for_state(&client, "waiting", SHORT).await;
            let position = client.text_of("#position").await.unwrap_or_default();
            assert!(!position.is_empty(), "{lang}: the place is shown");
            let label = client.text_of("#position-label").await.unwrap_or_default();
            assert!(label.starts_with(heading), "{lang}: {label}");
            // The query the page had is kept: the transport it was asked to use.
            let url = client.current_url().await.unwrap();
            let query: Vec<(String, String)> = url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            assert!(query.contains(&("lang".into(), lang.into())), "{url}");
            assert!(query.contains(&("transport".into(), "ws".into())), "{url}");
            assert_eq!(
                client.attr_of("#wait", "data-transport").await.as_deref(),
                Some("ws")
            );
            // The cookie keeps the choice for the next visit, with no `?lang=`.
            let cookie = client.get_named_cookie("wr_lang").await.unwrap();
            assert_eq!(cookie.value(), lang);
            visit_waiting_page(&client, &app, &show, "").await;
            wait_for_state(&client, "waiting", SHORT).await;
            assert_eq!(layout(&client).await["lang"], lang, "kept by the cookie");
            visit_waiting_page(&client, &app, &show, "?transport=ws").await;
            wait_for_state(&client, "waiting", SHORT).await;
        }
    })
    .await;
}

/// The `lang` and `dir` of a page's `<html>`.
fn html_lang(body: &str) -> (String, String) {
    let tag = body
        .split("<html")
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap_or_else(|| panic!("an <html> tag: {body}"));
    let attr = |name: &str| {
        tag.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_default()
            .to_owned()
    };
    (attr("lang"), attr("dir"))
}

#[tokio::test]
async fn accept_language_the_cookie_and_the_shows_default_choose_the_language() {
    let app = spawn_app().await;
    let show = app.queued_show("accept", 0).await;
    let page = |accept: Option<&'static str>, cookie: Option<&'static str>, query: &'static str| {
        let app = &app;
        let show = &show;
        async move {
            let mut req = app.client.get(app.url(&format!("/wait/{show}{query}")));
            if let Some(a) = accept {
                req = req.header("accept-language", a);
            }
            if let Some(c) = cookie {
                req = req.header("cookie", c);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), StatusCode::OK);
            let vary = res
                .headers()
                .get("vary")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_ascii_lowercase();
            assert!(vary.contains("accept-language"), "{vary}");
            let set = res
                .headers()
                .get("set-cookie")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let (lang, dir) = html_lang(&res.text().await.unwrap());
            (lang, dir, set)
        }
    };
    let is = |got: (String, String, Option<String>), lang: &str, dir: &str| {
        assert_eq!((got.0.as_str(), got.1.as_str()), (lang, dir), "{got:?}");
        got.2
    };

    // Accept-Language: the best shipped language it ranks.
    is(page(None, None, "").await, "en", "ltr");
    is(
        page(Some("fr-CH, fr;q=0.9, en;q=0.8"), None, "").await,
        "fr",
        "ltr",
    );
    is(
        page(Some("ar-EG,ar;q=0.9,en;q=0.5"), None, "").await,
        "ar",
        "rtl",
    );
    is(page(Some("es-419"), None, "").await, "es", "ltr");
    is(
        page(Some("de-DE, en;q=0.5, fr;q=0.7"), None, "").await,
        "fr",
        "ltr",
    );
    is(page(Some("de-DE, ja"), None, "").await, "en", "ltr");
    is(page(Some("fr;q=0, es;q=0.1"), None, "").await, "es", "ltr");

    // The cookie (the fan's choice) beats Accept-Language; `?lang=` beats both, and is kept.
    is(page(Some("fr"), Some("wr_lang=es"), "").await, "es", "ltr");
    let set = is(
        page(Some("fr"), Some("wr_lang=es"), "?lang=ar").await,
        "ar",
        "rtl",
    );
    let set = set.expect("?lang= sets the cookie");
    assert!(set.starts_with("wr_lang=ar;"), "{set}");
    assert!(set.contains("Path=/"), "{set}");
    // A language not shipped is no choice: the next rule decides, and nothing is kept.
    let set = is(page(Some("es"), None, "?lang=xx").await, "es", "ltr");
    assert_eq!(set, None);

    // The show's default stands in for a browser that asks for nothing shipped.
    let r = put_page(&app, &show, &json!({"defaultLanguage": "fr"})).await;
    assert_eq!(r.status(), StatusCode::OK);
    is(page(None, None, "").await, "fr", "ltr");
    is(page(Some("de, ja;q=0.5"), None, "").await, "fr", "ltr");
    is(page(Some("ar"), None, "").await, "ar", "rtl");
    is(page(Some("de"), Some("wr_lang=en"), "").await, "en", "ltr");
    let r = put_page(&app, &show, &json!({"defaultLanguage": "de"})).await;
    assert_eq!(
        r.status(),
        StatusCode::BAD_REQUEST,
        "not a shipped language"
    );
}
