//! The waiting page (`GET /wait/{showId}`), painted with the fan's place when the ticket is
//! known, and its join for browsers without JavaScript (`POST /wait/{showId}/join`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::Value;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::render::{self, PAGE_CACHE, Words, escape};
use super::shop::ShopPage;
use super::{
    Frame, NOSCRIPT_REFRESH_SECONDS, asset_version, error_page, page_show, remember_language, words,
};
use crate::error::AppError;
use crate::http::AppState;
use crate::http::credentials::{set_ticket_cookie, ticket_cookie};
use crate::http::join::JoinRequest;
use crate::http::serve::origin::check_form_post;
use crate::http::shown::Shown;
use crate::i18n::Message;
use crate::model::{Paused, ShowId, TicketState, TicketStatus, TicketView};
use crate::protocol::{ADMISSION_HEADER, EventName, routes};

/// The waiting page's service worker, which shows the "your turn" calls pushed to it.
const NOTIFY_WORKER: &str = "/static/notify-worker.js";

/// The contract's paths and names, handed to the page's script through data attributes so
/// that the script spells none of them.
#[derive(Serialize)]
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
    pow_worker: String,
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
            pow_worker: format!("/static/pow-worker.js?v={}", asset_version()),
        }
    }
}

/// Which part of the waiting page shows first, as the page and its JSON say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PageState {
    /// No ticket: the page offers to join.
    New,
    /// In a scheduled show's pre-queue: a countdown to the opening and its draw.
    Prequeue,
    /// Waiting in the queue (open, paused, full or not open yet: see `paused`, `full`,
    /// `open`).
    Waiting,
    /// Admitted: the checkout is open for `ticket.expiresInSeconds`.
    Admitted,
    /// The waiting room stepped aside: nobody is held back.
    Closed,
    /// The on-sale ended (`reason` says why, when the operator said).
    Ended,
    /// The ticket is not known (left, ran out, or a restart).
    Unknown,
    /// A failover lost the ticket's place.
    Lost,
    /// Away longer than the show keeps a place.
    Released,
}

impl PageState {
    fn as_str(self) -> &'static str {
        match self {
            PageState::New => "new",
            PageState::Prequeue => "prequeue",
            PageState::Waiting => "waiting",
            PageState::Admitted => "admitted",
            PageState::Closed => "closed",
            PageState::Ended => "ended",
            PageState::Unknown => "unknown",
            PageState::Lost => "lost",
            PageState::Released => "released",
        }
    }
}

/// The waiting page as data: what `GET /wait/{showId}` answers with `Accept:
/// application/json`, for an app that draws its own waiting screen. Language-neutral: the
/// ticket is the same JSON polling answers, and every word is the app's to choose.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WaitDocument {
    /// The show.
    show_id: String,
    /// Which state the page is in.
    state: PageState,
    /// The on-sale is open (admitting, or paused).
    open: bool,
    /// The operator paused admission: places are kept, nothing moves until it resumes.
    paused: bool,
    /// Every place at the checkout is taken: the queue moves as buyers finish.
    full: bool,
    /// The show has lanes an access code joins: a join may send `X-Access-Code`.
    access_codes: bool,
    /// Why the on-sale ended, when the operator said.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// The ticket as `GET …/tickets/{ticketId}` answers it, when the request named one
    /// (`wr_ticket` cookie or `?ticket=`).
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket: Option<TicketView>,
    /// The paths an app follows the ticket by.
    links: WaitLinks,
}

/// The paths of a waiting page's show.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WaitLinks {
    /// `POST`: join.
    join: String,
    /// `POST`: a join challenge (when the show asks a proof of work).
    challenge: String,
    /// The show's draw, when it opens at a set time.
    draw: String,
    /// `GET`: the ticket (poll); `DELETE`: leave. With a ticket only.
    #[serde(skip_serializing_if = "Option::is_none")]
    ticket: Option<String>,
    /// `GET`: the ticket's states as Server-Sent Events. With a ticket only.
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<String>,
    /// `GET`: the ticket's states over a WebSocket. With a ticket only.
    #[serde(skip_serializing_if = "Option::is_none")]
    ws: Option<String>,
}

/// What the waiting page knows before any script runs: the document, and the words of it.
pub(super) struct WaitPage {
    doc: WaitDocument,
    /// The ticket's place and wait, as the page paints them.
    position: u64,
    away_ahead: u64,
    eta_seconds: u64,
    eta_range: Option<(u64, u64)>,
    pending: bool,
    expires_in: u64,
    opens_in: u64,
    arrival: u64,
    lane: String,
    /// The path of this site an admitted fan is sent back to (`?return=`), "" for none.
    return_to: String,
}

impl WaitPage {
    /// A page with no ticket yet.
    fn new(show: &ShowId, open: bool, access_codes: bool) -> Self {
        WaitPage {
            doc: WaitDocument {
                show_id: show.to_string(),
                state: PageState::New,
                open,
                paused: false,
                full: false,
                access_codes,
                reason: None,
                ticket: None,
                links: WaitLinks {
                    join: routes::show(routes::JOIN, show.as_str()),
                    challenge: routes::show(routes::CHALLENGE, show.as_str()),
                    draw: routes::show(routes::DRAW, show.as_str()),
                    ticket: None,
                    events: None,
                    ws: None,
                },
            },
            position: 0,
            away_ahead: 0,
            eta_seconds: 0,
            eta_range: None,
            pending: false,
            expires_in: 0,
            opens_in: 0,
            arrival: 0,
            lane: String::new(),
            return_to: String::new(),
        }
    }

    /// A made-up page in one of [`super::shop::STATES`], for previews and checks.
    pub(super) fn sample(show: &ShowId, which: &str) -> Self {
        let mut page = WaitPage::new(show, true, false);
        page.doc.state = match which {
            "prequeue" => {
                page.arrival = 4321;
                page.opens_in = 754;
                PageState::Prequeue
            }
            "waiting" | "paused" | "full" => {
                page.position = 1234;
                page.away_ahead = 12;
                page.eta_seconds = 900;
                page.eta_range = Some((600, 1200));
                page.doc.paused = which == "paused";
                page.doc.full = which == "full";
                PageState::Waiting
            }
            "admitted" => {
                page.expires_in = 298;
                PageState::Admitted
            }
            "closed" => PageState::Closed,
            "ended" => PageState::Ended,
            "sold_out" => {
                page.doc.reason = Some("sold out".into());
                PageState::Ended
            }
            "lost" => PageState::Lost,
            "away" => PageState::Released,
            "unknown" => PageState::Unknown,
            _ => PageState::New,
        };
        page
    }
}

/// The query of the waiting page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WaitQuery {
    /// A ticket to show, for a fan without cookies or a link that carries it.
    ticket: Option<String>,
    /// Where the fan was going when a gateway or an edge sent it to queue.
    #[serde(rename = "return")]
    return_to: Option<String>,
    /// The page's language (`en`, `fr`, `es`, `ar`), kept in the `wr_lang` cookie.
    lang: Option<String>,
    /// A transport to start with (the page's script reads it).
    transport: Option<String>,
}

/// `GET /wait/{showId}`: the waiting page, showing the ticket's state at first paint when the
/// ticket is known, in the fan's language and the show's own page; with `Accept:
/// application/json`, the same states as a document.
#[utoipa::path(
    get,
    path = crate::protocol::routes::WAIT_PAGE,
    operation_id = "waitPage",
    tag = crate::http::openapi::PAGES,
    summary = "A show's waiting page, with the ticket's state at first paint (HTML, or JSON for apps)",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::PageQuery),
    responses(
        (
            status = 200,
            description = crate::http::openapi::PAGE,
            content(
                (String = "text/html"),
                (WaitDocument = "application/json"),
            ),
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
    let json = wants_json(&headers);
    let show = match page_show(show) {
        Ok(show) => show,
        Err(e) if json => return e.into_response(),
        Err(e) => return error_page(e, &headers),
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
    let (mut page, shop) = match read_wait(&state, &show, ticket).await {
        Ok(found) => found,
        Err(e) if json => return e.into_response(),
        Err(e) => return error_page(e, &headers),
    };
    if json {
        let mut response = axum::Json(page.doc).into_response();
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static(PAGE_CACHE));
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept, Cookie"));
        return response;
    }
    // Only a path of this site (a gateway or an edge guards it).
    page.return_to = query
        .return_to
        .filter(|r| crate::http::gateway::same_site_path(r))
        .unwrap_or_default();
    let words = words(&headers, query.lang.as_deref(), shop.as_deref());
    let nonce = render::nonce();
    let mut keep = Vec::new();
    if let Some(t) = query.ticket.filter(|t| Uuid::parse_str(t.trim()).is_ok()) {
        keep.push(("ticket", t));
    }
    if !page.return_to.is_empty() {
        keep.push(("return", page.return_to.clone()));
    }
    if let Some(t) = query
        .transport
        .filter(|t| ["sse", "ws", "poll"].contains(&t.as_str()))
    {
        keep.push(("transport", t));
    }
    let rendered = render_wait(&page, &words, &nonce, keep, shop.as_deref());
    let mut response = render::respond(StatusCode::OK, &nonce, rendered);
    if let Some(cookie) = remember_language(query.lang.as_deref(), state.public_https())
        && let Ok(value) = HeaderValue::from_str(&cookie)
    {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

/// Whether the request asks for the page as JSON: `application/json` ranked above HTML.
fn wants_json(headers: &HeaderMap) -> bool {
    crate::http::preferred(headers, &[JSON, HTML]) == Some(JSON)
}

const JSON: &str = "application/json";
const HTML: &str = "text/html";

/// The show's own page at the version its meta names, read once an instance a version.
pub(super) async fn shop_page(
    state: &AppState,
    show: &ShowId,
    version: Option<&str>,
) -> Option<Arc<ShopPage>> {
    let version = version?;
    if let Some(page) = state.pages.get(show, version) {
        return Some(page);
    }
    let stored = match state.store.page(show).await {
        Ok(stored) => stored?,
        Err(e) => {
            tracing::warn!(error = %e, %show, "a show's page could not be read; the built-in one is shown");
            return None;
        }
    };
    let page = Arc::new(ShopPage::from_stored(&stored)?);
    state.pages.put(show, page.clone());
    Some(page)
}

async fn read_wait(
    state: &AppState,
    show: &ShowId,
    ticket: Option<Uuid>,
) -> Result<(WaitPage, Option<Arc<ShopPage>>), AppError> {
    let meta = state.store.show(show).await?;
    let Some(meta) = meta else {
        return Err(AppError::NotFound(format!("no on-sale named {show}")));
    };
    if meta.lost {
        return Err(crate::store::StoreError::ShowLost(show.clone()).into());
    }
    let shop = shop_page(state, show, meta.page.as_deref()).await;
    let mut page = WaitPage::new(show, meta.open, meta.lanes);
    let Some(ticket) = ticket else {
        return Ok((page, shop));
    };
    let status = state.store.status(show, ticket).await?;
    // What the fan is shown, as poll and push answer it: a queue that closed or ended
    // waits for nothing.
    let view = Shown::of(&state.passes.keys, show, ticket, &status).view;
    if view.status == TicketStatus::Waiting {
        // The page (refreshed by itself without JavaScript) is a sign of presence.
        state.hub.polled(show, ticket);
    }
    let id = ticket.to_string();
    page.doc.links.ticket = Some(routes::ticket(routes::TICKET, show.as_str(), &id));
    page.doc.links.events = Some(routes::ticket(routes::EVENTS, show.as_str(), &id));
    page.doc.links.ws = Some(routes::ticket(routes::WS, show.as_str(), &id));
    page.doc.ticket = Some(view.clone());
    match view.status {
        TicketStatus::Closed => {
            page.doc.state = PageState::Closed;
            return Ok((page, shop));
        }
        TicketStatus::Ended => {
            page.doc.state = PageState::Ended;
            page.doc.reason = view.reason.filter(|r| !r.is_empty());
            return Ok((page, shop));
        }
        _ => {}
    }
    page.doc.state = match status.state {
        TicketState::PreQueue {
            opens_in_ms,
            arrival,
        } => {
            page.arrival = arrival;
            page.opens_in = opens_in_ms.div_ceil(1000);
            PageState::Prequeue
        }
        TicketState::Waiting { position, .. } => {
            page.position = position;
            page.lane = view.lane.clone().unwrap_or_default();
            page.away_ahead = view.away_ahead.unwrap_or(0);
            // The ETA the ticket JSON tells (it skips fans away ahead).
            page.eta_seconds = view.eta_seconds.unwrap_or(0);
            page.eta_range = view.eta_min_seconds.zip(view.eta_max_seconds);
            page.pending = status.pace.paused == Some(Paused::Pending);
            page.doc.full = status.pace.paused == Some(Paused::Full);
            page.doc.paused = status.pace.paused == Some(Paused::Paused);
            PageState::Waiting
        }
        TicketState::Admitted { .. } => {
            page.expires_in = view.expires_in_seconds.unwrap_or(0);
            PageState::Admitted
        }
        TicketState::Unknown => PageState::Unknown,
        // A place a failover lost: said so, with a way to join again.
        TicketState::Lost => PageState::Lost,
        // Away longer than the show keeps a place: said so, with a way to join again.
        TicketState::Expired { .. } => PageState::Released,
    };
    Ok((page, shop))
}

/// The waiting page in `words`, framed by the shop's template or the built-in one.
pub(super) fn render_wait(
    page: &WaitPage,
    words: &Arc<Words>,
    nonce: &str,
    keep: Vec<(&'static str, String)>,
    shop: Option<&ShopPage>,
) -> Result<String, minijinja::Error> {
    let queue = queue_html(page, words)?;
    frame(page, words, nonce, keep).render(queue, shop)
}

/// A shop's page in one state and language, nothing shown instead when it fails: our head,
/// our queue, and the whole page, for the checks of `PUT …/page`.
pub(super) fn render_parts(
    page: &WaitPage,
    words: &Arc<Words>,
    nonce: &str,
    shop: &ShopPage,
) -> Result<RenderedParts, minijinja::Error> {
    let queue = queue_html(page, words)?;
    let frame = frame(page, words, nonce, Vec::new());
    let head = frame.head();
    let languages = frame.languages();
    let ctx = frame.context(&head, &queue, &languages, Some(shop));
    let html = shop.render(ctx).unwrap_or_else(|| Ok(String::new()))?;
    Ok(RenderedParts {
        head,
        queue,
        languages,
        html,
    })
}

/// A shop's render, and our parts of it.
pub(super) struct RenderedParts {
    pub head: String,
    pub queue: String,
    pub languages: String,
    pub html: String,
}

/// The page's title, head and language picker.
fn frame<'a>(
    page: &'a WaitPage,
    words: &'a Arc<Words>,
    nonce: &'a str,
    keep: Vec<(&'static str, String)>,
) -> Frame<'a> {
    let doc = &page.doc;
    let title_key = match doc.state {
        PageState::Admitted => "wait.title_turn",
        _ => "wait.title",
    };
    Frame {
        words,
        nonce,
        title: words
            .args()
            .say(title_key, None, &[("show", doc.show_id.as_str())]),
        show: Some(doc.show_id.as_str()),
        state: doc.state.as_str(),
        script: true,
        refresh: matches!(doc.state, PageState::Waiting | PageState::Prequeue),
        keep,
        console: false,
    }
}

/// The queue widget in `words`.
fn queue_html(page: &WaitPage, words: &Arc<Words>) -> Result<String, minijinja::Error> {
    let doc = &page.doc;
    let state = doc.state.as_str();
    let show = doc.show_id.as_str();
    let args = words.args();
    let ahead = page.position.saturating_sub(1);
    let ahead_text = if doc.state != PageState::Waiting {
        String::new()
    } else {
        let mut text = if ahead == 0 {
            args.say("wait.waiting.next", None, &[])
        } else {
            args.say("wait.waiting.ahead", Some(ahead), &[])
        };
        if page.away_ahead > 0 {
            text.push(' ');
            text.push_str(&args.say("wait.waiting.away", Some(page.away_ahead), &[]));
        }
        text
    };
    let eta_words = if doc.state != PageState::Waiting {
        String::new()
    } else if page.pending {
        // Nobody announced an opening: nothing to count a wait from.
        args.say("eta.not_open", None, &[])
    } else if doc.paused {
        args.say("eta.paused", None, &[])
    } else {
        args.wait_words(page.eta_seconds, page.eta_range)
    };
    let draw_url = doc.links.draw.clone();
    render::built_in(
        "queue.html",
        minijinja::context! {
            t => Value::from_dyn_object(words.clone()),
            routes => PageRoutes::new(),
            messages => Value::from_safe_string(messages_island(words)),
            show => show,
            lang => words.catalog.code,
            state => state,
            open => doc.open,
            paused => doc.paused,
            full => doc.full,
            reason => doc.reason.clone().unwrap_or_default(),
            ticket => doc.ticket.as_ref().map(|t| t.ticket_id.to_string()),
            position => page.position,
            position_text => args.number(page.position),
            ahead_text => ahead_text,
            away_ahead => page.away_ahead,
            eta_seconds => page.eta_seconds,
            eta_words => eta_words,
            expires_in => page.expires_in,
            countdown_html => Value::from_safe_string(format!(
                "<strong class=\"countdown\" id=\"countdown\" role=\"timer\">{}</strong>",
                escape(&args.clock(page.expires_in))
            )),
            opens_in => page.opens_in,
            opens_text => args.countdown(page.opens_in),
            arrival_html => Value::from_safe_string(format!(
                "<strong id=\"arrival\">{}</strong>",
                args.number(page.arrival)
            )),
            check_link => Value::from_safe_string(format!(
                "<a href=\"{}\">{}</a>",
                escape(&draw_url),
                words.html("wait.prequeue.check", None, |_| None)
            )),
            refresh_seconds => NOSCRIPT_REFRESH_SECONDS,
            return_to => page.return_to,
            join_action => format!("/wait/{show}/join"),
            codes => doc.access_codes,
            lane => page.lane,
        },
    )
}

/// The keys the page's script says: every `t('key'` in `static/wait.js` as served, read once
/// (none found, or no file: every key, which is only heavier).
fn script_keys() -> &'static Option<std::collections::BTreeSet<String>> {
    static KEYS: std::sync::LazyLock<Option<std::collections::BTreeSet<String>>> =
        std::sync::LazyLock::new(|| {
            let text = std::fs::read_to_string(super::static_dir().join("wait.js")).ok()?;
            let keys: std::collections::BTreeSet<String> = text
                .split("t('")
                .skip(1)
                .filter_map(|rest| rest.split_once('\'').map(|(key, _)| key))
                .filter(|key| {
                    key.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._".contains(&b))
                })
                .map(str::to_owned)
                .collect();
            (!keys.is_empty()).then_some(keys)
        });
    &KEYS
}

/// The page's words for its script (`static/wait.js`): the messages it says, in the page's
/// language with the show's own words, as JSON no `</script>` can end early.
fn messages_island(words: &Words) -> String {
    // Without the show's own words, a language's island is the same for every page: made
    // once a language, not on every view.
    static PLAIN: std::sync::LazyLock<std::collections::BTreeMap<&'static str, String>> =
        std::sync::LazyLock::new(|| {
            crate::i18n::catalogs()
                .iter()
                .map(|catalog| (catalog.code, island_of(catalog, None)))
                .collect()
        });
    match &words.overrides {
        None => PLAIN
            .get(words.catalog.code)
            .cloned()
            .unwrap_or_else(|| island_of(words.catalog, None)),
        Some(own) => island_of(words.catalog, Some(own)),
    }
}

fn island_of(
    catalog: &crate::i18n::Catalog,
    overrides: Option<&std::collections::BTreeMap<String, Message>>,
) -> String {
    let said = |key: &str| script_keys().as_ref().is_none_or(|keys| keys.contains(key));
    let mut messages: std::collections::BTreeMap<&str, &Message> = catalog
        .messages
        .iter()
        .filter(|(k, _)| said(k))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    if let Some(own) = overrides {
        for (k, v) in own.iter().filter(|(k, _)| said(k)) {
            messages.insert(k.as_str(), v);
        }
    }
    let island = serde_json::json!({
        "lang": catalog.code,
        "dir": catalog.dir,
        "digits": catalog.digits.iter().collect::<String>(),
        "group": catalog.group,
        "groupMin": catalog.group_min,
        "messages": messages,
    });
    let text = island
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026");
    format!("<script type=\"application/json\" id=\"wr-messages\">{text}</script>")
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
            error_page(AppError::Rejected(status, String::new()), &headers)
        }
        Err(e) => error_page(e, &headers),
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

#[cfg(test)]
mod tests {
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
    fn json_is_chosen_only_when_ranked_above_html() {
        let accept = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_static(v));
            wants_json(&h)
        };
        assert!(accept("application/json"));
        assert!(accept("application/json, text/html;q=0.5"));
        assert!(!accept(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        ));
        assert!(!accept("text/html, application/json"));
        assert!(!accept("application/json;q=0"));
        assert!(!wants_json(&HeaderMap::new()));
    }
}
