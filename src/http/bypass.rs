//! Bypass (docs/bypass.md): a request one of the show's bypass rules matches is admitted at
//! once, without queueing, while the on-sale is open and a seat is left.
//!
//! - `POST …/{showId}/bypass`: a monitor's or a staff member's call, matched by its
//!   `X-Bypass-Token` or its address; answers the admitted ticket, its pass included.
//! - `POST …/{showId}/bypass-links` (operator): a link that lets whoever opens it through,
//!   until it expires (the waiting page's `GET /wait/{showId}/bypass?link=…` takes it).
//!
//! A refused bypass counts against the client's block as a wrong operator token does
//! (`OPERATOR_TOKEN_GUESSES` a minute), before the show's rules are read; a token is never
//! read from a URL (400: URLs are logged) and never written to a log.

use std::net::{IpAddr, SocketAddr};

use axum::Json;
use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::AppState;
use super::extract::{AppJson, AppPath, Operator, show_id};
use super::fan::ticket_answer;
use super::join::idempotency_key;
use super::serve::origin::check_bypass_post;
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::model::{BypassRequest, BypassRule, ShowId, bypass_kind};
use crate::pass::MAX_LINK_TTL_SECONDS;
use crate::protocol::{BYPASS_TOKEN_HEADER, routes};
use crate::store::{BypassAsked, Bypassed, Status};

/// The most bypass admissions a show may have running at once: a leaked token or a hostile
/// page driving a staff browser takes at most this many seats at a time.
pub(crate) const MAX_RUNNING_BYPASSES: u32 = 100;

/// What a bypass asks with.
pub(crate) struct Asking<'a> {
    /// The connection's own address.
    pub peer: IpAddr,
    /// The client's address, as our trusted proxies say it.
    pub client: IpAddr,
    /// Its `X-Bypass-Token`.
    pub token: Option<&'a str>,
    /// A link's token (`?link=`), not yet checked.
    pub link: Option<&'a str>,
    /// Its `Idempotency-Key`: the same key, the same running admission.
    pub idem_key: Option<&'a str>,
}

/// The address a network rule judges: what our proxies say of the client when the request
/// came through one on our own network (a loopback or private peer); else the peer itself, so
/// that a request reaching the server from outside cannot name its address in a header.
fn network_address(peer: IpAddr, client: IpAddr) -> IpAddr {
    let ours = match peer {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private())
        }
    };
    if ours { client } else { peer }
}

/// The show's bypass rules.
async fn rules_of(state: &AppState, show: &ShowId) -> Result<Vec<BypassRule>, AppError> {
    Ok(state
        .store
        .stats(show)
        .await?
        .settings
        .bypass
        .unwrap_or_default())
}

/// Lets `asking` through `show`'s queue if one of its bypass rules matches: the admitted
/// ticket (a fresh one, or the running one its key made: `true`) and where it stands. 403
/// (counted as a guess) when no rule matches or the link is refused.
pub(crate) async fn let_through(
    state: &AppState,
    show: &ShowId,
    asking: Asking<'_>,
) -> Result<(Uuid, Status, bool), AppError> {
    let guesses = &state.limits.bypass_guesses;
    guesses
        .check(asking.client)
        .map_err(|wait| AppError::TooManyGuesses(wait, "refused bypasses"))?;
    let refuse = |why: String| {
        guesses.wrong(asking.client);
        AppError::Forbidden(why)
    };
    let link = match asking.link {
        None => None,
        Some(link) => Some(
            state
                .passes
                .keys
                .check_link(link, show, wall_ms() / 1000)
                .map_err(|why| refuse(why.to_string()))?,
        ),
    };
    let mut rules = rules_of(state, show).await?;
    // A link goes through by the link rule alone, so that it is marked used (and checked for
    // its date) whatever else the request would match.
    if link.is_some() {
        rules.retain(|r| matches!(r, BypassRule::Link));
    }
    let request = BypassRequest {
        client: network_address(asking.peer, asking.client),
        token: asking.token,
        signed_link: link.is_some(),
    };
    let Some(via) = bypass_kind(&rules, &request) else {
        return Err(refuse(
            "no bypass rule of this show lets this request through: join the queue".into(),
        ));
    };
    let asked = BypassAsked {
        via,
        idem_key: asking.idem_key.map(str::to_owned),
        link,
        most: MAX_RUNNING_BYPASSES,
    };
    let (ticket, arrival, replayed) = match state.store.bypass(show, Uuid::new_v4(), &asked).await?
    {
        Bypassed::Admitted {
            ticket,
            arrival,
            replayed,
        } => (ticket, arrival, replayed),
        Bypassed::LinkRefused(why) => return Err(refuse(why.into())),
    };
    if !replayed {
        state.metrics.bypassed(show, via);
        tracing::info!(%show, kind = via.as_str(), arrival, "a fan was let through without queueing");
    }
    let status = state.store.status(show, ticket).await?;
    Ok((ticket, status, replayed))
}

/// The `X-Bypass-Token` of `headers`; 400 for a query that carries a token (URLs are logged:
/// a token there is spent).
pub(crate) fn bypass_token<'a>(
    headers: &'a HeaderMap,
    query: Option<&str>,
) -> Result<Option<&'a str>, AppError> {
    let in_query = query.is_some_and(|q| {
        q.split('&')
            .filter_map(|pair| pair.split('=').next())
            .any(|name| {
                name.eq_ignore_ascii_case("token") || name.to_ascii_lowercase().contains("bypass")
            })
    });
    if in_query {
        return Err(AppError::BadRequest(format!(
            "a bypass token goes in the {BYPASS_TOKEN_HEADER} header, never in the URL (URLs \
             are logged): this one is spent, ask for a new one"
        )));
    }
    match headers.get(BYPASS_TOKEN_HEADER) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|t| Some(t.trim()))
            .map_err(|_| AppError::BadRequest(format!("{BYPASS_TOKEN_HEADER}: printable text"))),
    }
}

/// `POST …/{showId}/bypass`: a request one of the show's bypass rules matches (its
/// `X-Bypass-Token`, or its address) is admitted at once: 200 with the ticket, its pass
/// included, as a join's answer. 403 when no rule matches, 409 when the on-sale is not open or
/// no seat is left, 429 after too many refused.
#[utoipa::path(
    post,
    path = crate::protocol::routes::BYPASS,
    operation_id = "bypass",
    tag = crate::http::openapi::FAN,
    summary = "Be let through without queueing, by one of the show's bypass rules",
    params(
        crate::http::openapi::params::ShowPath,
        (
            "X-Bypass-Token" = Option<String>,
            Header,
            description = "A token one of the show's `token` rules names (never in the URL)"
        ),
    ),
    responses(
        (status = 200, description = "Admitted at once", body = crate::protocol::TicketView),
        (status = 400, description = "A bad showId, or a token in the URL", body = crate::protocol::ErrorBody),
        (status = 403, description = "No bypass rule of the show lets this request through", body = crate::protocol::ErrorBody),
        (status = 404, description = crate::http::openapi::NO_SHOW, body = crate::protocol::ErrorBody),
        (status = 409, description = "The on-sale is not open, or no seat is left", body = crate::protocol::ErrorBody),
        (status = 429, description = "Too many refused bypasses from this client's block", body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn bypass(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    AppPath(show): AppPath<String>,
) -> Result<impl IntoResponse, AppError> {
    let show = show_id(&show)?;
    check_bypass_post(&headers, state.site.public_origin.as_ref())?;
    let token = bypass_token(&headers, query.as_deref())?;
    let asking = Asking {
        peer: peer.ip(),
        client: state.client_ip(peer.ip(), &headers),
        token,
        link: None,
        idem_key: idempotency_key(&headers)?,
    };
    let (ticket, status, replayed) = let_through(&state, &show, asking).await?;
    Ok(ticket_answer(
        &state,
        &show,
        ticket,
        &status,
        StatusCode::OK,
        replayed,
    ))
}

/// What a bypass link is asked for with.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct LinkRequest {
    /// How long the link runs, in seconds (60 to 604,800: a week).
    #[schema(minimum = 60, maximum = 604_800)]
    ttl_seconds: u64,
}

/// A signed bypass link.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Link {
    /// The link, on this server: `/wait/{showId}/bypass?link=…`.
    url: String,
    /// When it stops letting anyone through (RFC 3339, UTC).
    expires_at: String,
}

/// `POST …/{showId}/bypass-links` (operator): a link that lets whoever opens it through the
/// show's queue until it expires, while the show keeps a `link` bypass rule.
#[utoipa::path(
    post,
    path = crate::protocol::routes::BYPASS_LINKS,
    operation_id = "bypassLink",
    tag = crate::http::openapi::OPERATOR,
    summary = "Sign a bypass link for support staff",
    params(crate::http::openapi::params::ShowPath),
    request_body = LinkRequest,
    responses(
        (status = 201, description = "The link", body = Link),
        (status = 400, description = "A bad showId or lifetime", body = crate::protocol::ErrorBody),
        (status = 404, description = crate::http::openapi::NO_SHOW, body = crate::protocol::ErrorBody),
        (status = 409, description = "The show has no `link` bypass rule", body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn sign_link(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    AppJson(request): AppJson<LinkRequest>,
) -> Result<impl IntoResponse, AppError> {
    let show = show_id(&show)?;
    if !(60..=MAX_LINK_TTL_SECONDS).contains(&request.ttl_seconds) {
        return Err(AppError::BadRequest(format!(
            "ttlSeconds: 60 to {MAX_LINK_TTL_SECONDS}"
        )));
    }
    let allowed = rules_of(&state, &show)
        .await?
        .iter()
        .any(|r| matches!(r, BypassRule::Link));
    if !allowed {
        return Err(AppError::Conflict(
            "the show has no link bypass rule: add {\"kind\":\"link\"} to its bypass first".into(),
        ));
    }
    let now = wall_ms() / 1000;
    let exp = now + request.ttl_seconds;
    let token = state.passes.keys.mint_link(&show, now, exp);
    let expires_at = jiff::Timestamp::from_second(exp as i64)
        .map(|t| t.to_string())
        .unwrap_or_default();
    tracing::info!(%show, expires_at, "a bypass link was signed");
    let url = format!(
        "{}?link={token}",
        routes::show(routes::WAIT_BYPASS, show.as_str())
    );
    Ok((StatusCode::CREATED, Json(Link { url, expires_at })))
}
