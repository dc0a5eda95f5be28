//! How a fan's page is rendered: one sandboxed template engine (minijinja, autoescaped, no
//! `safe` filter, bounded by fuel) for the built-in pages and each shop's own, the words of
//! the fan's language (`t`), and the headers every page carries, its script allowed by a
//! nonce drawn for that answer alone.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use minijinja::value::{Kwargs, Object, Value, from_args};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State};

use crate::i18n::{Args, Catalog, Message};

/// Pages are always fresh: they show a live position, and a cached one would lie.
pub(super) const PAGE_CACHE: &str = "no-store";

/// The most a render may do (minijinja's fuel: about one unit an instruction). The built-in
/// page takes a few thousand; a shop's loop that runs away is stopped here.
const FUEL: u64 = 200_000;

/// The engine, sandboxed: every value escaped for HTML, nothing marks text safe but our own
/// helpers, no file is read, and a render is bounded.
pub(super) fn sandboxed() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    // Every value escaped for HTML (as minijinja does, but leaving `/` as it is, so a path
    // reads as one), ours marked safe passed as they are, nothing for none.
    env.set_formatter(|out, _state, value| {
        let text = if value.is_safe() {
            value.to_string()
        } else if value.is_undefined() || value.is_none() {
            String::new()
        } else {
            escape(&value.to_string())
        };
        out.write_str(&text).map_err(Error::from)
    });
    env.remove_filter("safe");
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(32);
    env.add_filter("strong", strong);
    env.add_filter("code", code);
    env
}

/// The built-in templates (`templates/fan/`).
static BUILT_IN: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = sandboxed();
    for (name, text) in [
        (
            "page.html",
            include_str!("../../../templates/fan/page.html"),
        ),
        (
            "queue.html",
            include_str!("../../../templates/fan/queue.html"),
        ),
        (
            "index.html",
            include_str!("../../../templates/fan/index.html"),
        ),
        (
            "error.html",
            include_str!("../../../templates/fan/error.html"),
        ),
    ] {
        env.add_template(name, text)
            .expect("the built-in templates parse (the page tests render each)");
    }
    env
});

/// Renders a built-in template.
pub(super) fn built_in(name: &str, ctx: Value) -> Result<String, Error> {
    BUILT_IN.get_template(name)?.render(ctx)
}

pub(crate) use crate::html::escape;

/// A message's own text as HTML: escaped for text and double-quoted attributes, leaving
/// apostrophes as written (every attribute our templates write is double-quoted, and a
/// shop's render is checked for handlers before it is served).
fn escape_message(text: &str) -> String {
    crate::html::escape_keeping_apostrophes(text)
}

/// A value as HTML: itself when it is already (one of ours), else escaped.
fn html_of(value: &Value) -> String {
    if value.is_safe() {
        value.to_string()
    } else {
        escape(&value.to_string())
    }
}

/// `x|strong` (or `x|strong(id="lane")`): the value, escaped, in `<strong>`.
fn strong(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    wrap("strong", &value, kwargs)
}

/// `x|code(id="ticket-id")`: the value, escaped, in `<code>`.
fn code(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    wrap("code", &value, kwargs)
}

fn wrap(tag: &str, value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let id: Option<String> = kwargs.get("id")?;
    kwargs.assert_all_used()?;
    let id = id
        .map(|id| format!(" id=\"{}\"", escape(&id)))
        .unwrap_or_default();
    Ok(Value::from_safe_string(format!(
        "<{tag}{id}>{}</{tag}>",
        html_of(value)
    )))
}

/// The fan's words: `t("key")`, `t("key", n=3)`, `t("key", show=show|strong)`. What it
/// answers is HTML: the message escaped, each slot filled with its value (a number in the
/// language's digits, HTML of our own helpers as it is, anything else escaped).
#[derive(Debug)]
pub(super) struct Words {
    pub catalog: &'static Catalog,
    pub overrides: Option<Arc<BTreeMap<String, Message>>>,
}

impl Words {
    pub(super) fn args(&self) -> Args<'_> {
        Args {
            catalog: self.catalog,
            overrides: self.overrides.as_deref(),
        }
    }

    /// `key` as HTML with `slots` filled.
    pub(super) fn html(
        &self,
        key: &str,
        count: Option<u64>,
        slot: impl Fn(&str) -> Option<String>,
    ) -> String {
        // The show's own words are escaped whole (apostrophes too): an operator's text may
        // land in a shop template's single-quoted attribute.
        let own = self.overrides.as_ref().is_some_and(|o| o.contains_key(key));
        let literal = if own { escape } else { escape_message };
        self.args().fill(key, count, literal, slot)
    }
}

impl Object for Words {
    fn call(self: &Arc<Self>, _state: &State<'_, '_>, args: &[Value]) -> Result<Value, Error> {
        let (key, kwargs): (&str, Kwargs) = from_args(args)?;
        let count =
            match kwargs.get::<Option<Value>>("n")? {
                None => None,
                Some(n) => Some(n.as_i64().and_then(|n| u64::try_from(n).ok()).ok_or_else(
                    || Error::new(ErrorKind::InvalidOperation, "t(): n must be a whole number"),
                )?),
            };
        let mut slots: Vec<(String, String)> = Vec::new();
        for name in kwargs.args() {
            if name == "n" {
                continue;
            }
            let value: Value = kwargs.get(name)?;
            let html = match value.as_i64().and_then(|n| u64::try_from(n).ok()) {
                Some(n) if !value.is_safe() => self.catalog.number(n),
                _ => html_of(&value),
            };
            slots.push((name.to_owned(), html));
        }
        let html = self.html(key, count, |name| {
            slots
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        });
        Ok(Value::from_safe_string(html))
    }
}

/// The Content-Security-Policy of a page whose script carries `nonce`: scripts only by it
/// (a template's own script never runs), styles and images from this site, workers (the
/// proof of work, the "your turn" call) from `/static`.
fn page_csp(nonce: &str) -> String {
    format!(
        "default-src 'self'; img-src 'self' data:; style-src 'self'; \
         script-src 'nonce-{nonce}'; worker-src 'self'; connect-src 'self'; \
         object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// A fresh nonce for one answer's script.
pub(super) fn nonce() -> String {
    base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 16]>())
}

/// A rendered page with the headers every page carries.
pub(super) fn respond(
    status: StatusCode,
    nonce: &str,
    rendered: Result<String, Error>,
) -> Response {
    match rendered {
        Ok(body) => {
            let csp = HeaderValue::from_str(&page_csp(nonce))
                .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"));
            let mut response = (
                status,
                [
                    (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                    (header::CACHE_CONTROL, PAGE_CACHE),
                    // A ticket in a page's URL (the no-script flow) must not travel to other sites.
                    (header::REFERRER_POLICY, "same-origin"),
                    // The page is in the language the request asked for.
                    (header::VARY, "Accept-Language, Accept, Cookie"),
                ],
                body,
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_SECURITY_POLICY, csp);
            response
        }
        Err(e) => {
            // A template that fails to render is our bug (or a shop's, checked when it was
            // set); the visitor learns only that.
            tracing::error!(error = %e, "page failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page failed to render",
            )
                .into_response()
        }
    }
}
