//! What handlers take from a request, refused as our JSON errors: a checked show id, a
//! ticket path, JSON bodies (required, or optional) and paths whose rejections are ours, and
//! [`Operator`], the proof of the operator's bearer token.

use std::fmt;
use std::marker::PhantomData;

use super::credentials::presents_token;
use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use uuid::Uuid;

use super::AppState;
use super::serve::BodyTimedOut;
use crate::error::AppError;
use crate::model::ShowId;

/// Of the media types `offered`, the one the request's `Accept` ranks first (by quality,
/// then the one listed first); `None` when it names none of them (`*/*` names none).
pub(crate) fn preferred<'a>(headers: &HeaderMap, offered: &[&'a str]) -> Option<&'a str> {
    let accept = headers.get(header::ACCEPT)?.to_str().ok()?;
    crate::i18n::weighted(accept)
        .enumerate()
        .filter_map(|(i, (kind, q))| {
            let media = offered.iter().find(|m| kind.eq_ignore_ascii_case(m))?;
            Some(((q, usize::MAX - i), *media))
        })
        .max_by_key(|(rank, _)| *rank)
        .map(|(_, media)| media)
}

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

/// `Json`, but its rejections are our JSON errors (400 malformed, 413, 415, 422 of the wrong
/// shape), and the body must be a JSON object.
pub(crate) struct AppJson<T>(pub T);

impl<S, T> FromRequest<S> for AppJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<Object<T>>::from_request(req, state).await {
            Ok(Json(Object(value))) => Ok(AppJson(value)),
            Err(rejection) => Err(rejected(
                rejection.status(),
                rejection.body_text(),
                &rejection,
            )),
        }
    }
}

/// An optional JSON body: none at all (not a byte) is `None`, whatever its content type says,
/// so that `curl -X POST` and a form-less client need not send one. Anything else must be a
/// JSON object of `T`, else 400: a body of whitespace is no JSON, not an absent body.
pub(crate) struct OptionalJson<T>(pub Option<T>);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        let body = Bytes::from_request(req, state)
            .await
            .map_err(|r| rejected(r.status(), r.body_text(), &r))?;
        if body.is_empty() {
            return Ok(OptionalJson(None));
        }
        serde_json::from_slice::<Object<T>>(&body)
            .map(|Object(value)| OptionalJson(Some(value)))
            .map_err(|e| AppError::BadRequest(format!("the JSON body: {e}")))
    }
}

/// A body the framework refused, as our error: one that did not arrive in time is 408 (and
/// the connection closes), anything else keeps the framework's status.
fn rejected(
    status: StatusCode,
    text: String,
    cause: &(dyn std::error::Error + 'static),
) -> AppError {
    if BodyTimedOut::caused(cause) {
        AppError::Rejected(StatusCode::REQUEST_TIMEOUT, text)
    } else {
        AppError::Rejected(status, text)
    }
}

/// A JSON body that must be an object. A derived `Deserialize` also takes a JSON array of the
/// fields in order (`[null]` would be an `EndRequest`), which no client means: only a map is
/// handed to `T`.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = T;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }

        deserializer
            .deserialize_map(Fields(PhantomData))
            .map(Object)
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
                .limits
                .token_guesses
                .check(client)
                .map_err(|wait| AppError::TooManyGuesses(wait, "wrong operator tokens"))?;
        }
        if presents_token(&parts.headers, &state.site.admin_token) {
            Ok(Operator)
        } else {
            if let Some(client) = client {
                state.limits.token_guesses.wrong(client);
            }
            Err(AppError::Unauthorized)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Reason {
        reason: Option<String>,
    }

    #[test]
    fn a_json_body_is_an_object_and_nothing_else() {
        let object = |text: &str| serde_json::from_str::<Object<Reason>>(text).map(|o| o.0);
        let reason = Some("sold out".to_owned());
        assert_eq!(
            object(r#"{"reason":"sold out"}"#).unwrap(),
            Reason { reason }
        );
        assert_eq!(object(" {} ").unwrap(), Reason { reason: None });
        // What a derived struct alone takes: its fields as an array.
        assert!(serde_json::from_str::<Reason>("[null]").is_ok());
        for bad in [
            "[null]",
            "[]",
            "null",
            "\"x\"",
            "1",
            "\t",
            "\r",
            "",
            r#"{"x":1}"#,
        ] {
            assert!(object(bad).is_err(), "{bad:?}");
        }
    }
}
