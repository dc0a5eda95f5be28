//! Gateway mode (`UPSTREAM_URL`): the waiting room in front of a shop. Every request that is
//! not one of the waiting room's own routes goes on to the origin, bodies streamed both ways
//! and WebSocket upgrades spliced through; the path prefixes `PROTECT` names reach it only
//! with a running admission of their show (the `wr_pass` cookie the waiting page sets, or a
//! pass in `X-Admission-Ticket`), and without one the fan is sent to the waiting page, which
//! sends it back once admitted.
//!
//! - [`path`]: the one canonical path the guard judges and the origin is sent; a spelling
//!   servers read differently is refused when any reading of it is guarded.
//! - [`headers`]: what the origin is sent of the client's headers, and what the gateway
//!   vouches for.
//! - `proxy.rs`: the request's way through, the purchase path's spend and the origin's
//!   `revoke` command.
//!
//! A purchase path (`purchase=` in `PROTECT`) spends the admission before the request goes
//! on, in the same store step as `POST …/redeem`: of twenty requests sent at once with one
//! pass, one reaches the origin and the others are answered 409. The origin may also end a
//! pass itself by answering `X-Waiting-Room-Command: revoke` (its purchase is done, say): the
//! admission is spent and the cookie cleared; the header never reaches the fan.

mod headers;
pub(crate) mod path;
mod proxy;
mod upstream;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::HeaderValue;
use axum::http::uri::{Authority, PathAndQuery, Scheme};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use self::path::{BadPath, RequestPath, canonical, prefix_reading, under};
use super::AppState;
use crate::error::AppError;
pub use crate::metrics::GatewayOutcome;
use crate::model::ShowId;
use crate::protocol::{PASS_COOKIE, routes};

pub(crate) use self::proxy::{admitted, forward, proxy};

/// How long the origin may take to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub use crate::config::ProtectCase;

/// The origin, the paths it guards, and the client that reaches it.
#[derive(Clone, Debug)]
pub struct Gateway {
    /// `host:port` of the origin, and the `Host` it is sent.
    authority: Authority,
    host: HeaderValue,
    /// A path prefix every request's path is put under ("" for none).
    base_path: String,
    /// The guarded prefixes, longest first.
    rules: Vec<Rule>,
    fold_case: bool,
    /// How long the origin may take to answer a request's head.
    timeout: Duration,
    client: OriginClient,
}

/// The pools of connections to the origin: the lean one of [`upstream`] for bodiless `GET`s
/// and `HEAD`s, hyper's client for every other request.
#[derive(Clone, Debug)]
pub(crate) struct OriginClient {
    hyper: Client<HttpConnector, Body>,
    lean: Arc<upstream::Pool>,
}

/// A new pool of connections to the origin: a serving thread of its own has one, so that a
/// request and the connection it goes out on are served by one thread.
pub(crate) fn origin_client() -> OriginClient {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
    connector.set_nodelay(true);
    OriginClient {
        hyper: Client::builder(TokioExecutor::new()).build(connector),
        lean: Arc::default(),
    }
}

/// One guarded prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The prefix as the guard reads paths (see [`path`]); "" guards the whole site.
    prefix: String,
    /// The show whose admission it needs.
    pub(crate) show: ShowId,
    /// A request to it spends the admission before it goes on.
    pub(crate) purchase: bool,
}

/// Why `UPSTREAM_URL` or `PROTECT` was refused.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// `UPSTREAM_URL` is not an `http://` URL with a host and no query.
    #[error("UPSTREAM_URL must be an http:// URL with a host (TLS to the origin is not built in)")]
    BadUpstream,
    /// Entry number `.0` (from 1) of `PROTECT` is malformed.
    #[error(
        "PROTECT entry {0}: expected /path-prefix=showId (a canonical path starting with '/', \
         a valid show id) or purchase=/path after one"
    )]
    BadProtect(usize),
    /// Two entries guard the same prefix for two shows (or twice).
    #[error("PROTECT entry {0}: the prefix {1} is guarded twice; each prefix guards for one show")]
    Overlap(usize, String),
}

/// What the guard decided for a request's path.
#[derive(Debug)]
pub(crate) enum Decision<'a> {
    /// Forward `path` (canonical); `rule` when it is guarded.
    Forward {
        path: RequestPath,
        rule: Option<&'a Rule>,
    },
    /// A spelling servers read differently, one reading of which is guarded (400).
    Ambiguous,
    /// Not a path the origin can be sent at all (400).
    Bad(BadPath),
}

impl Gateway {
    /// The gateway to `upstream`, guarding `protect` (`/checkout=show-42,purchase=/checkout/pay`).
    pub fn new(
        upstream: &str,
        protect: &str,
        case: ProtectCase,
        timeout: Duration,
    ) -> Result<Gateway, GatewayError> {
        let uri: Uri = upstream.parse().map_err(|_| GatewayError::BadUpstream)?;
        if uri.scheme_str() != Some("http") || uri.query().is_some() {
            return Err(GatewayError::BadUpstream);
        }
        let authority = uri.authority().cloned().ok_or(GatewayError::BadUpstream)?;
        if authority.host().is_empty() {
            return Err(GatewayError::BadUpstream);
        }
        let host =
            HeaderValue::from_str(authority.as_str()).map_err(|_| GatewayError::BadUpstream)?;
        let base_path = uri.path().trim_end_matches('/').to_owned();
        let fold_case = case == ProtectCase::Insensitive;
        let rules = rules(protect, fold_case)?;
        Ok(Gateway {
            authority,
            host,
            base_path,
            rules,
            fold_case,
            timeout,
            client: origin_client(),
        })
    }

    /// The client requests reach the origin with when nothing else is given: one pool of
    /// connections for every thread.
    pub(crate) fn client(&self) -> &OriginClient {
        &self.client
    }

    /// The shows whose admissions this gateway checks.
    pub fn shows(&self) -> impl Iterator<Item = &ShowId> {
        let mut shows: Vec<&ShowId> = self.rules.iter().map(|r| &r.show).collect();
        shows.sort();
        shows.dedup();
        shows.into_iter()
    }

    /// What the guard decides for a request path (without its query).
    pub(crate) fn decide(&self, raw: &str) -> Decision<'_> {
        let path = match canonical(raw, self.fold_case) {
            Ok(path) => path,
            Err(bad) => return Decision::Bad(bad),
        };
        let mut rule = None;
        for reading in &path.readings {
            if let Some(r) = self.rule_for(reading) {
                if path.ambiguous() {
                    return Decision::Ambiguous;
                }
                rule = Some(r);
            }
        }
        Decision::Forward { path, rule }
    }

    /// The rule of the longest prefix `reading` lies under.
    fn rule_for(&self, reading: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| under(reading, &r.prefix))
    }

    /// The request target the origin is sent for `path` (canonical) with `query`; what
    /// follows `base_path` of it is the path as the fan asked for it.
    fn target(&self, path: &str, query: Option<&str>) -> Result<String, AppError> {
        let mut target = String::with_capacity(
            self.base_path.len() + path.len() + query.map_or(0, |q| q.len() + 1),
        );
        target.push_str(&self.base_path);
        target.push_str(path);
        if let Some(q) = query {
            target.push('?');
            target.push_str(q);
        }
        // What hyper parsed as a request target is one, and a canonical path adds no byte
        // outside it; checked anyway, since the lean client writes it as it is.
        if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(AppError::BadRequest(
                "a request target the origin cannot take".into(),
            ));
        }
        Ok(target)
    }

    /// Where `target` (see [`Gateway::target`]) is at the origin, for hyper's client.
    fn upstream_uri(&self, target: String) -> Result<Uri, AppError> {
        let bad = || AppError::BadRequest("a request target the origin cannot take".into());
        let mut parts = axum::http::uri::Parts::default();
        parts.scheme = Some(Scheme::HTTP);
        parts.authority = Some(self.authority.clone());
        parts.path_and_query = Some(PathAndQuery::try_from(target).map_err(|_| bad())?);
        Uri::from_parts(parts).map_err(|_| bad())
    }
}

/// `PROTECT` read: `/prefix=showId` entries, each maybe followed by `purchase=/path` entries
/// naming its purchase paths; longest prefix first.
fn rules(protect: &str, fold: bool) -> Result<Vec<Rule>, GatewayError> {
    let mut rules: Vec<(usize, Rule)> = Vec::new();
    let mut show: Option<ShowId> = None;
    for (i, entry) in protect.split(',').map(str::trim).enumerate() {
        let n = i + 1;
        if entry.is_empty() {
            continue;
        }
        let (key, value) = entry.split_once('=').ok_or(GatewayError::BadProtect(n))?;
        let (key, value) = (key.trim(), value.trim());
        let rule = if key == "purchase" {
            let show = show.clone().ok_or(GatewayError::BadProtect(n))?;
            let prefix = prefix_reading(value, fold).ok_or(GatewayError::BadProtect(n))?;
            Rule {
                prefix,
                show,
                purchase: true,
            }
        } else {
            let parsed: ShowId = value.parse().map_err(|_| GatewayError::BadProtect(n))?;
            let prefix = prefix_reading(key, fold).ok_or(GatewayError::BadProtect(n))?;
            show = Some(parsed.clone());
            Rule {
                prefix,
                show: parsed,
                purchase: false,
            }
        };
        if let Some((_, same)) = rules.iter().find(|(_, r)| r.prefix == rule.prefix) {
            // A purchase path may be the very prefix of its own show: all of it buys.
            if same.show != rule.show || same.purchase == rule.purchase {
                let spelled = if rule.prefix.is_empty() {
                    "/"
                } else {
                    &rule.prefix
                };
                return Err(GatewayError::Overlap(n, spelled.to_owned()));
            }
        }
        rules.push((n, rule));
    }
    let mut rules: Vec<Rule> = rules.into_iter().map(|(_, r)| r).collect();
    // The longest prefix first; at the same prefix, the purchase path.
    rules.sort_by_key(|r| (std::cmp::Reverse(r.prefix.len()), !r.purchase));
    Ok(rules)
}

/// What a guarded path answers without an admission: `303` to the show's waiting page, which
/// sends the fan back to `path_and_query` once admitted.
fn to_the_queue(show: &ShowId, path_and_query: &str) -> Response {
    let page = routes::show(routes::WAIT_PAGE, show.as_str());
    let location = format!("{page}?return={}", encode_component(path_and_query));
    (
        StatusCode::SEE_OTHER,
        [(axum::http::header::LOCATION, location)],
    )
        .into_response()
}

/// The `wr_pass` cookie carrying `pass` (for the rest of its life), or clearing it.
pub(crate) fn pass_cookie(state: &AppState, pass: Option<(&str, u64)>) -> String {
    let (value, age) = pass.unwrap_or(("", 0));
    crate::http::credentials::cookie(PASS_COOKIE, value, "/", age, state.public_https())
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

#[cfg(test)]
mod tests;
