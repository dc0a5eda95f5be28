//! The join, as every face makes it (the API, the page's form): the proof of work checked,
//! the client's join limit, a fresh ticket (or the one its `Idempotency-Key` holds), counted.
//! A face reads the request ([`JoinRequest::read`]); the join takes what it read.

use std::net::IpAddr;

use axum::http::HeaderMap;

use super::AppState;
use super::serve::client_prefix;
use crate::error::AppError;
use crate::model::{AccessCode, MAX_CODE, MIN_CODE, ShowId, code_ok};
use crate::pass::ProofError;
use crate::protocol::{
    ACCESS_CODE_FALLBACK_HEADER, ACCESS_CODE_HEADER, IDEMPOTENCY_KEY, JOIN_PROOF_HEADER,
};
use crate::store::{Joined, StoreError};

/// What a join brings, read from its request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JoinRequest<'a> {
    /// The client's address, as our trusted proxies say it (joins are limited by it).
    pub client: IpAddr,
    /// Its `Idempotency-Key`: the same key, the same ticket while it lives.
    pub key: Option<&'a str>,
    /// Its proof of work (`challenge:nonce`), not yet checked.
    pub proof: Option<&'a str>,
    /// Its access code (`X-Access-Code`), of a code's shape.
    pub code: Option<&'a str>,
    /// Whether it joins the general queue when the code is refused.
    pub fallback: bool,
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
            code: access_code(headers)?,
            fallback: fallback(headers)?,
        })
    }
}

/// The join's `X-Access-Code`, if any: of a code's shape, else 400 (which never repeats it).
fn access_code(headers: &HeaderMap) -> Result<Option<&str>, AppError> {
    let Some(value) = headers.get(ACCESS_CODE_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|c| code_ok(c))
        .map(Some)
        .ok_or_else(|| {
            AppError::BadRequest(format!(
                "{ACCESS_CODE_HEADER}: {MIN_CODE} to {MAX_CODE} of A-Z, a-z, 0-9, '-' and '_'"
            ))
        })
}

/// Whether the join asked to fall back to the general queue (`X-Access-Code-Fallback:
/// general`); 400 for any other value.
fn fallback(headers: &HeaderMap) -> Result<bool, AppError> {
    match headers.get(ACCESS_CODE_FALLBACK_HEADER) {
        None => Ok(false),
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"general") => Ok(true),
        Some(_) => Err(AppError::BadRequest(format!(
            "{ACCESS_CODE_FALLBACK_HEADER}: `general`, or leave it out"
        ))),
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
    // A code is judged by the store, as a hash; guessing codes is slowed per client block.
    let guesses = &state.limits.code_guesses;
    let code = match request.code {
        None => None,
        Some(code) => {
            guesses
                .check(request.client)
                .map_err(|wait| AppError::TooManyGuesses(wait, "refused access codes"))?;
            Some(AccessCode {
                hash: state.site.code_key.hash(show, code),
                fallback: request.fallback,
            })
        }
    };
    let (joined, replayed) = match state
        .store
        .join_coded(show, request.key, proof.as_ref(), code.as_ref())
        .await
    {
        Err(e @ StoreError::CodeRefused(_)) => {
            if code.is_some() {
                guesses.wrong(request.client);
                state.metrics.code_refused(show);
            }
            return Err(e.into());
        }
        other => other?,
    };
    // A code that fell back to the general queue was refused all the same: a guess.
    if code.is_some() && !replayed {
        if joined.arrival >= crate::model::LANE_SPAN {
            state.metrics.code_used(show);
        } else {
            guesses.wrong(request.client);
            state.metrics.code_refused(show);
        }
    }
    if !replayed {
        state.metrics.joined(show);
        // The loss witness follows the general queue's counter; a lane's arrivals (from
        // 2^40 up, each lane its own counter) are not its to hold against it.
        if joined.arrival < crate::model::LANE_SPAN {
            state
                .watchdog
                .joined(show, joined.status.epoch, joined.arrival, joined.ticket);
        }
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
