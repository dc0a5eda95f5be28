//! The parameters the handlers' `#[utoipa::path]` attributes name: each a type whose
//! [`IntoParams`] builds the parameter, so a header's name comes from [`crate::protocol`]
//! (the attribute's own tuple form takes only a literal name) and a path parameter is
//! described once for every route that has it.

use utoipa::IntoParams;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder};

use super::build::{any_case, at_most, integer, reference, show_id_chars, string};
use crate::pass::{MAX_NONCE_LEN, PASS_PREFIX};
use crate::protocol::{
    ACCESS_CODE_FALLBACK_HEADER, ACCESS_CODE_HEADER, ADMISSION_HEADER, IDEMPOTENCY_KEY,
    JOIN_PROOF_HEADER,
};

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

/// A UUID as the server parses one (`uuid::Uuid::parse_str`): hyphenated, 32 hex digits,
/// braced or as a URN, as a regular expression without anchors.
fn uuid_forms() -> String {
    let h = |n: usize| format!("[0-9A-Fa-f]{{{n}}}");
    let hyphenated = format!("{}-{}-{}-{}-{}", h(8), h(4), h(4), h(4), h(12));
    format!(
        "{}|{hyphenated}|\\{{{hyphenated}\\}}|urn:uuid:{hyphenated}",
        h(32)
    )
}

/// What `X-Admission-Ticket` may carry where it is required (redemption): a pass (a JWT, or
/// a v1 pass), or a ticket id.
fn admission_pattern() -> String {
    format!("^(?:(?:eyJ|{PASS_PREFIX})[!-~]*|{})$", uuid_forms())
}

/// An `X-Join-Proof`'s shape, as the server mints its challenges (a challenge of another shape
/// is malformed, or forged: either way refused): `c1.<kid>.<showId>.<exp>.<rand>.<mac>:<nonce>`.
fn proof_pattern() -> String {
    const B64: &str = "[A-Za-z0-9_-]";
    format!(
        "^c1\\.{B64}*\\.[A-Za-z0-9._-]{{1,64}}\\.[0-9]{{1,19}}\\.{B64}{{1,32}}\\.{B64}*:[!-9;-~]{{1,{MAX_NONCE_LEN}}}$"
    )
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
    /// The admission the gate and the pass checks read: anything that is not a valid pass
    /// or a running admission is refused (403), or, at the gate of a closed show, not needed.
    AdmissionTicket => [parameter(
        ADMISSION_HEADER,
        ParameterIn::Header,
        "The fan's signed pass (a JWT, or an older v1 pass; see docs/passes.md), or at the \
         order gate its admitted ticket id",
        string(None),
        false,
    )];
    /// The admission a redemption spends: required, a pass or a ticket id (400 otherwise).
    RedeemedAdmission => [parameter(
        ADMISSION_HEADER,
        ParameterIn::Header,
        "The admission to spend: its signed pass, or the ticket id",
        string(None).pattern(Some(admission_pattern())),
        true,
    )];
    /// A join's optional idempotency key and proof of work.
    JoinHeaders => [
        parameter(
            IDEMPOTENCY_KEY,
            ParameterIn::Header,
            "1 to 128 visible ASCII characters: the same key, the same ticket while it lives",
            string(None).pattern(Some("^[!-~]{1,128}$")),
            false,
        ),
        parameter(
            JOIN_PROOF_HEADER,
            ParameterIn::Header,
            "Proof of work when the show asks one: `<challenge>:<nonce>`, SHA-256 of which \
             starts with the challenge's `bits` zero bits: the challenge as its route gave it \
             (one this server did not mint is refused, 403), the nonce 1 to 64 visible \
             characters but `:`",
            string(None).pattern(Some(proof_pattern())),
            false,
        ),
        parameter(
            ACCESS_CODE_HEADER,
            ParameterIn::Header,
            "A presale or priority code (6 to 64 of A-Z, a-z, 0-9, '-', '_'): joins the code's \
             lane and spends one of its uses; a code unknown, used up or for a lane not open is \
             403 with why, and refused codes count against the client's block (429 past the \
             limit)",
            string(None).pattern(Some("^[A-Za-z0-9_-]{6,64}$")),
            false,
        ),
        parameter(
            ACCESS_CODE_FALLBACK_HEADER,
            ParameterIn::Header,
            "`general`: join the general queue when the code is refused, rather than 403 \
             (not on a show that takes codes only)",
            string(None).pattern(Some("^general$")),
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
    /// An RFC 6455 handshake (400 without one).
    Upgrade => [
        parameter(
            "Upgrade",
            ParameterIn::Header,
            "`websocket`",
            string(None).pattern(Some(format!("^{}$", any_case("websocket")))),
            true,
        ),
        parameter(
            "Connection",
            ParameterIn::Header,
            "Naming `upgrade`",
            string(None).pattern(Some(any_case("upgrade"))),
            true,
        ),
        parameter(
            "Sec-WebSocket-Version",
            ParameterIn::Header,
            "13",
            string(None).enum_values(Some(["13"])),
            true,
        ),
        parameter(
            "Sec-WebSocket-Key",
            ParameterIn::Header,
            "16 random bytes in base64",
            string(None).pattern(Some("^[A-Za-z0-9+/]{22}==$")),
            true,
        ),
    ];
    /// The console stream's shows besides the open ones.
    WatchedShows => [parameter(
        "shows",
        ParameterIn::Query,
        "Comma-separated show ids besides the open ones, at most 100 (blanks between commas \
         are skipped)",
        {
            let show = show_id_chars();
            string(None).pattern(Some(format!(
                "^\\s*(?:{show})?\\s*(?:,\\s*(?:{show})?\\s*)*$"
            )))
        },
        false,
    )];
    /// The support lookup's show.
    LookupShow => [parameter(
        "show",
        ParameterIn::Query,
        "Search this show only (blank: every show made)",
        string(None).pattern(Some(format!("^\\s*(?:{})?\\s*$", show_id_chars()))),
        false,
    )];
    /// The waiting page's query: what it shows first, and where an admitted fan goes back to.
    /// A browser following a link cut short still gets the page: nothing here refuses it.
    PageQuery => [
        parameter(
            "ticket",
            ParameterIn::Query,
            "A ticket (its UUID) to show when the browser holds none of its own; a value that \
             is no ticket id (empty, cut short) is as if none were given",
            string(None),
            false,
        ),
        parameter(
            "return",
            ParameterIn::Query,
            "The path of this site an admitted fan is sent back to (where a gateway or an edge \
             sent it to queue); anything but a path of this site is ignored",
            string(None),
            false,
        ),
    ];
    /// The report's format.
    ReportFormat => [parameter(
        "format",
        ParameterIn::Query,
        "`html`, `json` or `csv` (absent: as `Accept` asks, HTML when it names none of them)",
        string(None).enum_values(Some(["html", "json", "csv"])),
        false,
    )];
    /// The audit's paging.
    AuditPaging => [
        parameter(
            "after",
            ParameterIn::Query,
            "The id of the last record seen (`next` of the page before): `<ms>-<n>`, each part \
             at most 2^64 − 1, not both (nothing follows that id); anything else is 400",
            {
                let part = at_most(u64::MAX);
                let last = format!("0*{}", u64::MAX);
                string(None).pattern(Some(format!("^(?!{last}-{last}$){part}-{part}$")))
            },
            false,
        ),
        parameter(
            "limit",
            ParameterIn::Query,
            "Records a page, 1 to 1000 (100)",
            integer(1).maximum(Some(1000)),
            false,
        ),
    ];
}
