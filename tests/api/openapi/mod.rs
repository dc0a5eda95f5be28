//! `GET /openapi.json`: a valid OpenAPI 3.1 document that covers every route the router
//! serves, and whose schemas the server's real answers match.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use waiting_room::protocol::routes;

use crate::support::app::TestApp;

mod answers;
mod coverage;

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
