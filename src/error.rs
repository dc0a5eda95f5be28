//! One error type for every handler: each variant knows its status, and 500s are logged,
//! never echoed. Errors are RFC 9457 problem details (`application/problem+json`) that keep
//! the body clients read since before: `{"status","error","message"}`.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::protocol::{ErrorBody, PROBLEM_JSON};

/// How long a client refused a stream is told to wait before asking again.
const STREAM_RETRY: Duration = Duration::from_secs(5);

/// What a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400: the request is malformed (a bad id, header or body); the message says which part.
    #[error("{0}")]
    BadRequest(String),
    /// 401: an operator route without the right `Authorization: Bearer` token.
    #[error("operator token missing or wrong: send Authorization: Bearer <ADMIN_TOKEN>")]
    Unauthorized,
    /// 403: understood but refused (no admission at the gate, a bad pass, a cross-site form).
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such show or resource.
    #[error("{0}")]
    NotFound(String),
    /// A ticket nobody holds; answered with the original's `{"ticketId":…,"status":"UNKNOWN"}`.
    #[error("unknown ticket {0}")]
    UnknownTicket(String),
    /// 429: the client's address joined too often (`JOIN_RATE_LIMIT`); `Retry-After` is the
    /// wait until its next join is let through.
    #[error("too many joins from this client; try again in {} s", .0.as_millis().div_ceil(1000).max(1))]
    TooManyRequests(Duration),
    /// Too many wrong guesses (`.1`: of what: operator tokens, bypasses, access codes) from
    /// this client address lately.
    #[error("too many {what} from this client; try again in {secs} s", what = .1, secs = .0.as_millis().div_ceil(1000).max(1))]
    TooManyGuesses(Duration, &'static str),
    /// The client's address has `MAX_STREAMS_PER_CLIENT` streams open already.
    #[error(
        "too many open streams from this client (at most {0} at once); close one and try again"
    )]
    TooManyStreams(u32),
    /// The request contradicts what is stored (a hold ordered with something else).
    #[error("{0}")]
    Conflict(String),
    /// Gone for good, for a reason the client may read (a join once the on-sale ended).
    #[error("{0}")]
    Gone(String),
    /// Not now, for a reason the client may read (a show whose state was lost).
    #[error("{0}")]
    Unavailable(String),
    /// Not now, for a reason the client may read, and when to come back (a rule of the show
    /// refused it for the moment: its queue is full, say).
    #[error("{0}")]
    NotNow(String, Duration),
    /// This instance has `MAX_STORE_CALLS` of the crowd's requests at work already: come back
    /// after the wait given (drawn at random, so the crowd told so spreads out).
    #[error("the waiting room is busy; try again in {} s (your place, if you have one, is kept)", .0.as_secs().max(1))]
    Overloaded(Duration),
    /// A request the framework refused before any handler ran (bad JSON, too large, ...).
    #[error("{1}")]
    Rejected(StatusCode, String),
    /// 503: the store failed or did not answer; logged, never echoed to the client.
    #[error("store unavailable")]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

impl AppError {
    /// The HTTP status this error answers with.
    pub fn status_code(&self) -> StatusCode {
        match self {
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(_) | AppError::UnknownTicket(_) => StatusCode::NOT_FOUND,
            AppError::TooManyRequests(_)
            | AppError::TooManyStreams(_)
            | AppError::TooManyGuesses(..) => StatusCode::TOO_MANY_REQUESTS,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::Gone(_) => StatusCode::GONE,
            AppError::Unavailable(_) | AppError::Overloaded(_) | AppError::NotNow(..) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::Rejected(status, _) => *status,
            AppError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status_code();
        if let AppError::UnknownTicket(ticket) = &self {
            // The original's answer, echoing the id as it was sent.
            return (
                status,
                Json(json!({"ticketId": ticket, "status": "UNKNOWN"})),
            )
                .into_response();
        }
        if let AppError::Store(e) = &self {
            // The client learns that we are unavailable, not how.
            tracing::error!(error = %e, "store call failed");
        }
        let mut response = problem(status, self.to_string());
        self.add_headers(&mut response);
        response
    }
}

impl AppError {
    /// How long the client is asked to wait before it tries again: every 503 and 429 says
    /// when to come back, whichever face (JSON or a page) answers it.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            AppError::TooManyRequests(wait)
            | AppError::TooManyGuesses(wait, _)
            | AppError::Overloaded(wait)
            | AppError::NotNow(_, wait) => Some(*wait),
            // A stream closes when its fan is admitted or leaves; no telling when.
            AppError::TooManyStreams(_) => Some(STREAM_RETRY),
            // A store that is failing over, or a show an operator must re-open: soon, maybe.
            _ if self.status_code() == StatusCode::SERVICE_UNAVAILABLE => Some(UNAVAILABLE_RETRY),
            _ => None,
        }
    }

    /// The headers this error's answer carries whatever its body: `Retry-After` when there
    /// is a time to come back, the bearer challenge of a 401.
    pub(crate) fn add_headers(&self, response: &mut Response) {
        if let Some(wait) = self.retry_after() {
            set_retry_after(response, wait);
        }
        if let AppError::Unauthorized = self {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"waiting-room operator\""),
            );
        }
    }
}

/// `status` with a problem body ([`ErrorBody`], RFC 9457) saying `message`. The `type` is
/// `about:blank` (the status says it all), so the `title` is the status's phrase (as `error`
/// is) and the `detail` what was wrong (as `message` is).
pub(crate) fn problem(status: StatusCode, message: String) -> Response {
    let error = status.canonical_reason().unwrap_or("error").to_owned();
    let body = ErrorBody {
        status: status.as_u16(),
        kind: Some("about:blank".into()),
        title: Some(error.clone()),
        detail: Some(message.clone()),
        error,
        message,
    };
    let mut response = (status, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}

/// What a 503 asks the client to wait: a failover takes seconds.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(2);

/// `Retry-After` in whole seconds, rounded up: the header takes no fractions.
fn set_retry_after(response: &mut Response, wait: Duration) {
    let secs = wait.as_millis().div_ceil(1000).max(1).to_string();
    if let Ok(v) = HeaderValue::from_str(&secs) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn errors_are_problem_details_keeping_their_fields() {
        let response =
            AppError::Conflict("hold h was ordered with another admission".into()).into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(response.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            body,
            json!({
                "status": 409,
                "error": "Conflict",
                "message": "hold h was ordered with another admission",
                "type": "about:blank",
                "title": "Conflict",
                "detail": "hold h was ordered with another admission",
            })
        );
        // What the clients parse; and what older servers sent still parses.
        let parsed: ErrorBody = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(parsed.detail.as_deref(), Some(parsed.message.as_str()));
        let old: ErrorBody =
            serde_json::from_value(json!({"status": 404, "error": "Not Found", "message": "x"}))
                .unwrap();
        assert_eq!(old.kind, None);
    }

    #[test]
    fn every_503_says_when_to_come_back() {
        let errors = [
            AppError::Unavailable("lost".into()),
            AppError::Store("x".into()),
            AppError::Overloaded(Duration::from_millis(2500)),
            AppError::NotNow("full".into(), Duration::from_secs(2)),
            AppError::Rejected(StatusCode::SERVICE_UNAVAILABLE, "busy".into()),
        ];
        for error in errors {
            let response = error.into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            let wait: u64 = response.headers()[header::RETRY_AFTER]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=3).contains(&wait), "{wait}");
        }
        let conflict = AppError::Conflict("x".into()).into_response();
        assert!(!conflict.headers().contains_key(header::RETRY_AFTER));
    }

    #[tokio::test]
    async fn an_unknown_ticket_keeps_the_originals_answer() {
        let response = AppError::UnknownTicket("t".into()).into_response();
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }
}
