//! Orders, behind the gate: while a show's on-sale is open, only an admitted ticket may order.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{AppJson, AppPath, AppState};
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::metrics::PassCheck;
use crate::model::{NewOrder, Order, OrderRequest, Redemption};
use crate::pass::{Admission, PassCache, PassError, looks_like_pass};
use crate::protocol::{CHECKED_HEADER, JWKS_MAX_AGE_SECONDS, routes};
use crate::store::{OrderOutcome, Redeemed};

pub(super) use crate::protocol::ADMISSION_HEADER;

/// `POST /orders`: 201 + Location when created; 200 with the order when the very same
/// request was placed before; 409 when the hold was ordered with something else or the
/// admission already bought; 403 when the gate refuses; 404 for a show nobody made; 400 on
/// invalid input. The gate, the hold and the admission are checked and claimed in one store
/// step, so two racing requests can never both pass.
#[utoipa::path(
    post,
    path = crate::protocol::routes::ORDERS,
    operation_id = "placeOrder",
    tag = crate::http::openapi::ORDERS,
    summary = "Place an order; while the on-sale is open only an admitted ticket (or its pass) \
         may, once",
    params(crate::http::openapi::params::AdmissionTicket),
    request_body = OrderRequest,
    responses(
        (
            status = 201,
            description = "Placed",
            body = Order,
            headers(("Location" = String, description = "Where it can be read")),
        ),
        (status = 200, description = "The very same request again: the same order", body = Order),
        (
            status = 400,
            description = "Malformed JSON, or an invalid field (named)",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 403,
            description = "The gate refuses: join first (the join URL is named), or a bad pass",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "The hold was ordered otherwise, or the admission bought",
            body = crate::protocol::ErrorBody,
        ),
        (status = 503, description = crate::http::openapi::LOST, body = crate::protocol::ErrorBody),
    ),
)]
#[tracing::instrument(skip_all)]
pub(super) async fn place(
    State(state): State<AppState>,
    headers: HeaderMap,
    admission: Option<Extension<Admission>>,
    AppJson(req): AppJson<OrderRequest>,
) -> Result<Response, AppError> {
    let order = req.validate().map_err(AppError::BadRequest)?;
    let presented = match admission {
        Some(Extension(admission)) => Presented::Pass(admission),
        // Anything but a UUID names no admission; the store decides whether one is needed.
        None => match headers
            .get(ADMISSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| uuid::Uuid::parse_str(v.trim()).ok())
        {
            Some(ticket) => Presented::Ticket(ticket),
            None => Presented::Nothing,
        },
    };
    place_order(&state, &order, presented).await
}

/// What an order presents to the gate, read from its request.
#[derive(Clone, Debug)]
pub(crate) enum Presented {
    /// A pass the gate layer verified (`X-Admission-Ticket: <pass>`).
    Pass(Admission),
    /// A ticket id (`X-Admission-Ticket: <ticketId>`), the original's way.
    Ticket(uuid::Uuid),
    /// No admission at all: enough only while the waiting room stands aside.
    Nothing,
}

/// The order use case: `order` placed past the gate with what it `presented`, in one store
/// step (the gate, the hold and the admission checked and claimed together).
pub(crate) async fn place_order(
    state: &AppState,
    order: &NewOrder,
    presented: Presented,
) -> Result<Response, AppError> {
    let show = &order.show_id;
    // The admission an order placed now spends, passes and all.
    let (spends, placed) = match presented {
        // A pass the gate layer verified: the admission it names, if it is for this show.
        Presented::Pass(admission) => {
            if admission.show != *show {
                return Err(AppError::Forbidden(
                    PassError::OtherShow(admission.show.to_string()).to_string(),
                ));
            }
            let placed = state
                .store
                .place_order_with_pass(order, admission.ticket)
                .await?;
            (Some(admission.ticket), placed)
        }
        Presented::Ticket(ticket) => (
            Some(ticket),
            state.store.place_order(order, Some(ticket)).await?,
        ),
        Presented::Nothing => (None, state.store.place_order(order, None).await?),
    };
    match placed {
        OrderOutcome::Created(order) => {
            if let Some(spent) = spends {
                // Its pass lets nobody through here any more, at once (elsewhere once the
                // feed tells).
                state.passes.cache.ended([spent], wall_ms() / 1000);
            }
            let location = routes::path(routes::ORDER, "", &order.id.to_string());
            tracing::info!(order = %order.id, show = %order.show_id, "order placed");
            Ok((
                StatusCode::CREATED,
                [(header::LOCATION, location)],
                Json(order),
            )
                .into_response())
        }
        OrderOutcome::Repeated(order) => Ok((StatusCode::OK, Json(order)).into_response()),
        // Neither message shows anything of the other order.
        OrderOutcome::Conflict("admission") => Err(AppError::Conflict(
            "this admission was already spent (an order placed with it, or redeemed); one \
             admission buys once"
                .into(),
        )),
        OrderOutcome::Conflict("sold out") => Err(AppError::Conflict(format!(
            "{show} is sold out: every seat of its stock has an order"
        ))),
        OrderOutcome::Conflict(_) => Err(AppError::Conflict(format!(
            "holdId {} was already ordered with a different request",
            order.hold_id
        ))),
        OrderOutcome::Forbidden => Err(AppError::Forbidden(format!(
            "the waiting room gates this show (before it opens, while it runs, paused or \
             ended): join {} first and order with the admission it gives",
            routes::show(routes::JOIN, show.as_str())
        ))),
    }
}

/// `GET /orders/{id}`: the order, or 404.
#[utoipa::path(
    get,
    path = crate::protocol::routes::ORDER,
    operation_id = "order",
    tag = crate::http::openapi::ORDERS,
    summary = "An order",
    params(crate::http::openapi::params::OrderPath),
    responses(
        (status = 200, description = "The order", body = Order),
        (status = 404, description = "No such order", body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn get(
    State(state): State<AppState>,
    AppPath(id): AppPath<String>,
) -> Result<Json<Order>, AppError> {
    let not_found = || AppError::NotFound(format!("no order {id}"));
    let uuid = uuid::Uuid::parse_str(&id).map_err(|_| not_found())?;
    state
        .store
        .get_order(uuid)
        .await?
        .map(Json)
        .ok_or_else(not_found)
}

/// `GET …/{showId}/pass`: 204 when `X-Admission-Ticket` carries a valid pass of this show
/// whose admission still runs unspent, 403 otherwise. The
/// [`RequireAdmission`](crate::pass::RequireAdmission) layer checks the signature and expiry;
/// then one store read says whether the admission was spent (an order, a redemption),
/// released, or belongs to a show made anew. While the store cannot answer, the signature
/// alone decides (204, with `X-Admission-Checked: signature`, counted by the
/// `pass_checks{outcome="unverified"}` metric): an edge (nginx `auth_request`) keeps letting
/// admitted fans through, and a spent pass that slips by is refused by the checkout's own
/// redemption, which does need the store.
#[utoipa::path(
    get,
    path = crate::protocol::routes::PASS_CHECK,
    operation_id = "checkPass",
    tag = crate::http::openapi::ORDERS,
    summary = "Whether `X-Admission-Ticket` holds a valid pass of this show whose admission runs \
         unspent (an edge's `auth_request`). While the store cannot be asked, the signature and \
         expiry alone decide, and the answer says so in `X-Admission-Checked: signature`",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::AdmissionTicket),
    responses(
        (status = 204, description = "A valid pass of a running, unspent admission of this show"),
        (
            status = 403,
            description = "No pass, or forged, expired, of another show or of an unknown key; or \
                 its admission spent, released, or of a show made anew",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(super) async fn check_pass(
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let show = super::show_id(&show)?;
    let token = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| looks_like_pass(v))
        .ok_or_else(|| {
            AppError::Forbidden(format!(
                "{ADMISSION_HEADER} must carry an admission pass: join the queue first"
            ))
        })?;
    match check_token(&state, token).await {
        Checked::Running(a) if a.show == show => Ok(StatusCode::NO_CONTENT.into_response()),
        Checked::Unverified(a) if a.show == show => Ok((
            StatusCode::NO_CONTENT,
            [(HeaderName::from_static(CHECKED_HEADER), "signature")],
        )
            .into_response()),
        Checked::Running(a) | Checked::Unverified(a) => Err(AppError::Forbidden(
            PassError::OtherShow(a.show.to_string()).to_string(),
        )),
        Checked::Refused(why) => Err(AppError::Forbidden(why)),
    }
}

/// What a pass presented at the gate comes to.
pub(crate) enum Checked {
    /// Its admission runs unspent: the store said so, now or lately.
    Running(Admission),
    /// Signed, unexpired, but the store could not be asked whether it runs.
    Unverified(Admission),
    /// Refused, and why.
    Refused(String),
}

/// Whether `token` is a pass whose admission runs unspent: the one answer of the pass route,
/// gateway mode and the page's cookie alike. A pass the store confirmed lately is answered
/// from the cache of them ([`PassCache`]): no signature check, no store read. Otherwise its
/// signature and expiry, then one store read, whose confirmation is kept for next time.
pub(crate) async fn check_token(state: &AppState, token: &str) -> Checked {
    let key = PassCache::key(token);
    let now_s = wall_ms() / 1000;
    if let Some(admission) = state.passes.cache.get(&key, now_s) {
        state.metrics.pass_check(PassCheck::Cached);
        return Checked::Running(admission);
    }
    let admission = match state.passes.keys.verify_pass(token, now_s) {
        Ok(admission) => admission,
        Err(e) => {
            state.metrics.pass_check(PassCheck::Refused);
            return Checked::Refused(e.to_string());
        }
    };
    let generation = state.passes.cache.generation();
    match still_runs(state, &admission).await {
        PassCheck::Valid | PassCheck::Cached => {
            if let Some(generation) = generation {
                state.passes.cache.keep(key, admission.clone(), generation);
            }
            Checked::Running(admission)
        }
        PassCheck::Unverified => Checked::Unverified(admission),
        PassCheck::Refused => Checked::Refused(SPENT.into()),
    }
}

/// Whether the admission a verified pass proves still runs unspent: one store read (counted
/// in `pass_checks`). Only a store that cannot be asked at all leaves the signature alone to
/// decide; every answer it gives is taken: a show nobody has, one whose state it lost, an
/// admission spent, released or of another epoch let nobody in.
pub(super) async fn still_runs(state: &AppState, admission: &Admission) -> PassCheck {
    let verdict = match state
        .store
        .is_admitted(&admission.show, admission.ticket)
        .await
    {
        Ok(true) => PassCheck::Valid,
        // What this instance last learnt still counts: a show it saw lost or made anew
        // voids the passes of the incarnation before.
        Err(e) if e.unreachable() && state.watchdog.voids(&admission.show, admission.epoch) => {
            tracing::debug!(show = %admission.show, error = %e, "pass refused: its show was lost or made anew");
            PassCheck::Refused
        }
        Err(e) if e.unreachable() => {
            tracing::warn!(show = %admission.show, error = %e, "pass let through on its signature alone: the store did not answer");
            PassCheck::Unverified
        }
        Ok(false) => PassCheck::Refused,
        Err(e) => {
            tracing::debug!(show = %admission.show, error = %e, "pass refused on the store's answer");
            PassCheck::Refused
        }
    };
    state.metrics.pass_check(verdict);
    verdict
}

/// Why an admission a valid pass names no longer lets anyone through.
const SPENT: &str = "this admission no longer runs: it was spent (an order or a redemption), \
                     released, or the show was made anew; join the queue again";

/// `POST …/{showId}/redeem`: a checkout outside spends the admission `X-Admission-Ticket`
/// names (a pass, or the ticket id): 200 with the admission the first time, on any instance;
/// 409 every time after (and for an admission that ordered through `POST /orders`); 403 for
/// no running admission of this show; 400 without the header.
#[utoipa::path(
    post,
    path = crate::protocol::routes::REDEEM,
    operation_id = "redeem",
    tag = crate::http::openapi::ORDERS,
    summary = "A checkout outside spends the admission `X-Admission-Ticket` names (its pass or the \
         ticket id), once, on any instance: spent, it places no order and gets no pass again",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::RedeemedAdmission),
    responses(
        (
            status = 200,
            description = "Spent now: whose admission, and its arrival",
            body = Redemption,
        ),
        (
            status = 400,
            description = "No X-Admission-Ticket, or neither a pass nor a ticket id",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 403,
            description = "A bad pass, or no running admission of this show for the ticket",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "Spent before: redeemed, or an order placed with it",
            body = crate::protocol::ErrorBody,
        ),
        (status = 503, description = crate::http::openapi::LOST, body = crate::protocol::ErrorBody),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn redeem(
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    headers: HeaderMap,
) -> Result<Json<Redemption>, AppError> {
    let show = super::show_id(&show)?;
    let value = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .unwrap_or("");
    let ticket = if looks_like_pass(value) {
        let admission = state
            .passes
            .keys
            .verify_pass(value, wall_ms() / 1000)
            .map_err(|e| AppError::Forbidden(e.to_string()))?;
        if admission.show != show {
            return Err(AppError::Forbidden(
                PassError::OtherShow(admission.show.to_string()).to_string(),
            ));
        }
        admission.ticket
    } else {
        uuid::Uuid::parse_str(value).map_err(|_| {
            AppError::BadRequest(format!(
                "{ADMISSION_HEADER} must carry the admission pass or the ticket id"
            ))
        })?
    };
    match state.store.redeem(&show, ticket).await? {
        Redeemed::Now { arrival, .. } => {
            state.passes.cache.ended([ticket], wall_ms() / 1000);
            state.metrics.redeemed(&show);
            tracing::info!(%ticket, arrival, "admission redeemed");
            Ok(Json(Redemption {
                show_id: show.to_string(),
                ticket_id: ticket,
                arrival,
            }))
        }
        Redeemed::Before => Err(AppError::Conflict(
            "this admission was already spent (redeemed, or an order placed with it); one \
             admission buys once"
                .into(),
        )),
        Redeemed::NotAdmitted => Err(AppError::Forbidden(format!(
            "no running admission of {show} for this ticket: join {} first",
            routes::show(routes::JOIN, show.as_str())
        ))),
    }
}

/// `GET /.well-known/jwks.json`: the public keys in force that verify admission passes, the
/// signing one first. A shared key is published before it signs (see `PASS_KEY_ROTATION`),
/// so an edge caching this document as long as `Cache-Control` says never meets a pass it
/// cannot verify.
#[utoipa::path(
    get,
    path = crate::protocol::routes::JWKS,
    operation_id = "jwks",
    tag = crate::http::openapi::ORDERS,
    summary = "The public keys (JWK Set, Ed25519) that verify admission passes (JWTs, EdDSA), the \
         signing one first; a new key is published before it signs",
    responses(
        (status = 200, description = "The key set", body = Object),
    ),
)]
pub(super) async fn jwks(State(state): State<AppState>) -> Response {
    (
        [(
            header::CACHE_CONTROL,
            format!("public, max-age={JWKS_MAX_AGE_SECONDS}"),
        )],
        Json(state.passes.keys.jwks()),
    )
        .into_response()
}
