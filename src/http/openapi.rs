//! `GET /openapi.json`: the API described as OpenAPI 3.1, from the description the router
//! is built from.
//!
//! Each handler carries its own part in a `#[utoipa::path]` attribute (its method, its path
//! from [`routes`], its parameters from [`params`], what it takes and every answer of its
//! own), and the router is an `OpenApiRouter` of those handlers: a route cannot be served
//! without being described. [`finish`] adds what every route of a kind shares (the answers
//! of a bad show id, a bad body, a missing operator token, a store that does not answer),
//! the component schemas ([`schemas`]), and writes the paths' parameters in camel case.

mod answers;
mod bounds;
mod build;
pub(super) mod params;
mod schemas;

use std::sync::{Arc, OnceLock};

use axum::Extension;
use axum::http::header;
use axum::response::{IntoResponse, Response as HttpResponse};
use bytes::Bytes;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::request_body::RequestBody;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::tag::Tag;
use utoipa::openapi::{
    Components, Content, Header, Info, OpenApi, RefOr, Required, Response, Schema,
    SecurityRequirement,
};

pub(super) use self::answers::{
    Frames, LOST, NO_SHOW, NoTicket, PAGE, PAGE_UNAVAILABLE, StatsEvents, TOO_MANY_STREAMS,
    TicketEvents,
};
use self::build::{integer, reference, string};
use self::schemas::schemas;
use crate::error::AppError;
use crate::protocol::{PROBLEM_JSON, routes};

/// The tag of the operator's routes: they need the bearer token, and the store.
pub(super) const OPERATOR: &str = "operator";
/// The tag of a fan's routes.
pub(super) const FAN: &str = "fan";
/// The tag of the routes behind the gate.
pub(super) const ORDERS: &str = "orders";
/// The tag of the pages: their errors are pages too.
pub(super) const PAGES: &str = "pages";
/// The tag of what serves the service itself.
pub(super) const SERVICE: &str = "service";

/// Every tag, with its description.
const TAGS: [(&str, &str); 5] = [
    (OPERATOR, "Shows and their on-sales; bearer token required"),
    (FAN, "Join, follow a ticket (poll, SSE, WebSocket), leave"),
    (
        ORDERS,
        "Orders, behind the gate: only an admitted ticket buys",
    ),
    (PAGES, "HTML pages for browsers; their errors are pages too"),
    (SERVICE, "Health, readiness, metrics and this document"),
];

/// The name of the operator's bearer-token security scheme.
const OPERATOR_TOKEN: &str = "operatorToken";

/// The document one router serves: set once the router it describes is built, which is
/// before anything is served (each router has its own, so a gateway-mode instance describes
/// what it serves).
#[derive(Clone, Default)]
pub(super) struct Served(Arc<OnceLock<Bytes>>);

impl Served {
    /// Keeps `api`, finished, as the JSON to serve.
    pub(super) fn set(&self, api: OpenApi) {
        let json = finish(api).to_json().expect("the document serialises");
        // A router is built once: a second `set` would describe the same routes.
        let _ = self.0.set(Bytes::from(json));
    }
}

#[utoipa::path(
    get,
    path = routes::OPENAPI,
    operation_id = "openapi",
    tag = SERVICE,
    summary = "This document",
    responses((status = 200, description = "OpenAPI 3.1", body = Object)),
)]
/// `GET /openapi.json`: the document of the router this handler is part of.
pub(super) async fn document(Extension(served): Extension<Served>) -> HttpResponse {
    match served.0.get() {
        Some(json) => ([(header::CONTENT_TYPE, "application/json")], json.clone()).into_response(),
        // (Never: the router sets it before it serves.)
        None => AppError::Unavailable("the document is not built yet".into()).into_response(),
    }
}

/// The document `api` (what the handlers' attributes say) with what every route of a kind
/// shares, its components, tags and info.
pub(super) fn finish(mut api: OpenApi) -> OpenApi {
    let paths = std::mem::take(&mut api.paths.paths);
    for (path, mut item) in paths {
        let path = openapi_path(&path);
        for op in operations(&mut item) {
            optional_body(op);
            shared_answers(&path, op);
            problem_media(op);
        }
        api.paths.paths.insert(path, item);
    }
    let bearer = Http::builder()
        .scheme(HttpAuthScheme::Bearer)
        .description(Some("The server's `ADMIN_TOKEN`"))
        .build();
    let components = api.components.get_or_insert_with(Components::new);
    components.schemas.extend(schemas());
    components
        .security_schemes
        .insert(OPERATOR_TOKEN.into(), SecurityScheme::Http(bearer).into());
    let tags = TAGS.map(|(name, about)| Tag::builder().name(name).description(Some(about)).build());
    api.tags = Some(tags.into());
    api.info = Info::builder()
        .title(env!("CARGO_PKG_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(env!("CARGO_PKG_DESCRIPTION")))
        .build();
    api
}

/// The operations of a path.
fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
        &mut item.head,
        &mut item.options,
        &mut item.trace,
    ]
    .into_iter()
    .filter_map(Option::as_mut)
}

/// A body the attribute names as `Option<T>` is one the route may go without: the
/// document says so (`required: false`) rather than offering JSON `null`, which no route
/// takes.
fn optional_body(op: &mut Operation) {
    let Some(RefOr::T(body)) = &mut op.request_body else {
        return;
    };
    if body.required.is_some() {
        return;
    }
    let null = |s: &RefOr<Schema>| {
        let null = SchemaType::Type(Type::Null);
        matches!(s, RefOr::T(Schema::Object(o)) if o.schema_type == null)
    };
    for content in body.content.values_mut() {
        let RefOr::T(content) = content else { continue };
        let Some(RefOr::T(Schema::OneOf(either))) = &content.schema else {
            continue;
        };
        let (nulls, some): (Vec<_>, Vec<_>) = either.items.iter().partition(|s| null(s));
        if let ([_], [some]) = (&nulls[..], &some[..]) {
            content.schema = Some((*some).clone());
        }
    }
    body.required = Some(Required::False);
}

/// Errors are RFC 9457 problems (`crate::error::problem`): an answer whose JSON is an
/// [`ErrorBody`](crate::protocol::ErrorBody) is documented as `application/problem+json`,
/// whatever an attribute said. A ticket route's 404 is either: the original's `UNKNOWN` stays
/// `application/json`, a missing show's error is a problem.
fn problem_media(op: &mut Operation) {
    const JSON: &str = "application/json";
    let is_error =
        |s: &RefOr<Schema>| matches!(s, RefOr::Ref(r) if r.ref_location.ends_with("/ErrorBody"));
    for response in op.responses.responses.values_mut() {
        let RefOr::T(response) = response else {
            continue;
        };
        let Some(RefOr::T(json)) = response.content.get_mut(JSON) else {
            continue;
        };
        match &mut json.schema {
            Some(schema) if is_error(schema) => {
                if let Some(content) = response.content.shift_remove(JSON) {
                    response.content.insert(PROBLEM_JSON.into(), content);
                }
            }
            Some(RefOr::T(Schema::OneOf(one))) if one.items.iter().any(is_error) => {
                one.items.retain(|s| !is_error(s));
                let problem = Content::new(Some(reference("ErrorBody")));
                response
                    .content
                    .insert(PROBLEM_JSON.into(), RefOr::T(problem));
            }
            _ => {}
        }
    }
}

/// Adds to `op` on `path` the answers every route of its kind gives (unless it says its
/// own), the operator's security, and the headers some statuses always carry.
fn shared_answers(path: &str, op: &mut Operation) {
    let tag = op.tags.as_ref().and_then(|t| t.first()).cloned();
    let tag = tag.as_deref().unwrap_or_default();
    let mut add = |status: u16, about: &str| {
        let error = Response::builder().description(about).content(
            "application/json",
            Content::new(Some(reference("ErrorBody"))),
        );
        op.responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| error.build().into());
    };
    if tag != PAGES && path.contains("{showId}") {
        add(400, "A showId outside `[A-Za-z0-9._-]{1,64}`");
    }
    if let Some(RefOr::T(RequestBody { required, .. })) = &op.request_body {
        let required = matches!(required, Some(Required::True));
        add(400, "Malformed JSON");
        add(
            408,
            "The body did not arrive within `HEADER_TIMEOUT` of the request's head (the \
             connection is closed)",
        );
        add(413, "A body over 16 KiB");
        if required {
            add(415, "Not `Content-Type: application/json`");
            add(
                422,
                "JSON of the wrong shape: a missing, unknown or mistyped field",
            );
        }
    }
    if tag == OPERATOR {
        add(401, "Operator token missing or wrong");
        add(
            429,
            "Too many wrong operator tokens from this client lately \
             (`OPERATOR_TOKEN_GUESSES`): every operator call from it, the right token too",
        );
        op.security = Some(vec![SecurityRequirement::new(
            OPERATOR_TOKEN,
            Vec::<String>::new(),
        )]);
    }
    if [OPERATOR, FAN, ORDERS].contains(&tag) {
        add(
            503,
            "The store is unavailable, or this instance is at its bound of the crowd's \
             requests (`MAX_STORE_CALLS`)",
        );
    }
    let header = |schema: ObjectBuilder, about: &str| {
        Header::builder()
            .schema(Some(schema))
            .description(Some(about))
            .build()
    };
    for (status, answer) in &mut op.responses.responses {
        let RefOr::T(answer) = answer else { continue };
        let (name, value) = match status.as_str() {
            "303" => (
                "Location",
                header(string(None), "The page, with `?ticket=`"),
            ),
            "401" => ("WWW-Authenticate", header(string(None), "`Bearer realm=…`")),
            "429" | "503" => (
                "Retry-After",
                header(integer(1), "Seconds to wait before trying again"),
            ),
            _ => continue,
        };
        answer.headers.entry(name.into()).or_insert(value.into());
    }
}

/// An axum route template as an OpenAPI path: `{show_id}` becomes `{showId}`.
pub(super) fn openapi_path(template: &str) -> String {
    let (mut out, mut inside, mut upper) = (String::new(), false, false);
    for c in template.chars() {
        match c {
            '{' | '}' => inside = c == '{',
            '_' if inside => {
                upper = true;
                continue;
            }
            _ => {}
        }
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = false;
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn document() -> Value {
        serde_json::to_value(crate::http::openapi_document()).unwrap()
    }

    #[test]
    fn paths_name_their_parameters_in_camel_case() {
        assert_eq!(
            openapi_path(routes::EVENTS),
            "/orders/waiting-room/{showId}/tickets/{ticketId}/events"
        );
        assert_eq!(openapi_path(routes::ORDER), "/orders/{id}");
        assert_eq!(
            openapi_path(routes::ADMIN_STATS_EVENTS),
            "/admin/stats/events"
        );
    }

    #[test]
    fn every_reference_names_a_component() {
        fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::String(r)) = map.get("$ref") {
                        out.push(r);
                    }
                    map.values().for_each(|v| refs(v, out));
                }
                Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let doc = document();
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 20, "the document references its schemas");
        for r in found {
            let target = r.strip_prefix('#').expect("a local reference");
            assert!(doc.pointer(target).is_some(), "{r} resolves to nothing");
        }
    }

    #[test]
    fn a_body_a_route_may_go_without_is_optional_not_null() {
        let doc = document();
        let show = &doc["paths"]["/orders/waiting-room/{showId}"]["put"];
        let config = &doc["paths"]["/orders/waiting-room/{showId}/config"]["put"];
        let schema =
            |op: &Value| op["requestBody"]["content"]["application/json"]["schema"].clone();
        let show_config = serde_json::json!({"$ref": "#/components/schemas/ShowSettings"});
        // `Option<ShowSettings>` in the attribute: no body is fine, JSON `null` is not offered.
        assert_eq!(show["requestBody"]["required"], false);
        assert_eq!(schema(show), show_config);
        assert!(show["responses"].get("415").is_none(), "{show}");
        // `ShowSettings`: required, so the answers of a missing or mistyped body apply.
        assert_eq!(config["requestBody"]["required"], true);
        assert_eq!(schema(config), show_config);
        for status in ["400", "408", "413", "415", "422", "401", "429", "503"] {
            assert!(
                config["responses"].get(status).is_some(),
                "{status}: {config}"
            );
        }
        // When to come back, wherever a client is told to.
        for status in ["429", "503"] {
            let headers = &config["responses"][status]["headers"];
            assert!(headers.get("Retry-After").is_some(), "{status}: {config}");
        }
    }

    #[test]
    fn the_settings_are_served_with_the_bounds_the_server_checks() {
        let doc = document();
        let settings = &doc["components"]["schemas"]["ShowSettings"]["properties"];
        // Narrowed: a rate is 1 to MAX_RATE, or null (left out).
        let rate = &settings["admitPerSecond"]["anyOf"];
        assert_eq!(rate[0]["minimum"], 1, "{settings}");
        assert_eq!(rate[0]["maximum"], crate::model::MAX_RATE, "{settings}");
        assert_eq!(rate[1]["type"], "null", "{settings}");
        // Described still: the doc comment stays the description.
        let about = settings["admitPerSecond"]["description"].as_str().unwrap();
        assert!(about.starts_with("Admissions a second"), "{about}");
    }

    #[test]
    fn every_operation_has_a_unique_id() {
        let doc = document();
        let mut ids: Vec<&str> = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .map(|op| op["operationId"].as_str().unwrap())
            .collect();
        let all = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all, "operation ids repeat: {ids:?}");
    }
}
