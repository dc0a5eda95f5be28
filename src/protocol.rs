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
    /// A show: `PUT` (make it, operator), `DELETE` (remove it, operator).
    pub const SHOW: &str = "/orders/waiting-room/{show_id}";
    pub const OPEN: &str = "/orders/waiting-room/{show_id}/open";
    /// `POST`: admission stops, every place is kept, the gate stays shut (`open` resumes).
    pub const PAUSE: &str = "/orders/waiting-room/{show_id}/pause";
    /// `POST`: the original's close: no admissions and no gate; waiting fans are sent on.
    pub const CLOSE: &str = "/orders/waiting-room/{show_id}/close";
    /// `POST` `{"reason"}` (optional): the on-sale is over; joins are 410, the gate shut.
    pub const END: &str = "/orders/waiting-room/{show_id}/end";
    pub const STATS: &str = "/orders/waiting-room/{show_id}/stats";
    pub const CONFIG: &str = "/orders/waiting-room/{show_id}/config";
    pub const JOIN: &str = "/orders/waiting-room/{show_id}/join";
    /// A scheduled show's draw: the commitment, then what it revealed (public).
    pub const DRAW: &str = "/orders/waiting-room/{show_id}/draw";
    /// A show's audit: a record per tick that admitted anyone, and the draw (public, paged).
    pub const AUDIT: &str = "/orders/waiting-room/{show_id}/audit";
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
    pub const EVENTS: &str = "/orders/waiting-room/{show_id}/tickets/{ticket_id}/events";
    pub const WS: &str = "/orders/waiting-room/{show_id}/tickets/{ticket_id}/ws";
    pub const ORDERS: &str = "/orders";
    pub const ORDER: &str = "/orders/{id}";
    pub const HEALTHZ: &str = "/healthz";
    pub const READYZ: &str = "/readyz";
    pub const METRICS: &str = "/metrics";
    pub const OPENAPI: &str = "/openapi.json";
    pub const INDEX: &str = "/";
    pub const WAIT_PAGE: &str = "/wait/{show_id}";
    pub const WAIT_JOIN: &str = "/wait/{show_id}/join";
    /// `POST` with the pass in `X-Admission-Ticket`: the `wr_pass` cookie gateway mode reads.
    pub const WAIT_PASS: &str = "/wait/{show_id}/pass";
    pub const ADMIN: &str = "/admin";
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
    Waiting,
    Admitted,
    Expired,
    Unknown,
    /// The waiting room stepped aside (the on-sale closed: no gate); the stream ends.
    Closed,
    /// The on-sale ended (`reason` says why); the stream ends.
    Ended,
}

impl EventName {
    pub const ALL: [EventName; 6] = [
        EventName::Waiting,
        EventName::Admitted,
        EventName::Expired,
        EventName::Unknown,
        EventName::Closed,
        EventName::Ended,
    ];

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
    pub event: EventName,
    /// The show version this state holds at.
    pub id: u64,
    #[serde(flatten)]
    pub view: TicketView,
}

/// Every error's JSON body (the original's `{"ticketId","status":"UNKNOWN"}` aside).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The HTTP status, again.
    pub status: u16,
    /// Its reason phrase (`Not Found`).
    pub error: String,
    /// What was wrong, for a person: names the bad field, or the URL to go to.
    pub message: String,
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
