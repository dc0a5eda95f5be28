//! The fan's and the buyer's routes in the table the OpenAPI document is built from: join,
//! the fair start's draw and audit, the join challenge, a ticket (poll, leave, SSE,
//! WebSocket), orders and the pass check. `table.rs` holds the rest, and the table's types.

use super::table::{Audience, Body, ERROR, Extra, LOST, NO_SHOW, NO_TICKET, Op, TOO_MANY_STREAMS};
use crate::protocol::routes::*;

/// What `method` on one of these routes takes and answers; `None` for any other route.
pub(super) fn describe(route: &str, method: &str) -> Option<Op> {
    use Audience::*;
    use Body::*;
    Some(match (route, method) {
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
                (410, ERROR, "The on-sale has ended"),
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
            "Whether `X-Admission-Ticket` holds a valid pass of this show whose admission \
             runs unspent (an edge's `auth_request`). While the store cannot be asked, the \
             signature and expiry alone decide, and the answer says so in \
             `X-Admission-Checked: signature`",
            &[
                (
                    204,
                    Empty,
                    "A valid pass of a running, unspent admission of this show",
                ),
                (
                    403,
                    ERROR,
                    "No pass, or forged, expired, of another show or of an unknown key; or \
                     its admission spent, released, or of a show made anew",
                ),
            ],
        )
        .with(&[Extra::AdmissionTicket]),
        (REDEEM, "POST") => Op::new(
            "redeem",
            Orders,
            "A checkout outside spends the admission `X-Admission-Ticket` names (its pass or \
             the ticket id), once, on any instance: spent, it places no order and gets no \
             pass again",
            &[
                (
                    200,
                    Json("Redemption"),
                    "Spent now: whose admission, and its arrival",
                ),
                (
                    400,
                    ERROR,
                    "No X-Admission-Ticket, or neither a pass nor a ticket id",
                ),
                (
                    403,
                    ERROR,
                    "A bad pass, or no running admission of this show for the ticket",
                ),
                NO_SHOW,
                (
                    409,
                    ERROR,
                    "Spent before: redeemed, or an order placed with it",
                ),
                LOST,
            ],
        )
        .with(&[Extra::AdmissionTicket]),
        (JWKS, "GET") => Op::new(
            "jwks",
            Orders,
            "The public keys (JWK Set, Ed25519) that verify admission passes (JWTs, EdDSA), \
             the signing one first; a new key is published before it signs",
            &[(200, Document, "The key set")],
        ),
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
        _ => return None,
    })
}
