//! The HTTP faces of the server, one file each, on one shared [`AppState`]: this file holds
//! the state and the router (the map of every route to its handler).
//!
//! - the faces: [`fan`] (join, poll, leave), [`sse`], [`ws`], [`orders`] (the gate, the pass
//!   check, redemption, the JWKS), [`operator`], [`draw`] (the fair start's public record),
//!   [`health`], [`page`] (the waiting and front pages), [`console`] (the operator's console
//!   page and its live feed), [`openapi`];
//! - [`join`]: the join use case every face shares; [`extract`]: what handlers take from a
//!   request; [`gateway`]: gateway mode, the proxy to a shop's origin;
//! - [`shed`]: the bound on the crowd's requests at work at once, past which they are told to
//!   come back (`MAX_STORE_CALLS`);
//! - [`serve`]: the accept loop beneath all of it (timeouts, connection places, per-client
//!   limits, streams handed over out of hyper, where a request may come from).

mod console;
mod credentials;
mod draw;
mod extract;
mod failures;
mod fan;
pub(crate) mod gateway;
mod health;
mod join;
mod openapi;
mod operator;
mod orders;
mod page;
pub(crate) mod serve;
mod shed;
mod sse;
mod ws;

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Router};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi as _;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::error::AppError;
use crate::hub::Hub;
use crate::metrics::Metrics;
use crate::model::ShowStats;
use crate::pass::{Keyring, PassCache, RequireAdmission};
use crate::protocol::routes;
use crate::store::QueueStore;
use crate::watchdog::Watchdog;

pub(crate) use console::report_fans;
pub(crate) use extract::{AppJson, AppPath, Operator, OptionalJson, show_id, ticket_path};
pub use gateway::{Gateway, GatewayError, GatewayOutcome, ProtectCase};
pub use serve::{Origin, StreamGuard, StreamLimits, TokenGuesses};
pub use shed::Shed;
pub use sse::RETRY_MS as SSE_RETRY_MS;

/// Request bodies larger than this get 413: an order is a few hundred bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

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
    /// The operator's bearer token: `ADMIN_TOKEN`, or the one drawn at start.
    pub admin_token: Arc<str>,
    /// Joins a second per client address, shared across instances by the store; 0: no limit.
    pub join_rate_limit: u32,
    /// How many `X-Forwarded-For` entries from the right our own proxies wrote.
    pub trusted_proxy_hops: usize,
    /// Cancelled on shutdown: every stream ends cleanly.
    pub shutdown: CancellationToken,
    /// Where every background task of the server runs: shutdown waits for them all.
    pub tasks: TaskTracker,
    /// The shows this instance knows, and which of them the store lost.
    pub watchdog: Watchdog,
    /// Streams open per client address block on this instance (`MAX_STREAMS_PER_CLIENT`).
    pub streams: StreamLimits,
    /// `PUBLIC_URL`'s origin: the only one join forms may come from; https makes cookies
    /// `Secure`.
    pub public_origin: Option<Origin>,
    /// Signs and checks admission passes and join challenges (`PASS_KEYS`).
    pub passes: Arc<Keyring>,
    /// Passes the store confirmed lately, kept honest by the hub: a guarded request costs
    /// no signature check and no store read each time.
    pub pass_cache: Arc<PassCache>,
    /// Wrong operator tokens per client address block: guessing is slowed to a crawl.
    pub token_guesses: TokenGuesses,
    /// Gateway mode (`UPSTREAM_URL`): the origin every other request goes on to.
    pub gateway: Option<Arc<Gateway>>,
    /// The bound on the crowd's requests at work at once (`MAX_STORE_CALLS`).
    pub shed: Shed,
}

impl AppState {
    /// Whether fans reach this server over https (`PUBLIC_URL`): cookies are `Secure`.
    pub(crate) fn public_https(&self) -> bool {
        self.public_origin.as_ref().is_some_and(Origin::is_https)
    }

    /// The client's address: the peer, or what our trusted proxies say it was.
    pub(crate) fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        serve::client_ip(peer, headers, self.trusted_proxy_hops)
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

/// The whole API.
pub fn router(state: AppState) -> Router {
    service(state).0
}

/// The whole API, and in gateway mode the paths it serves itself: every other request goes
/// straight to the origin ([`OwnPaths`]), past the router and its layers.
pub(crate) fn service(state: AppState) -> (Router, Option<OwnPaths>) {
    // The gate's signature check runs before the handler; a plain ticket id (or none) goes
    // on to the store's check, as the original's clients send it.
    let gate = RequireAdmission::new(state.passes.clone());
    let gateway = state.gateway.is_some();
    let served = openapi::Served::default();
    let (router, api) = described(&gate, &state.shed, gateway, &served).split_for_parts();
    let own = gateway.then(|| OwnPaths::new(api.paths.paths.keys().map(String::as_str)));
    served.set(api);
    let router = if gateway {
        router.fallback(gateway::proxy)
    } else {
        router.fallback(not_found)
    };
    let router = router
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .with_state(state);
    (router, own)
}

/// The paths the router serves (any method), in gateway mode: a request for any other path
/// is the origin's, and is sent there without the router, its tracing span and its layers
/// (the proxy is most of a gateway's traffic).
pub(crate) struct OwnPaths(matchit::Router<()>);

impl OwnPaths {
    fn new<'a>(templates: impl Iterator<Item = &'a str>) -> Self {
        let mut paths = matchit::Router::new();
        // The static files are a nested service: the folder and everything under it.
        let nested = [
            routes::STATIC.to_owned(),
            format!("{}/{{*file}}", routes::STATIC),
        ];
        for template in templates.map(str::to_owned).chain(nested) {
            // Every template is a route the router took, so matchit takes it too.
            let _ = paths.insert(template, ());
        }
        OwnPaths(paths)
    }

    /// Whether the router serves `path` itself.
    pub(crate) fn serves(&self, path: &str) -> bool {
        self.0.at(path).is_ok()
    }
}

/// The OpenAPI document of the API outside gateway mode, as `GET /openapi.json` serves it.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    // The gate's keys shape no part of the document.
    let gate = RequireAdmission::new(Keyring::generate());
    let shed = Shed::new(0, Arc::new(Metrics::default()));
    let (_, api) = described(&gate, &shed, false, &openapi::Served::default()).split_for_parts();
    openapi::finish(api)
}

/// Every route and its handler, each described by its handler's `#[utoipa::path]`
/// attribute: the map the router serves and the document says are one. Only `routes!`
/// adds a route here (tests/api/openapi/coverage.rs checks it), so nothing is served
/// undescribed; the static files are the one nested service, described by
/// [`page::static_files`]' attribute.
fn described(
    gate: &RequireAdmission,
    shed: &Shed,
    gateway: bool,
    served: &openapi::Served,
) -> OpenApiRouter<AppState> {
    // The crowd's routes: past `MAX_STORE_CALLS` at work, told to come back at once.
    let shed = shed.clone();
    let crowd = axum::middleware::from_fn(move |request, next| shed.clone().run(request, next));
    let router = OpenApiRouter::new()
        .routes(routes!(fan::join).layer(crowd.clone()))
        .routes(routes!(fan::challenge).layer(crowd.clone()))
        .routes(routes!(fan::status, fan::leave).layer(crowd.clone()))
        .routes(routes!(sse::events).layer(crowd.clone()))
        .routes(routes!(ws::upgrade).layer(crowd.clone()))
        .routes(routes!(page::wait).layer(crowd.clone()))
        .routes(routes!(page::join).layer(crowd))
        .routes(routes!(operator::create, operator::delete))
        .routes(routes!(operator::open))
        .routes(routes!(operator::pause))
        .routes(routes!(operator::close))
        .routes(routes!(operator::end))
        .routes(routes!(operator::stats))
        .routes(routes!(operator::set_config))
        .routes(routes!(draw::draw))
        .routes(routes!(draw::audit))
        .routes(routes!(orders::check_pass))
        .routes(routes!(orders::redeem))
        .routes(routes!(orders::jwks))
        .routes(routes!(orders::place).layer(gate.clone().or_ticket_ids()))
        .routes(routes!(orders::get))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(health::metrics))
        .routes(routes!(openapi::document).layer(Extension(served.clone())))
        .routes(routes!(page::keep_pass))
        .routes(routes!(console::console))
        .routes(routes!(console::stats_events))
        .routes(routes!(console::lookup))
        .nest_service(routes::STATIC, page::static_files());
    let mut router = if gateway {
        // In gateway mode the shop's own home page is the origin's, and every path the
        // waiting room does not serve goes there.
        router
    } else {
        router.routes(routes!(page::index))
    };
    // The static files are a service, not a handler `routes!` takes: their description is
    // merged in beside it.
    #[derive(utoipa::OpenApi)]
    #[openapi(paths(page::static_files))]
    struct StaticFiles;
    let api = router.get_openapi_mut();
    api.paths.paths.extend(StaticFiles::openapi().paths.paths);
    // Pages, scripts, styles and JSON gzipped for a client that asks (a third of the bytes at
    // two million fans); never an event stream (tower-http's default predicate), and never
    // what the gateway passes on from the origin (the fallback is not a route).
    router.route_layer(CompressionLayer::new())
}

async fn not_found() -> AppError {
    AppError::NotFound("no such resource".into())
}

async fn method_not_allowed() -> AppError {
    AppError::Rejected(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed on this resource".into(),
    )
}
