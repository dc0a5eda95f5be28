//! A show's own waiting page in the operator console, in a real browser: the template typed
//! in the editor, previewed live in a sandboxed frame in any state and language (and every
//! state at once), saved with its files, still there after a reload (files kept without being
//! chosen again), refused with the server's reason when it holds script, and removed again.

use std::time::Duration;

use fantoccini::{Client, Locator};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use waiting_room::protocol::routes;

use crate::console::{open_card, sign_in, watch};
use crate::helpers::*;
use crate::support::app::TestApp;

/// A small page of the shop's: a marker, its logo, our head and our queue.
const TEMPLATE: &str = "<!doctype html>\n<html lang=\"{{ lang }}\" dir=\"{{ dir }}\">\n\
    <head><meta charset=\"utf-8\"><title>{{ title }}</title>{{ head }}</head>\n\
    <body><h2 class=\"shop-marker\">Marker Hall presents {{ show }}</h2>\n\
    <img class=\"shop-logo\" src=\"{{ file(\"logo.svg\") }}\" alt=\"Marker Hall\">\n\
    {{ queue }}</body>\n</html>";

const LOGO: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"20\">\
    <rect width=\"40\" height=\"20\" fill=\"#c0392b\"/></svg>";

/// Longer than the preview's debounce, shorter than any wait worth failing on.
const PREVIEW: Duration = Duration::from_secs(15);

// What the tests read in a preview's document (`d`).
const MARKER: &str = "return d.querySelector('.shop-marker').textContent;";
const QUEUE_STATE: &str = "return d.querySelector('#wait').dataset.state;";
const WAITING_SHOWN: &str = "return String(!d.querySelector('[data-panel=waiting]').hidden);";
const ADMITTED_HEADING: &str =
    "return d.querySelector('[data-panel=admitted]:not([hidden]) h1').textContent.trim();";
const DIRECTION: &str =
    "return d.documentElement.getAttribute('dir') + ' ' + d.documentElement.lang;";
/// An unstyled card has no padding; ours has.
const STYLED: &str = "const card = getComputedStyle(d.querySelector('.main-card')); \
    return card.paddingTop === '0px' ? 'bare' : 'styled';";
const LOGO_SRC: &str = "return d.querySelector('.shop-logo').getAttribute('src');";
const CONNECTION: &str = "return d.querySelector('#conn').dataset.conn;";
const SHOP_AND_QUEUE: &str =
    "return d.querySelector('.shop-marker') && d.querySelector('#wait') ? 'both' : null;";
const WHOSE: &str = "return d.querySelector('.shop-marker') ? 'shop' : 'built-in';";

/// One show's card in the console, and its waiting-page editor.
struct Editor {
    client: Client,
    card: String,
}

impl Editor {
    /// The selector of `css` inside the show's card.
    fn at(&self, css: &str) -> String {
        format!("{} {css}", self.card)
    }

    /// Opens the editor and waits for it to have read the show's page.
    async fn open(&self) {
        self.client.click_on(&self.at(".shop-page > summary")).await;
        eventually("the page editor to read the show's page", SHORT, || async {
            let loaded = self
                .client
                .attr_of(&self.at(".shop-page"), "data-loaded")
                .await;
            loaded.filter(|l| l == "true")
        })
        .await;
    }

    /// What `script` (given the frame's document as `d`) answers in the frame matching
    /// `frame`, once it shows; `null` while it does not.
    async fn in_frame(&self, frame: &str, script: &str) -> Value {
        let wrapped = format!(
            "const f = document.querySelector(arguments[0]); \
             const d = f && !f.hidden && f.contentDocument; \
             if (!d || !d.body) return null; \
             try {{ {script} }} catch (e) {{ return null; }}"
        );
        let frame = self.at(frame);
        self.client
            .execute(&wrapped, vec![json!(frame)])
            .await
            .expect("script ran")
    }

    /// Waits until `script` answers `want` in the frame matching `frame`.
    async fn frame_says(&self, what: &str, frame: &str, script: &str, want: &str) {
        let mut last = Value::Null;
        let found = tokio::time::timeout(PREVIEW, async {
            loop {
                last = self.in_frame(frame, script).await;
                if last.as_str() == Some(want) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "timed out waiting for {what}: the frame said {last}"
        );
    }

    /// Waits until `script` answers `want` in the large preview.
    async fn preview_says(&self, what: &str, script: &str, want: &str) {
        self.frame_says(what, ".preview-frame", script, want).await;
    }

    /// Waits for the text of `css` to hold `part`; the text.
    async fn text_holding(&self, what: &str, css: &str, part: &str) -> String {
        let css = self.at(css);
        eventually(what, PREVIEW, || async {
            self.client.text_of(&css).await.filter(|t| t.contains(part))
        })
        .await
    }

    /// Chooses `value` in the select matching `css`, as an operator would.
    async fn choose(&self, css: &str, value: &str) {
        let css = self.at(css);
        let select = self.client.find(Locator::Css(&css)).await;
        let select = select.unwrap_or_else(|e| panic!("no {css}: {e}"));
        select
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("cannot choose {value} in {css}: {e}"));
    }

    /// Types `text` as the template, replacing what it held.
    async fn type_template(&self, text: &str) {
        self.client
            .fill(&self.at("textarea[name=template]"), text)
            .await;
    }

    /// The template the editor holds.
    async fn template(&self) -> String {
        let script = "return document.querySelector(arguments[0]).value;";
        let css = self.at("textarea[name=template]");
        let value = self.client.execute(script, vec![json!(css)]).await;
        value
            .expect("script ran")
            .as_str()
            .expect("a template")
            .to_owned()
    }

    async fn click(&self, css: &str) {
        self.client.click_on(&self.at(css)).await;
    }

    async fn scroll_to(&self, css: &str) {
        let script = "document.querySelector(arguments[0]).scrollIntoView();";
        let css = self.at(css);
        self.client
            .execute(script, vec![json!(css)])
            .await
            .expect("scrolled");
    }
}

/// Answers yes to the confirmation dialog that must be open now; what it asked.
async fn confirm(client: &Client) -> String {
    eventually("the confirmation", SHORT, || async {
        client.visible("#confirm-dialog").await.then_some(())
    })
    .await;
    let asked = client.text_of("#confirm-text").await.unwrap_or_default();
    client.click_on("#confirm-ok").await;
    eventually("the dialog to close", SHORT, || async {
        (!client.visible("#confirm-dialog").await).then_some(())
    })
    .await;
    asked
}

/// The fans' waiting page of `show`, as HTML.
async fn fans_page(app: &TestApp, show: &str) -> String {
    let page = app.get(&routes::show(routes::WAIT_PAGE, show)).await;
    page.text().await.expect("the fans' page")
}

/// `GET …/page` of `show`, as the operator: its status and body.
async fn kept_page(app: &TestApp, show: &str) -> (StatusCode, Value) {
    let path = routes::show(routes::PAGE, show);
    let res = app.as_operator(Method::GET, &path).send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_operator_previews_saves_and_removes_a_shows_own_waiting_page() {
    let app = spawn_app().await;
    let show = app.queued_show("page", 3).await;
    let scratch = uuid::Uuid::new_v4().simple().to_string();
    let logo_dir = std::env::temp_dir().join(format!("console-page-{scratch}"));
    std::fs::create_dir_all(&logo_dir).unwrap();
    let logo = logo_dir.join("logo.svg");
    std::fs::write(&logo, LOGO).unwrap();

    with_browser(BrowserOptions::default(), move |client| async move {
        sign_in(&client, &app).await;
        watch(&client, &show).await;
        let card = open_card(&client, &show, ".shop-page").await;
        let ed = Editor {
            client: client.clone(),
            card,
        };
        let marked = format!("Marker Hall presents {show}");
        ed.open().await;
        ed.text_holding("the built-in page said", ".page-kind", "the built-in page")
            .await;
        ed.preview_says("the built-in page previewed", QUEUE_STATE, "waiting")
            .await;
        ed.preview_says("no shop's page", WHOSE, "built-in").await;

        // The logo first, then the template that shows it, typed as an operator types.
        let chooser = client
            .find(Locator::Css(&ed.at("input[name=files]")))
            .await
            .unwrap();
        chooser.send_keys(logo.to_str().unwrap()).await.unwrap();
        let listed = "[data-file='logo.svg']";
        ed.text_holding("the chosen file listed", listed, "not saved yet")
            .await;
        assert!(
            client.visible(&ed.at(".preview-unsaved")).await,
            "a file not saved is said not to show in the preview yet"
        );
        ed.type_template(TEMPLATE).await;
        ed.text_holding("the draft said unsaved", ".page-kind", "changes not saved")
            .await;

        // The preview: the marker around the queue widget, in the state chosen (waiting), with
        // the page's style sheet loaded in the sandboxed frame under the console's CSP.
        ed.preview_says("the marker in the preview", MARKER, &marked)
            .await;
        ed.preview_says("the queue widget waiting", QUEUE_STATE, "waiting")
            .await;
        ed.preview_says("the waiting panel shown", WAITING_SHOWN, "true")
            .await;
        ed.preview_says("our style sheet applied", STYLED, "styled")
            .await;
        let logo_src = ed.in_frame(".preview-frame", LOGO_SRC).await;
        let logo_src = logo_src.as_str().expect("the logo's path").to_owned();
        assert!(
            logo_src.starts_with(&format!("/wait/{show}/files/")) && logo_src.ends_with(".svg"),
            "{logo_src}"
        );
        // Nothing runs in the preview: the page's script is in it, the frame forbids it.
        let sandbox = client
            .attr_of(&ed.at(".preview-frame"), "sandbox")
            .await
            .unwrap();
        assert!(!sandbox.contains("allow-scripts"), "{sandbox}");
        let conn = ed.in_frame(".preview-frame", CONNECTION).await;
        assert_eq!(
            conn,
            json!("connecting"),
            "no script followed the made-up ticket"
        );

        // Admitted: the turn's heading, in the shop's page.
        ed.choose(".preview-state", "admitted").await;
        ed.preview_says(
            "the admitted panel's heading",
            ADMITTED_HEADING,
            "It's your turn",
        )
        .await;
        ed.preview_says("the marker still there", MARKER, &marked)
            .await;

        // Arabic: right to left, by the template's own `dir`.
        ed.choose(".preview-lang", "ar").await;
        ed.preview_says("the preview right to left", DIRECTION, "rtl ar")
            .await;
        let srcdoc = client
            .attr_of(&ed.at(".preview-frame"), "srcdoc")
            .await
            .unwrap();
        assert!(
            srcdoc.contains("dir=\"rtl\""),
            "the Arabic page reads right to left"
        );
        ed.choose(".preview-lang", "en").await;
        ed.preview_says("the preview in English again", DIRECTION, "ltr en")
            .await;

        // Words: JSON checked in the browser, then the show's own word in the preview.
        let messages = ed.at("textarea[name=messages]");
        client.fill(&messages, "{\"en\": ").await;
        let bad = "Words are written in JSON";
        ed.text_holding("the words refused", ".preview-error", bad)
            .await;
        let words = "{\"en\": {\"wait.admitted.heading\": \"Your go at Marker Hall\"}}";
        client.fill(&messages, words).await;
        let heading = "Your go at Marker Hall";
        ed.preview_says("the show's own word", ADMITTED_HEADING, heading)
            .await;
        client.fill(&messages, "").await;
        ed.preview_says(
            "the catalog's word again",
            ADMITTED_HEADING,
            "It's your turn",
        )
        .await;

        // Every state at once, each the shop's page around the queue.
        ed.click(".preview-all").await;
        let states = client
            .execute(
                "return [...document.querySelectorAll(arguments[0])].map((o) => o.value);",
                vec![json!(ed.at(".preview-state option"))],
            )
            .await
            .unwrap();
        let states: Vec<String> = serde_json::from_value(states).unwrap();
        assert_eq!(states.len(), 12, "{states:?}");
        for state in &states {
            let thumb = format!(".preview-thumb[data-state='{state}'] iframe");
            let what = format!("the {state} thumbnail");
            ed.frame_says(&what, &thumb, SHOP_AND_QUEUE, "both").await;
        }
        ed.scroll_to(".shop-page").await;
        screenshot(&client, "console-page-preview").await;
        ed.scroll_to(".preview-grid").await;
        screenshot(&client, "console-page-states").await;
        ed.click(".preview-all").await;

        // Saved: the fans' page is the shop's, its logo served.
        ed.click(".page-save").await;
        ed.text_holding("the page saved", ".page-message", "Saved")
            .await;
        ed.text_holding("the file saved", listed, "KiB, saved")
            .await;
        let fans = fans_page(&app, &show).await;
        assert!(fans.contains(&marked), "the fans' page is the shop's");
        assert!(fans.contains(&logo_src), "with the logo the preview showed");
        let (_, kept) = kept_page(&app, &show).await;
        assert_eq!(kept["files"]["logo.svg"], json!(logo_src));
        let served = app.get(&logo_src).await;
        assert_eq!(served.status(), StatusCode::OK);
        assert_eq!(served.text().await.unwrap(), LOGO);

        // After a reload the editor holds the page as kept, the logo with it.
        client.refresh().await.unwrap();
        eventually("the console after the reload", SHORT, || async {
            client.visible(&ed.at(".shop-page")).await.then_some(())
        })
        .await;
        ed.open().await;
        assert_eq!(ed.template().await, TEMPLATE);
        ed.text_holding("the kept file listed", listed, "KiB, saved")
            .await;
        ed.text_holding("its own page said", ".page-kind", "its own page")
            .await;

        // Saved again with another line and no file chosen: the logo is kept.
        let tonight = TEMPLATE.replace("</h2>", " tonight</h2>");
        ed.type_template(&tonight).await;
        let later = format!("{marked} tonight");
        ed.preview_says("the new line previewed", MARKER, &later)
            .await;
        ed.click(".page-save").await;
        eventually("the second save", PREVIEW, || async {
            fans_page(&app, &show).await.contains(&later).then_some(())
        })
        .await;
        let (_, kept) = kept_page(&app, &show).await;
        assert_eq!(
            kept["files"]["logo.svg"],
            json!(logo_src),
            "the logo was kept"
        );
        assert!(fans_page(&app, &show).await.contains(&logo_src));

        // Script is refused, in the preview and on saving, and nothing is saved.
        let script = "<script>alert('Marker')</script>{{ queue }}";
        ed.type_template(&tonight.replace("{{ queue }}", script))
            .await;
        let refused = ed
            .text_holding("the preview refused", ".preview-error", "script")
            .await;
        assert!(
            !client.visible(&ed.at(".preview-frame")).await,
            "a refused draft shows why, not a page: {refused}"
        );
        ed.click(".page-save").await;
        let why = ed
            .text_holding("the save refused", ".page-error", "Not saved")
            .await;
        assert!(why.contains("may not hold script"), "{why}");
        let fans = fans_page(&app, &show).await;
        assert!(
            fans.contains(&later) && !fans.contains("alert("),
            "nothing was saved"
        );

        // The built-in page again, after a confirmation.
        ed.click(".page-reset").await;
        let asked = confirm(&client).await;
        assert!(asked.contains(&show), "{asked}");
        ed.text_holding(
            "the built-in page back",
            ".page-message",
            "built-in page is back",
        )
        .await;
        assert_eq!(ed.template().await, "");
        assert_eq!(kept_page(&app, &show).await.0, StatusCode::NOT_FOUND);
        assert!(
            !fans_page(&app, &show).await.contains("Marker Hall"),
            "the built-in page again"
        );
        ed.preview_says("the built-in page previewed", WHOSE, "built-in")
            .await;
    })
    .await;
    let _ = std::fs::remove_dir_all(&logo_dir);
}
