//! The parameters the handlers' `#[utoipa::path]` attributes name: each a type whose
//! [`IntoParams`] builds the parameter, so a header's name comes from [`crate::protocol`]
//! (the attribute's own tuple form takes only a literal name) and a path parameter is
//! described once for every route that has it.

use utoipa::IntoParams;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder};

use super::schemas::{reference, string};
use crate::protocol::{ADMISSION_HEADER, IDEMPOTENCY_KEY, JOIN_PROOF_HEADER};

/// One parameter, optional unless `required`.
fn parameter(
    name: &str,
    place: ParameterIn,
    about: &str,
    schema: impl Into<utoipa::openapi::RefOr<utoipa::openapi::Schema>>,
    required: bool,
) -> Parameter {
    Parameter::builder()
        .name(name)
        .parameter_in(place)
        .required(if required {
            Required::True
        } else {
            Required::False
        })
        .description(Some(about))
        .schema(Some(schema))
        .build()
}

fn uuid() -> ObjectBuilder {
    string(Some(KnownFormat::Uuid))
}

/// Declares unit types whose `into_params` is the listed parameters.
macro_rules! params {
    ($($(#[$doc:meta])* $name:ident => [$($param:expr),+ $(,)?];)+) => {$(
        $(#[$doc])*
        pub(in crate::http) struct $name;

        impl IntoParams for $name {
            fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
                vec![$($param),+]
            }
        }
    )+};
}

fn show_id() -> Parameter {
    parameter(
        "showId",
        ParameterIn::Path,
        "The show",
        reference("ShowId"),
        true,
    )
}

fn ticket_id() -> Parameter {
    let about = "The ticket; anything but a UUID is a ticket nobody holds";
    parameter("ticketId", ParameterIn::Path, about, uuid(), true)
}

params! {
    /// `{showId}` of a show's routes.
    ShowPath => [show_id()];
    /// `{showId}` and `{ticketId}` of a ticket's routes.
    TicketPath => [show_id(), ticket_id()];
    /// `{id}` of an order.
    OrderPath => [parameter("id", ParameterIn::Path, "The order", uuid(), true)];
    /// `{file}` under `/static`.
    FilePath => [parameter("file", ParameterIn::Path, "A file's name", string(None), true)];
    /// The admission the gate, the pass check and redemption read.
    AdmissionTicket => [parameter(
        ADMISSION_HEADER,
        ParameterIn::Header,
        "The fan's admitted ticket id, or its signed pass \
         (`v1:<kid>:<showId>:<ticketId>:<exp>:<mac>`, see docs/passes.md)",
        string(None),
        false,
    )];
    /// A join's optional idempotency key and proof of work.
    JoinHeaders => [
        parameter(
            IDEMPOTENCY_KEY,
            ParameterIn::Header,
            "1 to 128 visible ASCII characters: the same key, the same ticket while it lives",
            string(None),
            false,
        ),
        parameter(
            JOIN_PROOF_HEADER,
            ParameterIn::Header,
            "Proof of work when the show asks one: `<challenge>:<nonce>`, SHA-256 of which \
             starts with the challenge's `bits` zero bits",
            string(None),
            false,
        ),
    ];
    /// What a reconnecting `EventSource` sends.
    LastEventId => [parameter(
        "Last-Event-ID",
        ParameterIn::Header,
        "Sent by a reconnecting EventSource",
        string(None),
        false,
    )];
    /// The handshake's `Upgrade: websocket`.
    Upgrade => [parameter(
        "Upgrade",
        ParameterIn::Header,
        "With the rest of an RFC 6455 handshake",
        string(None).enum_values(Some(["websocket"])),
        true,
    )];
    /// The console stream's shows besides the open ones.
    WatchedShows => [parameter(
        "shows",
        ParameterIn::Query,
        "Comma-separated shows besides the open ones",
        string(None),
        false,
    )];
    /// The waiting page's `?ticket=`.
    PageTicket => [parameter(
        "ticket",
        ParameterIn::Query,
        "A ticket to show, else the cookie's",
        uuid(),
        false,
    )];
    /// The audit's paging.
    AuditPaging => [
        parameter(
            "after",
            ParameterIn::Query,
            "The id of the last record seen (`next` of the page before)",
            string(None),
            false,
        ),
        parameter(
            "limit",
            ParameterIn::Query,
            "Records a page, 1 to 1000 (100)",
            string(None),
            false,
        ),
    ];
}
