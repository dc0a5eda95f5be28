//! The wire contract, spelled once: every route, the push event names, the WebSocket frame,
//! the error body, and the ticket JSON (its types live in [`crate::model`] and are re-exported
//! here). The server's router, its handlers, the clients and the tests take them from here;
//! the Lua scripts publish [`ShowEvent`](crate::store::ShowEvent) with the field names of that
//! type, which the store suite decodes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::model::{EndReason, Paused, Phase, TicketStatus, TicketView};

/// Every route of the HTTP API, as axum matches it, and the paths a client calls.
pub mod routes {
    /// `POST`: a request a bypass rule of the show matches is admitted at once (docs/bypass.md).
    pub const BYPASS: &str = "/orders/waiting-room/{show_id}/bypass";
    /// `POST` (operator): a signed bypass link for support staff.
    pub const BYPASS_LINKS: &str = "/orders/waiting-room/{show_id}/bypass-links";
    /// `GET`: the waiting page's way through for staff: a signed link (`?link=`) or a staff
    /// network, admitted at once and sent on to the page.
    pub const WAIT_BYPASS: &str = "/wait/{show_id}/bypass";
    /// `POST` (operator): access codes from a CSV; `GET`: the show's codes by lane
    /// (docs/lanes.md).
    pub const CODES: &str = "/orders/waiting-room/{show_id}/codes";
    /// `GET` (operator): every show's id (`ShowList`).
    pub const SHOWS: &str = "/orders/waiting-room";
    /// A show: `PUT` (make it, operator), `DELETE` (remove it, operator).
    pub const SHOW: &str = "/orders/waiting-room/{show_id}";
    /// `POST` (operator): the on-sale opens: the admitter serves the show and the gate takes
    /// only its admissions; makes the show if needed and re-opens a lost one from nothing.
    pub const OPEN: &str = "/orders/waiting-room/{show_id}/open";
    /// `POST`: admission stops, every place is kept, the gate stays shut (`open` resumes).
    pub const PAUSE: &str = "/orders/waiting-room/{show_id}/pause";
    /// `POST`: the original's close: no admissions and no gate; waiting fans are sent on.
    pub const CLOSE: &str = "/orders/waiting-room/{show_id}/close";
    /// `POST` `{"reason"}` (optional): the on-sale is over; joins are 410, the gate shut.
    pub const END: &str = "/orders/waiting-room/{show_id}/end";
    /// `GET` (operator): a show's figures, a [`ShowStats`](crate::model::ShowStats).
    pub const STATS: &str = "/orders/waiting-room/{show_id}/stats";
    /// `PUT` (operator) with any of a show's settings: makes the show if needed, applies from
    /// the next tick, answers its figures.
    pub const CONFIG: &str = "/orders/waiting-room/{show_id}/config";
    /// `POST`: a place in the queue, also before the show opens (202 with the ticket JSON);
    /// [`super::IDEMPOTENCY_KEY`] optional, [`super::JOIN_PROOF_HEADER`] when the show asks one.
    pub const JOIN: &str = "/orders/waiting-room/{show_id}/join";
    /// A scheduled show's draw: the commitment, then what it revealed (public).
    pub const DRAW: &str = "/orders/waiting-room/{show_id}/draw";
    /// A show's audit: a record per tick that admitted anyone, and the draw (public, paged).
    pub const AUDIT: &str = "/orders/waiting-room/{show_id}/audit";
    /// `GET` (operator): the on-sale's report, as HTML, JSON or CSV (docs/report.md).
    pub const REPORT: &str = "/orders/waiting-room/{show_id}/report";
    /// `POST`: a join challenge (proof of work) for the show.
    pub const CHALLENGE: &str = "/orders/waiting-room/{show_id}/challenge";
    /// `GET`: 204 when `X-Admission-Ticket` carries a valid pass of the show whose
    /// admission runs unspent, else 403 (an edge's `auth_request`).
    pub const PASS_CHECK: &str = "/orders/waiting-room/{show_id}/pass";
    /// `POST`: a checkout outside spends the admission in `X-Admission-Ticket`, once.
    pub const REDEEM: &str = "/orders/waiting-room/{show_id}/redeem";
    /// The public keys that verify admission passes (a JSON Web Key Set).
    pub const JWKS: &str = "/.well-known/jwks.json";
    /// A ticket: `GET` (poll), `DELETE` (leave).
    pub const TICKET: &str = "/orders/waiting-room/{show_id}/tickets/{ticket_id}";
    /// `POST` a Web Push subscription (or `{"webhook": true}`): the fan is called when its
    /// turn is near.
    pub const NOTIFY: &str = "/orders/waiting-room/{show_id}/tickets/{ticket_id}/notify";
    /// `GET`: the VAPID public key pages subscribe to Web Push with.
    pub const VAPID: &str = "/.well-known/vapid";
    /// `GET`: a ticket's states as Server-Sent Events, its current state first.
    pub const EVENTS: &str = "/orders/waiting-room/{show_id}/tickets/{ticket_id}/events";
    /// `GET` (a WebSocket upgrade): a ticket's states as [`Frame`](super::Frame)s, its
    /// current state first.
    pub const WS: &str = "/orders/waiting-room/{show_id}/tickets/{ticket_id}/ws";
    /// `POST` an [`OrderRequest`](crate::model::OrderRequest): 201 and `Location`; the gate
    /// wants an admission of the show in `X-Admission-Ticket` unless its on-sale was closed.
    pub const ORDERS: &str = "/orders";
    /// `GET`: the order of that id (a UUID), or 404.
    pub const ORDER: &str = "/orders/{id}";
    /// `GET`: liveness: `ok` while the process answers.
    pub const HEALTHZ: &str = "/healthz";
    /// `GET`: readiness: `ready` while the store answers (naming the shows it lost), else 503.
    pub const READYZ: &str = "/readyz";
    /// `GET`: Prometheus metrics, as OpenMetrics text.
    pub const METRICS: &str = "/metrics";
    /// `GET`: the OpenAPI 3.1 document of the routes this instance serves.
    pub const OPENAPI: &str = "/openapi.json";
    /// `GET`: the page of the on-sales open now; in gateway mode `/` is the origin's.
    pub const INDEX: &str = "/";
    /// `GET`: a show's waiting page (HTML), with the ticket's state at first paint.
    pub const WAIT_PAGE: &str = "/wait/{show_id}";
    /// `POST`: the waiting page's join button without JavaScript: joins, keeps the ticket in
    /// the `wr_ticket` cookie, and sends the fan back to the page (303).
    pub const WAIT_JOIN: &str = "/wait/{show_id}/join";
    /// `POST` with the pass in `X-Admission-Ticket`: the `wr_pass` cookie gateway mode reads.
    pub const WAIT_PASS: &str = "/wait/{show_id}/pass";
    /// `GET`: a file of a show's own page (a logo, a style sheet), by its hash: the same
    /// forever, so cached for a year.
    pub const WAIT_FILE: &str = "/wait/{show_id}/files/{file}";
    /// `PUT` (operator) a show's own waiting page (template, words, files), `GET` it,
    /// `DELETE` it (the built-in page again).
    pub const PAGE: &str = "/orders/waiting-room/{show_id}/page";
    /// `POST` (operator) a page not yet set: its render in a state and a language.
    pub const PAGE_PREVIEW: &str = "/orders/waiting-room/{show_id}/page/preview";
    /// `GET`: the operator's console (HTML); its script asks for the token.
    pub const ADMIN: &str = "/admin";
    /// `GET` (operator): the figures of the open shows and those named in `?shows=` (comma
    /// separated), each second, as Server-Sent Events.
    pub const ADMIN_STATS_EVENTS: &str = "/admin/stats/events";
    /// `GET` (operator): where a ticket stands and in which show, for support.
    pub const ADMIN_TICKET: &str = "/admin/tickets/{ticket_id}";
    /// The pages' scripts, styles and icons: a nested service, not a route.
    pub const STATIC: &str = "/static";
    /// A file under [`STATIC`], as the document names it.
    pub const STATIC_FILE: &str = "/static/{file}";

    /// `template` with its `{show_id}`, `{ticket_id}` and `{id}` filled in.
    pub fn path(template: &str, show: &str, ticket: &str) -> String {
        template
            .replace("{show_id}", show)
            .replace("{ticket_id}", ticket)
            .replace("{id}", ticket)
    }

    /// The path of a show's route (`JOIN`, `OPEN`, …).
    pub fn show(template: &str, show: &str) -> String {
        path(template, show, "")
    }

    /// The path of a ticket's route (`TICKET`, `EVENTS`, `WS`).
    pub fn ticket(template: &str, show: &str, ticket: &str) -> String {
        path(template, show, ticket)
    }
}

/// The header that carries an admission to the gate.
pub const ADMISSION_HEADER: &str = "X-Admission-Ticket";

/// The header an origin behind gateway mode answers with to end the fan's pass (value
/// `revoke`, once its purchase is done, say); never passed on to the fan.
pub const COMMAND_HEADER: &str = "x-waiting-room-command";

/// The cookie that carries an admitted fan's pass to the paths gateway mode guards.
pub const PASS_COOKIE: &str = "wr_pass";

/// How long an edge may keep `GET /.well-known/jwks.json` (its `Cache-Control: max-age`): a
/// shared key is published at least this long before it signs.
pub const JWKS_MAX_AGE_SECONDS: u64 = 300;

/// The header `GET …/pass` adds when the store could not be asked whether the admission is
/// unspent (value `signature`: the signature and expiry alone let it through).
pub const CHECKED_HEADER: &str = "x-admission-checked";

/// The header that makes a join idempotent: the same key, the same ticket.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// The header a join's answer says whether its `Idempotency-Key` was seen before in
/// (`true`: the same ticket again, 200).
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The header a reconnecting EventSource sends the `id` of the last event it read in: the
/// show version its fan last knew (SSE's own, named here with the rest).
pub const LAST_EVENT_ID: &str = "last-event-id";

/// The header a request carries a show's bypass token in (docs/bypass.md); never a URL's
/// query, which logs keep.
pub const BYPASS_TOKEN_HEADER: &str = "X-Bypass-Token";

/// The header a join carries its access code in (docs/lanes.md): the code lets its fan into
/// its lane. Never a URL's query, which logs keep.
pub const ACCESS_CODE_HEADER: &str = "X-Access-Code";

/// With [`ACCESS_CODE_HEADER`]: `general` joins the general queue when the code is refused,
/// rather than being refused (403).
pub const ACCESS_CODE_FALLBACK_HEADER: &str = "X-Access-Code-Fallback";

/// The header a join carries its proof of work in: `<challenge>:<nonce>`.
pub const JOIN_PROOF_HEADER: &str = "X-Join-Proof";

/// A join challenge, as `POST …/{showId}/challenge` answers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    /// Opaque; solve for a nonce such that SHA-256 of `challenge:nonce` (ASCII) starts with
    /// `bits` zero bits, then join with `X-Join-Proof: <challenge>:<nonce>`. Single use.
    pub challenge: String,
    /// The zero bits the show asks now (0: a join needs no proof).
    pub bits: u32,
    /// How long the challenge may still be spent.
    pub expires_in_seconds: u64,
}

/// The event names of the push contract (`event:` in SSE, `"event"` in WebSocket frames).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventName {
    /// In the queue or its pre-queue: a position and ETA, or the time until the show opens.
    Waiting,
    /// Let through: the seconds left to order and the signed pass.
    Admitted,
    /// The admission ran out (or was released or given back); the stream ends.
    Expired,
    /// The store does not know the ticket (never joined, left, or its show was deleted or
    /// lost; `status` `LOST` with a `message` when a Redis failover lost its place); the
    /// stream ends.
    Unknown,
    /// The waiting room stepped aside (the on-sale closed: no gate); the stream ends.
    Closed,
    /// The on-sale ended (`reason` says why); the stream ends.
    Ended,
}

impl EventName {
    /// Every event name, in the order the variants are declared.
    pub const ALL: [EventName; 6] = [
        EventName::Waiting,
        EventName::Admitted,
        EventName::Expired,
        EventName::Unknown,
        EventName::Closed,
        EventName::Ended,
    ];

    /// What the event says, as the OpenAPI document describes it.
    pub fn about(self) -> &'static str {
        match self {
            EventName::Waiting => {
                "In the queue or its pre-queue: a position and ETA, or the time until the \
                 show opens"
            }
            EventName::Admitted => "Let through: the seconds left to order and the signed pass",
            EventName::Expired => {
                "The admission ran out (or was released or given back); the stream ends"
            }
            EventName::Unknown => {
                "The store does not know the ticket (never joined, left, or its show deleted \
                 or lost; `LOST` with a `message` when a Redis failover lost its place); the \
                 stream ends"
            }
            EventName::Closed => {
                "The waiting room stepped aside (the on-sale closed: no gate); the stream ends"
            }
            EventName::Ended => "The on-sale ended (`reason` says why); the stream ends",
        }
    }

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Waiting => "waiting",
            EventName::Admitted => "admitted",
            EventName::Expired => "expired",
            EventName::Unknown => "unknown",
            EventName::Closed => "closed",
            EventName::Ended => "ended",
        }
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is none of the contract's.
#[derive(Debug, thiserror::Error)]
#[error("not an event name of the push contract: {0}")]
pub struct UnknownEventName(String);

impl FromStr for EventName {
    type Err = UnknownEventName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventName::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownEventName(s.to_owned()))
    }
}

/// One WebSocket text frame: the ticket JSON of the poll endpoint, plus the event name and
/// the show version it holds at (SSE's `event:` and `id:`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Frame {
    /// The push event this state goes out as (SSE's `event:`).
    pub event: EventName,
    /// The show version this state holds at.
    pub id: u64,
    /// The ticket JSON of the poll endpoint, its fields inline in the frame.
    #[serde(flatten)]
    pub view: TicketView,
}

/// Every error's body (the original's `{"ticketId","status":"UNKNOWN"}` aside): an RFC 9457
/// problem, `Content-Type: application/problem+json` ([`PROBLEM_JSON`]), that keeps the
/// fields clients read since before (`status`, `error`, `message`) beside the RFC's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The HTTP status, again.
    pub status: u16,
    /// Its reason phrase (`Not Found`).
    pub error: String,
    /// What was wrong, for a person: names the bad field, or the URL to go to.
    pub message: String,
    /// RFC 9457's problem type: `about:blank`, the status says what kind of problem it is.
    /// (Optional only for what older servers sent.)
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// RFC 9457's title: the status's phrase, as `error` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// RFC 9457's detail: what was wrong, as `message` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The media type of an error's body ([`ErrorBody`]): an RFC 9457 problem.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// What `POST …/{showId}/end` takes: why, optionally.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndRequest {
    /// Why the on-sale ended (`"sold out"`), told to every fan still queued: 1 to 64 bytes
    /// of printable text.
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_read_back_as_written() {
        for name in EventName::ALL {
            assert_eq!(name.as_str().parse::<EventName>().unwrap(), name);
            assert_eq!(serde_json::to_value(name).unwrap(), name.as_str());
        }
        assert!("Waiting".parse::<EventName>().is_err());
    }

    #[test]
    fn paths_fill_their_templates() {
        assert_eq!(
            routes::ticket(routes::EVENTS, "s", "t"),
            "/orders/waiting-room/s/tickets/t/events"
        );
        assert_eq!(
            routes::show(routes::JOIN, "s"),
            "/orders/waiting-room/s/join"
        );
        assert_eq!(routes::path(routes::ORDER, "", "42"), "/orders/42");
    }
}

/// A web origin as browsers compare them: scheme, host and port (`https://tickets.example`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    https: bool,
    host: String,
    port: u16,
}

impl Origin {
    /// Whether browsers reach the site over TLS (so its cookies can be `Secure`).
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// Its host, in lower case.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Its port, the scheme's default when the URL named none.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port a scheme has when none is named.
    pub fn default_port(https: bool) -> u16 {
        if https { 443 } else { 80 }
    }
}

impl FromStr for Origin {
    type Err = String;

    /// An origin from a URL or an `Origin` header; a path after it is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let uri: axum::http::Uri = s.trim().parse().map_err(|e| format!("not a URL ({e})"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err("must start with http:// or https://".into()),
        };
        let authority = uri.authority().ok_or("has no host")?;
        let host = authority.host().to_ascii_lowercase();
        if host.is_empty() {
            return Err("has no host".into());
        }
        let port = authority.port_u16().unwrap_or(Origin::default_port(https));
        Ok(Origin { https, host, port })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}", self.host)?;
        if self.port != Origin::default_port(self.https) {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}
