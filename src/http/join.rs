//! The join, as every face makes it (the API, the page's form): the proof of work checked,
//! the client's join limit, a fresh ticket (or the one its `Idempotency-Key` holds), counted.

use std::net::IpAddr;

use axum::http::HeaderMap;

use super::AppState;
use super::serve::client_prefix;
use crate::error::AppError;
use crate::model::ShowId;
use crate::pass::ProofError;
use crate::protocol::{IDEMPOTENCY_KEY, JOIN_PROOF_HEADER};
use crate::store::Joined;

impl AppState {
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
            self.watchdog
                .joined(show, joined.status.epoch, joined.seq, joined.ticket);
        }
        Ok((joined, replayed))
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
