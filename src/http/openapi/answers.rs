//! Answers more than one route gives, or that the `#[utoipa::path]` attribute cannot spell:
//! the descriptions the handlers' attributes share, and the streams (Server-Sent Events, a
//! WebSocket) and the ticket route's two-shaped 404 as [`ToResponse`] types, named in an
//! attribute as `response = inline(…)`.
//!
//! OpenAPI 3.1 cannot type a Server-Sent Events stream or a WebSocket's messages: those are
//! described in words, with an example, and by `x-event-stream` and `x-websocket`
//! extensions that `$ref` the schema of each message.

use serde_json::{Value, json};
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::OneOf;
use utoipa::openapi::{Content, RefOr, Response};
use utoipa::{ToResponse, ToSchema};

use super::schemas::{ref_path, reference, string};
use crate::protocol::{EventName, Frame, TicketView};

/// No show of that id (404).
pub(in crate::http) const NO_SHOW: &str = "No show of that id";
/// The show's state was lost, or the store cannot be reached (503).
pub(in crate::http) const LOST: &str = "The show's state was lost, or the store is unavailable";
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
    /// A ticket's Server-Sent Events: ticket JSON, named by [`EventName`].
    TicketEvents => Response::builder()
        .description("Its state at once, then an event per change")
        .content(
            "text/event-stream",
            event_stream(
                json!({"$ref": ref_path(&EventName::name())}),
                &TicketView::name(),
                "event: waiting\nid: 42\ndata: {\"ticketId\":\"0b7e4f8e-3f3a-4d5a-9d59-\
                 0d8c2a8f6b11\",\"status\":\"WAITING\",\"position\":3,\"etaSeconds\":2}\n\n",
            ),
        )
        .build()
}

answer! {
    /// The operator's Server-Sent Events: a `stats` sample each second.
    StatsEvents => Response::builder()
        .description("A `stats` event each second")
        .content(
            "text/event-stream",
            event_stream(
                json!({"const": "stats"}),
                "StatsSample",
                "event: stats\ndata: {\"at\":1767225600000,\"shows\":[]}\n\n",
            ),
        )
        .build()
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

pub(super) fn extension(name: &str, value: Value) -> Extensions {
    [(name.to_owned(), value)].into_iter().collect()
}
