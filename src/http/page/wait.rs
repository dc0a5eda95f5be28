//! The waiting page (`GET /wait/{showId}`), painted with the fan's place when the ticket is
//! known, and its join for browsers without JavaScript (`POST /wait/{showId}/join`).

use std::net::SocketAddr;

use askama::Template;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use uuid::Uuid;

use super::{NOSCRIPT_REFRESH_SECONDS, PAGE_CACHE, asset_version, error_page, html, page_show};
use crate::error::AppError;
use crate::http::AppState;
use crate::http::credentials::{set_ticket_cookie, ticket_cookie};
use crate::http::join::JoinRequest;
use crate::http::serve::origin::check_form_post;
use crate::http::shown::Shown;
use crate::model::{Paused, ShowId, TicketState, TicketStatus};
use crate::protocol::{ADMISSION_HEADER, EventName, routes};
use crate::words::{thousands, wait_words};

/// The contract's paths and names, handed to the page's script through data attributes so
/// that the script spells none of them.
/// The waiting page's service worker, which shows the "your turn" calls pushed to it.
const NOTIFY_WORKER: &str = "/static/notify-worker.js";

/// The wait a queued fan of a show not open yet is told: no opening was announced, so no
/// figure (the page's script says the same, `static/wait.js`).
const NOT_OPEN_YET: &str = "the sale has not opened yet";
/// The wait of a paused queue, as `wait.js` words it: nobody knows when it resumes.
const PAUSED_WAIT: &str = "paused: it goes on when the queue resumes";

pub(crate) struct PageRoutes {
    join: &'static str,
    ticket: &'static str,
    events: &'static str,
    ws: &'static str,
    orders: &'static str,
    event_names: String,
    admission_header: &'static str,
    idempotency_header: &'static str,
    challenge: &'static str,
    proof_header: &'static str,
    code_header: &'static str,
    keep_pass: &'static str,
    notify: &'static str,
    vapid: &'static str,
    notify_worker: &'static str,
}

impl PageRoutes {
    fn new() -> Self {
        PageRoutes {
            join: routes::JOIN,
            ticket: routes::TICKET,
            events: routes::EVENTS,
            ws: routes::WS,
            orders: routes::ORDERS,
            event_names: EventName::ALL.map(EventName::as_str).join(" "),
            admission_header: ADMISSION_HEADER,
            idempotency_header: crate::protocol::IDEMPOTENCY_KEY,
            challenge: routes::CHALLENGE,
            proof_header: crate::protocol::JOIN_PROOF_HEADER,
            code_header: crate::protocol::ACCESS_CODE_HEADER,
            keep_pass: routes::WAIT_PASS,
            notify: routes::NOTIFY,
            vapid: routes::VAPID,
            notify_worker: NOTIFY_WORKER,
        }
    }
}

/// What the waiting page knows before any script runs.
#[derive(Template)]
#[template(path = "wait.html")]
struct WaitPage {
    asset: &'static str,
    routes: PageRoutes,
    show: String,
    open: bool,
    /// `new`, `prequeue`, `waiting`, `admitted`, `closed`, `ended` or `unknown`: which part
    /// of the page shows first.
    state: &'static str,
    /// The operator paused admission: every place is kept, nothing moves until it resumes.
    paused: bool,
    /// Why the on-sale ended, when the operator said.
    reason: String,
    /// Why a released place was released.
    message: String,
    ticket: Option<String>,
    position: u64,
    ahead: u64,
    position_text: String,
    ahead_text: String,
    /// Of those ahead, about how many are away and will be passed over (`awayAhead`).
    away_ahead: u64,
    away_ahead_text: String,
    eta_seconds: u64,
    eta_words: String,
    /// Every place behind the gate is taken: the queue moves as buyers finish.
    full: bool,
    expires_in: u64,
    expires_text: String,
    /// In a pre-queue: seconds until the show opens and draws it, and as a clock.
    opens_in: u64,
    opens_text: String,
    /// The fan's arrival number, and where the show's draw is published.
    arrival: u64,
    draw_url: String,
    refresh_seconds: u32,
    /// The path of this site an admitted fan is sent back to (`?return=`, where a gateway
    /// or an edge sent it to queue), checked to be one; "" for none.
    return_to: String,
    /// The show has lanes an access code joins: the join form asks for a code.
    codes: bool,
    /// The fan's lane, while waiting in one.
    lane: String,
}

/// The query of the waiting page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WaitQuery {
    /// A ticket to show, for a fan without cookies or a link that carries it.
    ticket: Option<String>,
    /// Where the fan was going when a gateway or an edge sent it to queue.
    #[serde(rename = "return")]
    return_to: Option<String>,
}

/// `GET /wait/{showId}`: the waiting page, showing the ticket's current state at first
/// paint when the ticket is known.
#[utoipa::path(
    get,
    path = crate::protocol::routes::WAIT_PAGE,
    operation_id = "waitPage",
    tag = crate::http::openapi::PAGES,
    summary = "A show's waiting page, with the ticket's state at first paint",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::PageQuery),
    responses(
        (
            status = 200,
            description = crate::http::openapi::PAGE,
            body = String,
            content_type = "text/html",
        ),
        (status = 400, description = "A bad showId", body = String, content_type = "text/html"),
        (
            status = 404,
            description = "No show of that id",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 503,
            description = crate::http::openapi::PAGE_UNAVAILABLE,
            content(
                (String = "text/html"),
                (crate::protocol::ErrorBody = "application/problem+json"),
            ),
        ),
    ),
)]
pub(crate) async fn wait(
    State(state): State<AppState>,
    show: Result<Path<String>, PathRejection>,
    query: Result<Query<WaitQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let show = match page_show(show) {
        Ok(show) => show,
        Err(e) => return error_page(e),
    };
    // A garbled query is no reason to refuse the page: it is shown as if there were none.
    let query = query.map(|Query(q)| q).unwrap_or_default();
    // The browser's own cookie wins over `?ticket=`: a link carrying someone else's ticket
    // must not replace the place this browser holds. Without a cookie (another device, or
    // cookies off) the link's ticket is shown.
    let ticket = ticket_cookie(&headers).or_else(|| {
        query
            .ticket
            .as_deref()
            .and_then(|t| Uuid::parse_str(t.trim()).ok())
    });
    match render_wait(&state, &show, ticket).await {
        Ok(mut page) => {
            // Only a path of this site (a gateway or an edge guards it).
            page.return_to = query
                .return_to
                .filter(|r| crate::http::gateway::same_site_path(r))
                .unwrap_or_default();
            html(StatusCode::OK, &page)
        }
        Err(e) => error_page(e),
    }
}

async fn render_wait(
    state: &AppState,
    show: &ShowId,
    ticket: Option<Uuid>,
) -> Result<WaitPage, AppError> {
    let meta = state.store.show(show).await?;
    let Some(meta) = meta else {
        return Err(AppError::NotFound(format!("no on-sale named {show}")));
    };
    if meta.lost {
        return Err(crate::store::StoreError::ShowLost(show.clone()).into());
    }
    let open = meta.open;
    let mut page = WaitPage {
        asset: asset_version(),
        routes: PageRoutes::new(),
        show: show.to_string(),
        open,
        state: "new",
        paused: false,
        reason: String::new(),
        message: String::new(),
        ticket: ticket.map(|t| t.to_string()),
        position: 0,
        ahead: 0,
        position_text: String::new(),
        ahead_text: String::new(),
        away_ahead: 0,
        away_ahead_text: String::new(),
        eta_seconds: 0,
        eta_words: String::new(),
        full: false,
        expires_in: 0,
        expires_text: String::new(),
        opens_in: 0,
        opens_text: String::new(),
        arrival: 0,
        draw_url: routes::show(routes::DRAW, show.as_str()),
        refresh_seconds: NOSCRIPT_REFRESH_SECONDS,
        return_to: String::new(),
        codes: meta.lanes,
        lane: String::new(),
    };
    let Some(ticket) = ticket else {
        return Ok(page);
    };
    let status = state.store.status(show, ticket).await?;
    // What the fan is shown, as poll and push answer it: a queue that closed or ended
    // waits for nothing.
    let view = Shown::of(&state.passes.keys, show, ticket, &status).view;
    if view.status == TicketStatus::Waiting {
        // The page (refreshed by itself without JavaScript) is a sign of presence.
        state.hub.polled(show, ticket);
    }
    match view.status {
        TicketStatus::Closed => {
            page.state = "closed";
            return Ok(page);
        }
        TicketStatus::Ended => {
            page.state = "ended";
            page.reason = view.reason.unwrap_or_default();
            return Ok(page);
        }
        _ => {}
    }
    match status.state {
        TicketState::PreQueue {
            opens_in_ms,
            arrival,
        } => {
            page.state = "prequeue";
            page.arrival = arrival;
            page.opens_in = opens_in_ms.div_ceil(1000);
            page.opens_text = crate::words::countdown(page.opens_in);
        }
        TicketState::Waiting { position, .. } => {
            page.state = "waiting";
            page.position = position;
            page.ahead = position - 1;
            page.position_text = thousands(position);
            page.ahead_text = thousands(position - 1);
            page.lane = view.lane.clone().unwrap_or_default();
            page.away_ahead = view.away_ahead.unwrap_or(0);
            page.away_ahead_text = view.away_ahead.map(thousands).unwrap_or_default();
            // The ETA the ticket JSON tells (it skips fans away ahead).
            page.eta_seconds = view.eta_seconds.unwrap_or(0);
            let range = view.eta_min_seconds.zip(view.eta_max_seconds);
            page.eta_words = if status.pace.paused == Some(Paused::Pending) {
                // Nobody announced an opening: nothing to count a wait from.
                NOT_OPEN_YET.to_owned()
            } else if status.pace.paused == Some(Paused::Paused) {
                PAUSED_WAIT.to_owned()
            } else {
                wait_words(page.eta_seconds, range)
            };
            page.full = status.pace.paused == Some(Paused::Full);
            page.paused = status.pace.paused == Some(Paused::Paused);
        }
        TicketState::Admitted { .. } => {
            page.state = "admitted";
            page.expires_in = view.expires_in_seconds.unwrap_or(0);
            page.expires_text = clock(page.expires_in);
        }
        TicketState::Unknown => page.state = "unknown",
        // A place a failover lost: said so, with a way to join again.
        TicketState::Lost => page.state = "lost",
        // Away longer than the show keeps a place: said so, with a way to join again.
        TicketState::Expired { .. } => {
            page.state = "released";
            page.message = view.message.unwrap_or_default();
        }
    }
    Ok(page)
}

/// `POST /wait/{showId}/join`: the join button of a page without JavaScript. Joins, keeps
/// the ticket in a cookie for this show's page, and sends the fan back to it (303). A post
/// another site made the browser send is refused (403, see [`check_form_post`]).
#[utoipa::path(
    post,
    path = crate::protocol::routes::WAIT_JOIN,
    operation_id = "waitJoin",
    tag = crate::http::openapi::PAGES,
    summary = "The waiting page's join button, without JavaScript",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (
            status = 303,
            description = "Joined: back to the page, with `?ticket=`",
            headers(("Set-Cookie" = String, description = "`wr_ticket`, for the show's page")),
        ),
        (
            status = 400,
            description = "A bad showId",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 403,
            description = "A post another site made",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 404,
            description = "No show of that id",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 410,
            description = "The on-sale has ended",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 428,
            description = "The show asks a proof of work, which needs JavaScript",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 429,
            description = "Past the per-client join limit",
            body = String,
            content_type = "text/html",
        ),
        (
            status = 503,
            description = crate::http::openapi::PAGE_UNAVAILABLE,
            content(
                (String = "text/html"),
                (crate::protocol::ErrorBody = "application/problem+json"),
            ),
        ),
    ),
)]
pub(crate) async fn join(
    State(state): State<AppState>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    show: Result<Path<String>, PathRejection>,
    form: axum::body::Bytes,
) -> Response {
    let joined = async {
        check_form_post(&headers, state.site.public_origin.as_ref())?;
        let show = page_show(show)?;
        let client = state.client_ip(client.ip(), &headers);
        let mut request = JoinRequest::read(&headers, client)?;
        // The form's access code, when the show takes codes and the fan typed one.
        let code = form_urlencoded::parse(&form)
            .find(|(name, _)| name == "accessCode")
            .map(|(_, value)| value.trim().to_owned())
            .filter(|code| !code.is_empty());
        if let Some(code) = &code {
            if !crate::model::code_ok(code) {
                return Err(AppError::BadRequest(
                    "an access code is 6 to 64 of A-Z, a-z, 0-9, '-' and '_'".into(),
                ));
            }
            request.code = Some(code);
        }
        let (joined, _) = crate::http::join::join(&state, &show, request).await?;
        Ok::<_, AppError>((show, joined.ticket))
    };
    match joined.await {
        Ok((show, ticket)) => {
            let page = format!("/wait/{show}");
            let cookie = set_ticket_cookie(&show, Some(ticket), state.public_https());
            (
                StatusCode::SEE_OTHER,
                [
                    (header::LOCATION, format!("{page}?ticket={ticket}")),
                    (header::SET_COOKIE, cookie),
                    (header::CACHE_CONTROL, PAGE_CACHE.to_owned()),
                ],
            )
                .into_response()
        }
        // A proof of work needs the page's script; say so rather than the API's words.
        Err(AppError::Rejected(status, _)) if status == StatusCode::PRECONDITION_REQUIRED => {
            error_page(AppError::Rejected(status, NEEDS_SCRIPT.into()))
        }
        Err(e) => error_page(e),
    }
}

/// `POST /wait/{showId}/pass` with an admitted fan's pass in `X-Admission-Ticket`: 204 and
/// the `wr_pass` cookie (HttpOnly, SameSite=Lax, Secure under https) that gateway mode reads
/// on the paths it guards, for as long as the pass lives. The page's script calls it once its
/// fan is admitted; a page of another site cannot (the header needs a CORS preflight, which
/// is never granted). 403 for a pass that does not let anyone in.
#[utoipa::path(
    post,
    path = crate::protocol::routes::WAIT_PASS,
    operation_id = "waitKeepPass",
    tag = crate::http::openapi::PAGES,
    summary = "The waiting page keeps its admitted fan's pass as the `wr_pass` cookie (HttpOnly) \
         that gateway mode reads on the paths it guards",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::AdmissionTicket),
    responses(
        (status = 204, description = "Kept, for as long as the pass lives"),
        (status = 400, description = "A bad showId", body = crate::protocol::ErrorBody),
        (
            status = 403,
            description = "No running admission of this show in that pass",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(crate) async fn keep_pass(
    State(state): State<AppState>,
    headers: HeaderMap,
    show: Result<Path<String>, PathRejection>,
) -> Result<Response, AppError> {
    let show = match show {
        Ok(Path(s)) => crate::http::show_id(&s)?,
        Err(e) => return Err(AppError::BadRequest(e.body_text())),
    };
    let pass = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .unwrap_or("");
    let admission = crate::http::gateway::admitted(&state, pass)
        .await
        .filter(|a| a.show == show)
        .ok_or_else(|| {
            AppError::Forbidden("no running admission of this show in that pass".into())
        })?;
    let left = admission
        .expires_at
        .saturating_sub(crate::clock::wall_ms() / 1000);
    let cookie = crate::http::gateway::pass_cookie(&state, Some((pass, left)));
    Ok((
        StatusCode::NO_CONTENT,
        [
            (header::SET_COOKIE, cookie),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
    )
        .into_response())
}

/// Why the join form without JavaScript cannot join a show that asks a proof of work.
const NEEDS_SCRIPT: &str = "To slow bots down, this on-sale asks every browser to solve a short \
    puzzle before it joins the queue, and that takes JavaScript. Please turn JavaScript on for \
    this site and reload the page; your place is taken when the puzzle is solved.";

/// `m:ss`, as the admission countdown shows it.
fn clock(seconds: u64) -> String {
    format!("{}:{:02}", seconds / 60, seconds % 60)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_ticket_cookie_is_found_among_others_and_garbage_is_ignored() {
        let id = Uuid::new_v4();
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; wr_ticket=not-a-uuid"),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_str(&format!("theme=dark; wr_ticket={id}")).unwrap(),
        );
        assert_eq!(ticket_cookie(&headers), Some(id));
        assert_eq!(ticket_cookie(&HeaderMap::new()), None);
    }

    #[test]
    fn countdown_reads_minutes_and_seconds() {
        assert_eq!(clock(298), "4:58");
        assert_eq!(clock(5), "0:05");
    }
}
