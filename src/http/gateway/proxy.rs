//! A request's way through the gateway: the guard's decision, the admission it needs (and,
//! on a purchase path, spends), the origin's answer, and the origin's `revoke` command.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use hyper::body::Body as _;
use hyper_util::rt::TokioIo;

use super::headers::{for_origin, strip_hop_by_hop, wants_upgrade};
use super::{
    CONNECT_TIMEOUT, Decision, GatewayOutcome, OriginClient, pass_cookie, to_the_queue, upstream,
};
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::http::AppState;
use crate::http::orders::{Checked, check_token};
use crate::pass::{Admission, looks_like_pass};
use crate::protocol::{ADMISSION_HEADER, COMMAND_HEADER, PASS_COOKIE};
use crate::store::Redeemed;

/// Every request the router has no route for, in gateway mode.
pub(crate) async fn proxy(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    forward(&state, peer, req, None).await
}

/// Sends `req` on to the origin if the guard lets it, and the origin's answer back: through
/// `client`, or the gateway's own pool.
pub(crate) async fn forward(
    state: &AppState,
    peer: SocketAddr,
    mut req: Request,
    client: Option<&OriginClient>,
) -> Response {
    let Some(gateway) = state.site.gateway.as_deref() else {
        return AppError::NotFound("no such resource".into()).into_response();
    };
    let client = client.unwrap_or(gateway.client());
    let (path, rule) = match gateway.decide(req.uri().path()) {
        Decision::Forward { path, rule } => (path, rule),
        Decision::Ambiguous => {
            state.metrics.gateway(GatewayOutcome::Refused);
            return AppError::BadRequest(
                "this spelling of a guarded path is read differently by different servers (an \
                 encoded / or \\, or a ; parameter): ask for the path plainly"
                    .into(),
            )
            .into_response();
        }
        Decision::Bad(bad) => {
            state.metrics.gateway(GatewayOutcome::Refused);
            return AppError::BadRequest(bad.to_string()).into_response();
        }
    };
    let target = match gateway.target(&path.forward, req.uri().query()) {
        Ok(target) => target,
        Err(e) => return e.into_response(),
    };
    // The admission the request carries, when the path needs one.
    let presented = rule.and_then(|_| presented_pass(req.headers()));
    let mut admission = None;
    if let Some(rule) = rule {
        let show = &rule.show;
        let queued = |state: &AppState| {
            state.metrics.gateway(GatewayOutcome::Queued);
            // The way back: the path and query as the fan asked for them.
            to_the_queue(show, &target[gateway.base_path.len()..])
        };
        let Some(pass) = &presented else {
            return queued(state);
        };
        if rule.purchase {
            // Spent before it goes on, in one store step: of twins, one reaches the origin.
            let Some(signed) = signed(state, pass).filter(|a| a.show == *show) else {
                return queued(state);
            };
            match state.store.redeem(show, signed.ticket).await {
                Ok(Redeemed::Now { arrival, .. }) => {
                    state.passes.cache.ended([signed.ticket], wall_ms() / 1000);
                    state.metrics.gateway(GatewayOutcome::Spent);
                    state.metrics.redeemed(show);
                    tracing::info!(%show, ticket = %signed.ticket, arrival, "a purchase path spent its admission");
                }
                Ok(Redeemed::Before) => {
                    state.metrics.gateway(GatewayOutcome::Twin);
                    return AppError::Conflict(
                        "this admission was spent already (a purchase was made with it); one \
                         admission buys once"
                            .into(),
                    )
                    .into_response();
                }
                Ok(Redeemed::NotAdmitted) => return queued(state),
                // Nothing is bought on an admission the store cannot spend.
                Err(e) => return AppError::from(e).into_response(),
            }
            admission = Some(signed);
        } else {
            admission = admitted(state, pass).await.filter(|a| a.show == *show);
            if admission.is_none() {
                return queued(state);
            }
        }
    }
    let upgrade = wants_upgrade(req.headers());
    let lean = upstream::takes(req.method(), req.body().is_end_stream(), upgrade);
    let client_side = upgrade.then(|| hyper::upgrade::on(&mut req));
    let client_ip = state.client_ip(peer.ip(), req.headers());
    // The origin gets the pass it may redeem (`POST …/redeem`), and only a valid one.
    let vouched = presented.as_deref().filter(|_| admission.is_some());
    for_origin(
        req.headers_mut(),
        upgrade,
        client_ip,
        state.public_https(),
        &gateway.host,
        vouched,
    );
    let exchange = async {
        if lean {
            // A bodiless GET or HEAD: written and read by this task (see `upstream`).
            let (parts, _) = req.into_parts();
            client
                .lean
                .send(
                    &gateway.authority,
                    CONNECT_TIMEOUT,
                    &parts.method,
                    &target,
                    &parts.headers,
                )
                .await
                .map(|res| res.map(Body::new))
                .map_err(|e| e.to_string())
        } else {
            *req.uri_mut() = gateway.upstream_uri(target).map_err(|e| e.to_string())?;
            client
                .hyper
                .request(req)
                .await
                .map(|res| res.map(Body::new))
                .map_err(|e| e.to_string())
        }
    };
    let answered = tokio::time::timeout(gateway.timeout, exchange).await;
    let mut res = match answered {
        Ok(Ok(res)) => res,
        Ok(Err(error)) => {
            tracing::warn!(%error, "the origin is unreachable");
            state.metrics.gateway(GatewayOutcome::Unreachable);
            return AppError::Rejected(
                StatusCode::BAD_GATEWAY,
                "the shop behind the waiting room is unreachable; try again shortly".into(),
            )
            .into_response();
        }
        Err(_) => {
            state.metrics.gateway(GatewayOutcome::Unreachable);
            return AppError::Rejected(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "the shop behind the waiting room did not answer within {}s",
                    gateway.timeout.as_secs()
                ),
            )
            .into_response();
        }
    };
    state.metrics.gateway(GatewayOutcome::Proxied);
    if res.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_side) = client_side
    {
        // Both sides switch once this answer is out: then bytes flow as they come, both ways.
        let origin_side = hyper::upgrade::on(&mut res);
        let stop = state.life.shutdown.clone();
        state.life.tasks.spawn(async move {
            match tokio::try_join!(client_side, origin_side) {
                Ok((fan, origin)) => {
                    let (mut fan, mut origin) = (TokioIo::new(fan), TokioIo::new(origin));
                    // Until either side closes, or the server shuts down.
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut fan, &mut origin) => {}
                        () = stop.cancelled() => {}
                    }
                }
                Err(e) => tracing::debug!(error = %e, "an upgrade through the gateway failed"),
            }
        });
    }
    let (mut parts, body) = res.into_parts();
    // Taken out whatever it says: the fan never sees the origin's commands.
    let revoke = parts
        .headers
        .remove(&COMMAND)
        .is_some_and(|v| v.as_bytes().trim_ascii().eq_ignore_ascii_case(b"revoke"));
    strip_hop_by_hop(
        &mut parts.headers,
        parts.status == StatusCode::SWITCHING_PROTOCOLS,
    );
    let spent = rule.is_some_and(|r| r.purchase);
    if revoke
        && !spent
        && let Some(a) = &admission
    {
        spend(state, a).await;
    }
    // A spent pass lets nobody in any more: the browser may as well forget it.
    if (revoke || spent)
        && let Ok(v) = HeaderValue::from_str(&pass_cookie(state, None))
    {
        parts.headers.append(header::SET_COOKIE, v);
    }
    Response::from_parts(parts, body)
}

/// The origin's command header, parsed once.
static COMMAND: HeaderName = HeaderName::from_static(COMMAND_HEADER);

/// The pass a request carries: `X-Admission-Ticket`, else the `wr_pass` cookie.
fn presented_pass(headers: &HeaderMap) -> Option<String> {
    let header = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| looks_like_pass(v));
    header
        .or_else(|| {
            crate::http::credentials::cookies(headers, PASS_COOKIE).find(|v| looks_like_pass(v))
        })
        .map(str::to_owned)
}

/// The admission `pass` proves if it still runs unspent (see [`check_token`]; while the
/// store cannot be asked, its signature and expiry alone decide).
pub(crate) async fn admitted(state: &AppState, pass: &str) -> Option<Admission> {
    match check_token(state, pass).await {
        Checked::Running(admission) | Checked::Unverified(admission) => Some(admission),
        Checked::Refused(_) => None,
    }
}

/// The admission a pass names, by its signature and expiry (or the cache of confirmed
/// ones): whether it still runs is for the store step that follows to say.
fn signed(state: &AppState, pass: &str) -> Option<Admission> {
    let now_s = wall_ms() / 1000;
    state
        .passes
        .cache
        .get(&crate::pass::PassCache::key(pass), now_s)
        .or_else(|| state.passes.keys.verify_pass(pass, now_s).ok())
}

/// Ends `admission` at the origin's word: spent, as a redemption.
async fn spend(state: &AppState, admission: &Admission) {
    match state.store.redeem(&admission.show, admission.ticket).await {
        Ok(_) => {
            state
                .passes
                .cache
                .ended([admission.ticket], wall_ms() / 1000);
            tracing::info!(show = %admission.show, ticket = %admission.ticket, "the origin revoked a pass")
        }
        Err(e) => {
            tracing::warn!(show = %admission.show, error = %e, "could not spend a revoked pass")
        }
    }
}
