//! What handlers take from a request, refused as our JSON errors: a checked show id, a
//! ticket path, JSON and path extractors whose rejections are ours, and [`Operator`], the
//! proof of the operator's bearer token.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::AppState;
use super::serve::BodyTimedOut;
use crate::error::AppError;
use crate::model::ShowId;

/// A show id from the path, checked against the spec's alphabet (400 otherwise).
pub(crate) fn show_id(raw: &str) -> Result<ShowId, AppError> {
    raw.parse()
        .map_err(|e: crate::model::InvalidShowId| AppError::BadRequest(format!("showId: {e}")))
}

/// A show id and a ticket id from the path: a bad show id is 400, and anything but a UUID
/// is a ticket nobody holds (the original's 404 UNKNOWN).
pub(crate) fn ticket_path(show: &str, ticket: &str) -> Result<(ShowId, Uuid), AppError> {
    let show = show_id(show)?;
    let id = Uuid::parse_str(ticket).map_err(|_| AppError::UnknownTicket(ticket.to_owned()))?;
    Ok((show, id))
}

/// `Json`, but its rejections are our JSON errors (400, 413, 415).
pub(crate) struct AppJson<T>(pub T);

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
            Err(rejection) if BodyTimedOut::caused(&rejection) => Err(AppError::Rejected(
                StatusCode::REQUEST_TIMEOUT,
                rejection.body_text(),
            )),
            Err(rejection) => Err(AppError::Rejected(
                rejection.status(),
                rejection.body_text(),
            )),
        }
    }
}

/// `Path`, but its rejections (say, a path that is not valid UTF-8) are our JSON errors.
pub(crate) struct AppPath<T>(pub T);

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
pub(crate) struct Operator;

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
pub(crate) fn presents_token(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        // In constant time (`subtle`): response timing does not tell how much of a guessed
        // token was right. Only a wrong length answers early, and the length is no secret.
        .is_some_and(|presented| bool::from(presented.as_bytes().ct_eq(token.as_bytes())))
}

/// The values of the cookie `name` the request carries, most specific path first (as the
/// browser sends them).
pub(crate) fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(n, _)| *n == name)
        .map(|(_, value)| value.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn the_operator_token_is_compared_whole() {
        let token = "a-long-operator-secret";
        assert!(presents_token(
            &bearer("Bearer a-long-operator-secret"),
            token
        ));
        assert!(presents_token(
            &bearer("Bearer  a-long-operator-secret "),
            token
        ));
        assert!(!presents_token(
            &bearer("Bearer a-long-operator-secreT"),
            token
        ));
        assert!(!presents_token(
            &bearer("Bearer a-long-operator-secret2"),
            token
        ));
        assert!(!presents_token(&bearer("Bearer a-long"), token));
        assert!(!presents_token(&bearer("Bearer "), token));
        assert!(!presents_token(
            &bearer("Basic a-long-operator-secret"),
            token
        ));
        assert!(!presents_token(&HeaderMap::new(), token));
    }
}
