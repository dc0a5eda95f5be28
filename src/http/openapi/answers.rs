//! Answers more than one route gives, or that the `#[utoipa::path]` attribute cannot spell:
//! the descriptions the handlers' attributes share, and the streams (Server-Sent Events, a
//! WebSocket) and the ticket route's two-shaped 404 as [`ToResponse`] types, named in an
//! attribute as `response = inline(…)`.
//!
//! OpenAPI 3.1 has no words for a stream of events. A Server-Sent Events response's `schema`
//! describes one event, as OpenAPI 3.2's `itemSchema` does for a sequential media type (and
//! as 3.1 tools that read event streams, such as Schemathesis, take `schema`): a `oneOf` of
//! one object per event name, `{event, id, retry?, data}`, whose `data` is a string of JSON
//! (`contentMediaType`) of the `contentSchema` given. A WebSocket's messages are described in
//! words and by an `x-websocket` extension that `$ref`s the schema of each frame.

use serde_json::{Value, json};
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{AllOf, ObjectBuilder, OneOf};
use utoipa::openapi::{Content, RefOr, Response, Schema};
use utoipa::{ToResponse, ToSchema};

use super::build::{integer, object, ref_path, reference, string};
use crate::http::shown::statuses_of;
use crate::protocol::{EventName, Frame, TicketView};

/// No show of that id (404).
pub(in crate::http) const NO_SHOW: &str = "No show of that id";
/// The show's state was lost, or the store cannot be reached (503).
pub(in crate::http) const LOST: &str = "The show's state was lost, the store is unavailable, or \
    this instance is at its bound of the crowd's requests (`MAX_STORE_CALLS`)";
/// A page's 503: a page when the store fails, a problem when the shed answers first.
pub(in crate::http) const PAGE_UNAVAILABLE: &str = "The show's state was lost, or the store is \
    unavailable (a page); or the instance has as many of the crowd's requests at work as it \
    takes (`MAX_STORE_CALLS`), answered at once before any page is made (a problem)";
/// A client past `MAX_STREAMS_PER_CLIENT` (429).
pub(in crate::http) const TOO_MANY_STREAMS: &str = "Too many streams open from this client";
/// The page, rendered (200).
pub(in crate::http) const PAGE: &str = "The page";

/// Declares a unit type whose [`ToResponse`] is the body of the `fn` given.
macro_rules! answer {
    ($(#[$doc:meta])* $name:ident => $build:expr) => {
        $(#[$doc])*
        pub(in crate::http) struct $name;

        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<Response>) {
                (stringify!($name), $build.into())
            }
        }
    };
}

answer! {
    /// A ticket route's 404: the original's `UNKNOWN` answer, or the error of a missing show.
    NoTicket => {
        let either = OneOf::builder()
            .item(reference("UnknownTicket"))
            .item(reference("ErrorBody"));
        Response::builder()
            .description(
                "A ticket nobody holds (never joined, left, expired, or not a UUID): the \
                 original's `UNKNOWN`, echoing the id as sent; or no show of that id",
            )
            .content("application/json", Content::new(Some(either)))
            .build()
    }
}

answer! {
    /// A ticket's Server-Sent Events: ticket JSON, one event per [`EventName`].
    TicketEvents => {
        let events = EventName::ALL.map(|name| {
            let status = statuses_of(name).iter().map(|s| json!(s)).collect::<Vec<_>>();
            let data = AllOf::builder()
                .item(reference(&TicketView::name()))
                .item(object().property("status", string(None).enum_values(Some(status))));
            event(name.as_str(), name.about(), "The show version it holds at", data.into())
                .property(
                    "retry",
                    integer(0).description(Some(
                        "On the first event: how long (ms) an EventSource waits before it \
                         reconnects, drawn per stream",
                    )),
                )
                .into()
        });
        Response::builder()
            .description(
                "Its state at once, then an event per change; `expired`, `unknown`, `closed` \
                 and `ended` end the stream",
            )
            .content(
                "text/event-stream",
                event_stream(
                    events,
                    "event: waiting\nid: 42\ndata: {\"ticketId\":\"0b7e4f8e-3f3a-4d5a-9d59-\
                     0d8c2a8f6b11\",\"status\":\"WAITING\",\"position\":3,\"etaSeconds\":2}\n\n",
                ),
            )
            .build()
    }
}

answer! {
    /// The operator's Server-Sent Events: a `stats` sample each second.
    StatsEvents => {
        let stats = event(
            "stats",
            "The figures of every open show and of the shows asked for",
            "The sample's time, ms since the epoch",
            reference("StatsSample"),
        );
        Response::builder()
            .description("A `stats` event each second, for as long as the operator watches")
            .content(
                "text/event-stream",
                event_stream(
                    [stats.into()],
                    "event: stats\nid: 1767225600000\ndata: {\"at\":1767225600000,\"shows\":[]}\n\n",
                ),
            )
            .build()
    }
}

answer! {
    /// A ticket's WebSocket: a [`Frame`] per change.
    Frames => {
        let socket = json!({
            "description": "After the upgrade the server sends a text frame per change, \
                each a Frame: the ticket JSON plus its event name and show version; it \
                pings every 10 s; the client sends nothing but pongs and a close (a frame or \
                message over 4 KiB is answered with close code 1009, message too big)",
            "serverTextFrame": {"$ref": ref_path(&Frame::name())},
        });
        Response::builder()
            .description("Upgraded: a text frame per change, and pings")
            .extensions(Some(extension("x-websocket", socket)))
            .build()
    }
}

/// One event of a stream, named `name`: its `id` (said by `id_about`) and its `data`, one line
/// of JSON of the `data` schema.
fn event(name: &str, about: &str, id_about: &str, data: RefOr<Schema>) -> ObjectBuilder {
    let id = string(None)
        .pattern(Some("^[0-9]+$"))
        .description(Some(format!(
            "{id_about}; an EventSource sends the last one back as `Last-Event-ID`"
        )));
    let data = string(None)
        .content_media_type("application/json")
        .content_schema(Some(data))
        .description(Some("One line of JSON"));
    object()
        .description(Some(about))
        .property("event", string(None).enum_values(Some([name])))
        .property("id", id)
        .property("data", data)
        .required("event")
        .required("id")
        .required("data")
}

/// A `text/event-stream` body whose events are one of `events`; comments keep it alive.
fn event_stream(events: impl IntoIterator<Item = RefOr<Schema>>, example: &str) -> Content {
    let about = "One event of the stream (the body is a sequence of them, with comments that \
        keep it alive): OpenAPI 3.1 has no schema for a stream, so this describes each item, \
        as 3.2's `itemSchema` does";
    let mut one = OneOf::builder().description(Some(about));
    for event in events {
        one = one.item(event);
    }
    Content::builder()
        .schema(Some(one))
        .example(Some(example.into()))
        .build()
}

pub(super) fn extension(name: &str, value: Value) -> Extensions {
    [(name.to_owned(), value)].into_iter().collect()
}
