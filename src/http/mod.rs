//! The HTTP faces of the server, one file each, on one shared [`AppState`] (`state.rs`): this
//! file holds the router (the map of every route to its handler).
//!
//! - the faces: [`fan`] (join, poll, leave), [`sse`], [`ws`], [`orders`] (the gate, the pass
//!   check, redemption, the JWKS), [`operator`], [`draw`] (the fair start's public record),
//!   [`health`], [`page`] (the waiting and front pages), [`console`] (the operator's console
//!   page and its live feed), [`openapi`];
//! - [`bypass`]: requests a show's bypass rules let through without queueing, and the
//!   operator's signed links; [`codes`]: the operator's access codes (a CSV upload, counts);
//! - [`join`]: the join use case every face shares; [`extract`]: what handlers take from a
//!   request; [`gateway`]: gateway mode, the proxy to a shop's origin;
//! - [`shown`]: what a fan is shown of its ticket (the JSON, the push event, the signed pass),
//!   rendered here at the edge from the state the store and the hub hand over, for the poll,
//!   the join, SSE and the WebSocket alike;
//! - [`shed`]: the bound on the crowd's requests at work at once, past which they are told to
//!   come back (`MAX_STORE_CALLS`);
//! - [`serve`]: the accept loop beneath all of it (timeouts, connection places, per-client
//!   limits, streams handed over out of hyper, where a request may come from).

mod bypass;
mod codes;
mod console;
mod credentials;
mod draw;
mod extract;
mod failures;
mod fan;
pub(crate) mod gateway;
mod health;
mod join;
mod notify;
mod openapi;
mod operator;
mod orders;
mod page;
mod report;
pub(crate) mod serve;
mod shed;
mod shown;
mod sse;
mod state;
mod wire;
mod ws;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::{Extension, Router};
use tower_http::compression::CompressionLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use utoipa::OpenApi as _;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::error::AppError;
use crate::metrics::Metrics;
use crate::pass::{Keyring, RequireAdmission};
use crate::protocol::routes;

pub(crate) use console::report_fans;
pub(crate) use extract::{
    AppJson, AppPath, Operator, OptionalJson, preferred, show_id, ticket_path,
};
pub use gateway::{Gateway, GatewayError, GatewayOutcome, ProtectCase};
pub use serve::{Origin, StreamGuard, StreamLimits, TokenGuesses};
pub use shed::Shed;
pub use sse::RETRY_MS as SSE_RETRY_MS;
pub use state::{App, AppState, Life, Limits, Passes, Site};

/// Request bodies larger than this get 413: an order is a few hundred bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The whole API.
pub fn router(state: AppState) -> Router {
    service(state).0
}

/// The whole API, and in gateway mode the paths it serves itself: every other request goes
/// straight to the origin ([`OwnPaths`]), past the router and its layers.
pub(crate) fn service(state: AppState) -> (Router, Option<OwnPaths>) {
    // The gate's signature check runs before the handler; a plain ticket id (or none) goes
    // on to the store's check, as the original's clients send it.
    let gate = RequireAdmission::new(state.passes.keys.clone());
    let gateway = state.site.gateway.is_some();
    let served = openapi::Served::default();
    let (router, api) = described(&gate, &state.limits.shed, gateway, &served).split_for_parts();
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
        // A request's span names its method and path, never its query: a signed link or a
        // ticket rides there, and logs are read by more people than the operator.
        // A 5xx is no error of its own to log: a shed request's 503 is the bound working (a
        // burst sheds hundreds of thousands, and an ERROR line each cost the CPU it was
        // shedding for), and a store's failure is logged where it happens (`error.rs`).
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &axum::http::Request<axum::body::Body>| {
                    tracing::debug_span!("request", method = %req.method(), path = %req.uri().path())
                })
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
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
        .routes(routes!(notify::ask).layer(crowd.clone()))
        .routes(routes!(notify::vapid))
        .routes(routes!(sse::events).layer(crowd.clone()))
        .routes(routes!(ws::upgrade).layer(crowd.clone()))
        .routes(routes!(page::wait).layer(crowd.clone()))
        .routes(routes!(page::join).layer(crowd.clone()))
        .routes(routes!(page::bypass).layer(crowd.clone()))
        .routes(routes!(bypass::bypass).layer(crowd))
        .routes(routes!(bypass::sign_link))
        .routes(routes!(codes::add, codes::counts))
        .routes(
            routes!(page::set_page, page::get_page, page::delete_page)
                .layer(DefaultBodyLimit::max(page::MAX_PAGE_BODY)),
        )
        .routes(routes!(page::preview).layer(DefaultBodyLimit::max(page::MAX_PAGE_BODY)))
        .routes(routes!(page::file))
        .routes(routes!(operator::create, operator::delete))
        .routes(routes!(operator::open))
        .routes(routes!(operator::pause))
        .routes(routes!(operator::close))
        .routes(routes!(operator::end))
        .routes(routes!(operator::stats))
        .routes(routes!(operator::list))
        .routes(routes!(operator::set_config))
        .routes(routes!(draw::draw))
        .routes(routes!(draw::audit))
        .routes(routes!(report::report))
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
