//! One error type for every handler: each variant knows its status, and 500s are logged,
//! never echoed.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::store::StoreError;

/// What a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    BadRequest(String),
    #[error("operator token missing or wrong: send Authorization: Bearer <ADMIN_TOKEN>")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// A ticket nobody holds; answered with the seed's `{"ticketId":…,"status":"UNKNOWN"}`.
    #[error("unknown ticket {0}")]
    UnknownTicket(String),
    #[error("too many joins from this client; try again in {} s", .0.as_millis().div_ceil(1000).max(1))]
    TooManyRequests(Duration),
    /// A request the framework refused before any handler ran (bad JSON, too large, ...).
    #[error("{1}")]
    Rejected(StatusCode, String),
    #[error("store unavailable")]
    Store(#[from] StoreError),
}

impl AppError {
    /// The HTTP status this error answers with.
    pub fn status_code(&self) -> StatusCode {
        match self {
            AppError::BadRequest(_) => StatusCode::BAD_REQUEST,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::Forbidden(_) => StatusCode::FORBIDDEN,
            AppError::NotFound(_) | AppError::UnknownTicket(_) => StatusCode::NOT_FOUND,
            AppError::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::Rejected(status, _) => *status,
            AppError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status_code();
        if let AppError::UnknownTicket(ticket) = &self {
            // The seed's answer, echoing the id as it was sent.
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
        let body = json!({
            "status": status.as_u16(),
            "error": status.canonical_reason().unwrap_or("error"),
            "message": self.to_string(),
        });
        let mut response = (status, Json(body)).into_response();
        match &self {
            AppError::TooManyRequests(wait) => {
                // Whole seconds, rounded up: Retry-After takes no fractions.
                let secs = wait.as_millis().div_ceil(1000).max(1).to_string();
                if let Ok(v) = HeaderValue::from_str(&secs) {
                    response.headers_mut().insert(header::RETRY_AFTER, v);
                }
            }
            AppError::Unauthorized => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"waiting-room operator\""),
                );
            }
            _ => {}
        }
        response
    }
}
