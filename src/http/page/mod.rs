//! The pages fans look at: `GET /` (the open on-sales), `GET /wait/{showId}` (the waiting
//! page), `POST /wait/{showId}/join` (joining without JavaScript), and the static files the
//! pages load.
//!
//! Every page is rendered on the server, so it is useful before (or without) any script: the
//! waiting page shows the fan's current place when it knows the ticket (from `?ticket=` or the
//! `wr_ticket` cookie). `static/wait.js` then takes over and follows the ticket live.
//!
//! This file holds what every page shares (rendering, errors, static files) and the front
//! page; `wait.rs` holds the waiting page and its no-script join; `bypass.rs` the staff's way
//! through the queue (a signed link, a staff network).

mod bypass;
mod wait;

pub(super) use self::bypass::bypass;
// What `routes!` reads of each handler (its `#[utoipa::path]`), beside the handler.
pub(super) use self::bypass::__path_bypass;
pub(super) use self::wait::{__path_join, __path_keep_pass, __path_wait};
pub(super) use self::wait::{join, keep_pass, wait};

use std::path::PathBuf;
use std::sync::LazyLock;

use askama::Template;
use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

use super::{AppState, show_id};
use crate::error::AppError;
use crate::model::ShowId;
use crate::words::thousands;

/// How often the page reloads itself when JavaScript is off and the fan is waiting.
pub(super) const NOSCRIPT_REFRESH_SECONDS: u32 = 5;

/// Static files may be cached for an hour: their URLs carry [`asset_version`], so a deploy
/// that changes one changes its URL too.
const STATIC_CACHE: &str = "public, max-age=3600";

/// Pages are always fresh: they show a live position, and a cached one would lie.
const PAGE_CACHE: &str = "no-store";

/// Scripts and styles come only from `/static`, and the scripts talk only to this origin.
const PAGE_CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
     script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// Where the static files are served from: `./static` when the server runs from a checkout
/// or an image that ships the folder beside it, else the crate's own folder (tests, or
/// `cargo run` started from elsewhere).
pub(super) fn static_dir() -> PathBuf {
    let beside = PathBuf::from("static");
    if beside.is_dir() {
        beside
    } else {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/static"))
    }
}

/// A short hash of the static files' contents, appended to their URLs as `?v=`.
pub(super) fn asset_version() -> &'static str {
    static VERSION: LazyLock<String> = LazyLock::new(|| {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(static_dir())
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        for file in files {
            file.file_name().hash(&mut hasher);
            std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
        }
        format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
    });
    &VERSION
}

/// The service behind `/static`: the files, with a long cache on what was found (a 404 is
/// not cached, so a file added later is seen at once).
#[utoipa::path(
    get,
    path = crate::protocol::routes::STATIC_FILE,
    operation_id = "staticFile",
    tag = crate::http::openapi::PAGES,
    summary = "The pages' scripts, styles and icons",
    params(crate::http::openapi::params::FilePath),
    responses(
        (
            status = 200,
            description = "The file",
            body = String,
            content_type = "application/octet-stream",
        ),
        (status = 404, description = "No such file"),
    ),
)]
pub(super) fn static_files() -> Router {
    Router::new()
        .fallback_service(ServeDir::new(static_dir()))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CACHE_CONTROL,
            |res: &Response| {
                res.status()
                    .is_success()
                    .then(|| HeaderValue::from_static(STATIC_CACHE))
            },
        ))
}

/// A rendered page with the headers every page carries.
pub(super) fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(body) => (
            status,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, PAGE_CACHE),
                (header::CONTENT_SECURITY_POLICY, PAGE_CSP),
                // A ticket in a page's URL (the no-script flow) must not travel to other sites.
                (header::REFERRER_POLICY, "same-origin"),
            ],
            body,
        )
            .into_response(),
        Err(e) => {
            // A template that fails to render is our bug; the visitor learns only that.
            tracing::error!(error = %e, "page failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page failed to render",
            )
                .into_response()
        }
    }
}

/// A page that explains what went wrong, for the browser-facing routes.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    asset: &'static str,
    status: u16,
    message: String,
}

fn error_page(error: AppError) -> Response {
    let status = error.status_code();
    if let AppError::Store(e) = &error {
        tracing::error!(error = %e, "store call failed");
    }
    let message = match &error {
        AppError::Store(_) => {
            "The waiting room cannot reach its queue right now. Please try again in a moment."
                .into()
        }
        other => other.to_string(),
    };
    let mut response = html(
        status,
        &ErrorPage {
            asset: asset_version(),
            status: status.as_u16(),
            message,
        },
    );
    // A page's 503 or 429 says when to come back, as the JSON answers do.
    error.add_headers(&mut response);
    response
}

/// One open on-sale on the front page.
struct OpenShow {
    id: String,
    queue: String,
}

#[derive(Template)]
#[template(path = "index.html")]
struct IndexPage {
    asset: &'static str,
    shows: Vec<OpenShow>,
}

/// `GET /`: the on-sales that are open now, each linking to its waiting page.
#[utoipa::path(
    get,
    path = crate::protocol::routes::INDEX,
    operation_id = "index",
    tag = crate::http::openapi::PAGES,
    summary = "The open on-sales",
    responses(
        (
            status = 200,
            description = crate::http::openapi::PAGE,
            body = String,
            content_type = "text/html",
        ),
    ),
)]
pub(super) async fn index(State(state): State<AppState>) -> Response {
    let listed = async {
        let shows = state.open_show_stats().await?.into_iter();
        let shows = shows.map(|stats| OpenShow {
            queue: thousands(stats.queue_length),
            id: stats.show_id,
        });
        Ok::<_, AppError>(shows.collect::<Vec<_>>())
    };
    match listed.await {
        Ok(shows) => html(
            StatusCode::OK,
            &IndexPage {
                asset: asset_version(),
                shows,
            },
        ),
        Err(e) => error_page(e),
    }
}

/// The show of a page's path; a path that does not even decode is a 4xx like a bad id.
fn page_show(path: Result<Path<String>, PathRejection>) -> Result<ShowId, AppError> {
    let Path(raw) = path.map_err(|r| AppError::Rejected(r.status(), r.body_text()))?;
    show_id(&raw)
}
