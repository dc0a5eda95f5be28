//! The document is OpenAPI 3.1 and covers every route the router serves, and the router
//! serves only the contract's routes.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use uuid::Uuid;
use waiting_room::protocol::routes;

use super::{WAIT, document};
use crate::support::app::spawn_app;
use crate::support::backend::Backend;

/// The methods a route could be served with.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

/// The static files are a nested service, the one thing served beyond `routes::ALL`.
const STATIC_FILE: &str = "/static/{}";

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
