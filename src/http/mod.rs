//! The HTTP faces of the server, one file each, on one shared [`AppState`].

mod admin;
mod draw;
mod fan;
mod gateway;
mod handover;
mod health;
mod limits;
pub(crate) mod listener;
mod openapi;
mod operator;
mod orders;
pub mod origin;
mod page;
mod sse;
mod ws;

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tower_http::trace::TraceLayer;
use uuid::Uuid;

use crate::error::AppError;
use crate::hub::Hub;
use crate::metrics::Metrics;
use crate::model::{ShowId, ShowStats};
use crate::pass::{Keyring, ProofError, RequireAdmission};
use crate::protocol::{ErrorBody, JOIN_PROOF_HEADER, routes};
use crate::store::{Joined, QueueStore};
use crate::watchdog::Watchdog;

pub use gateway::{Gateway, GatewayError, GatewayOutcome};
pub use limits::{StreamGuard, StreamLimits, TokenGuesses};
pub use origin::Origin;

/// Request bodies larger than this get 413: an order is a few hundred bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Everything a handler may need, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn QueueStore>,
    pub hub: Hub,
    pub metrics: Arc<Metrics>,
    pub admin_token: Arc<str>,
    /// Joins a second per client address, shared across instances by the store; 0: no limit.
    pub join_rate_limit: u32,
    /// How many `X-Forwarded-For` entries from the right our own proxies wrote.
    pub trusted_proxy_hops: usize,
    /// Cancelled on shutdown: every stream ends cleanly.
    pub shutdown: CancellationToken,
    /// The shows this instance knows, and which of them the store lost.
    pub watchdog: Watchdog,
    /// Streams open per client address block on this instance (`MAX_STREAMS_PER_CLIENT`).
    pub streams: StreamLimits,
    /// `PUBLIC_URL`'s origin: the only one join forms may come from; https makes cookies
    /// `Secure`.
    pub public_origin: Option<Origin>,
    /// Signs and checks admission passes and join challenges (`PASS_KEYS`).
    pub passes: Arc<Keyring>,
    /// Wrong operator tokens per client address block: guessing is slowed to a crawl.
    pub token_guesses: TokenGuesses,
    /// Gateway mode (`UPSTREAM_URL`): the origin every other request goes on to.
    pub gateway: Option<Arc<Gateway>>,
}

impl AppState {
    /// Whether fans reach this server over https (`PUBLIC_URL`): cookies are `Secure`.
    pub(crate) fn public_https(&self) -> bool {
        self.public_origin.as_ref().is_some_and(Origin::is_https)
    }

    /// The client's address: the peer, or what our trusted proxies say it was. Entries left
    /// of the ones our proxies wrote are the client's own words and are never trusted.
    pub(crate) fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if self.trusted_proxy_hops == 0 {
            return peer;
        }
        let forwarded: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        forwarded
            .len()
            .checked_sub(self.trusted_proxy_hops)
            .and_then(|i| forwarded[i].parse().ok())
            .unwrap_or(peer)
    }

    /// A join as every face makes it: the client's limit first, then a fresh ticket, counted.
    ///
    /// With an `Idempotency-Key` header, the same key answers the same ticket while it lives
    /// (the `bool` says so), across instances: one place per client, however often it asks.
    pub(crate) async fn join(
        &self,
        peer: IpAddr,
        headers: &HeaderMap,
        show: &ShowId,
    ) -> Result<(Joined, bool), AppError> {
        let key = idempotency_key(headers)?;
        // A proof is checked here (no store call); the store judges and spends it with the
        // join. Garbage is refused before it costs the store anything.
        let proof = match headers.get(JOIN_PROOF_HEADER) {
            None => None,
            Some(value) => {
                let value = value
                    .to_str()
                    .map_err(|_| AppError::BadRequest(ProofError::Malformed.to_string()))?;
                let proof = self
                    .passes
                    .check_proof(value.trim(), show, crate::clock::wall_ms())
                    .map_err(|e| match e {
                        ProofError::Malformed => AppError::BadRequest(e.to_string()),
                        _ => AppError::Forbidden(e.to_string()),
                    })?;
                Some(proof)
            }
        };
        self.check_join_rate(peer, headers).await?;
        let (joined, replayed) = self.store.join_proven(show, key, proof.as_ref()).await?;
        if !replayed {
            self.metrics.joined(show);
        }
        Ok((joined, replayed))
    }

    /// The operator's figures of every open show, in show order (one store call per show).
    pub(crate) async fn open_show_stats(&self) -> Result<Vec<ShowStats>, AppError> {
        let mut stats = Vec::new();
        for show in self.store.open_shows().await? {
            stats.push(self.store.stats(&show).await?);
        }
        Ok(stats)
    }

    /// 429 if the client behind `peer` joined too often.
    async fn check_join_rate(&self, peer: IpAddr, headers: &HeaderMap) -> Result<(), AppError> {
        if self.join_rate_limit == 0 {
            return Ok(());
        }
        // IPv6 clients by /64: one subscriber's prefix holds more addresses than any limit.
        let client = match client_prefix(self.client_ip(peer, headers)) {
            IpAddr::V6(block) => format!("{block}/64"),
            v4 => v4.to_string(),
        };
        match self.store.limit_join(&client, self.join_rate_limit).await? {
            None => Ok(()),
            Some(wait) => Err(AppError::TooManyRequests(wait)),
        }
    }
}

/// The block a client address is counted in: an IPv4 address, or an IPv6 /64 (one
/// household's or one machine's whole prefix). IPv4 seen through a dual-stack socket
/// (`::ffff:a.b.c.d`) counts as the IPv4 address.
pub(crate) fn client_prefix(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

/// The header that makes a join idempotent.
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";

/// The join's `Idempotency-Key`, if any: 1 to 128 visible ASCII characters, else 400.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, AppError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .filter(|k| (1..=128).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()))
        .map(Some)
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "{IDEMPOTENCY_KEY}: 1 to 128 visible ASCII characters"
            ))
        })
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    // The gate's signature check runs before the handler; a plain ticket id (or none) goes
    // on to the store's check, as the seed's clients send it.
    let gate = RequireAdmission::new(state.passes.clone());
    let gateway = state.gateway.is_some();
    let router = Router::new()
        .route(routes::SHOW, put(operator::create).delete(operator::delete))
        .route(routes::OPEN, post(operator::open))
        .route(routes::PAUSE, post(operator::pause))
        .route(routes::CLOSE, post(operator::close))
        .route(routes::END, post(operator::end))
        .route(routes::STATS, get(operator::stats))
        .route(routes::CONFIG, put(operator::set_config))
        .route(routes::JOIN, post(fan::join))
        .route(routes::DRAW, get(draw::draw))
        .route(routes::AUDIT, get(draw::audit))
        .route(routes::CHALLENGE, post(fan::challenge))
        .route(
            routes::PASS_CHECK,
            get(orders::check_pass).layer(gate.clone()),
        )
        .route(routes::REDEEM, post(orders::redeem))
        .route(routes::JWKS, get(orders::jwks))
        .route(routes::TICKET, get(fan::status).delete(fan::leave))
        .route(routes::EVENTS, get(sse::events))
        .route(routes::WS, get(ws::upgrade))
        .route(
            routes::ORDERS,
            post(orders::place).layer(gate.or_ticket_ids()),
        )
        .route(routes::ORDER, get(orders::get))
        .route(routes::HEALTHZ, get(health::healthz))
        .route(routes::READYZ, get(health::readyz))
        .route(routes::METRICS, get(health::metrics))
        .route(routes::OPENAPI, get(openapi::document))
        .route(routes::WAIT_PAGE, get(page::wait))
        .route(routes::WAIT_JOIN, post(page::join))
        .route(routes::WAIT_PASS, post(page::keep_pass))
        .route(routes::ADMIN, get(admin::console))
        .route(routes::ADMIN_STATS_EVENTS, get(admin::stats_events))
        .nest_service(routes::STATIC, page::static_files());
    // In gateway mode the shop's own home page is the origin's, and every path the waiting
    // room does not serve goes there.
    let router = if gateway {
        router.fallback(gateway::proxy)
    } else {
        router
            .route(routes::INDEX, get(page::index))
            .fallback(not_found)
    };
    router
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn not_found() -> AppError {
    AppError::NotFound("no such resource".into())
}

async fn method_not_allowed() -> (StatusCode, Json<serde_json::Value>) {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(json!(ErrorBody {
            status: 405,
            error: "Method Not Allowed".into(),
            message: "method not allowed on this resource".into(),
        })),
    )
}

/// A show id from the path, checked against the spec's alphabet (400 otherwise).
pub(crate) fn show_id(raw: &str) -> Result<ShowId, AppError> {
    raw.parse()
        .map_err(|e: crate::model::InvalidShowId| AppError::BadRequest(format!("showId: {e}")))
}

/// A show id and a ticket id from the path: a bad show id is 400, and anything but a UUID
/// is a ticket nobody holds (the seed's 404 UNKNOWN).
pub(crate) fn ticket_path(show: &str, ticket: &str) -> Result<(ShowId, Uuid), AppError> {
    let show = show_id(show)?;
    let id = Uuid::parse_str(ticket).map_err(|_| AppError::UnknownTicket(ticket.to_owned()))?;
    Ok((show, id))
}

/// `Json`, but its rejections are our JSON errors (400, 413, 415).
pub struct AppJson<T>(pub T);

impl<S, T> FromRequest<S> for AppJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(AppJson(value)),
            // A body that did not arrive in time: 408, and the connection closes.
            Err(rejection) if listener::BodyTimedOut::caused(&rejection) => Err(
                AppError::Rejected(StatusCode::REQUEST_TIMEOUT, rejection.body_text()),
            ),
            Err(rejection) => Err(AppError::Rejected(
                rejection.status(),
                rejection.body_text(),
            )),
        }
    }
}

/// `Path`, but its rejections (say, a path that is not valid UTF-8) are our JSON errors.
pub struct AppPath<T>(pub T);

impl<S, T> FromRequestParts<S> for AppPath<T>
where
    T: serde::de::DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(AppPath(value)),
            Err(rejection) => Err(AppError::Rejected(
                rejection.status(),
                rejection.body_text(),
            )),
        }
    }
}

/// Proof that the request carries the operator's bearer token.
pub struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        let client = peer.map(|p| state.client_ip(p, &parts.headers));
        if let Some(client) = client {
            state
                .token_guesses
                .check(client)
                .map_err(AppError::TooManyGuesses)?;
        }
        if presents_token(&parts.headers, &state.admin_token) {
            Ok(Operator)
        } else {
            if let Some(client) = client {
                state.token_guesses.wrong(client);
            }
            Err(AppError::Unauthorized)
        }
    }
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
fn presents_token(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .is_some_and(|presented| constant_time_eq(presented.as_bytes(), token.as_bytes()))
}

/// Compares without an early exit, so response timing does not leak how much of a guessed
/// token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(hops: usize) -> AppState {
        let store: Arc<dyn QueueStore> = Arc::new(crate::store::MemoryStore::new(
            crate::store::StoreSettings {
                default_rate: 1,
                admission_ttl: std::time::Duration::from_secs(1),
                max_active_buyers: 0,
                arrival_window: std::time::Duration::from_secs(60),
            },
        ));
        let metrics = Arc::new(Metrics::default());
        let hub = Hub::new(store.clone(), metrics.clone());
        AppState {
            watchdog: Watchdog::new(store.clone(), hub.clone(), metrics.clone()),
            hub,
            store,
            metrics,
            admin_token: "t".into(),
            join_rate_limit: 0,
            trusted_proxy_hops: hops,
            shutdown: CancellationToken::new(),
            streams: StreamLimits::new(0),
            token_guesses: TokenGuesses::default(),
            public_origin: None,
            passes: Arc::new(Keyring::generate()),
            gateway: None,
        }
    }

    #[test]
    fn the_client_address_comes_from_trusted_proxies_only() {
        let peer: IpAddr = "10.0.0.9".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "6.6.6.6, 203.0.113.7".parse().unwrap());
        // No trusted proxy: a client's header is ignored.
        assert_eq!(state(0).client_ip(peer, &headers), peer);
        // One proxy appended the real client address; what the client sent before it is a lie.
        assert_eq!(
            state(1).client_ip(peer, &headers),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            state(2).client_ip(peer, &headers),
            "6.6.6.6".parse::<IpAddr>().unwrap()
        );
        // Fewer entries than proxies, or garbage: fall back to the peer.
        assert_eq!(state(3).client_ip(peer, &headers), peer);
        headers.insert("x-forwarded-for", "not-an-ip".parse().unwrap());
        assert_eq!(state(1).client_ip(peer, &headers), peer);
    }

    #[test]
    fn constant_time_eq_compares_whole_tokens() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
    }
}
