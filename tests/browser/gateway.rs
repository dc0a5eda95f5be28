//! Gateway mode in a real browser, before a real origin: a fan who opens a guarded path of
//! the shop is sent to queue, waits, and once admitted the page brings it back to the very
//! path it asked for, now let through with its pass in an HttpOnly cookie.

use fantoccini::Locator;
use waiting_room::config::Config;

use crate::helpers::*;
use crate::support::app::spawn_app_configured;
use crate::support::origin::Origin;

#[tokio::test]
async fn a_fan_sent_to_queue_comes_back_to_the_shop_admitted() {
    let origin = Origin::start();
    let app = spawn_app_configured(Config {
        upstream_url: Some(origin.url()),
        protect: Some("/checkout=gw".into()),
        admit_per_second: 2,
        ..Config::for_tests()
    })
    .await;
    app.create("gw").await;
    with_browser(BrowserOptions::default(), move |client| async move {
        client
            .goto(&app.url("/checkout/pay?seat=A1"))
            .await
            .unwrap();
        // Sent to queue: the page joins by itself and waits, the sale not open yet.
        eventually("the waiting page", SHORT, || async {
            let url = client.current_url().await.ok()?;
            (url.path() == "/wait/gw").then_some(())
        })
        .await;
        wait_for_state(&client, "waiting", SHORT).await;
        assert!(
            origin
                .seen()
                .await
                .iter()
                .all(|p| !p.starts_with("/checkout")),
            "the shop saw a fan without an admission"
        );
        // Admitted: back at the shop, where it was going.
        app.open("gw").await;
        let url = eventually("back at the checkout", SHORT, || async {
            let url = client.current_url().await.ok()?;
            (url.path() == "/checkout/pay").then_some(url)
        })
        .await;
        assert_eq!(url.query(), Some("seat=A1"));
        let body = client
            .find(Locator::Css("body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(body.contains("x-admission-ticket"), "{body}");
        // The pass rides in a cookie no script can read.
        let cookies = client.eval("return document.cookie").await;
        assert!(!cookies.to_string().contains("wr_pass"), "{cookies}");
        screenshot(&client, "gateway-back-at-the-shop").await;
        drop(origin);
    })
    .await;
}
