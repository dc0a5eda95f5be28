//! The wire contract is spelled once (src/protocol.rs): the pages' scripts take every path,
//! event name and header from the page the server renders, and spell none of them.

use waiting_room::protocol::{ADMISSION_HEADER, EventName, routes};

const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

use crate::support::app::spawn_app;
use crate::support::backend::Backend;

fn script(name: &str) -> String {
    std::fs::read_to_string(format!("{}/static/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn the_scripts_spell_no_route_event_name_or_header() {
    for name in ["wait.js", "admin.js"] {
        let js = script(name);
        for route in waiting_room::http::openapi_document().paths.paths.keys() {
            // The fixed part of every route before its first parameter, e.g. "/orders/".
            let head = route.split('{').next().unwrap();
            if head.len() > 1 {
                assert!(!js.contains(&format!("'{head}")), "{name} spells {head}");
                assert!(!js.contains(&format!("`{head}")), "{name} spells {head}");
            }
        }
        // (The page's own states share some of these words; what it listens for comes from
        // the page.)
        for event in EventName::ALL {
            for listening in [
                format!("addEventListener('{event}'"),
                format!("['{event}',"),
            ] {
                assert!(!js.contains(&listening), "{name} spells {listening}");
            }
        }
        for header in [ADMISSION_HEADER, IDEMPOTENCY_KEY] {
            assert!(!js.contains(header), "{name} spells {header}");
        }
    }
}

#[tokio::test]
async fn the_waiting_page_hands_its_script_the_contract() {
    let app = spawn_app(Backend::Memory).await;
    app.create("c").await;
    let page = app.get(&routes::show(routes::WAIT_PAGE, "c")).await;
    let html = page.text().await.unwrap();
    for (attribute, value) in [
        ("data-route-join", routes::JOIN),
        ("data-route-ticket", routes::TICKET),
        ("data-route-events", routes::EVENTS),
        ("data-route-ws", routes::WS),
        ("data-route-orders", routes::ORDERS),
        ("data-admission-header", ADMISSION_HEADER),
        ("data-idempotency-header", IDEMPOTENCY_KEY),
    ] {
        assert!(
            html.contains(&format!("{attribute}=\"{value}\"")),
            "{attribute}"
        );
    }
    let names: Vec<&str> = EventName::ALL.iter().map(|e| e.as_str()).collect();
    assert!(html.contains(&format!("data-events=\"{}\"", names.join(" "))));
    app.stop().await;
}
