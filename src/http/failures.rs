//! What a store's refusal answers over HTTP: the store speaks of shows, proofs and replicas,
//! the answer of statuses and headers.

use axum::http::StatusCode;

use crate::error::AppError;
use crate::protocol::JOIN_PROOF_HEADER;
use crate::store::StoreError;

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoSuchShow(_) => AppError::NotFound(e.to_string()),
            StoreError::ShowLost(_) => AppError::Unavailable(e.to_string()),
            StoreError::Conflict(m) => AppError::Conflict(m),
            StoreError::Ended(_) => AppError::Gone(e.to_string()),
            // The store knows proofs, not headers: the HTTP answer names the header.
            StoreError::ProofRequired(bits) => AppError::Rejected(
                StatusCode::PRECONDITION_REQUIRED,
                format!(
                    "this show asks a proof of work ({bits} bits): POST its challenge route, \
                     solve it, and join with {JOIN_PROOF_HEADER}: <challenge>:<nonce>"
                ),
            ),
            StoreError::ProofTooWeak(_) => AppError::Forbidden(format!("{JOIN_PROOF_HEADER}: {e}")),
            StoreError::CodeRefused(why) => AppError::Forbidden(why.to_owned()),
            StoreError::ProofSpent => AppError::Conflict(format!("{JOIN_PROOF_HEADER}: {e}")),
            StoreError::NotReplicated { .. } => AppError::Unavailable(format!(
                "the waiting room could not make this durable in time ({e}); try again: the \
                 same Idempotency-Key keeps the same place"
            )),
            StoreError::NotNow { why, retry_after } => AppError::NotNow(why, retry_after),
            other => AppError::Store(Box::new(other)),
        }
    }
}
