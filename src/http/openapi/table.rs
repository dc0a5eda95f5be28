//! What each route takes and answers: the table the OpenAPI document is built from. Paths,
//! methods and schemas come from the contract; this adds only what the contract's types
//! cannot say (status codes, and what each means).

use crate::protocol::routes::*;

/// The files under `/static`: served by a nested service, so not a route of `routes::ALL`.
pub(super) const STATIC_FILE: &str = "/static/{file}";

/// Who a route is for; the document's tags.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Audience {
    Operator,
    Fan,
    Orders,
    Pages,
    Service,
}

impl Audience {
    pub(super) const ALL: [Audience; 5] = [
        Self::Operator,
        Self::Fan,
        Self::Orders,
        Self::Pages,
        Self::Service,
    ];

    /// The tag's name and description.
    pub(super) fn tag(self) -> (&'static str, &'static str) {
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
pub(super) enum Body {
    Empty,
    /// JSON of a component schema.
    Json(&'static str),
    /// JSON of a component schema, and a `Location` naming it.
    Created(&'static str),
    /// A ticket route's 404: the original's `UNKNOWN` answer, or the error of a missing show.
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
pub(super) enum Extra {
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
pub(super) type Answer = (u16, Body, &'static str);

/// One operation.
pub(super) struct Op {
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
    pub(super) fn new(
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

    pub(super) fn body(self, schema: &'static str, required: bool) -> Op {
        Op {
            request: Some((schema, required)),
            ..self
        }
    }

    pub(super) fn with(self, extra: &'static [Extra]) -> Op {
        Op { extra, ..self }
    }

    pub(super) fn cookie(self) -> Op {
        Op {
            cookie: true,
            ..self
        }
    }
}

pub(super) const ERROR: Body = Body::Json("ErrorBody");
pub(super) const NO_SHOW: Answer = (404, ERROR, "No show of that id");
pub(super) const LOST: Answer = (
    503,
    ERROR,
    "The show's state was lost, or the store is unavailable",
);
pub(super) const NO_TICKET: Answer = (
    404,
    Body::TicketNotFound,
    "A ticket nobody holds (never joined, left, expired, or not a UUID): the original's \
     `UNKNOWN`, echoing the id as sent; or no show of that id",
);
pub(super) const TOO_MANY_STREAMS: Answer = (429, ERROR, "Too many streams open from this client");
pub(super) const PAGE: Answer = (200, Body::Html, "The page");

/// What `method` on `route` takes and answers; `None` for a route the table misses.
/// Every JSON route with a `{showId}` also answers 400 for a bad one, operator routes 401,
/// JSON bodies 400/413 (and 415/422 when required), store-backed routes 503: the document
/// adds those.
pub(super) fn describe(route: &str, method: &str) -> Option<Op> {
    use Audience::*;
    use Body::*;
    if let Some(op) = super::fan_table::describe(route, method) {
        return Some(op);
    }
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
        (PAUSE, "POST") => Op::new(
            "pauseShow",
            Operator,
            "Pause the on-sale: admission stops at once, every place is kept, the gate stays \
             shut; `open` resumes",
            &[
                (204, Empty, "Paused"),
                (409, ERROR, "Not opened yet, or ended: nothing to pause"),
                NO_SHOW,
            ],
        ),
        (CLOSE, "POST") => Op::new(
            "closeShow",
            Operator,
            "Close the on-sale (the original's close): no more admissions and no gate; fans \
             still queued are told `CLOSED` and sent on",
            &[(204, Empty, "Closed"), NO_SHOW],
        ),
        (END, "POST") => Op::new(
            "endShow",
            Operator,
            "End the on-sale: joins are 410, the gate stays shut (admissions running may \
             still buy), every fan still queued is told `ENDED` with the reason",
            &[
                (204, Empty, "Ended"),
                (
                    400,
                    ERROR,
                    "A reason that is empty, too long or not printable",
                ),
                NO_SHOW,
            ],
        )
        .body("EndRequest", false),
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
        (HEALTHZ, "GET") => Op::new(
            "healthz",
            Service,
            "Liveness",
            &[(200, Text("text/plain"), "`ok`")],
        ),
        (READYZ, "GET") => Op::new(
            "readyz",
            Service,
            "Readiness: the store answers. Shows the store lost are named in the body, and \
             do not make the instance unready",
            &[
                (
                    200,
                    Text("text/plain"),
                    "`ready`, and the lost shows if any",
                ),
                (503, ERROR, "The store does not answer"),
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
        (WAIT_PASS, "POST") => Op::new(
            "waitKeepPass",
            Pages,
            "The waiting page keeps its admitted fan's pass as the `wr_pass` cookie (HttpOnly) \
             that gateway mode reads on the paths it guards",
            &[
                (204, Empty, "Kept, for as long as the pass lives"),
                (400, ERROR, "A bad showId"),
                (403, ERROR, "No running admission of this show in that pass"),
            ],
        )
        .with(&[Extra::AdmissionTicket]),
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
