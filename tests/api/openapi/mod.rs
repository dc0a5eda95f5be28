//! `GET /openapi.json`: a valid OpenAPI 3.1 document that covers every route the router
//! serves, and whose schemas the server's real answers match.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::protocol::routes;

use crate::support::app::TestApp;
use crate::support::sse::SseEvent;

mod answers;
mod coverage;
mod fuzz;

const WAIT: Duration = Duration::from_secs(5);

async fn document(app: &TestApp) -> (String, Value) {
    let r = app.get(routes::OPENAPI).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    let text = r.text().await.unwrap();
    let doc = serde_json::from_str(&text).unwrap();
    (text, doc)
}

/// A validator for the schema of `path`'s `method` answering `status` with JSON.
/// The schema the document gives the answer `status` to `method` on `path` in `media` (the
/// answer's own Content-Type: an error is `application/problem+json`).
fn validator(
    doc: &Value,
    path: &str,
    method: &str,
    status: u16,
    media: &str,
) -> jsonschema::Validator {
    let pointer = format!(
        "/paths/{}/{method}/responses/{status}/content/{}/schema",
        path.replace('~', "~0").replace('/', "~1"),
        media.replace('~', "~0").replace('/', "~1")
    );
    let mut schema = doc
        .pointer(&pointer)
        .unwrap_or_else(|| panic!("the document has no {media} answer {status} to {method} {path}"))
        .clone();
    // `#/components/...` references resolve against the schema's root.
    schema["components"] = doc["components"].clone();
    jsonschema::draft202012::new(&schema).expect("a valid schema")
}

/// Asserts that `event` is one the document's `text/event-stream` answer (200) to `GET path`
/// describes: the item of its `oneOf` named as the event is, with its `data`, parsed, of that
/// item's `contentSchema` (which JSON Schema validators treat as an annotation).
#[track_caller]
fn conforms_event(doc: &Value, path: &str, event: &SseEvent) {
    let errors = event_errors(doc, path, event);
    assert!(
        errors.is_empty(),
        "{event:?} is not as described: {errors:?}"
    );
}

/// How `event` differs from what the document says of the events of `GET path`.
fn event_errors(doc: &Value, path: &str, event: &SseEvent) -> Vec<String> {
    let pointer = format!(
        "/paths/{}/get/responses/200/content/text~1event-stream/schema/oneOf",
        path.replace('~', "~0").replace('/', "~1")
    );
    let events = doc.pointer(&pointer).and_then(Value::as_array);
    let events = events.unwrap_or_else(|| panic!("no events described for {path}"));
    let item = events
        .iter()
        .find(|e| e["properties"]["event"]["enum"] == json!([event.event]))
        .unwrap_or_else(|| panic!("no event {} described for {path}", event.event));
    let with_components = |schema: &Value| {
        let mut schema = schema.clone();
        schema["components"] = doc["components"].clone();
        jsonschema::draft202012::new(&schema).expect("a valid schema")
    };
    let as_sent = json!({
        "event": event.event, "id": event.id, "data": event.data.to_string(),
    });
    let data = &item["properties"]["data"];
    assert_eq!(data["contentMediaType"], "application/json");
    let errors = |schema: &Value, instance: &Value| {
        let validator = with_components(schema);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|e| e.to_string())
            .collect();
        errors
    };
    let mut found = errors(item, &as_sent);
    found.extend(errors(&data["contentSchema"], &event.data));
    found
}

fn component(doc: &Value, name: &str) -> jsonschema::Validator {
    let schema =
        json!({"$ref": format!("#/components/schemas/{name}"), "components": doc["components"]});
    jsonschema::draft202012::new(&schema).expect("a valid schema")
}

#[track_caller]
fn conforms(validator: &jsonschema::Validator, body: &Value) {
    let errors: Vec<String> = validator.iter_errors(body).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{body} does not match its schema: {errors:?}"
    );
}
