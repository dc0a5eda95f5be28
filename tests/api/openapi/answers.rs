//! The server's real answers match the document's schemas.

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;
use waiting_room::model::{RecordId, ShowId};
use waiting_room::protocol::{ADMISSION_HEADER, EventName, routes};

use super::{WAIT, component, conforms, conforms_event, document, event_errors, validator};
use crate::support::app::spawn_app;
use crate::support::backend::Backend;
use crate::support::sse::SseReader;
use crate::support::ticket_id;

/// Asserts that `r` is `status` with JSON matching what the document says `method` on `path`
/// answers with it; that JSON.
async fn check(doc: &Value, path: &str, method: &str, status: u16, r: reqwest::Response) -> Value {
    assert_eq!(r.status().as_u16(), status, "{method} {path}");
    let media = r.headers()["content-type"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    conforms(&validator(doc, path, method, status, &media), &body);
    body
}

#[tokio::test]
async fn the_server_answers_as_the_document_says() {
    let app = spawn_app(Backend::Memory).await;
    let (_, doc) = document(&app).await;
    let show = "/orders/waiting-room/{showId}";
    let (config, stats) = (format!("{show}/config"), format!("{show}/stats"));
    let (join, ticket_path) = (
        format!("{show}/join"),
        format!("{show}/tickets/{{ticketId}}"),
    );
    let operator = |method: Method, path: &str| {
        let path = path.replace("{showId}", "oas");
        app.as_operator(method, &path).timeout(WAIT)
    };

    let r = operator(Method::PUT, show).send().await.unwrap();
    check(&doc, show, "put", 201, r).await;
    let settings = json!({"admitPerSecond": 50, "maxActiveBuyers": 0});
    let r = operator(Method::PUT, &config)
        .json(&settings)
        .send()
        .await
        .unwrap();
    check(&doc, &config, "put", 200, r).await;
    let r = operator(Method::PUT, &config)
        .json(&json!({"rate": 1}))
        .send()
        .await
        .unwrap();
    check(&doc, &config, "put", 422, r).await;

    // A ticket while the on-sale is closed, over poll, SSE and WebSocket.
    let joined = check(&doc, &join, "post", 202, app.join("oas").await).await;
    let ticket = ticket_id(&joined);
    let r = app.ticket("oas", &ticket).await;
    let polled = check(&doc, &ticket_path, "get", 200, r).await;
    assert_eq!(polled["paused"], "pending");
    let mut sse = app.events("oas", &ticket).await;
    let event = sse.next(WAIT).await.unwrap();
    let events = format!("{ticket_path}/events");
    conforms_event(&doc, &events, &event);
    // Each event name is described, with the statuses its JSON may hold.
    let described = &doc["paths"][&events]["get"]["responses"]["200"]["content"];
    let described = described["text/event-stream"]["schema"]["oneOf"]
        .as_array()
        .unwrap();
    for (item, name) in described.iter().zip(EventName::ALL) {
        assert_eq!(item["properties"]["event"]["enum"], json!([name]));
    }
    // An event whose JSON says something its name does not is not of the document.
    let mut lying = event.clone();
    lying.data["status"] = json!("ADMITTED");
    let errors = event_errors(&doc, &events, &lying);
    assert!(
        !errors.is_empty(),
        "a waiting event saying ADMITTED conforms"
    );
    let ws = app.ws_url("oas", &ticket);
    let (mut socket, _) = tokio_tungstenite::connect_async(ws).await.unwrap();
    let frame = loop {
        let message = tokio::time::timeout(WAIT, socket.next()).await.unwrap();
        if let Message::Text(t) = message.unwrap().unwrap() {
            break serde_json::from_str::<Value>(&t).unwrap();
        }
    };
    let socket_doc = &doc["paths"][format!("{ticket_path}/ws")]["get"]["responses"]["101"];
    let frame_ref = &socket_doc["x-websocket"]["serverTextFrame"]["$ref"];
    assert_eq!(frame_ref, "#/components/schemas/Frame");
    conforms(&component(&doc, "Frame"), &frame);

    // The operator's stream.
    let admin = "/admin/stats/events?shows=oas";
    let r = operator(Method::GET, admin).send().await.unwrap();
    let mut stats_feed = SseReader::from_response(r);
    let sample = stats_feed.next(WAIT).await.expect("a stats event");
    assert_eq!(sample.data["shows"][0]["showId"], "oas", "{sample:?}");
    conforms_event(&doc, "/admin/stats/events", &sample);

    // Admitted: an order, and the order read back.
    let r = operator(Method::POST, &format!("{show}/open")).send().await;
    assert_eq!(r.unwrap().status(), StatusCode::NO_CONTENT);
    app.wait_admitted("oas", &ticket, WAIT).await;
    let r = app.order("oas", "h", None).await;
    check(&doc, "/orders", "post", 403, r).await;
    let r = app.order("oas", "h", Some(&ticket)).await;
    assert!(r.headers().contains_key("location"));
    let order = check(&doc, "/orders", "post", 201, r).await;
    let path = routes::path(routes::ORDER, "", order["id"].as_str().unwrap());
    let r = app.get(&path);
    check(&doc, "/orders/{id}", "get", 200, r.await).await;
    let r = operator(Method::GET, &stats).send().await.unwrap();
    check(&doc, &stats, "get", 200, r).await;

    // The errors: the seed's UNKNOWN, and the error body.
    for id in ["not-a-uuid".to_owned(), Uuid::new_v4().to_string()] {
        let r = app.ticket("oas", &id).await;
        let unknown = check(&doc, &ticket_path, "get", 404, r).await;
        assert_eq!(unknown["status"], "UNKNOWN");
        conforms(&component(&doc, "UnknownTicket"), &unknown);
    }
    let r = operator(Method::GET, "/orders/waiting-room/a:b/stats")
        .send()
        .await;
    check(&doc, &stats, "get", 400, r.unwrap()).await;
    let r = app.get(&routes::show(routes::STATS, "oas")).await;
    check(&doc, &stats, "get", 401, r).await;
    let r = app
        .client
        .post(app.url("/orders"))
        .header(ADMISSION_HEADER, &ticket);
    let r = r.body("{}").send().await.unwrap();
    check(&doc, "/orders", "post", 415, r).await;
    app.stop().await;
}

#[tokio::test]
async fn the_show_id_schema_is_the_alphabet_the_server_checks() {
    let app = spawn_app(Backend::Memory).await;
    let (_, doc) = document(&app).await;
    app.stop().await;
    let show_id = component(&doc, "ShowId");
    let long = "x".repeat(64);
    let too_long = "x".repeat(65);
    for id in [
        "a",
        "show-42",
        "A.b_c-9",
        &long,
        "",
        "a b",
        "a:b",
        "{x}",
        "é",
        &too_long,
        "a/b",
        ".",
        "..",
        "...",
        ".a",
        "admitter",
        "ADMITTER",
        "Admitter",
        "admitter2",
        "the-admitter",
    ] {
        assert_eq!(
            show_id.is_valid(&json!(id)),
            id.parse::<ShowId>().is_ok(),
            "the schema and the server disagree on {id:?}"
        );
    }
}

#[tokio::test]
async fn the_audit_cursor_schema_is_what_the_server_parses() {
    let app = spawn_app(Backend::Memory).await;
    let (_, doc) = document(&app).await;
    app.stop().await;
    let params = &doc["paths"]["/orders/waiting-room/{showId}/audit"]["get"]["parameters"];
    let after = params
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "after")
        .expect("the `after` parameter");
    let schema = jsonschema::draft202012::new(&after["schema"]).unwrap();
    let max = u64::MAX;
    for cursor in [
        "0-0".to_owned(),
        "1767225600000-3".into(),
        "007-01".into(),
        format!("{max}-{}", max - 1),
        format!("{}-{max}", max - 1),
        format!("{max}-{max}"),
        format!("0{max}-00{max}"),
        format!("{}-0", u128::from(max) + 1),
        format!("1-{}", u128::from(max) + 1),
        "1-".into(),
        "-1".into(),
        "+1-0".into(),
        "1-2-3".into(),
        " 1-2".into(),
        "".into(),
    ] {
        assert_eq!(
            schema.is_valid(&json!(cursor)),
            cursor.parse::<RecordId>().is_ok(),
            "the schema and the server disagree on {cursor:?}"
        );
    }
}
