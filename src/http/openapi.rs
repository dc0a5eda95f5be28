//! `GET /openapi.json`: the API described as OpenAPI 3.1, generated from the contract.
//!
//! Every path and method comes from [`routes::ALL`] (plus the `/static` files), every schema
//! from the contract's types (`#[derive(utoipa::ToSchema)]`); what each route answers is the
//! table in [`table`]. OpenAPI 3.1 cannot type a Server-Sent Events stream or a WebSocket's
//! messages: those are described in words, with an example, and by `x-event-stream` and
//! `x-websocket` extensions that `$ref` the schema of each message.

mod fan_table;
mod schemas;
mod table;

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::path::{HttpMethod, Operation, Parameter, ParameterIn, PathItem};
use utoipa::openapi::request_body::RequestBody;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOf};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::tag::Tag;
use utoipa::openapi::{
    Components, Content, Header, Info, OpenApi, Paths, RefOr, Required, Response, Schema,
    SecurityRequirement,
};

use self::schemas::{integer, object, ref_path, reference, schemas, string};
use self::table::{Answer, Audience, Body, Extra, Op, STATIC_FILE, describe};
use crate::protocol::{ADMISSION_HEADER, EventName, Frame, JOIN_PROOF_HEADER, TicketView, routes};

/// The name of the operator's bearer-token security scheme.
const OPERATOR_TOKEN: &str = "operatorToken";

/// The OpenAPI document, built once.
pub(super) async fn document() -> impl IntoResponse {
    static JSON: OnceLock<String> = OnceLock::new();
    let body = JSON.get_or_init(|| spec().to_json().expect("the document serialises"));
    ([(header::CONTENT_TYPE, "application/json")], body.as_str())
}

/// The document.
pub(super) fn spec() -> OpenApi {
    let mut paths = Paths::builder();
    const STATIC: (&str, &[&str]) = (STATIC_FILE, &["GET"]);
    let every = routes::ALL.iter().chain([&STATIC]);
    for &(route, methods) in every {
        let mut item = PathItem::default();
        for &method in methods {
            let op = match describe(route, method) {
                Some(op) => operation(route, &op),
                // Listed without answers: not valid OpenAPI, which the tests notice.
                None => Operation::builder()
                    .summary(Some("Not described yet"))
                    .build(),
            };
            item.merge_operations(PathItem::new(http_method(method), op));
        }
        paths = paths.path(openapi_path(route), item);
    }
    let bearer = Http::builder()
        .scheme(HttpAuthScheme::Bearer)
        .description(Some("The server's `ADMIN_TOKEN`"))
        .build();
    let components = Components::builder()
        .schemas_from_iter(schemas())
        .security_scheme(OPERATOR_TOKEN, SecurityScheme::Http(bearer))
        .build();
    let tags = Audience::ALL.map(|a| {
        let (name, about) = a.tag();
        Tag::builder().name(name).description(Some(about)).build()
    });
    let info = Info::builder()
        .title(env!("CARGO_PKG_NAME"))
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(env!("CARGO_PKG_DESCRIPTION")));
    OpenApi::builder()
        .info(info)
        .paths(paths.build())
        .components(Some(components))
        .tags(Some(tags))
        .build()
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

fn http_method(method: &str) -> HttpMethod {
    match method {
        "GET" => HttpMethod::Get,
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "DELETE" => HttpMethod::Delete,
        "PATCH" => HttpMethod::Patch,
        other => panic!("routes::ALL names a method the document cannot hold: {other}"),
    }
}

fn operation(route: &str, op: &Op) -> Operation {
    let path = openapi_path(route);
    let parameters = path_parameters(&path).chain(op.extra.iter().map(|&e| extra(e)));
    let mut builder = Operation::builder()
        .operation_id(Some(op.id))
        .tag(op.audience.tag().0)
        .summary(Some(op.summary))
        .parameters(Some(parameters));
    let mut answers: Vec<Answer> = op.answers.to_vec();
    let mut add = |answer: Answer| {
        if !answers.iter().any(|a| a.0 == answer.0) {
            answers.push(answer);
        }
    };
    const ERROR: Body = Body::Json("ErrorBody");
    if op.audience != Audience::Pages && path.contains("{showId}") {
        add((400, ERROR, "A showId outside `[A-Za-z0-9._-]{1,64}`"));
    }
    if let Some((schema, required)) = op.request {
        let body = RequestBody::builder()
            .content("application/json", Content::new(Some(reference(schema))))
            .required(Some(if required {
                Required::True
            } else {
                Required::False
            }));
        builder = builder.request_body(Some(body.build()));
        add((400, ERROR, "Malformed JSON"));
        add((413, ERROR, "A body over 16 KiB"));
        if required {
            add((415, ERROR, "Not `Content-Type: application/json`"));
            add((
                422,
                ERROR,
                "JSON of the wrong shape: a missing, unknown or mistyped field",
            ));
        }
    }
    if op.audience == Audience::Operator {
        add((401, ERROR, "Operator token missing or wrong"));
        builder = builder.security(SecurityRequirement::new(
            OPERATOR_TOKEN,
            Vec::<String>::new(),
        ));
    }
    if matches!(
        op.audience,
        Audience::Operator | Audience::Fan | Audience::Orders
    ) {
        add((503, ERROR, "The store is unavailable"));
    }
    for answer in answers {
        builder = builder.response(answer.0.to_string(), response(answer, op.cookie));
    }
    builder.build()
}

fn response((status, body, description): Answer, cookie: bool) -> Response {
    let mut r = Response::builder().description(description);
    let header = |schema: ObjectBuilder, about: &str| {
        Header::builder()
            .schema(Some(schema))
            .description(Some(about))
            .build()
    };
    match status {
        303 => {
            r = r.header(
                "Location",
                header(string(None), "The page, with `?ticket=`"),
            )
        }
        401 => r = r.header("WWW-Authenticate", header(string(None), "`Bearer realm=…`")),
        429 => r = r.header("Retry-After", header(integer(1), "Seconds to wait")),
        _ => {}
    }
    if cookie && status < 400 {
        r = r.header(
            "Set-Cookie",
            header(string(None), "`wr_ticket`, for the show's page"),
        );
    }
    let json = |schema: RefOr<Schema>| Content::new(Some(schema));
    let r = match body {
        Body::Empty => r,
        Body::Json(schema) => r.content("application/json", json(reference(schema))),
        Body::Created(schema) => r
            .header("Location", header(string(None), "Where it can be read"))
            .content("application/json", json(reference(schema))),
        Body::TicketNotFound => {
            let either = OneOf::builder()
                .item(reference("UnknownTicket"))
                .item(reference("ErrorBody"));
            r.content("application/json", json(either.into()))
        }
        Body::Document => r.content("application/json", json(object().into())),
        Body::Html => r.content("text/html", json(string(None).into())),
        Body::Text(media) => r.content(media, json(string(None).into())),
        Body::File => r.content("application/octet-stream", json(string(None).into())),
        Body::TicketEvents => r.content(
            "text/event-stream",
            event_stream(
                json!({"$ref": ref_path(&EventName::name())}),
                &TicketView::name(),
                "event: waiting\nid: 42\ndata: {\"ticketId\":\"0b7e4f8e-3f3a-4d5a-9d59-\
                 0d8c2a8f6b11\",\"status\":\"WAITING\",\"position\":3,\"etaSeconds\":2}\n\n",
            ),
        ),
        Body::StatsEvents => r.content(
            "text/event-stream",
            event_stream(
                json!({"const": "stats"}),
                "StatsSample",
                "event: stats\ndata: {\"at\":1767225600000,\"shows\":[]}\n\n",
            ),
        ),
        Body::Frames => {
            let socket = json!({
                "description": "After the upgrade the server sends a text frame per change, \
                    each a Frame: the ticket JSON plus its event name and show version; it \
                    pings every 10 s; the client sends nothing but pongs and a close",
                "serverTextFrame": {"$ref": ref_path(&Frame::name())},
            });
            r.extensions(Some(extension("x-websocket", socket)))
        }
    };
    r.build()
}

/// A `text/event-stream` body: events named as `event` says, each `data` one line of JSON
/// of the `data` schema.
fn event_stream(event: Value, data: &str, example: &str) -> Content {
    let about = "Server-Sent Events: `event:` the event name, `id:` the show version it holds \
        at (sent back as `Last-Event-ID` on reconnect), `data:` one line of JSON; comments \
        keep the stream alive";
    let stream = json!({"event": event, "data": {"$ref": ref_path(data)}});
    Content::builder()
        .schema(Some(string(None).description(Some(about))))
        .example(Some(example.into()))
        .extensions(Some(extension("x-event-stream", stream)))
        .build()
}

/// The parameters of a path's `{name}`s.
fn path_parameters(path: &str) -> impl Iterator<Item = Parameter> + use<> {
    let names: Vec<String> = path
        .split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(name, _)| name.to_owned()))
        .collect();
    names.into_iter().map(|name| {
        let uuid = || string(Some(KnownFormat::Uuid)).into();
        let (schema, about) = match name.as_str() {
            "showId" => (reference("ShowId"), "The show"),
            "ticketId" => (
                uuid(),
                "The ticket; anything but a UUID is a ticket nobody holds",
            ),
            "id" => (uuid(), "The order"),
            _ => (string(None).into(), "A file's name"),
        };
        Parameter::builder()
            .name(name)
            .parameter_in(ParameterIn::Path)
            .required(Required::True)
            .schema(Some(schema))
            .description(Some(about))
            .build()
    })
}

fn extra(e: Extra) -> Parameter {
    use ParameterIn::{Header, Query};
    let uuid = Some(KnownFormat::Uuid);
    let (name, place, about, format) = match e {
        Extra::AdmissionTicket => (
            ADMISSION_HEADER,
            Header,
            "The fan's admitted ticket id, or its signed pass \
             (`v1:<kid>:<showId>:<ticketId>:<exp>:<mac>`, see the README)",
            None,
        ),
        Extra::JoinProof => (
            JOIN_PROOF_HEADER,
            Header,
            "Proof of work when the show asks one: `<challenge>:<nonce>`, SHA-256 of which \
             starts with the challenge's `bits` zero bits",
            None,
        ),
        Extra::IdempotencyKey => (
            "Idempotency-Key",
            Header,
            "1 to 128 visible ASCII characters: the same key, the same ticket while it lives",
            None,
        ),
        Extra::LastEventId => (
            "Last-Event-ID",
            Header,
            "Sent by a reconnecting EventSource",
            None,
        ),
        Extra::WatchedShows => (
            "shows",
            Query,
            "Comma-separated shows besides the open ones",
            None,
        ),
        Extra::PageTicket => ("ticket", Query, "A ticket to show, else the cookie's", uuid),
        Extra::AuditAfter => (
            "after",
            Query,
            "The id of the last record seen (`next` of the page before)",
            None,
        ),
        Extra::AuditLimit => ("limit", Query, "Records a page, 1 to 1000 (100)", None),
        Extra::Upgrade => (
            "Upgrade",
            Header,
            "With the rest of an RFC 6455 handshake",
            None,
        ),
    };
    let mut schema = string(format);
    let mut required = Required::False;
    if let Extra::Upgrade = e {
        schema = schema.enum_values(Some(["websocket"]));
        required = Required::True;
    }
    Parameter::builder()
        .name(name)
        .parameter_in(place)
        .required(required)
        .description(Some(about))
        .schema(Some(schema))
        .build()
}

fn extension(name: &str, value: Value) -> Extensions {
    [(name.to_owned(), value)].into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> Value {
        serde_json::to_value(spec()).unwrap()
    }

    #[test]
    fn every_route_is_described() {
        for (route, methods) in routes::ALL {
            for method in *methods {
                assert!(
                    describe(route, method).is_some(),
                    "{method} {route} is not described"
                );
            }
        }
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
