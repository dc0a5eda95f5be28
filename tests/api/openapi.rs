//! `GET /openapi.json`: a valid OpenAPI 3.1 document that covers every route the router
//! serves, and whose schemas the server's real answers match.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;
use waiting_room::model::ShowId;
use waiting_room::protocol::{ADMISSION_HEADER, routes};

use crate::helpers::{Backend, SseReader, TOKEN, TestApp, events_path, spawn_app, ticket_id};

const WAIT: Duration = Duration::from_secs(5);

/// The methods a route could be served with.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

/// The static files are a nested service, the one thing served beyond `routes::ALL`.
const STATIC_FILE: &str = "/static/{}";

async fn document(app: &TestApp) -> (String, Value) {
    let r = app
        .client
        .get(app.url(routes::OPENAPI))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    let text = r.text().await.unwrap();
    let doc = serde_json::from_str(&text).unwrap();
    (text, doc)
}

/// A route template with its parameters blanked, so axum's `{show_id}` and OpenAPI's
/// `{showId}` compare equal.
fn shape(template: &str) -> String {
    let mut out = String::new();
    for part in template.split('{') {
        match part.split_once('}') {
            Some((_, rest)) => out.extend(["{}", rest]),
            None => out.push_str(part),
        }
    }
    out
}

/// Every (path, METHOD) of the document.
fn operations(doc: &Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().unwrap().keys() {
            ops.push((path.clone(), method.to_uppercase()));
        }
    }
    ops
}

/// `path` with its parameters filled: a show and ids nobody made, and a file that exists.
fn probe_path(path: &str) -> String {
    let nil = Uuid::nil().to_string();
    path.replace("{showId}", "openapi-probe")
        .replace("{ticketId}", &nil)
        .replace("{id}", &nil)
        .replace("{file}", "style.css")
}

/// Whether an answer is the router's own 404 or 405 (no route, or not this method).
async fn fallback(r: reqwest::Response) -> Option<String> {
    let status = r.status();
    if status != StatusCode::NOT_FOUND && status != StatusCode::METHOD_NOT_ALLOWED {
        return None; // (and a stream that answered is never read to its end)
    }
    let body: Value = r.json().await.unwrap_or(Value::Null);
    let router_404 = status == StatusCode::NOT_FOUND && body["message"] == "no such resource";
    (router_404 || status == StatusCode::METHOD_NOT_ALLOWED).then(|| format!("{status} {body}"))
}

/// A validator for the schema of `path`'s `method` answering `status` with JSON.
fn validator(doc: &Value, path: &str, method: &str, status: u16) -> jsonschema::Validator {
    let pointer = format!(
        "/paths/{}/{method}/responses/{status}/content/application~1json/schema",
        path.replace('~', "~0").replace('/', "~1")
    );
    let mut schema = doc
        .pointer(&pointer)
        .unwrap_or_else(|| panic!("the document has no JSON answer {status} to {method} {path}"))
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

#[tokio::test]
async fn the_document_is_openapi_3_1() {
    let app = spawn_app(Backend::Memory).await;
    let (text, doc) = document(&app).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );

    // A 3.1 parser reads it whole, and every reference in it resolves.
    let spec = oas3::from_json(&text).expect("oas3 parses the document");
    let version = spec.validate_version().expect("a 3.1 version");
    assert_eq!((version.major, version.minor), (3, 1));
    let mut count = 0;
    for (path, method, op) in spec.operations() {
        count += 1;
        let at = format!("{method} {path}");
        assert!(op.operation_id.is_some(), "{at} has no operationId");
        op.parameters(&spec).unwrap_or_else(|e| panic!("{at}: {e}"));
        op.request_body(&spec)
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        let responses = op.responses(&spec);
        let declared = op.responses.as_ref().map_or(0, |r| r.len());
        assert!(declared > 0, "{at} declares no response");
        assert_eq!(
            responses.len(),
            declared,
            "{at}: a response does not resolve"
        );
        for (status, response) in responses {
            for (media, content) in response.content {
                content
                    .schema(&spec)
                    .unwrap_or_else(|e| panic!("{at} {status} {media}: {e}"));
            }
        }
    }
    assert_eq!(count, operations(&doc).len());

    // Every schema is a JSON Schema (2020-12, OpenAPI 3.1's dialect).
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        if let Err(e) = jsonschema::meta::validate(schema) {
            panic!("schema {name} is no JSON Schema: {e}");
        }
    }
    // Operator routes name the bearer scheme, the rest need nothing; every `{name}` of a
    // path is one of its parameters.
    let scheme = &doc["components"]["securitySchemes"]["operatorToken"];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    for (path, method) in operations(&doc) {
        let op = &doc["paths"][&path][method.to_lowercase()];
        let operator = op["tags"][0] == "operator";
        assert_eq!(
            op["security"][0].get("operatorToken").is_some(),
            operator,
            "{method} {path}"
        );
        let params = op["parameters"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for name in path.split('{').skip(1).filter_map(|s| s.split('}').next()) {
            let declared = params
                .iter()
                .any(|p| p["in"] == "path" && p["name"] == name);
            assert!(declared, "{method} {path} does not declare {{{name}}}");
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn the_document_covers_every_route_the_router_serves() {
    let app = spawn_app(Backend::Memory).await;
    let (_, doc) = document(&app).await;
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|(path, method)| (shape(&path), method))
        .collect();
    let routed: BTreeSet<(String, String)> = routes::ALL
        .iter()
        .flat_map(|(route, methods)| methods.iter().map(|m| (shape(route), m.to_string())))
        .collect();
    let missing: Vec<_> = routed.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "routes missing from the document: {missing:?}"
    );
    let extra: Vec<_> = documented.difference(&routed).collect();
    assert_eq!(
        extra,
        [&(STATIC_FILE.to_owned(), "GET".to_owned())],
        "beyond routes::ALL"
    );

    // Everything documented is served, and nothing else on those paths.
    for (path, method) in operations(&doc) {
        let url = app.url(&probe_path(&path));
        let send = |m: &str| {
            let m = Method::from_bytes(m.as_bytes()).unwrap();
            app.client.request(m, &url).timeout(WAIT).send()
        };
        if let Some(answer) = fallback(send(&method).await.unwrap()).await {
            panic!("{method} {path} is documented but not served: {answer}");
        }
        let documented_here = doc["paths"][&path].as_object().unwrap();
        for other in METHODS
            .iter()
            .filter(|m| !documented_here.contains_key(&m.to_lowercase()))
        {
            if path.starts_with("/static/") {
                break; // a file service, not the router
            }
            let r = send(other).await.unwrap();
            assert_eq!(
                r.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{other} {path} is served"
            );
        }
    }
    app.stop().await;
}

/// The router (`src/http/mod.rs`) routes only `routes::` constants, each with the methods
/// `routes::ALL` gives it, and nests only `/static`: nothing it serves can miss the
/// document.
#[test]
fn the_router_routes_only_the_contract() {
    let read = |file: &str| {
        std::fs::read_to_string(format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("src/{file} (the router, the contract): {e}"))
    };
    let (router, protocol) = (read("http/mod.rs"), read("protocol.rs"));
    let value_of = |name: &str| -> String {
        let decl = format!("pub const {name}: &str = \"");
        let start = protocol
            .find(&decl)
            .unwrap_or_else(|| panic!("no routes::{name}"))
            + decl.len();
        protocol[start..].split('"').next().unwrap().to_owned()
    };
    let mut served = BTreeSet::new();
    for call in router.split(".route(").skip(1) {
        let call = call.split(")\n").next().unwrap().trim_start();
        let name = call
            .strip_prefix("routes::")
            .unwrap_or_else(|| panic!("the router routes a path not from the contract: {call}"))
            .split(',')
            .next()
            .unwrap()
            .trim();
        for method in METHODS {
            let m = method.to_lowercase();
            if call.contains(&format!(" {m}(")) || call.contains(&format!(".{m}(")) {
                served.insert((value_of(name), method.to_owned()));
            }
        }
    }
    let nested: Vec<&str> = router.split(".nest_service(").skip(1).collect();
    assert_eq!(nested.len(), 1, "one nested service, the static files");
    assert!(
        nested[0].trim_start().starts_with("routes::STATIC,"),
        "{}",
        nested[0]
    );
    let contract: BTreeSet<(String, String)> = routes::ALL
        .iter()
        .flat_map(|(route, methods)| methods.iter().map(|m| (route.to_string(), m.to_string())))
        .collect();
    assert_eq!(served, contract, "the router and routes::ALL differ");
}

/// Asserts that `r` is `status` with JSON matching what the document says `method` on `path`
/// answers with it; that JSON.
async fn check(doc: &Value, path: &str, method: &str, status: u16, r: reqwest::Response) -> Value {
    assert_eq!(r.status().as_u16(), status, "{method} {path}");
    let body: Value = r.json().await.unwrap();
    conforms(&validator(doc, path, method, status), &body);
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
    let url = |path: &str| app.url(&path.replace("{showId}", "oas"));
    let operator = |method: Method, path: &str| {
        let request = app.client.request(method, url(path)).bearer_auth(TOKEN);
        request.timeout(WAIT)
    };
    let get = |path: &str| app.client.get(app.url(path)).send();

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
    assert_eq!(polled["paused"], "closed");
    let events = app.url(&events_path("oas", &ticket));
    let mut sse = SseReader::connect(&app.client, &events, None).await;
    let event = sse.next(WAIT).await.unwrap();
    let stream = &doc["paths"][format!("{ticket_path}/events")]["get"]["responses"]["200"];
    let stream = &stream["content"]["text/event-stream"]["x-event-stream"];
    assert_eq!(stream["event"]["$ref"], "#/components/schemas/EventName");
    conforms(&component(&doc, "EventName"), &json!(event.event));
    assert_eq!(stream["data"]["$ref"], "#/components/schemas/TicketView");
    conforms(&component(&doc, "TicketView"), &event.data);
    let ws = url(&format!("{ticket_path}/ws")).replace("{ticketId}", &ticket);
    let ws = ws.replace("http://", "ws://");
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
    assert_eq!(r.status(), StatusCode::OK);
    let (mut body, mut text) = (r.bytes_stream(), String::new());
    while !text.contains("data:") || !text.ends_with("\n\n") {
        let chunk = tokio::time::timeout(WAIT, body.next())
            .await
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    let data = text.lines().find_map(|l| l.strip_prefix("data:"));
    let sample: Value = serde_json::from_str(data.expect("a stats event").trim()).unwrap();
    assert_eq!(sample["shows"][0]["showId"], "oas", "{sample}");
    conforms(&component(&doc, "StatsSample"), &sample);

    // Admitted: an order, and the order read back.
    let r = operator(Method::POST, &format!("{show}/open")).send().await;
    assert_eq!(r.unwrap().status(), StatusCode::NO_CONTENT);
    app.wait_admitted("oas", &ticket, WAIT).await;
    let r = app.order("oas", "h", None).await;
    check(&doc, "/orders", "post", 403, r).await;
    let r = app.order("oas", "h", Some(&ticket)).await;
    assert!(r.headers().contains_key("location"));
    let order = check(&doc, "/orders", "post", 201, r).await;
    let r = get(&format!("/orders/{}", order["id"].as_str().unwrap())).await;
    check(&doc, "/orders/{id}", "get", 200, r.unwrap()).await;
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
    let r = get("/orders/waiting-room/oas/stats").await.unwrap();
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
        "a", "show-42", "A.b_c-9", &long, "", "a b", "a:b", "{x}", "é", &too_long, "a/b",
    ] {
        assert_eq!(
            show_id.is_valid(&json!(id)),
            id.parse::<ShowId>().is_ok(),
            "the schema and the server disagree on {id:?}"
        );
    }
}
