//! The pictures of docs/pages.md, taken in a real browser: the built-in waiting page in
//! English and in Arabic (right to left), and the sample shop page of `docs/pages/sample/`
//! waiting and admitted. Ignored by default (the pictures are committed); take them again with
//!
//! ```sh
//! cargo test --test browser docs_screenshots -- --ignored
//! ```
//!
//! They land in `WR_SCREENSHOTS` (a folder, relative to the checkout), `docs/pages` unless set;
//! docs/pages/README-screenshots.md says what each shows.

use std::path::{Path, PathBuf};

use fantoccini::Client;
use serde_json::json;

use crate::helpers::*;
use crate::shop_page::{assert_shop_frame, set_sample_page};

/// Where the pictures go.
fn folder() -> PathBuf {
    let dir = std::env::var("WR_SCREENSHOTS").unwrap_or_else(|_| "docs/pages".into());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("the screenshots folder");
    dir
}

/// Saves what the browser shows as `{name}.png` in [`folder`], and in `target/screenshots/`.
async fn picture(client: &Client, name: &str) {
    let taken = screenshot(client, name).await;
    let to = folder().join(format!("{name}.png"));
    std::fs::copy(&taken, &to).expect("the picture copied");
    let size = std::fs::metadata(&to).map(|m| m.len()).unwrap_or(0);
    eprintln!("{}: {} KB", to.display(), size / 1024);
}

/// Waits until the page follows live and its place has moved at least once.
async fn settled(client: &Client, from: u64) {
    eventually("the live indicator", SHORT, || async {
        (client.attr_of("#conn", "data-conn").await.as_deref() == Some("live")).then_some(())
    })
    .await;
    eventually("the place to move", SHORT, || async {
        let text = client.text_of("#position").await?;
        let n: u64 = text
            .chars()
            .filter_map(|c| match c {
                '0'..='9' => c.to_digit(10),
                '\u{0660}'..='\u{0669}' => Some(c as u32 - 0x0660),
                _ => None,
            })
            .fold(0, |n, d| n * 10 + u64::from(d));
        (n > 0 && n < from).then_some(())
    })
    .await;
}

#[tokio::test]
#[ignore = "writes the pictures of docs/pages.md: run by hand with --ignored"]
async fn docs_screenshots() {
    let app = spawn_app().await;
    // Fixed names (a fresh server each run), a queue long enough to show a real wait.
    let (tour, harbour, encore) = ("spring-tour", "harbour-nights", "harbour-nights-encore");
    for show in [tour, harbour] {
        app.create(show).await;
        app.join_many(show, 1233).await;
        app.configure(show, json!({"admitPerSecond": 4, "awayHoldSeconds": 0}))
            .await;
    }
    app.create(encore).await;
    app.open(encore).await;
    set_sample_page(&app, harbour).await;
    set_sample_page(&app, encore).await;

    with_browser(BrowserOptions::default(), move |client| async move {
        app.open(tour).await;
        app.open(harbour).await;
        // A 1000 × 800 page: the window is the page and the browser's own frame.
        client.set_window_size(1000, 800).await.unwrap();
        client.goto(&app.url("/")).await.unwrap();
        let inner = client.eval("return window.innerHeight;").await;
        let frame = 800 - inner.as_u64().unwrap_or(800).min(800) as u32;
        client.set_window_size(1000, 800 + frame).await.unwrap();

        visit_waiting_page(&client, &app, tour, "?lang=en").await;
        wait_for_state(&client, "waiting", SHORT).await;
        settled(&client, 1234).await;
        picture(&client, "builtin-waiting-en").await;

        visit_waiting_page(&client, &app, tour, "?lang=ar").await;
        wait_for_state(&client, "waiting", SHORT).await;
        settled(&client, 1234).await;
        picture(&client, "builtin-waiting-ar").await;

        visit_waiting_page(&client, &app, harbour, "?lang=en").await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert_shop_frame(&client, "the picture").await;
        settled(&client, 1234).await;
        picture(&client, "shop-waiting").await;
        // Not in the docs, for a look (target/screenshots/): the shop's page in Arabic, and
        // on a phone.
        visit_waiting_page(&client, &app, harbour, "?lang=ar").await;
        wait_for_state(&client, "waiting", SHORT).await;
        screenshot(&client, "shop-waiting-ar").await;
        let (width, height) = client.get_window_size().await.unwrap();
        client.set_window_size(390, 844).await.unwrap();
        screenshot(&client, "shop-waiting-ar-phone").await;
        client
            .set_window_size(width as u32, height as u32)
            .await
            .unwrap();

        visit_waiting_page(&client, &app, encore, "?lang=en").await;
        wait_for_state(&client, "admitted", SHORT).await;
        assert_shop_frame(&client, "the picture").await;
        picture(&client, "shop-admitted").await;
    })
    .await;
}
