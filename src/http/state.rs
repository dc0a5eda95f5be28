//! What every handler shares: the services, grouped by what they are for. The store, the hub,
//! the metrics and the watchdog; the passes; the limits on what one client may do; the site's
//! own facts (its token, its origin, its proxies, gateway mode); and the server's life (the
//! shutdown token and every task).

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::HeaderMap;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::gateway::Gateway;
use super::serve::{self, Origin, StreamGuard, StreamLimits, TokenGuesses};
use super::shed::Shed;
use crate::error::AppError;
use crate::hub::Hub;
use crate::metrics::Metrics;
use crate::model::ShowStats;
use crate::notify::Notifier;
use crate::pass::{Keyring, PassCache};
use crate::store::QueueStore;
use crate::watchdog::Watchdog;

/// Everything a handler may need: one reference-counted [`App`], so the clone axum makes for
/// each request's handler and middleware is one counter's increment, not one per part (the
/// parts cloned one by one were some 4 % of the server's CPU on the join path, measured by
/// `perf` during `scripts/bench.sh joins embedded`).
#[derive(Clone)]
pub struct AppState(Arc<App>);

impl AppState {
    /// The state every handler shares, made of `app`.
    pub fn new(app: App) -> Self {
        AppState(Arc::new(app))
    }
}

impl std::ops::Deref for AppState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct App {
    /// The queue's state (Redis or embedded), shared by every instance on it.
    pub store: Arc<dyn QueueStore>,
    /// This instance's fan-out: the streams (SSE, WebSocket) follow tickets through it.
    pub hub: Hub,
    /// This instance's Prometheus registry, served at `GET /metrics`.
    pub metrics: Arc<Metrics>,
    /// The shows this instance knows, and which of them the store lost.
    pub watchdog: Watchdog,
    /// Admission passes and join challenges.
    pub passes: Passes,
    /// Sends the "your turn" calls (Web Push, the operator's webhook).
    pub notifier: Notifier,
    /// What one client may do.
    pub limits: Limits,
    /// The site's own facts.
    pub site: Site,
    /// The server's life: its shutdown and its tasks.
    pub life: Life,
    /// The shows' own waiting pages this instance has read, by version.
    pub(crate) pages: crate::http::page::PageCache,
}

/// Admission passes and join challenges.
pub struct Passes {
    /// Signs and checks admission passes and join challenges (`PASS_KEYS`).
    pub keys: Arc<Keyring>,
    /// Passes the store confirmed lately, kept honest by the hub: a guarded request costs
    /// no signature check and no store read each time.
    pub cache: Arc<PassCache>,
}

/// What one client (or the crowd) may do.
pub struct Limits {
    /// Joins a second per client address, shared across instances by the store; 0: no limit.
    pub join_rate: u32,
    /// Streams open per client address block on this instance (`MAX_STREAMS_PER_CLIENT`).
    pub streams: StreamLimits,
    /// Wrong operator tokens per client address block: guessing is slowed to a crawl.
    pub token_guesses: TokenGuesses,
    /// Bypasses asked for and refused per client address block (a wrong `X-Bypass-Token`,
    /// a link not signed here, an address no rule names): guessing is slowed alike.
    pub bypass_guesses: TokenGuesses,
    /// Access codes refused per client address block (unknown, used up): guessing codes is
    /// slowed alike.
    pub code_guesses: TokenGuesses,
    /// The bound on the crowd's requests at work at once (`MAX_STORE_CALLS`).
    pub shed: Shed,
}

/// The site's own facts.
pub struct Site {
    /// The operator's bearer token: `ADMIN_TOKEN`, or the one drawn at start.
    pub admin_token: Arc<str>,
    /// The secret access codes are kept under (`ACCESS_CODE_KEY`).
    pub code_key: crate::model::CodeKey,
    /// `PUBLIC_URL`'s origin: the only one join forms may come from; https makes cookies
    /// `Secure`.
    pub public_origin: Option<Origin>,
    /// How many `X-Forwarded-For` entries from the right our own proxies wrote.
    pub trusted_proxy_hops: usize,
    /// Gateway mode (`UPSTREAM_URL`): the origin every other request goes on to.
    pub gateway: Option<Arc<Gateway>>,
}

/// The server's life.
pub struct Life {
    /// Cancelled on shutdown: every stream ends cleanly.
    pub shutdown: CancellationToken,
    /// Where every background task of the server runs: shutdown waits for them all.
    pub tasks: TaskTracker,
}

impl AppState {
    /// Whether fans reach this server over https (`PUBLIC_URL`): cookies are `Secure`.
    pub(crate) fn public_https(&self) -> bool {
        self.site
            .public_origin
            .as_ref()
            .is_some_and(Origin::is_https)
    }

    /// The client's address: the peer, or what our trusted proxies say it was.
    pub(crate) fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        serve::client_ip(peer, headers, self.site.trusted_proxy_hops)
    }

    /// A stream slot for the client behind `peer` (the same address joins are limited by).
    pub(crate) fn open_stream(
        &self,
        peer: IpAddr,
        headers: &HeaderMap,
    ) -> Result<StreamGuard, AppError> {
        self.limits.streams.open(self.client_ip(peer, headers))
    }

    /// The operator's figures of every open show, in show order (one store call per show).
    pub(crate) async fn open_show_stats(&self) -> Result<Vec<ShowStats>, AppError> {
        let mut stats = Vec::new();
        for show in self.store.open_shows().await? {
            stats.push(self.store.stats(&show).await?);
        }
        Ok(stats)
    }
}
