//! Gateway mode (`UPSTREAM_URL`): the waiting room in front of a shop. Every request that is
//! not one of the waiting room's own routes goes on to the origin, bodies streamed both
//! ways and WebSocket upgrades spliced through; the path prefixes `PROTECT` names reach it
//! only with a running admission of their show (the `wr_pass` cookie the waiting page sets,
//! or a pass in `X-Admission-Ticket`), and without one the fan is sent to the waiting page,
//! which sends it back once admitted. The origin ends a pass by answering
//! `X-Waiting-Room-Command: revoke` (its purchase is done, say): the admission is spent and
//! the cookie cleared; the header never reaches the fan.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::AppState;
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::metrics::PassCheck;
use crate::model::ShowId;
use crate::pass::{Admission, looks_like_pass};
use crate::protocol::{ADMISSION_HEADER, COMMAND_HEADER, PASS_COOKIE, routes};

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1): never passed on.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// How long the origin may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The origin, the paths it guards, and the client that reaches it.
#[derive(Clone, Debug)]
pub struct Gateway {
    /// `http://host:port`, and a path prefix every request's path is put under ("" for none).
    origin: Uri,
    base_path: String,
    protect: Vec<(String, ShowId)>,
    /// How long the origin may take to answer a request's head.
    timeout: Duration,
    client: Client<HttpConnector, Body>,
}

/// Why `UPSTREAM_URL` or `PROTECT` was refused.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// `UPSTREAM_URL` is not an `http://` URL with a host and no query.
    #[error("UPSTREAM_URL must be an http:// URL with a host (TLS to the origin is not built in)")]
    BadUpstream,
    /// Entry number `.0` (from 1) of `PROTECT` is not `/path-prefix=showId` with a valid id.
    #[error(
        "PROTECT entry {0}: expected /path-prefix=showId (a path starting with '/', a valid show id)"
    )]
    BadProtect(usize),
}

impl Gateway {
    /// The gateway to `upstream`, guarding `protect` (`/checkout=show-42,/api/buy=show-42`).
    pub fn new(upstream: &str, protect: &str, timeout: Duration) -> Result<Gateway, GatewayError> {
        let uri: Uri = upstream.parse().map_err(|_| GatewayError::BadUpstream)?;
        if uri.scheme_str() != Some("http") || uri.authority().is_none() || uri.query().is_some() {
            return Err(GatewayError::BadUpstream);
        }
        let base_path = uri.path().trim_end_matches('/').to_owned();
        let mut guarded = Vec::new();
        for (i, entry) in protect.split(',').map(str::trim).enumerate() {
            if entry.is_empty() {
                continue;
            }
            let (prefix, show) = entry
                .split_once('=')
                .ok_or(GatewayError::BadProtect(i + 1))?;
            let prefix = prefix.trim().trim_end_matches('/');
            let show: ShowId = show
                .trim()
                .parse()
                .map_err(|_| GatewayError::BadProtect(i + 1))?;
            if !prefix.starts_with('/') && !prefix.is_empty() {
                return Err(GatewayError::BadProtect(i + 1));
            }
            guarded.push((prefix.to_owned(), show));
        }
        // The longest prefix first: `/checkout/vip` may guard another show than `/checkout`.
        guarded.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        connector.set_nodelay(true);
        Ok(Gateway {
            origin: uri,
            base_path,
            protect: guarded,
            timeout,
            client: Client::builder(TokioExecutor::new()).build(connector),
        })
    }

    /// The show whose admission `path` needs, if any: a prefix matches whole segments
    /// (`/checkout` guards `/checkout` and `/checkout/pay`, not `/checkouts`).
    pub fn guard(&self, path: &str) -> Option<&ShowId> {
        self.protect
            .iter()
            .find(|(prefix, _)| {
                path.strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .map(|(_, show)| show)
    }

    /// Where `path_and_query` is at the origin.
    fn upstream_uri(&self, path_and_query: &str) -> Result<Uri, AppError> {
        let authority = self.origin.authority().map(|a| a.as_str()).unwrap_or("");
        format!("http://{authority}{}{path_and_query}", self.base_path)
            .parse()
            .map_err(|_| AppError::BadRequest("a request target the origin cannot take".into()))
    }
}

/// Every request the router has no route for, in gateway mode.
pub(super) async fn proxy(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request,
) -> Response {
    let Some(gateway) = state.gateway.clone() else {
        return AppError::NotFound("no such resource".into()).into_response();
    };
    let path_and_query = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".into());
    // The admission the request carries, checked like `GET …/pass` does.
    let presented = presented_pass(req.headers());
    let admission = match &presented {
        Some(pass) => admitted(&state, pass).await,
        None => None,
    };
    if let Some(show) = gateway.guard(req.uri().path())
        && admission.as_ref().is_none_or(|a| a.show != *show)
    {
        state.metrics.gateway(GatewayOutcome::Queued);
        return to_the_queue(show, &path_and_query);
    }
    let uri = match gateway.upstream_uri(&path_and_query) {
        Ok(uri) => uri,
        Err(e) => return e.into_response(),
    };
    let upgrade = wants_upgrade(req.headers());
    let client_side = upgrade.then(|| hyper::upgrade::on(&mut req));
    let host = req.headers().get(header::HOST).cloned();
    let client_ip = state.client_ip(peer.ip(), req.headers());
    *req.uri_mut() = uri;
    let headers = req.headers_mut();
    strip_hop_by_hop(headers, upgrade);
    forwarded_headers(headers, host, client_ip, state.public_https());
    if let Some(origin_host) = gateway.origin.authority()
        && let Ok(v) = HeaderValue::from_str(origin_host.as_str())
    {
        headers.insert(header::HOST, v);
    }
    // The origin gets the pass it may redeem (`POST …/redeem`), and only a valid one.
    headers.remove(ADMISSION_HEADER);
    if let (Some(pass), Some(_)) = (&presented, &admission)
        && let Ok(v) = HeaderValue::from_str(pass)
    {
        headers.insert(ADMISSION_HEADER, v);
    }
    let answered = tokio::time::timeout(gateway.timeout, gateway.client.request(req)).await;
    let mut res = match answered {
        Ok(Ok(res)) => res,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the origin is unreachable");
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
        let stop = state.shutdown.clone();
        state.tasks.spawn(async move {
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
    let revoke = res
        .headers()
        .get(COMMAND_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("revoke"));
    let (mut parts, body) = res.into_parts();
    strip_hop_by_hop(
        &mut parts.headers,
        parts.status == StatusCode::SWITCHING_PROTOCOLS,
    );
    parts.headers.remove(COMMAND_HEADER);
    if revoke {
        if let Some(a) = &admission {
            spend(&state, a).await;
        }
        if let Ok(v) = HeaderValue::from_str(&pass_cookie(&state, None)) {
            parts.headers.append(header::SET_COOKIE, v);
        }
    }
    Response::from_parts(parts, Body::new(body))
}

/// What a guarded path answers without an admission: `303` to the show's waiting page, which
/// sends the fan back to `path_and_query` once admitted.
fn to_the_queue(show: &ShowId, path_and_query: &str) -> Response {
    let page = routes::show(routes::WAIT_PAGE, show.as_str());
    let location = format!("{page}?return={}", encode_component(path_and_query));
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

/// The pass a request carries: `X-Admission-Ticket`, else the `wr_pass` cookie.
fn presented_pass(headers: &HeaderMap) -> Option<String> {
    let header = headers
        .get(ADMISSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| looks_like_pass(v));
    header
        .or_else(|| super::extract::cookies(headers, PASS_COOKIE).find(|v| looks_like_pass(v)))
        .map(str::to_owned)
}

/// The admission `pass` proves if it still runs unspent (while the store cannot be asked,
/// its signature and expiry alone decide, as at `GET …/pass`).
pub(crate) async fn admitted(state: &AppState, pass: &str) -> Option<Admission> {
    let admission = state.passes.verify_pass(pass, wall_ms() / 1000).ok()?;
    match super::orders::still_runs(state, &admission).await {
        PassCheck::Refused => None,
        PassCheck::Valid | PassCheck::Unverified => Some(admission),
    }
}

/// Ends `admission` at the origin's word: spent, as a redemption.
async fn spend(state: &AppState, admission: &Admission) {
    match state.store.redeem(&admission.show, admission.ticket).await {
        Ok(_) => {
            tracing::info!(show = %admission.show, ticket = %admission.ticket, "the origin revoked a pass")
        }
        Err(e) => {
            tracing::warn!(show = %admission.show, error = %e, "could not spend a revoked pass")
        }
    }
}

/// The `wr_pass` cookie carrying `pass` (for the rest of its life), or clearing it.
pub(crate) fn pass_cookie(state: &AppState, pass: Option<(&str, u64)>) -> String {
    let secure = if state.public_https() { "; Secure" } else { "" };
    let (value, age) = pass.unwrap_or(("", 0));
    format!("{PASS_COOKIE}={value}; Path=/; Max-Age={age}; HttpOnly; SameSite=Lax{secure}")
}

/// Whether the request asks to switch protocols (a WebSocket handshake).
fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// Removes the hop-by-hop headers and every header `Connection` names; an upgrade keeps its
/// `Upgrade` and `Connection: upgrade`.
fn strip_hop_by_hop(headers: &mut HeaderMap, upgrade: bool) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .filter(|n| *n != header::UPGRADE)
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    if upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    } else {
        headers.remove(header::UPGRADE);
    }
}

/// `X-Forwarded-For` (the client appended, as nginx's `$proxy_add_x_forwarded_for`),
/// `X-Forwarded-Proto` and `X-Forwarded-Host` (the host the fan asked for).
fn forwarded_headers(
    headers: &mut HeaderMap,
    host: Option<HeaderValue>,
    client: IpAddr,
    https: bool,
) {
    let prior: Vec<String> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_owned)
        .collect();
    let chain = prior
        .into_iter()
        .chain(std::iter::once(client.to_string()))
        .collect::<Vec<_>>()
        .join(", ");
    if let Ok(v) = HeaderValue::from_str(&chain) {
        headers.insert("x-forwarded-for", v);
    }
    let proto = if https { "https" } else { "http" };
    headers.insert("x-forwarded-proto", HeaderValue::from_static(proto));
    if let Some(host) = host {
        headers.insert("x-forwarded-host", host);
    }
}

/// `s` percent-encoded as a query value: only unreserved characters and `/` stay.
fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether `target` is a path of this site to send an admitted fan back to: it starts with
/// one `/` (not `//` nor `/\`, which browsers take for another host) and holds no control
/// character.
pub(super) fn same_site_path(target: &str) -> bool {
    target.starts_with('/')
        && !target.starts_with("//")
        && !target.starts_with("/\\")
        && target.len() <= 2048
        && !target.chars().any(|c| c.is_control() || c == '\\')
}

/// What a gateway request came to.
#[derive(Clone, Copy, Debug)]
pub enum GatewayOutcome {
    /// Sent on to the origin (whatever it answered).
    Proxied,
    /// A guarded path without an admission: sent to the waiting page.
    Queued,
    /// The origin could not be reached, or did not answer in time (502, 504).
    Unreachable,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_guard_whole_segments_the_longest_first() {
        let g = Gateway::new(
            "http://127.0.0.1:9/shop/",
            "/checkout=a, /checkout/vip/=b,/api/buy=a",
            Duration::from_secs(1),
        )
        .unwrap();
        let show = |p| g.guard(p).map(ShowId::as_str);
        assert_eq!(show("/checkout"), Some("a"));
        assert_eq!(show("/checkout/pay"), Some("a"));
        assert_eq!(show("/checkout/vip/x"), Some("b"));
        assert_eq!(show("/checkouts"), None);
        assert_eq!(show("/api/buy?x=1"), None, "a path, not a query");
        assert_eq!(show("/"), None);
        assert_eq!(
            g.upstream_uri("/a?b=c").unwrap().to_string(),
            "http://127.0.0.1:9/shop/a?b=c"
        );
    }

    #[test]
    fn bad_settings_are_named() {
        for bad in ["https://shop", "shop:80", "http://", "ftp://x"] {
            assert!(
                matches!(
                    Gateway::new(bad, "", Duration::from_secs(1)),
                    Err(GatewayError::BadUpstream)
                ),
                "{bad}"
            );
        }
        for (protect, n) in [("/x", 1), ("/x=a,/y=b{", 2), ("x=a", 1)] {
            match Gateway::new("http://o", protect, Duration::from_secs(1)) {
                Err(GatewayError::BadProtect(i)) => assert_eq!(i, n, "{protect}"),
                other => panic!("{protect}: {other:?}"),
            }
        }
    }

    #[test]
    fn only_paths_of_this_site_are_returned_to() {
        for good in ["/", "/checkout?seat=1", "/a/b#c"] {
            assert!(same_site_path(good), "{good}");
        }
        for bad in [
            "",
            "https://evil.example",
            "//evil.example",
            "/\\evil.example",
            "checkout",
            "/a\nb",
            "/a\\b",
        ] {
            assert!(!same_site_path(bad), "{bad:?}");
        }
        assert_eq!(encode_component("/c?a=1&b=é"), "/c%3Fa%3D1%26b%3D%C3%A9");
    }

    #[test]
    fn connection_headers_stay_on_their_hop() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, "keep-alive, x-secret".parse().unwrap());
        h.insert("x-secret", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        h.insert(header::UPGRADE, "websocket".parse().unwrap());
        h.insert("x-kept", "1".parse().unwrap());
        let mut plain = h.clone();
        strip_hop_by_hop(&mut plain, false);
        assert_eq!(plain.len(), 1, "{plain:?}");
        assert!(plain.contains_key("x-kept"));
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h[header::UPGRADE], "websocket");
        assert_eq!(h[header::CONNECTION], "upgrade");
        assert!(!h.contains_key("x-secret"));
    }
}
