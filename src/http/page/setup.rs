//! A show's own page, the operator's side (docs/pages.md): `PUT …/{showId}/page` sets it
//! (template, words, files), checked in every state and language before it is kept; `GET`
//! answers it; `DELETE` brings back the built-in page; `POST …/page/preview` renders a page
//! not yet set, for the console's preview. And the fan's side of its files: `GET
//! /wait/{showId}/files/{file}`, by hash, cached for a year.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::render::{self, Words};
use super::shop::{self, PageDocument, Refused, STATES, ShopPage, file_path, file_type};
use super::wait::{WaitPage, render_wait, shop_page};
use crate::error::AppError;
use crate::http::AppState;
use crate::http::extract::{AppJson, AppPath, Operator, show_id};
use crate::i18n::catalogs;
use crate::model::ShowId;
use crate::store::StoredPage;

/// A page file's name is its content's hash: the same bytes forever, for any cache.
const FILE_CACHE: &str = "public, max-age=31536000, immutable";

/// The most a `PUT …/page` or a preview may send: the files (base64) and the template.
pub(crate) const MAX_PAGE_BODY: usize = 4 << 20;

/// `PUT …/{showId}/page` (operator): sets the show's own waiting page. The template is
/// rendered in every state and shipped language before it is kept; one that fails, or that
/// leaves out `{{ head }}` or `{{ queue }}`, or adds script, is refused with why.
#[utoipa::path(
    put,
    path = crate::protocol::routes::PAGE,
    operation_id = "setPage",
    tag = crate::http::openapi::OPERATOR,
    summary = "Set a show's own waiting page: template, words by language, files",
    params(crate::http::openapi::params::ShowPath),
    request_body = PageDocument,
    responses(
        (status = 200, description = "Kept: the page, its files by path", body = PageDocument),
        (status = 400, description = "A bad page: why", body = crate::protocol::ErrorBody),
        (status = 401, description = "Operator token missing or wrong", body = crate::protocol::ErrorBody),
        (status = 404, description = crate::http::openapi::NO_SHOW, body = crate::protocol::ErrorBody),
        (status = 413, description = "More than 4 MiB", body = crate::protocol::ErrorBody),
    ),
)]
pub(crate) async fn set_page(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    AppJson(doc): AppJson<PageDocument>,
) -> Result<Json<PageDocument>, AppError> {
    let show = show_id(&show)?;
    let nothing = doc.template.is_none()
        && doc.messages.is_empty()
        && doc.default_language.is_none()
        && doc.files.is_empty();
    if nothing {
        return Err(AppError::BadRequest(
            "send a template, messages, a defaultLanguage or files (DELETE …/page brings back \
             the built-in page)"
                .into(),
        ));
    }
    let stored = checked(&show, &doc)?;
    state.store.set_page(&show, &stored).await?;
    tracing::info!(%show, version = %stored.version, "a show's own page was set");
    Ok(Json(answered(&show, &stored)))
}

/// `GET …/{showId}/page` (operator): the show's own page, its files by the path each is
/// served at; 404 when it shows the built-in page.
#[utoipa::path(
    get,
    path = crate::protocol::routes::PAGE,
    operation_id = "getPage",
    tag = crate::http::openapi::OPERATOR,
    summary = "A show's own waiting page",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 200, description = "The page, its files by path", body = PageDocument),
        (status = 400, description = "A bad showId", body = crate::protocol::ErrorBody),
        (status = 401, description = "Operator token missing or wrong", body = crate::protocol::ErrorBody),
        (status = 404, description = "No such show, or it shows the built-in page", body = crate::protocol::ErrorBody),
    ),
)]
pub(crate) async fn get_page(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<Json<PageDocument>, AppError> {
    let show = show_id(&show)?;
    let stored = state
        .store
        .page(&show)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("{show} shows the built-in page")))?;
    Ok(Json(answered(&show, &stored)))
}

/// `DELETE …/{showId}/page` (operator): the show's waiting page is the built-in one again.
#[utoipa::path(
    delete,
    path = crate::protocol::routes::PAGE,
    operation_id = "deletePage",
    tag = crate::http::openapi::OPERATOR,
    summary = "Bring back the built-in waiting page",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "The built-in page again"),
        (status = 400, description = "A bad showId", body = crate::protocol::ErrorBody),
        (status = 401, description = "Operator token missing or wrong", body = crate::protocol::ErrorBody),
        (status = 404, description = "No such show, or it had no page of its own", body = crate::protocol::ErrorBody),
    ),
)]
pub(crate) async fn delete_page(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    if state.store.delete_page(&show).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::NotFound(format!("{show} had no page of its own")))
    }
}

/// The state and language of a preview.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct PreviewQuery {
    /// The state to show: new, prequeue, waiting, paused, full, admitted, closed, ended,
    /// sold_out, lost, away, unknown (default waiting).
    state: Option<String>,
    /// The language (default en).
    lang: Option<String>,
}

/// `POST …/{showId}/page/preview` (operator): the page sent, not kept, rendered in one state
/// and language with a made-up ticket, as a fan would see it before any script runs.
#[utoipa::path(
    post,
    path = crate::protocol::routes::PAGE_PREVIEW,
    operation_id = "previewPage",
    tag = crate::http::openapi::OPERATOR,
    summary = "Render a page not yet set, in one state and language",
    params(crate::http::openapi::params::ShowPath, PreviewQuery),
    request_body = PageDocument,
    responses(
        (status = 200, description = "The page as a fan would see it", body = String, content_type = "text/html"),
        (status = 400, description = "A bad page, state or language: why", body = crate::protocol::ErrorBody),
        (status = 401, description = "Operator token missing or wrong", body = crate::protocol::ErrorBody),
        (status = 413, description = "More than 4 MiB", body = crate::protocol::ErrorBody),
    ),
)]
pub(crate) async fn preview(
    _: Operator,
    AppPath(show): AppPath<String>,
    query: Result<Query<PreviewQuery>, QueryRejection>,
    AppJson(doc): AppJson<PageDocument>,
) -> Result<Response, AppError> {
    let show = show_id(&show)?;
    let Query(query) = query.map_err(|e| AppError::BadRequest(format!("the query: {e}")))?;
    let which = query.state.as_deref().unwrap_or("waiting");
    if !STATES.contains(&which) {
        return Err(AppError::BadRequest(format!(
            "state: one of {}",
            STATES.join(", ")
        )));
    }
    let lang = query.lang.as_deref().unwrap_or("en");
    let Some(catalog) = catalogs().iter().find(|c| c.code == lang) else {
        return Err(AppError::BadRequest(format!(
            "lang: one of {}",
            crate::i18n::SHIPPED.join(", ")
        )));
    };
    // Checked whole, as `PUT` checks it: a page that fails in another state or language is
    // refused here with why, not shown as the built-in page a fan would be shown instead.
    let stored = checked(&show, &doc)?;
    let page = ShopPage::from_stored(&stored)
        .ok_or_else(|| AppError::BadRequest("the page does not read".into()))?;
    let words = Arc::new(Words {
        catalog,
        overrides: page.messages.get(catalog.code).cloned(),
    });
    let nonce = render::nonce();
    let html = render_wait(
        &WaitPage::sample(&show, which),
        &words,
        &nonce,
        Vec::new(),
        Some(&page),
    )
    .map_err(|e| AppError::BadRequest(format!("the template fails in {which}: {e}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            // Shown in the console's frame, with no script: the fan's page is what runs it.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'none'",
            ),
        ],
        html,
    )
        .into_response())
}

/// A page checked whole: its document, and its render in every state and language, each
/// holding our head and queue once and nothing that runs.
fn checked(show: &ShowId, doc: &PageDocument) -> Result<StoredPage, AppError> {
    let stored = shop::check(doc).map_err(|Refused(why)| AppError::BadRequest(why))?;
    let page = ShopPage::from_stored(&stored)
        .ok_or_else(|| AppError::BadRequest("the page does not read".into()))?;
    if !page.has_template() {
        return Ok(stored);
    }
    for catalog in catalogs() {
        let words = Arc::new(Words {
            catalog,
            overrides: page.messages.get(catalog.code).cloned(),
        });
        for which in STATES {
            let sample = WaitPage::sample(show, which);
            let nonce = render::nonce();
            let parts = super::wait::render_parts(&sample, &words, &nonce, &page).map_err(|e| {
                AppError::BadRequest(format!(
                    "the template fails in {which} ({}): {e}",
                    catalog.code
                ))
            })?;
            shop::check_render(&parts.html, &parts.head, &parts.queue, &parts.languages).map_err(
                |Refused(why)| {
                    AppError::BadRequest(format!("{why} (in {which}, {})", catalog.code))
                },
            )?;
        }
    }
    Ok(stored)
}

/// The page as `GET` answers it: its files by the path each is served at.
fn answered(show: &ShowId, stored: &StoredPage) -> PageDocument {
    let mut doc: PageDocument = serde_json::from_str(&stored.doc).unwrap_or_default();
    for hashed in doc.files.values_mut() {
        *hashed = file_path(show.as_str(), hashed);
    }
    doc
}

/// `GET /wait/{showId}/files/{file}`: a file of the show's own page by its hashed name, the
/// same bytes forever, so any cache may keep it a year.
#[utoipa::path(
    get,
    path = crate::protocol::routes::WAIT_FILE,
    operation_id = "pageFile",
    tag = crate::http::openapi::PAGES,
    summary = "A file of a show's own page (a logo, a style sheet), by hash",
    params(crate::http::openapi::params::ShowPath, crate::http::openapi::params::FilePath),
    responses(
        (status = 200, description = "The file", body = String, content_type = "application/octet-stream"),
        (status = 400, description = "A bad showId", body = crate::protocol::ErrorBody),
        (status = 404, description = "No such file", body = crate::protocol::ErrorBody),
    ),
)]
pub(crate) async fn file(
    State(state): State<AppState>,
    AppPath((show, file)): AppPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let show = show_id(&show)?;
    let (hash, _) = file.rsplit_once('.').unwrap_or(("", ""));
    let kind = file_type(&file)
        .filter(|_| hash.len() == 32 && hash.bytes().all(|b| b.is_ascii_hexdigit()));
    let Some(kind) = kind else {
        return Err(AppError::NotFound("no such file".into()));
    };
    // Only a file of the page the show has now: one removed since is gone here too, even
    // where this instance still holds its bytes (the meta is one read; the page is held).
    let meta = state.store.show(&show).await?;
    let page = match meta {
        Some(meta) if !meta.lost => shop_page(&state, &show, meta.page.as_deref()).await,
        _ => None,
    };
    if !page.is_some_and(|p| p.files.values().any(|f| *f == file)) {
        return Err(AppError::NotFound("no such file".into()));
    }
    let key = format!("{show}/{file}");
    let bytes = match state.pages.file(&key) {
        Some(bytes) => bytes,
        None => {
            let bytes = state
                .store
                .page_file(&show, &file)
                .await?
                .ok_or_else(|| AppError::NotFound("no such file".into()))?;
            let bytes = bytes::Bytes::from(bytes);
            state.pages.put_file(&key, bytes.clone());
            bytes
        }
    };
    // Only a file the show has (held here, or kept in the store) is "not modified": a name it
    // never had is 404, whatever the browser claims to hold.
    let etag = format!("\"{hash}\"");
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag),
                (header::CACHE_CONTROL, FILE_CACHE.to_owned()),
            ],
        )
            .into_response());
    }
    let mut response = (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, FILE_CACHE),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        bytes,
    )
        .into_response();
    let headers = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    // An SVG opened by itself is a document: it runs nothing here.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
    );
    Ok(response)
}
