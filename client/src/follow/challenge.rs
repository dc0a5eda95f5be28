//! The join challenge, as a client meets it: ask for one, solve it off the async threads,
//! and hand back the `X-Join-Proof` value.

use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode, Url};
use waiting_room::model::ShowId;
use waiting_room::protocol::{Challenge, routes};

use super::{CONNECT_TIMEOUT, FollowError, describe, refusal, show_url};

/// A solved challenge: the header value, and what solving it cost.
#[derive(Clone, Debug)]
pub struct Proof {
    /// `<challenge>:<nonce>`, for `X-Join-Proof`; `None` when the show asks no proof.
    pub header: Option<String>,
    /// The difficulty solved.
    pub bits: u32,
    /// Hashes tried.
    pub hashes: u64,
    /// Time spent solving (not asking).
    pub took: Duration,
}

/// Asks `show`'s challenge and solves it (on a blocking thread: it is pure CPU).
pub async fn prove(client: &Client, base: &Url, show: &ShowId) -> Result<Proof, FollowError> {
    let response = client
        .post(show_url(base, routes::CHALLENGE, show))
        .timeout(CONNECT_TIMEOUT)
        .send()
        .await
        .map_err(|e| FollowError::retry(describe(&e)))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| FollowError::retry(describe(&e)))?;
    if status != StatusCode::OK {
        return Err(refusal(status, &body, "challenge"));
    }
    let challenge: Challenge = serde_json::from_slice(&body)
        .map_err(|e| FollowError::Fatal(format!("challenge answered what I cannot read: {e}")))?;
    // A hostile server could ask for 256 bits, which no machine finds: refuse at once.
    if challenge.bits > waiting_room::pass::MAX_CHALLENGE_BITS {
        return Err(FollowError::Fatal(format!(
            "the server asks a proof of work of {} bits; no more than {} are ever asked",
            challenge.bits,
            waiting_room::pass::MAX_CHALLENGE_BITS
        )));
    }
    Ok(solve(challenge).await)
}

/// Solves `challenge` on a blocking thread.
pub async fn solve(challenge: Challenge) -> Proof {
    if challenge.bits == 0 {
        return Proof {
            header: None,
            bits: 0,
            hashes: 0,
            took: Duration::ZERO,
        };
    }
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let (nonce, hashes) = waiting_room::pass::solve(&challenge.challenge, challenge.bits);
        Proof {
            header: Some(format!("{}:{nonce}", challenge.challenge)),
            bits: challenge.bits,
            hashes,
            took: started.elapsed(),
        }
    })
    .await
    .expect("solving does not panic")
}
