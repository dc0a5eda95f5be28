//! The join, as every face makes it (the API, the page's form): the proof of work checked,
//! the client's join limit, a fresh ticket (or the one its `Idempotency-Key` holds), counted.
//! A face reads the request ([`JoinRequest::read`]); the join takes what it read.

use std::net::IpAddr;

use axum::http::HeaderMap;

use super::AppState;
use super::serve::client_prefix;
use crate::error::AppError;
use crate::model::ShowId;
use crate::pass::ProofError;
use crate::protocol::{IDEMPOTENCY_KEY, JOIN_PROOF_HEADER};
use crate::store::Joined;

/// What a join brings, read from its request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JoinRequest<'a> {
    /// The client's address, as our trusted proxies say it (joins are limited by it).
    pub client: IpAddr,
    /// Its `Idempotency-Key`: the same key, the same ticket while it lives.
    pub key: Option<&'a str>,
    /// Its proof of work (`challenge:nonce`), not yet checked.
    pub proof: Option<&'a str>,
}

impl<'a> JoinRequest<'a> {
    /// The join `headers` ask for, from `client`; 400 for a malformed key or proof.
    pub(crate) fn read(headers: &'a HeaderMap, client: IpAddr) -> Result<Self, AppError> {
        let proof = match headers.get(JOIN_PROOF_HEADER) {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| AppError::BadRequest(ProofError::Malformed.to_string()))?
                    .trim(),
            ),
        };
        Ok(JoinRequest {
            client,
            key: idempotency_key(headers)?,
            proof,
        })
    }
}

/// A join as every face makes it: the proof checked, the client's limit, then a fresh
/// ticket, counted.
///
/// With an `Idempotency-Key`, the same key answers the same ticket while it lives (the `bool`
/// says so), across instances: one place per client, however often it asks.
pub(crate) async fn join(
    state: &AppState,
    show: &ShowId,
    request: JoinRequest<'_>,
) -> Result<(Joined, bool), AppError> {
    // A proof is checked here (no store call); the store judges and spends it with the
    // join. Garbage is refused before it costs the store anything.
    let proof = match request.proof {
        None => None,
        Some(text) => Some(
            state
                .passes
                .keys
                .check_proof(text, show, crate::clock::wall_ms())
                .map_err(|e| match e {
                    ProofError::Malformed => AppError::BadRequest(e.to_string()),
                    _ => AppError::Forbidden(e.to_string()),
                })?,
        ),
    };
    check_join_rate(state, request.client).await?;
    let (joined, replayed) = state
        .store
        .join_proven(show, request.key, proof.as_ref())
        .await?;
    if !replayed {
        state.metrics.joined(show);
        state
            .watchdog
            .joined(show, joined.status.epoch, joined.arrival, joined.ticket);
    }
    Ok((joined, replayed))
}

/// 429 if `client` joined too often.
async fn check_join_rate(state: &AppState, client: IpAddr) -> Result<(), AppError> {
    if state.limits.join_rate == 0 {
        return Ok(());
    }
    // IPv6 clients by /64: one subscriber's prefix holds more addresses than any limit.
    let client = match client_prefix(client) {
        IpAddr::V6(block) => format!("{block}/64"),
        v4 => v4.to_string(),
    };
    match state
        .store
        .limit_join(&client, state.limits.join_rate)
        .await?
    {
        None => Ok(()),
        Some(wait) => Err(AppError::TooManyRequests(wait)),
    }
}

/// The join's `Idempotency-Key`, if any: 1 to 128 visible ASCII characters, else 400.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, AppError> {
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
