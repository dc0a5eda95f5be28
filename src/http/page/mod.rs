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
mod render;
mod setup;
mod shop;
mod wait;

pub(super) use self::bypass::bypass;
// What `routes!` reads of each handler (its `#[utoipa::path]`), beside the handler.
pub(super) use self::bypass::__path_bypass;
pub(crate) use self::setup::MAX_PAGE_BODY;
pub(super) use self::setup::{
    __path_delete_page, __path_file, __path_get_page, __path_preview, __path_set_page,
};
pub(super) use self::setup::{delete_page, file, get_page, preview, set_page};
pub(crate) use self::shop::PageCache;
pub(super) use self::wait::{__path_join, __path_keep_pass, __path_wait};
pub(super) use self::wait::{join, keep_pass, wait};

use std::path::PathBuf;
use std::sync::LazyLock;

use std::sync::Arc;

use askama::Template;
use axum::Router;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use minijinja::Value;
use serde::Deserialize;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

use self::render::{PAGE_CACHE, Words, escape};
use self::shop::{Files, ShopPage};
use super::credentials::cookies;
use super::{AppState, show_id};
use crate::error::AppError;
use crate::i18n::{catalog, catalogs, negotiate};
use crate::model::ShowId;

/// How often the page reloads itself when JavaScript is off and the fan is waiting.
pub(super) const NOSCRIPT_REFRESH_SECONDS: u32 = 5;

/// Static files may be cached for an hour: their URLs carry [`asset_version`], so a deploy
/// that changes one changes its URL too.
const STATIC_CACHE: &str = "public, max-age=3600";

/// The console's scripts and styles come only from `/static`, and talk only to this origin.
const CONSOLE_CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
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

/// A rendered askama page (the operator's console) with the headers every page carries.
pub(super) fn html(status: StatusCode, page: &impl Template) -> Response {
    match page.render() {
        Ok(body) => (
            status,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, PAGE_CACHE),
                (header::CONTENT_SECURITY_POLICY, CONSOLE_CSP),
                (header::REFERRER_POLICY, "same-origin"),
            ],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "page failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page failed to render",
            )
                .into_response()
        }
    }
}

/// The cookie that keeps a fan's choice of language (`?lang=`, the picker).
pub(super) const LANG_COOKIE: &str = "wr_lang";

/// The words of one request: the language it asked for (`?lang=`, the `wr_lang` cookie,
/// `Accept-Language`, the show's default) and the show's own words in it.
fn words(headers: &HeaderMap, asked: Option<&str>, shop: Option<&ShopPage>) -> Arc<Words> {
    let chosen = cookies(headers, LANG_COOKIE).next();
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let catalog = negotiate(
        asked,
        chosen,
        accept,
        shop.and_then(|s| s.default_language.as_deref()),
    );
    Arc::new(Words {
        catalog,
        overrides: shop.and_then(|s| s.messages.get(catalog.code).cloned()),
    })
}

/// The `Set-Cookie` that remembers `?lang=` when it named a shipped language.
fn remember_language(asked: Option<&str>, secure: bool) -> Option<String> {
    let catalog = catalog(asked?)?;
    Some(super::credentials::cookie(
        LANG_COOKIE,
        catalog.code,
        "/",
        365 * 86_400,
        secure,
    ))
}

/// What frames every fan's page: the page's own head, language picker and title.
struct Frame<'a> {
    pub words: &'a Arc<Words>,
    pub nonce: &'a str,
    pub title: String,
    /// The show, on its pages.
    pub show: Option<&'a str>,
    pub state: &'a str,
    /// The waiting page's script, and whether the page refreshes itself without it.
    pub script: bool,
    pub refresh: bool,
    /// What the language picker keeps of the query.
    pub keep: Vec<(&'static str, String)>,
    /// The operator console's link, on the front page.
    pub console: bool,
}

impl Frame<'_> {
    /// `head`: our style sheet and, by the nonce, our script.
    fn head(&self) -> String {
        let asset = asset_version();
        let mut head = format!(
            "<link rel=\"icon\" href=\"/static/favicon.svg?v={asset}\" type=\"image/svg+xml\">\n\
             <link rel=\"stylesheet\" href=\"/static/style.css?v={asset}\">\n"
        );
        if self.refresh {
            // Without JavaScript nothing pushes the position, so the page fetches itself again.
            head.push_str(&format!(
                "<noscript><meta http-equiv=\"refresh\" content=\"{NOSCRIPT_REFRESH_SECONDS}\"></noscript>\n"
            ));
        }
        if self.script {
            head.push_str(&format!(
                "<script nonce=\"{}\" src=\"/static/wait.js?v={asset}\" defer></script>\n",
                self.nonce
            ));
        }
        head
    }

    /// `languages`: a form that asks for the page in another language (the page's script
    /// sends it on change; without script, its button does).
    fn languages(&self) -> String {
        let current = self.words.catalog.code;
        let mut html = format!(
            "<form class=\"lang-picker\" method=\"get\"><label for=\"lang-select\">{}</label> \
             <select id=\"lang-select\" name=\"lang\">",
            self.words.html("site.language", None, |_| None)
        );
        for catalog in catalogs() {
            let selected = if catalog.code == current {
                " selected"
            } else {
                ""
            };
            html.push_str(&format!(
                "<option value=\"{code}\" lang=\"{code}\"{selected}>{}</option>",
                escape(&catalog.name),
                code = catalog.code
            ));
        }
        html.push_str("</select>");
        for (name, value) in &self.keep {
            // Escaped, and `=` and `:` written as references too: a `?return=` a link made
            // up reads as no attribute and no link to the checks of a shop's render.
            let value = escape(value).replace('=', "&#61;").replace(':', "&#58;");
            html.push_str(&format!(
                "<input type=\"hidden\" name=\"{name}\" value=\"{value}\">"
            ));
        }
        html.push_str(&format!(
            " <button class=\"link-button lang-go\" type=\"submit\">{}</button></form>",
            self.words.html("site.language_go", None, |_| None)
        ));
        html
    }

    /// What a page's template is rendered with.
    fn context(&self, head: &str, queue: &str, languages: &str, shop: Option<&ShopPage>) -> Value {
        minijinja::context! {
            lang => self.words.catalog.code,
            dir => self.words.catalog.dir,
            title => self.title,
            head => Value::from_safe_string(head.to_owned()),
            languages => Value::from_safe_string(languages.to_owned()),
            queue => Value::from_safe_string(queue.to_owned()),
            show => self.show,
            state => self.state,
            favicon => format!("/static/favicon.svg?v={}", asset_version()),
            console => self.console,
            t => Value::from_dyn_object(self.words.clone()),
            file => Value::from_object(Files {
                show: self.show.unwrap_or("").to_owned(),
                files: shop.map(|s| s.files.clone()).unwrap_or_default(),
            }),
        }
    }

    /// The page around `queue` (the built-in frame, or the shop's template), checked; a
    /// shop's render that fails its check is answered with the built-in frame.
    fn render(&self, queue: String, shop: Option<&ShopPage>) -> Result<String, minijinja::Error> {
        let head = self.head();
        let languages = self.languages();
        let ctx = self.context(&head, &queue, &languages, shop);
        if let Some(rendered) = shop.and_then(|s| s.render(ctx.clone())) {
            let checked = rendered.map_err(|e| e.to_string()).and_then(|html| {
                shop::check_render(&html, &head, &queue, &languages)
                    .map(|()| html)
                    .map_err(|r| r.0)
            });
            match checked {
                Ok(html) => return Ok(html),
                // Said once a page version: a page that fails for some requests must not
                // let anyone fill the log by asking for it.
                Err(e) if shop.is_some_and(ShopPage::first_failure) => {
                    tracing::error!(show = ?self.show, error = %e, "a show's page failed; the built-in one is shown (logged once for this version of the page)");
                }
                Err(_) => {}
            }
        }
        render::built_in("page.html", ctx)
    }
}

/// A page that explains what went wrong, in the fan's language: the message by what went
/// wrong, the server's own words below it where they add something.
fn error_page(error: AppError, headers: &HeaderMap) -> Response {
    let status = error.status_code();
    if let AppError::Store(e) = &error {
        tracing::error!(error = %e, "store call failed");
    }
    let (key, detail) = match &error {
        AppError::Store(_) => ("error.store", None),
        AppError::Rejected(s, _) if *s == StatusCode::PRECONDITION_REQUIRED => {
            ("error.needs_script", None)
        }
        other => match status.as_u16() {
            404 => ("error.not_found", Some(other.to_string())),
            400 => ("error.bad_request", Some(other.to_string())),
            410 => ("error.ended", None),
            429 => ("error.busy", None),
            503 => ("error.store", Some(other.to_string())),
            500..=599 => ("error.other", None),
            _ => ("error.refused", Some(other.to_string())),
        },
    };
    let words = words(headers, None, None);
    let nonce = render::nonce();
    let content = render::built_in(
        "error.html",
        minijinja::context! {
            t => Value::from_dyn_object(words.clone()),
            message => key,
            detail => detail,
        },
    );
    let frame = Frame {
        words: &words,
        nonce: &nonce,
        title: words.args().say(
            "error.title",
            None,
            &[("status", &status.as_u16().to_string())],
        ),
        show: None,
        state: "error",
        script: false,
        refresh: false,
        keep: Vec::new(),
        console: false,
    };
    let mut response = render::respond(status, &nonce, content.and_then(|c| frame.render(c, None)));
    // A page's 503 or 429 says when to come back, as the JSON answers do.
    error.add_headers(&mut response);
    response
}

/// One open on-sale on the front page.
#[derive(serde::Serialize)]
struct OpenShow {
    id: String,
    queue: u64,
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
pub(super) async fn index(
    State(state): State<AppState>,
    query: Result<Query<LangQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let asked = query.ok().and_then(|Query(q)| q.lang);
    let listed = async {
        let shows = state.open_show_stats().await?.into_iter();
        let shows = shows.map(|stats| OpenShow {
            queue: stats.queue_length,
            id: stats.show_id,
        });
        Ok::<_, AppError>(shows.collect::<Vec<_>>())
    };
    match listed.await {
        Ok(shows) => {
            let words = words(&headers, asked.as_deref(), None);
            let nonce = render::nonce();
            let content = render::built_in(
                "index.html",
                minijinja::context! { t => Value::from_dyn_object(words.clone()), shows => shows },
            );
            let frame = Frame {
                words: &words,
                nonce: &nonce,
                title: words.args().say("index.title", None, &[]),
                show: None,
                state: "index",
                script: true,
                refresh: false,
                keep: Vec::new(),
                console: true,
            };
            let mut response = render::respond(
                StatusCode::OK,
                &nonce,
                content.and_then(|c| frame.render(c, None)),
            );
            if let Some(cookie) = remember_language(asked.as_deref(), state.public_https())
                && let Ok(value) = HeaderValue::from_str(&cookie)
            {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            response
        }
        Err(e) => error_page(e, &headers),
    }
}

/// The query of a page that takes only a language.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LangQuery {
    lang: Option<String>,
}

/// The show of a page's path; a path that does not even decode is a 4xx like a bad id.
fn page_show(path: Result<Path<String>, PathRejection>) -> Result<ShowId, AppError> {
    let Path(raw) = path.map_err(|r| AppError::Rejected(r.status(), r.body_text()))?;
    show_id(&raw)
}
