//! What each route takes and answers: the table the OpenAPI document is built from. Paths,
//! methods and schemas come from the contract; this adds only what the contract's types
//! cannot say (status codes, and what each means).

use crate::protocol::routes::*;

/// The files under `/static`: served by a nested service, so not a route of `routes::ALL`.
pub const STATIC_FILE: &str = "/static/{file}";

/// Who a route is for; the document's tags.
#[derive(Clone, Copy, PartialEq)]
pub enum Audience {
    Operator,
    Fan,
    Orders,
    Pages,
    Service,
}

impl Audience {
    pub const ALL: [Audience; 5] = [
        Self::Operator,
        Self::Fan,
        Self::Orders,
        Self::Pages,
        Self::Service,
    ];

    /// The tag's name and description.
    pub fn tag(self) -> (&'static str, &'static str) {
        match self {
            Self::Operator => (
                "operator",
                "Shows and their on-sales; bearer token required",
            ),
            Self::Fan => ("fan", "Join, follow a ticket (poll, SSE, WebSocket), leave"),
            Self::Orders => (
                "orders",
                "Orders, behind the gate: only an admitted ticket buys",
            ),
            Self::Pages => (
                "pages",
                "HTML pages for browsers; their errors are pages too",
            ),
            Self::Service => ("service", "Health, readiness, metrics and this document"),
        }
    }
}

/// What a response carries.
#[derive(Clone, Copy)]
pub enum Body {
    Empty,
    /// JSON of a component schema.
    Json(&'static str),
    /// JSON of a component schema, and a `Location` naming it.
    Created(&'static str),
    /// A ticket route's 404: the seed's `UNKNOWN` answer, or the error of a missing show.
    TicketNotFound,
    /// Any JSON object (this document).
    Document,
    Html,
    /// Text of this media type.
    Text(&'static str),
    /// Server-Sent Events whose data is ticket JSON.
    TicketEvents,
    /// Server-Sent Events whose data is the operator's sample.
    StatsEvents,
    /// A WebSocket whose text frames are [`crate::protocol::Frame`]s.
    Frames,
    File,
}

/// Parameters beside the path's.
#[derive(Clone, Copy)]
pub enum Extra {
    AdmissionTicket,
    JoinProof,
    IdempotencyKey,
    LastEventId,
    WatchedShows,
    PageTicket,
    Upgrade,
    AuditAfter,
    AuditLimit,
}

/// One response: its status, what it carries, what it means.
pub type Answer = (u16, Body, &'static str);

/// One operation.
pub struct Op {
    pub id: &'static str,
    pub audience: Audience,
    pub summary: &'static str,
    /// A JSON body of this schema, and whether it is required (then axum reads it as JSON).
    pub request: Option<(&'static str, bool)>,
    pub extra: &'static [Extra],
    /// Its success sets the `wr_ticket` cookie of the show's page.
    pub cookie: bool,
    pub answers: &'static [Answer],
}

impl Op {
    fn new(
        id: &'static str,
        audience: Audience,
        summary: &'static str,
        answers: &'static [Answer],
    ) -> Op {
        Op {
            id,
            audience,
            summary,
            request: None,
            extra: &[],
            cookie: false,
            answers,
        }
    }

    fn body(self, schema: &'static str, required: bool) -> Op {
        Op {
            request: Some((schema, required)),
            ..self
        }
    }

    fn with(self, extra: &'static [Extra]) -> Op {
        Op { extra, ..self }
    }

    fn cookie(self) -> Op {
        Op {
            cookie: true,
            ..self
        }
    }
}

const ERROR: Body = Body::Json("ErrorBody");
const NO_SHOW: Answer = (404, ERROR, "No show of that id");
const LOST: Answer = (
    503,
    ERROR,
    "The show's state was lost, or the store is unavailable",
);
const NO_TICKET: Answer = (
    404,
    Body::TicketNotFound,
    "A ticket nobody holds (never joined, left, expired, or not a UUID): the seed's \
     `UNKNOWN`, echoing the id as sent; or no show of that id",
);
const TOO_MANY_STREAMS: Answer = (429, ERROR, "Too many streams open from this client");
const PAGE: Answer = (200, Body::Html, "The page");

/// What `method` on `route` takes and answers; `None` for a route the table misses.
/// Every JSON route with a `{showId}` also answers 400 for a bad one, operator routes 401,
/// JSON bodies 400/413 (and 415/422 when required), store-backed routes 503: the document
/// adds those.
pub fn describe(route: &str, method: &str) -> Option<Op> {
    use Audience::*;
    use Body::*;
    Some(match (route, method) {
        (SHOW, "PUT") => Op::new(
            "createShow",
            Operator,
            "Create a show, or change its settings; its on-sale stays closed",
            &[
                (201, Json("ShowStats"), "The show is new: its figures"),
                (200, Json("ShowStats"), "The show existed: its figures"),
                (400, ERROR, "A bad showId, or a setting out of range"),
            ],
        )
        .body("ShowConfig", false),
        (SHOW, "DELETE") => Op::new(
            "deleteShow",
            Operator,
            "Delete a show and its state; its followers are told `unknown`; orders stay",
            &[(204, Empty, "Gone"), NO_SHOW],
        ),
        (OPEN, "POST") => Op::new(
            "openShow",
            Operator,
            "Open the on-sale (the gate closes), creating the show if needed; re-opens a \
             lost show from nothing",
            &[(204, Empty, "Open")],
        ),
        (CLOSE, "POST") => Op::new(
            "closeShow",
            Operator,
            "Close the on-sale: no more admissions, no gate",
            &[(204, Empty, "Closed"), NO_SHOW],
        ),
        (STATS, "GET") => Op::new(
            "showStats",
            Operator,
            "A show's figures",
            &[(200, Json("ShowStats"), "The figures"), NO_SHOW],
        ),
        (CONFIG, "PUT") => Op::new(
            "configureShow",
            Operator,
            "Change any of a show's settings, creating it if needed; applies from the next \
             tick; a new rate pushes every waiting fan a new ETA",
            &[
                (200, Json("ShowStats"), "The figures after"),
                (400, ERROR, "No setting sent, or one out of range"),
            ],
        )
        .body("ShowConfig", true),
        (JOIN, "POST") => Op::new(
            "join",
            Fan,
            "Join the queue (also before the on-sale opens). With an `Idempotency-Key` header \
             (1 to 128 visible ASCII characters) the same key gets the same ticket back while \
             it lives: 200 and `Idempotent-Replayed: true` instead of a new place",
            &[
                (202, Json("TicketView"), "A fresh ticket"),
                (
                    200,
                    Json("TicketView"),
                    "The ticket this Idempotency-Key already holds",
                ),
                (400, ERROR, "A malformed Idempotency-Key or X-Join-Proof"),
                (
                    403,
                    ERROR,
                    "The proof is forged, for another show, ran out, or too weak",
                ),
                NO_SHOW,
                (409, ERROR, "The proof's challenge was used already"),
                (428, ERROR, "The show asks a proof of work and none came"),
                (429, ERROR, "Past the per-client join limit"),
                LOST,
            ],
        )
        .with(&[Extra::IdempotencyKey, Extra::JoinProof])
        .cookie(),
        (DRAW, "GET") => Op::new(
            "draw",
            Fan,
            "A scheduled show's draw: the commitment to its seed from the start; once drawn, \
             the seed, the participants and their digest, the beacon's value and the key, \
             from which anyone recomputes the drawn order",
            &[
                (200, Json("DrawView"), "The draw"),
                (
                    404,
                    ERROR,
                    "No show of that id, or a show that was never scheduled",
                ),
                LOST,
            ],
        ),
        (AUDIT, "GET") => Op::new(
            "audit",
            Fan,
            "A page of the show's audit, oldest first: one record per tick that admitted \
             anyone (time, fencing token, rate, epoch, the arrival numbers admitted) and the \
             draw. Never a ticket id",
            &[
                (
                    200,
                    Json("AuditPage"),
                    "Up to `limit` records after `after`",
                ),
                (
                    400,
                    ERROR,
                    "`after` is not a record id, or `limit` is out of range",
                ),
                NO_SHOW,
            ],
        )
        .with(&[Extra::AuditAfter, Extra::AuditLimit]),
        (CHALLENGE, "POST") => Op::new(
            "challenge",
            Fan,
            "A single-use join challenge and the show's difficulty (`bits`, 0: none asked)",
            &[(200, Json("Challenge"), "A challenge"), NO_SHOW, LOST],
        ),
        (PASS_CHECK, "GET") => Op::new(
            "checkPass",
            Orders,
            "Whether `X-Admission-Ticket` holds a valid, running pass of this show, checked \
             without the store (an edge's `auth_request`)",
            &[
                (204, Empty, "A valid pass of this show"),
                (
                    403,
                    ERROR,
                    "No pass, or forged, expired, of another show or of an unknown key",
                ),
            ],
        )
        .with(&[Extra::AdmissionTicket]),
        (TICKET, "GET") => Op::new(
            "ticket",
            Fan,
            "Where a ticket stands",
            &[(200, Json("TicketView"), "Waiting or admitted"), NO_TICKET],
        ),
        (TICKET, "DELETE") => Op::new(
            "leave",
            Fan,
            "Leave the queue, or give the admission back",
            &[(204, Empty, "Out"), NO_TICKET],
        )
        .cookie(),
        (EVENTS, "GET") => Op::new(
            "ticketEvents",
            Fan,
            "Follow a ticket over Server-Sent Events",
            &[
                (
                    200,
                    TicketEvents,
                    "Its state at once, then an event per change",
                ),
                NO_TICKET,
                TOO_MANY_STREAMS,
            ],
        )
        .with(&[Extra::LastEventId]),
        (WS, "GET") => Op::new(
            "ticketSocket",
            Fan,
            "Follow a ticket over a WebSocket",
            &[
                (101, Frames, "Upgraded: a text frame per change, and pings"),
                (400, ERROR, "Not a WebSocket handshake, or a bad showId"),
                NO_TICKET,
                TOO_MANY_STREAMS,
            ],
        )
        .with(&[Extra::Upgrade]),
        (ORDERS, "POST") => Op::new(
            "placeOrder",
            Orders,
            "Place an order; while the on-sale is open only an admitted ticket (or its pass) \
             may, once",
            &[
                (201, Created("Order"), "Placed"),
                (
                    200,
                    Json("Order"),
                    "The very same request again: the same order",
                ),
                (400, ERROR, "Malformed JSON, or an invalid field (named)"),
                (
                    403,
                    ERROR,
                    "The gate refuses: join first (the join URL is named), or a bad pass",
                ),
                NO_SHOW,
                (
                    409,
                    ERROR,
                    "The hold was ordered otherwise, or the admission bought",
                ),
                LOST,
            ],
        )
        .body("OrderRequest", true)
        .with(&[Extra::AdmissionTicket]),
        (ORDER, "GET") => Op::new(
            "order",
            Orders,
            "An order",
            &[
                (200, Json("Order"), "The order"),
                (404, ERROR, "No such order"),
            ],
        ),
        (HEALTHZ, "GET") => Op::new(
            "healthz",
            Service,
            "Liveness",
            &[(200, Text("text/plain"), "`ok`")],
        ),
        (READYZ, "GET") => Op::new(
            "readyz",
            Service,
            "Readiness: the store answers and has lost no show",
            &[
                (200, Text("text/plain"), "`ready`"),
                (
                    503,
                    ERROR,
                    "The store does not answer, or lost shows (named)",
                ),
            ],
        ),
        (METRICS, "GET") => Op::new(
            "metrics",
            Service,
            "Prometheus metrics",
            &[(
                200,
                Text("application/openmetrics-text"),
                "OpenMetrics text; while the store does not answer, `waiting_room_store_up 0` without the per-show gauges",
            )],
        ),
        (OPENAPI, "GET") => Op::new(
            "openapi",
            Service,
            "This document",
            &[(200, Document, "OpenAPI 3.1")],
        ),
        (INDEX, "GET") => Op::new("index", Pages, "The open on-sales", &[PAGE]),
        (WAIT_PAGE, "GET") => Op::new(
            "waitPage",
            Pages,
            "A show's waiting page, with the ticket's state at first paint",
            &[
                PAGE,
                (400, Html, "A bad showId"),
                (404, Html, "No show of that id"),
                (503, Html, "The show's state was lost"),
            ],
        )
        .with(&[Extra::PageTicket]),
        (WAIT_JOIN, "POST") => Op::new(
            "waitJoin",
            Pages,
            "The waiting page's join button, without JavaScript",
            &[
                (303, Empty, "Joined: back to the page, with `?ticket=`"),
                (403, Html, "A post another site made"),
                (404, Html, "No show of that id"),
                (
                    428,
                    Html,
                    "The show asks a proof of work, which needs JavaScript",
                ),
                (429, Html, "Past the per-client join limit"),
                (503, Html, "The show's state was lost"),
            ],
        )
        .cookie(),
        (ADMIN, "GET") => Op::new(
            "console",
            Pages,
            "The operator's console; it asks for the token",
            &[PAGE],
        ),
        (ADMIN_STATS_EVENTS, "GET") => Op::new(
            "statsEvents",
            Operator,
            "The open and the named shows' figures each second, over Server-Sent Events",
            &[
                (200, StatsEvents, "A `stats` event each second"),
                (400, ERROR, "A bad show id in `shows`"),
            ],
        )
        .with(&[Extra::WatchedShows]),
        (STATIC_FILE, "GET") => Op::new(
            "staticFile",
            Pages,
            "The pages' scripts, styles and icons",
            &[(200, File, "The file"), (404, Empty, "No such file")],
        ),
        _ => return None,
    })
}
