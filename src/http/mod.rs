//! The HTTP faces of the server, one file each, on one shared [`AppState`].

mod fan;
mod health;
mod operator;
mod orders;
mod sse;
mod ws;

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tower_http::trace::TraceLayer;
use uuid::Uuid;

use crate::error::AppError;
use crate::hub::Hub;
use crate::metrics::Metrics;
use crate::model::ShowId;
use crate::store::QueueStore;

/// Request bodies larger than this get 413: an order is a few hundred bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Everything a handler may need, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn QueueStore>,
    pub hub: Hub,
    pub metrics: Arc<Metrics>,
    pub admin_token: Arc<str>,
    pub join_limiter: Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>,
    /// Cancelled on shutdown: every stream ends cleanly.
    pub shutdown: CancellationToken,
}

impl AppState {
    /// A per-address join limiter allowing `per_second` joins a second (bursts of twice that).
    pub fn join_limiter(per_second: u32) -> Option<Arc<DefaultKeyedRateLimiter<IpAddr>>> {
        let rate = NonZeroU32::new(per_second)?;
        let burst = NonZeroU32::new(per_second.saturating_mul(2)).unwrap_or(rate);
        Some(Arc::new(RateLimiter::keyed(
            Quota::per_second(rate).allow_burst(burst),
        )))
    }

    /// 429 if `ip` joined too often.
    fn check_join_rate(&self, ip: IpAddr) -> Result<(), AppError> {
        let Some(limiter) = &self.join_limiter else {
            return Ok(());
        };
        limiter.check_key(&ip).map_err(|not_until| {
            AppError::TooManyRequests(not_until.wait_time_from(DefaultClock::default().now()))
        })
    }
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    let room = "/orders/waiting-room/{show_id}";
    let ticket = "/orders/waiting-room/{show_id}/tickets/{ticket_id}";
    Router::new()
        .route(&format!("{room}/open"), post(operator::open))
        .route(&format!("{room}/close"), post(operator::close))
        .route(&format!("{room}/stats"), get(operator::stats))
        .route(&format!("{room}/config"), put(operator::set_config))
        .route(&format!("{room}/join"), post(fan::join))
        .route(ticket, get(fan::status).delete(fan::leave))
        .route(&format!("{ticket}/events"), get(sse::events))
        .route(&format!("{ticket}/ws"), get(ws::upgrade))
        .route("/orders", post(orders::place))
        .route("/orders/{id}", get(orders::get))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .fallback(not_found)
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
        Json(
            json!({"status": 405, "error": "Method Not Allowed", "message": "method not allowed on this resource"}),
        ),
    )
}

/// A show id from the path, checked against the spec's alphabet (400 otherwise).
pub(crate) fn show_id(raw: &str) -> Result<ShowId, AppError> {
    raw.parse()
        .map_err(|e: crate::model::InvalidShowId| AppError::BadRequest(format!("showId: {e}")))
}

/// A ticket id from the path: anything but a UUID is a ticket nobody holds.
pub(crate) fn ticket_id(raw: &str) -> Option<Uuid> {
    Uuid::parse_str(raw).ok()
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
        let presented = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match presented {
            Some(token) if constant_time_eq(token.as_bytes(), state.admin_token.as_bytes()) => {
                Ok(Operator)
            }
            _ => Err(AppError::Unauthorized),
        }
    }
}

/// Compares without an early exit, so response timing does not leak how much of a guessed
/// token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_compares_whole_tokens() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"", b"x"));
    }
}
