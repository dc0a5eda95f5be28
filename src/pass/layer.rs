//! [`RequireAdmission`]: a tower layer that lets a request through only with a valid signed
//! pass in `X-Admission-Ticket`, checked against the keyring alone (no store call), and hands
//! the handler the [`Admission`] it proves as a request extension.
//!
//! ```no_run
//! use axum::{Extension, Router, routing::get};
//! use waiting_room::pass::{Admission, Keyring, RequireAdmission};
//!
//! let keys: Keyring = std::env::var("PASS_KEYS").unwrap().parse().unwrap();
//! let app: Router = Router::new()
//!     .route("/checkout", get(|Extension(a): Extension<Admission>| async move {
//!         format!("welcome, ticket {}", a.ticket)
//!     }))
//!     .route_layer(RequireAdmission::new(keys).for_show("show-42".parse().unwrap()));
//! ```

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::Request;
use axum::response::{IntoResponse, Response};
use futures::future::{Either, Ready, ready};
use tower::{Layer, Service};

use super::{Admission, Keyring, looks_like_pass};
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::model::ShowId;
use crate::protocol::ADMISSION_HEADER;

/// Refuses (403 JSON) every request without a valid pass; see the module's docs.
#[derive(Clone, Debug)]
pub struct RequireAdmission {
    keys: Arc<Keyring>,
    show: Option<ShowId>,
    ticket_ids: bool,
}

impl RequireAdmission {
    /// Passes signed with any key of `keys`, for any show.
    pub fn new(keys: impl Into<Arc<Keyring>>) -> Self {
        RequireAdmission {
            keys: keys.into(),
            show: None,
            ticket_ids: false,
        }
    }

    /// Passes of `show` only.
    pub fn for_show(mut self, show: ShowId) -> Self {
        self.show = Some(show);
        self
    }

    /// Also lets through requests with no admission header or with a plain ticket id, for a
    /// handler that checks those with the store itself (`POST /orders`: a closed show has no
    /// gate, and the original's clients send the ticket id). A pass must still be valid.
    pub fn or_ticket_ids(mut self) -> Self {
        self.ticket_ids = true;
        self
    }

    /// What the layer decides for `header`: the admission, nothing to check, or a refusal.
    fn check(&self, header: Option<&str>) -> Result<Option<Admission>, AppError> {
        let value = header.map(str::trim).unwrap_or("");
        if !looks_like_pass(value) {
            if self.ticket_ids {
                return Ok(None);
            }
            return Err(AppError::Forbidden(format!(
                "{ADMISSION_HEADER} must carry an admission pass: join the queue first"
            )));
        }
        let admission = self
            .keys
            .verify_pass(value, wall_ms() / 1000)
            .map_err(|e| AppError::Forbidden(e.to_string()))?;
        if let Some(show) = &self.show
            && admission.show != *show
        {
            return Err(AppError::Forbidden(
                super::PassError::OtherShow(admission.show.to_string()).to_string(),
            ));
        }
        Ok(Some(admission))
    }
}

impl<S> Layer<S> for RequireAdmission {
    type Service = RequireAdmissionService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequireAdmissionService {
            inner,
            gate: self.clone(),
        }
    }
}

/// The service [`RequireAdmission`] wraps a route in.
#[derive(Clone, Debug)]
pub struct RequireAdmissionService<S> {
    inner: S,
    gate: RequireAdmission,
}

impl<S, B> Service<Request<B>> for RequireAdmissionService<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let header = req
            .headers()
            .get(ADMISSION_HEADER)
            .and_then(|v| v.to_str().ok());
        match self.gate.check(header) {
            Ok(admission) => {
                if let Some(admission) = admission {
                    req.extensions_mut().insert(admission);
                }
                Either::Right(self.inner.call(req))
            }
            Err(refused) => {
                tracing::debug!(reason = %refused, "admission refused at the gate");
                Either::Left(ready(Ok(refused.into_response())))
            }
        }
    }
}
