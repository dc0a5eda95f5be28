//! Serving, beneath the router: the accept loop and its bounds, as axum keeps `serve/`.
//!
//! - [`listener`]: accepts, times request heads and bodies, drains on shutdown;
//! - [`places`]: the connection places (main pool, reserve) and each client block's share;
//! - [`handover`]: a held SSE stream served outside hyper (a few KB a fan);
//! - [`limits`]: streams per client block, operator-token guesses;
//! - [`client`]: the client's address and its block; [`origin`]: where a form may come from;
//! - `timer`: hyper's timer, with the request-head deadline moved lazily.

pub(crate) mod client;
pub(crate) mod handover;
pub(crate) mod limits;
pub(crate) mod listener;
pub(crate) mod origin;
pub(crate) mod places;
mod timer;

use std::time::Duration;

pub(crate) use client::{client_ip, client_prefix};
pub use limits::{StreamGuard, StreamLimits, TokenGuesses};
pub(crate) use listener::BodyTimedOut;
pub use origin::Origin;

/// How long connections may take to finish once shutdown began, before they are cut.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(5);
