//! The document is OpenAPI 3.1 and covers every route the router serves, and the router
//! serves only the contract's routes, each described by its handler.

use std::collections::BTreeSet;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use uuid::Uuid;
use waiting_room::protocol::routes;

use super::{WAIT, document};
use crate::support::app::spawn_app;
use crate::support::backend::Backend;
use crate::support::origin::Origin;
use crate::support::process::ServerProcess;
use crate::support::redis::RedisServer;

/// The methods a route could be served with.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

/// The source of the contract (`src/protocol.rs`) or the router (`src/http/…`).
fn source(file: &str) -> String {
    std::fs::read_to_string(format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("src/{file}: {e}"))
}

/// Every path of `protocol::routes`, by name, read from its source (a module of constants
/// cannot be listed otherwise); `STATIC` is the nested service's prefix, not a path.
fn contract_routes() -> Vec<(String, String)> {
    let protocol = source("protocol.rs");
    let module = protocol
        .split("pub mod routes {")
        .nth(1)
        .and_then(|rest| rest.split("\n}\n").next())
        .expect("protocol.rs has its routes module");
    let mut routes = Vec::new();
    for decl in module.split("pub const ").skip(1) {
        let (name, rest) = decl.split_once(": &str = \"").expect("a path constant");
        let value = rest.split('"').next().unwrap();
        if name != "STATIC" {
            routes.push((name.to_owned(), value.to_owned()));
        }
    }
    assert!(routes.len() > 20, "the routes module's paths: {routes:?}");
    routes
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
    // Every path of the contract is documented, and the document has no other.
    let documented: BTreeSet<String> = operations(&doc)
        .into_iter()
        .map(|(path, _)| shape(&path))
        .collect();
    let contract: BTreeSet<String> = contract_routes()
        .iter()
        .map(|(_, path)| shape(path))
        .collect();
    assert_eq!(documented, contract, "the document's paths and routes::");

    // Everything documented is served, and nothing else on those paths: with every path of
    // the contract documented, what the router serves there is what the document says.
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

/// The router (`src/http/mod.rs`) adds routes only with `routes!` (so each is its
/// handler's `#[utoipa::path]`, and in the document), and nests only `/static`; every
/// handler's attribute names its path from `routes::`: nothing it serves can miss the
/// document, or a path outside the contract.
#[test]
fn the_router_routes_only_described_handlers_of_the_contract() {
    let router = source("http/mod.rs");
    for undescribed in [".route(", ".route_service(", ".nest(", ".merge("] {
        assert!(
            !router.contains(undescribed),
            "the router adds a route without its description: {undescribed}"
        );
    }
    assert!(router.matches(".routes(routes!(").count() > 20);
    let nested: Vec<&str> = router.split(".nest_service(").skip(1).collect();
    assert_eq!(nested.len(), 1, "one nested service, the static files");
    assert!(
        nested[0].trim_start().starts_with("routes::STATIC,"),
        "{}",
        nested[0]
    );
    assert!(routes::STATIC_FILE.starts_with(&format!("{}/", routes::STATIC)));

    let names: BTreeSet<String> = contract_routes().into_iter().map(|(n, _)| n).collect();
    let mut described = 0;
    let http = format!("{}/src/http", env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![std::path::PathBuf::from(http)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for attribute in text.split("#[utoipa::path(").skip(1) {
                described += 1;
                let named = attribute
                    .split_once("path = ")
                    .and_then(|(_, rest)| rest.split(',').next())
                    .unwrap_or_default()
                    .trim();
                let name = named
                    .strip_prefix("crate::protocol::routes::")
                    .or_else(|| named.strip_prefix("routes::"))
                    .unwrap_or_else(|| {
                        panic!("{}: a path not from routes::: {named}", path.display())
                    });
                assert!(names.contains(name), "no routes::{name}");
            }
        }
    }
    assert!(described > 20, "the handlers' attributes: {described}");
}

/// In gateway mode the home page is the origin's: the document that instance serves does not
/// claim it, and still describes every route the waiting room keeps.
#[tokio::test]
async fn a_gateway_documents_what_it_serves_and_not_the_origins_home_page() {
    let redis = RedisServer::start().await;
    let origin = Origin::start();
    let upstream = origin.url();
    let gateway = ServerProcess::start(&redis.url(), 20, &[("UPSTREAM_URL", &upstream)]).await;
    let r = gateway.get(routes::OPENAPI).await;
    assert_eq!(r.status(), StatusCode::OK);
    let doc: Value = r.json().await.unwrap();
    let documented: BTreeSet<String> = operations(&doc)
        .into_iter()
        .map(|(path, _)| shape(&path))
        .collect();
    let kept: BTreeSet<String> = contract_routes()
        .iter()
        .filter(|(name, _)| name != "INDEX")
        .map(|(_, path)| shape(path))
        .collect();
    assert_eq!(documented, kept, "a gateway's document");
    // The home page it does not document is the origin's indeed.
    let home: Value = gateway.get(routes::INDEX).await.json().await.unwrap();
    assert_eq!(home["path"], "/", "{home}");
}
