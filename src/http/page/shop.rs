//! A show's own waiting page (docs/pages.md): the shop's template around the queue widget,
//! its words in any shipped language, its files (a logo, a style sheet) served by hash.
//!
//! What keeps a fan honest is ours, not the template's: the template places `head` (our
//! style sheet and our script, allowed by a nonce it never sees) and `queue` (the place, the
//! wait, the phase notices, how the queue works), each exactly once, and cannot run script
//! of its own. That is checked three times: the template's text when it is set (no script,
//! no handler attribute, no `javascript:` link, no way around the escaping), its render in
//! every state and language when it is set, and each render before it is served (a page
//! that fails is answered with the built-in page instead). The CSP's nonce is the fourth.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use minijinja::Environment;
use minijinja::value::{Object, Value, from_args};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::render::sandboxed;
use crate::i18n::{Message, SHIPPED, catalog, categories, english};
use crate::model::ShowId;
use crate::store::StoredPage;

/// The most text a template may hold.
pub(crate) const MAX_TEMPLATE_BYTES: usize = 64 * 1024;
/// The most files a page may bring, each at most [`MAX_FILE_BYTES`], together at most
/// [`MAX_FILES_BYTES`].
pub(crate) const MAX_FILES: usize = 8;
pub(crate) const MAX_FILE_BYTES: usize = 512 * 1024;
pub(crate) const MAX_FILES_BYTES: usize = 2 * 1024 * 1024;
/// The most words a page may override, each at most [`MAX_MESSAGE_CHARS`].
pub(crate) const MAX_MESSAGES: usize = 1000;
pub(crate) const MAX_MESSAGE_CHARS: usize = 2000;

/// The states a page is rendered in, each checked when a template is set.
pub(crate) const STATES: [&str; 12] = [
    "new", "prequeue", "waiting", "paused", "full", "admitted", "closed", "ended", "sold_out",
    "lost", "away", "unknown",
];

/// A show's page as `PUT …/page` takes it (files as base64) and `GET …/page` answers it
/// (files by name, with their URLs).
#[derive(Clone, Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PageDocument {
    /// The page's template (HTML in minijinja's language, autoescaped; at most 64 KiB). It
    /// must place `{{ head }}` in its `<head>` and `{{ queue }}` in its body, each once, and
    /// may use `{{ t("key") }}`, `{{ file("logo.png") }}`, `{{ languages }}`, `{{ title }}`,
    /// `{{ show }}`, `{{ state }}`, `{{ lang }}` and `{{ dir }}`. No script, no `on…`
    /// attribute, no `javascript:` link. Absent: the built-in page, with the words below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The show's own words, by language and key (`{"fr": {"wait.new.join": "…"}}`): a text,
    /// or a text per plural form. A key and its placeholders are the catalog's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub messages: BTreeMap<String, BTreeMap<String, Message>>,
    /// The language of a fan whose browser asks for none we ship (else English).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_language: Option<String>,
    /// The page's files by name (`logo.png`, `shop.css`): base64 when set; when read, the
    /// path each is served at.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

/// A page as kept (the store's `doc`): its files by name → hash.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct KeptPage {
    template: Option<String>,
    messages: BTreeMap<String, BTreeMap<String, Message>>,
    default_language: Option<String>,
    files: BTreeMap<String, String>,
}

/// A show's page as an instance holds it, ready to render.
#[derive(Debug)]
pub(crate) struct ShopPage {
    pub version: String,
    env: Option<Environment<'static>>,
    pub messages: BTreeMap<String, Arc<BTreeMap<String, Message>>>,
    pub default_language: Option<String>,
    /// Files by name → `hash.ext`.
    pub files: BTreeMap<String, String>,
    /// A render of it failed its check (and was logged) already.
    failed: std::sync::atomic::AtomicBool,
}

impl ShopPage {
    /// The page from what the store keeps; `None` (the built-in page) when it does not read.
    pub(crate) fn from_stored(stored: &StoredPage) -> Option<ShopPage> {
        let kept: KeptPage = match serde_json::from_str(&stored.doc) {
            Ok(kept) => kept,
            Err(e) => {
                tracing::error!(error = %e, "a show's page does not read; the built-in one is shown");
                return None;
            }
        };
        let env = match &kept.template {
            Some(text) => Some(compile(text).ok()?),
            None => None,
        };
        Some(ShopPage {
            version: stored.version.clone(),
            env,
            messages: kept
                .messages
                .into_iter()
                .map(|(lang, words)| (lang, Arc::new(words)))
                .collect(),
            default_language: kept.default_language,
            files: kept.files,
            failed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether this is the first of its renders to fail its check.
    pub(crate) fn first_failure(&self) -> bool {
        !self.failed.swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether it brings a template of its own.
    pub(crate) fn has_template(&self) -> bool {
        self.env.is_some()
    }

    /// Renders the shop's template around `ctx` (`None` without one).
    pub(crate) fn render(&self, ctx: Value) -> Option<Result<String, minijinja::Error>> {
        let env = self.env.as_ref()?;
        Some(env.get_template(TEMPLATE).and_then(|t| t.render(ctx)))
    }
}

/// The one template a shop's environment holds: nothing else can be included.
const TEMPLATE: &str = "page.html";

fn compile(text: &str) -> Result<Environment<'static>, minijinja::Error> {
    let mut env = sandboxed();
    env.add_template_owned(TEMPLATE, text.to_owned())?;
    Ok(env)
}

/// `file("logo.png")`: the path a page's file is served at.
#[derive(Debug)]
pub(crate) struct Files {
    pub show: String,
    pub files: BTreeMap<String, String>,
}

impl Object for Files {
    fn call(
        self: &Arc<Self>,
        _state: &minijinja::State<'_, '_>,
        args: &[Value],
    ) -> Result<Value, minijinja::Error> {
        let (name,): (&str,) = from_args(args)?;
        match self.files.get(name) {
            Some(file) => Ok(Value::from(file_path(&self.show, file))),
            None => Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                format!("file(): the page has no file {name:?}"),
            )),
        }
    }
}

/// Where a page's file is served: under the show's page, by its hash.
pub(crate) fn file_path(show: &str, hashed: &str) -> String {
    crate::protocol::routes::path(crate::protocol::routes::WAIT_FILE, show, "")
        .replace("{file}", hashed)
}

/// The kinds of file a page may bring, by extension.
pub(crate) fn file_type(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "css" => "text/css; charset=utf-8",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        _ => return None,
    })
}

/// What is wrong with a page an operator sent (a 400, with this).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused(pub String);

/// Checks a page as sent and makes what the store keeps: the document and the files.
pub(crate) fn check(doc: &PageDocument) -> Result<StoredPage, Refused> {
    let refuse = |why: String| Err(Refused(why));
    if let Some(text) = &doc.template {
        if text.len() > MAX_TEMPLATE_BYTES {
            return refuse(format!(
                "the template holds {} bytes: at most {MAX_TEMPLATE_BYTES}",
                text.len()
            ));
        }
        check_template_text(text)?;
        compile(text).map_err(|e| Refused(format!("the template does not parse: {e}")))?;
    }
    if let Some(lang) = &doc.default_language
        && !SHIPPED.contains(&lang.as_str())
    {
        return refuse(format!(
            "defaultLanguage {lang:?} is none of {}",
            SHIPPED.join(", ")
        ));
    }
    check_messages(&doc.messages)?;
    if doc.files.len() > MAX_FILES {
        return refuse(format!("{} files: at most {MAX_FILES}", doc.files.len()));
    }
    let mut files = Vec::new();
    let mut named = BTreeMap::new();
    let mut total = 0;
    for (name, body) in &doc.files {
        let good_name = !name.is_empty()
            && name.len() <= 64
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !good_name {
            return refuse(format!(
                "a file's name is 1 to 64 of A-Z, a-z, 0-9, '.', '-', '_': {name:?}"
            ));
        }
        if file_type(name).is_none() {
            return refuse(format!(
                "{name}: a page's files are images (png, jpg, gif, webp, avif, svg, ico), style sheets (css) and fonts (woff2, woff)"
            ));
        }
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body.trim())
            .map_err(|e| Refused(format!("{name}: not base64 ({e})")))?;
        if bytes.len() > MAX_FILE_BYTES {
            return refuse(format!(
                "{name} holds {} bytes: at most {MAX_FILE_BYTES}",
                bytes.len()
            ));
        }
        total += bytes.len();
        if total > MAX_FILES_BYTES {
            return refuse(format!(
                "the files hold more than {MAX_FILES_BYTES} bytes together"
            ));
        }
        let hash = hex::encode(&Sha256::digest(&bytes)[..16]);
        let ext = name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        named.insert(name.clone(), format!("{hash}.{ext}"));
        files.push((format!("{hash}.{ext}"), bytes));
    }
    let kept = KeptPage {
        template: doc.template.clone(),
        messages: doc.messages.clone(),
        default_language: doc.default_language.clone(),
        files: named,
    };
    let text = serde_json::to_string(&kept).map_err(|e| Refused(e.to_string()))?;
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    for (hash, _) in &files {
        hasher.update(hash.as_bytes());
    }
    let version = hex::encode(&hasher.finalize()[..12]);
    Ok(StoredPage {
        doc: text,
        version,
        files,
    })
}

/// The words a template's text may not hold, lower-cased: script of its own, a handler, a
/// way to turn escaping off, an element that loads another document or changes the base.
const BANNED: [(&str, &str); 12] = [
    (
        "<script",
        "a template may not hold script: the page's own script is placed by {{ head }}",
    ),
    ("javascript:", "a template may not hold javascript: links"),
    ("vbscript:", "a template may not hold vbscript: links"),
    ("<iframe", "a template may not frame other pages"),
    ("<frame", "a template may not frame other pages"),
    ("<object", "a template may not embed objects"),
    ("<embed", "a template may not embed objects"),
    ("<base", "a template may not change the page's base"),
    ("http-equiv", "a template may not set http-equiv"),
    (
        "<style",
        "a template's styles go in a style sheet file (CSP: style-src 'self')",
    ),
    ("autoescape", "a template may not turn escaping off"),
    ("srcdoc", "a template may not hold srcdoc"),
];

fn check_template_text(text: &str) -> Result<(), Refused> {
    // The words are looked for with the template's comments taken out, so that a comment
    // cannot split one (`http-e{##}quiv`).
    let lower = without_comments(text).to_ascii_lowercase();
    for (word, why) in BANNED {
        if lower.contains(word) {
            return Err(Refused(why.to_owned()));
        }
    }
    if let Some(attr) = handler_attribute(&lower) {
        return Err(Refused(format!(
            "a template may not hold event handlers ({attr}=)"
        )));
    }
    check_syntax(text)
}

/// The most tags (`{{ … }}`, `{% … %}`) a template holds, and the longest one.
const MAX_TAGS: usize = 400;
const MAX_TAG_CHARS: usize = 200;

/// The names a template may print, and those a condition may compare.
const PRINTED: [&str; 8] = [
    "head",
    "queue",
    "languages",
    "title",
    "show",
    "state",
    "lang",
    "dir",
];
const COMPARED: [&str; 4] = ["state", "lang", "dir", "show"];

/// `text` with its `{# … #}` comments taken out.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{#") {
        out.push_str(&rest[..open]);
        match rest[open..].find("#}") {
            Some(close) => rest = &rest[open + close + 2..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// A template says only what a shop's frame needs, so that what it can do is known: it prints
/// a name (`{{ queue }}`), a word (`{{ t("key", n=3) }}`) or a file's path (`{{ file("logo.svg")
/// }}`), and chooses by `{% if state == "waiting" %}` (`elif`, `else`, `endif`; `==`, `!=`,
/// `and`, `or`, `not`, on `state`, `lang`, `dir` and `show`). No filter, loop, assignment,
/// macro, include, operator or index: a render is then as cheap as the template is long, and
/// reads nothing of our HTML (a fan's ticket, the nonce) to decide what to show.
fn check_syntax(text: &str) -> Result<(), Refused> {
    let text = without_comments(text);
    let mut rest = text.as_str();
    let mut tags = 0;
    let mut open_ifs = 0usize;
    while let Some(at) = rest.find(['{']) {
        let after = &rest[at..];
        let (close, statement) = if after.starts_with("{{") {
            ("}}", false)
        } else if after.starts_with("{%") {
            ("%}", true)
        } else {
            rest = &after[1..];
            continue;
        };
        let Some(end) = after.find(close) else {
            return Err(Refused(format!("a tag is not closed ({close})")));
        };
        let inner = after[2..end]
            .trim_matches(|c: char| c == '-' || c == '+')
            .trim();
        rest = &after[end + 2..];
        tags += 1;
        if tags > MAX_TAGS {
            return Err(Refused(format!("a template holds at most {MAX_TAGS} tags")));
        }
        if inner.chars().count() > MAX_TAG_CHARS {
            return Err(Refused(format!(
                "a tag holds at most {MAX_TAG_CHARS} characters"
            )));
        }
        let tokens = tokens(inner)?;
        if statement {
            match tokens.first() {
                Some(Token::Name(w)) if w == "if" || w == "elif" => {
                    if w == "if" {
                        open_ifs += 1;
                    } else if open_ifs == 0 {
                        return Err(Refused("elif outside an if".into()));
                    }
                    condition(&tokens[1..])?;
                }
                Some(Token::Name(w)) if (w == "else" || w == "endif") && tokens.len() == 1 => {
                    if open_ifs == 0 {
                        return Err(Refused(format!("{w} outside an if")));
                    }
                    if w == "endif" {
                        open_ifs -= 1;
                    }
                }
                _ => {
                    return Err(Refused(format!(
                        "{{% {inner} %}}: a template chooses with if, elif, else and endif only"
                    )));
                }
            }
        } else {
            printed(&tokens)
                .map_err(|Refused(why)| Refused(format!("{{{{ {inner} }}}}: {why}")))?;
        }
    }
    Ok(())
}

/// A piece of a tag.
#[derive(Debug, PartialEq)]
enum Token {
    Name(String),
    Text(String),
    Number,
    Punct(&'static str),
}

fn tokens(inner: &str) -> Result<Vec<Token>, Refused> {
    let mut out = Vec::new();
    let mut chars = inner.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut end = i;
            while let Some(&(j, c)) = chars.peek() {
                if !(c.is_ascii_alphanumeric() || c == '_') {
                    break;
                }
                end = j + c.len_utf8();
                chars.next();
            }
            out.push(Token::Name(inner[i..end].to_owned()));
        } else if c.is_ascii_digit() {
            let mut n = 0;
            while chars.peek().is_some_and(|(_, c)| c.is_ascii_digit()) {
                chars.next();
                n += 1;
            }
            if n > 9 {
                return Err(Refused("a number holds at most 9 digits".into()));
            }
            out.push(Token::Number);
        } else if c == '"' || c == '\'' {
            chars.next();
            let mut text = String::new();
            loop {
                match chars.next() {
                    Some((_, q)) if q == c => break,
                    Some((_, '\\')) | Some((_, '\n')) | None => {
                        return Err(Refused(
                            "a string is closed on its line, with no backslash".into(),
                        ));
                    }
                    Some((_, ch)) => text.push(ch),
                }
            }
            out.push(Token::Text(text));
        } else {
            let two: String = inner[i..].chars().take(2).collect();
            let punct = match (two.as_str(), c) {
                ("==", _) => "==",
                ("!=", _) => "!=",
                (_, '(') => "(",
                (_, ')') => ")",
                (_, ',') => ",",
                (_, '=') => "=",
                _ => {
                    return Err(Refused(format!(
                        "{c:?}: a template uses no filter, operator or index"
                    )));
                }
            };
            for _ in 0..punct.len() {
                chars.next();
            }
            out.push(Token::Punct(punct));
        }
    }
    Ok(out)
}

/// What `{{ … }}` may print: a name, `t("key", name=value…)`, or `file("name")`.
fn printed(tokens: &[Token]) -> Result<(), Refused> {
    use Token::*;
    match tokens {
        [Name(name)] if PRINTED.contains(&name.as_str()) => Ok(()),
        [Name(f), Punct("("), Text(_), Punct(")")] if f == "t" || f == "file" => Ok(()),
        [Name(f), Punct("("), Text(_), rest @ ..] if f == "t" => {
            let mut rest = rest;
            loop {
                match rest {
                    [Punct(")")] => return Ok(()),
                    [Punct(","), Name(_), Punct("="), value, more @ ..] => {
                        match value {
                            Text(_) | Number => {}
                            Name(v) if PRINTED[3..].contains(&v.as_str()) => {}
                            _ => {
                                return Err(Refused(
                                    "t()'s values are texts, numbers or a show's names".into(),
                                ));
                            }
                        }
                        rest = more;
                    }
                    _ => return Err(Refused("t(\"key\", name=value, …)".into())),
                }
            }
        }
        _ => Err(Refused(format!(
            "a template prints {}, t(\"key\") or file(\"name\")",
            PRINTED.join(", ")
        ))),
    }
}

/// A condition: comparisons of `state`, `lang`, `dir` or `show` with a text, joined by `and`
/// and `or`, each maybe after `not`, in at most 8 levels of parentheses.
fn condition(tokens: &[Token]) -> Result<(), Refused> {
    use Token::*;
    let bad = || {
        Refused("a condition compares state, lang, dir or show with a text (==, !=), joined by and, or, not".into())
    };
    let mut depth = 0usize;
    let mut expect_operand = true;
    let mut i = 0;
    if tokens.is_empty() || tokens.len() > 64 {
        return Err(bad());
    }
    while i < tokens.len() {
        match (&tokens[i], expect_operand) {
            (Punct("("), true) => {
                depth += 1;
                if depth > 8 {
                    return Err(bad());
                }
            }
            (Name(n), true) if n == "not" => {}
            (Name(n), true) if COMPARED.contains(&n.as_str()) => {
                match (tokens.get(i + 1), tokens.get(i + 2)) {
                    (Some(Punct("==" | "!=")), Some(Text(_))) => i += 2,
                    _ => return Err(bad()),
                }
                expect_operand = false;
            }
            (Punct(")"), false) if depth > 0 => depth -= 1,
            (Name(n), false) if n == "and" || n == "or" => expect_operand = true,
            _ => return Err(bad()),
        }
        i += 1;
    }
    if expect_operand || depth != 0 {
        return Err(bad());
    }
    Ok(())
}

/// An `on…=` attribute inside a tag, if any (`<img onerror=…>`).
pub(crate) fn handler_attribute(lower: &str) -> Option<String> {
    first_attribute(lower, |name| name.len() > 2 && name.starts_with("on"))
}

fn check_messages(messages: &BTreeMap<String, BTreeMap<String, Message>>) -> Result<(), Refused> {
    let mut count = 0;
    for (lang, words) in messages {
        let Some(catalog) = catalog(lang).filter(|c| c.code == lang) else {
            return Err(Refused(format!(
                "messages: {lang:?} is none of {}",
                SHIPPED.join(", ")
            )));
        };
        for (key, message) in words {
            count += 1;
            if count > MAX_MESSAGES {
                return Err(Refused(format!("messages: at most {MAX_MESSAGES}")));
            }
            let Some(theirs) = english().messages.get(key) else {
                return Err(Refused(format!(
                    "messages.{lang}: no message is called {key:?}"
                )));
            };
            // The same placeholders as the catalog's, no fewer: a wait, a place or a count
            // the catalog says is said by the show's words too.
            let allowed = theirs.placeholders();
            let given = message.placeholders();
            if let Some(missing) = allowed.iter().find(|a| !given.contains(a)) {
                return Err(Refused(format!(
                    "messages.{lang}.{key}: says no {{{missing}}}; its placeholders are {}",
                    allowed
                        .iter()
                        .map(|a| format!("{{{a}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            for name in given {
                if !allowed.contains(&name) {
                    return Err(Refused(format!(
                        "messages.{lang}.{key}: {{{name}}} is not one of its placeholders ({})",
                        allowed
                            .iter()
                            .map(|a| format!("{{{a}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
            let texts: Vec<&String> = match message {
                Message::Text(text) => vec![text],
                Message::Plural(forms) => {
                    if let Some(form) = forms
                        .keys()
                        .find(|f| !categories(catalog.code).contains(&f.as_str()))
                    {
                        return Err(Refused(format!(
                            "messages.{lang}.{key}: {form:?} is not a plural form of {lang} ({})",
                            categories(catalog.code).join(", ")
                        )));
                    }
                    if !forms.contains_key("other") {
                        return Err(Refused(format!(
                            "messages.{lang}.{key}: a plural message gives `other`"
                        )));
                    }
                    forms.values().collect()
                }
            };
            if let Some(long) = texts.iter().find(|t| t.chars().count() > MAX_MESSAGE_CHARS) {
                return Err(Refused(format!(
                    "messages.{lang}.{key}: {} characters, at most {MAX_MESSAGE_CHARS}",
                    long.chars().count()
                )));
            }
        }
    }
    Ok(())
}

/// What a render of a shop's template must hold, and may not: our head and our queue once
/// each, where they work (not in a comment, an attribute, or an element that shows or runs
/// nothing of what it holds); no other script, handler, `javascript:` link or element the
/// template's text may not hold; no element taking an id of the widget's (whose script finds
/// its parts by id); nothing hidden or inert around them.
pub(crate) fn check_render(
    html: &str,
    head: &str,
    queue: &str,
    languages: &str,
) -> Result<(), Refused> {
    let refuse = |why: &str| Err(Refused(why.to_owned()));
    if html.matches(head).count() != 1 {
        return refuse("the template must place {{ head }} once, in <head>");
    }
    if html.matches(queue).count() != 1 {
        return refuse("the template must place {{ queue }} once, in every state");
    }
    let ours = head.to_ascii_lowercase().matches("<script").count()
        + queue.to_ascii_lowercase().matches("<script").count();
    let lower = html.to_ascii_lowercase();
    if lower.matches("<script").count() != ours {
        return refuse("the template may not add script");
    }
    for (part, name) in [(head, "{{ head }}"), (queue, "{{ queue }}")] {
        let at = html.find(part).unwrap_or(0);
        if let Some(why) = inert_at(&lower[..at]) {
            return Err(Refused(format!("{name} may not be placed {why}")));
        }
    }
    // What the template wrote itself: the render without our parts.
    let mut outside = lower.replacen(&queue.to_ascii_lowercase(), "", 1);
    outside = outside.replacen(&head.to_ascii_lowercase(), "", 1);
    if !languages.is_empty() {
        outside = outside.replace(&languages.to_ascii_lowercase(), "");
    }
    for (word, why) in BANNED {
        if outside.contains(word) {
            return Err(Refused(why.to_owned()));
        }
    }
    if let Some(attr) = handler_attribute(&outside) {
        return Err(Refused(format!(
            "the template may not add event handlers ({attr}=)"
        )));
    }
    if let Some(attr) = first_attribute(&outside, |a| {
        a == "hidden" || a == "inert" || a == "aria-hidden"
    }) {
        return Err(Refused(format!(
            "the template may not hide what it frames ({attr})"
        )));
    }
    for id in ids(&queue.to_ascii_lowercase()) {
        if ids(&outside).any(|theirs| theirs == id) {
            return Err(Refused(format!(
                "the template may not use the id {id:?}: the queue's own"
            )));
        }
    }
    Ok(())
}

/// Why the text just before a part leaves it inert: inside a comment, inside a tag (an
/// attribute), or inside an element that shows or runs nothing of its content as the page.
fn inert_at(before: &str) -> Option<&'static str> {
    if before
        .rfind("<!--")
        .is_some_and(|open| before[open..].find("-->").is_none())
    {
        return Some("in a comment");
    }
    if before
        .rfind('<')
        .is_some_and(|lt| before[lt..].find('>').is_none())
    {
        return Some("inside a tag");
    }
    for name in [
        "template",
        "textarea",
        "noscript",
        "title",
        "xmp",
        "iframe",
        "object",
        "select",
        "option",
        "svg",
        "math",
        "style",
        "noembed",
        "noframes",
        "plaintext",
        "details",
        "dialog",
    ] {
        let opened = count_tags(before, &format!("<{name}"));
        let closed = count_tags(before, &format!("</{name}"));
        if opened > closed {
            return Some("inside an element that hides or holds it as text");
        }
    }
    None
}

/// How often `open` (`<name` or `</name`) starts a tag of that very name in `text`.
fn count_tags(text: &str, open: &str) -> usize {
    text.match_indices(open)
        .filter(|(i, _)| {
            text[i + open.len()..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || c == '>' || c == '/')
        })
        .count()
}

/// The ids `html` gives its elements (`id="x"`).
fn ids(html: &str) -> impl Iterator<Item = &str> {
    html.match_indices(" id=").filter_map(move |(i, _)| {
        let rest = &html[i + 4..];
        let quote = rest.chars().next()?;
        if quote == '"' || quote == '\'' {
            rest[1..].split(quote).next()
        } else {
            rest.split(|c: char| c.is_whitespace() || c == '>').next()
        }
    })
}

/// The first attribute name of a tag in `lower` that `bad` refuses. Tags are read as a
/// browser reads them: a name, then attributes split by spaces or `/`, a quoted value passed
/// over whole (a `>` in it ends nothing).
fn first_attribute(lower: &str, bad: impl Fn(&str) -> bool) -> Option<String> {
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' || !bytes.get(i + 1).is_some_and(|b| b.is_ascii_alphabetic()) {
            i += 1;
            continue;
        }
        // The tag's name.
        i += 1;
        while i < bytes.len()
            && !(bytes[i].is_ascii_whitespace() || bytes[i] == b'/' || bytes[i] == b'>')
        {
            i += 1;
        }
        // Its attributes, to its `>`.
        while i < bytes.len() && bytes[i] != b'>' {
            if bytes[i].is_ascii_whitespace() || bytes[i] == b'/' {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && !(bytes[i].is_ascii_whitespace() || b"/>=".contains(&bytes[i]))
            {
                i += 1;
            }
            let name = &lower[start..i];
            if bad(name) {
                return Some(name.to_owned());
            }
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if bytes.get(i) == Some(&b'=') {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
                match bytes.get(i) {
                    Some(&q) if q == b'"' || q == b'\'' => {
                        i += 1;
                        while i < bytes.len() && bytes[i] != q {
                            i += 1;
                        }
                        i += 1;
                    }
                    _ => {
                        while i < bytes.len()
                            && !(bytes[i].is_ascii_whitespace() || bytes[i] == b'>')
                        {
                            i += 1;
                        }
                    }
                }
            }
        }
    }
    None
}

/// The pages an instance holds, by show, each under the version it was read at: read again
/// only when the show's meta names another. Bounded: past [`HELD`] shows it starts afresh.
#[derive(Default)]
pub(crate) struct PageCache {
    pages: Mutex<HashMap<String, Arc<ShopPage>>>,
    files: Mutex<HashMap<String, bytes::Bytes>>,
}

/// How many shows' pages an instance holds at once (each at most a 64 KiB template and
/// 1,000 words of 2,000 characters).
const HELD: usize = 256;
/// How many bytes of page files an instance holds at once.
const HELD_FILE_BYTES: usize = 64 * 1024 * 1024;

impl PageCache {
    /// The page of `show` held at `version`.
    pub(crate) fn get(&self, show: &ShowId, version: &str) -> Option<Arc<ShopPage>> {
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages
            .get(show.as_str())
            .filter(|p| p.version == version)
            .cloned()
    }

    pub(crate) fn put(&self, show: &ShowId, page: Arc<ShopPage>) {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if pages.len() >= HELD {
            pages.clear();
        }
        pages.insert(show.to_string(), page);
    }

    /// A page file by its hashed name (files never change under one name).
    pub(crate) fn file(&self, hashed: &str) -> Option<bytes::Bytes> {
        let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        files.get(hashed).cloned()
    }

    pub(crate) fn put_file(&self, hashed: &str, bytes: bytes::Bytes) {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let held: usize = files.values().map(|b| b.len()).sum();
        if held + bytes.len() > HELD_FILE_BYTES {
            files.clear();
        }
        files.insert(hashed.to_owned(), bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(template: &str) -> PageDocument {
        PageDocument {
            template: Some(template.to_owned()),
            ..PageDocument::default()
        }
    }

    #[test]
    fn a_template_with_script_or_a_handler_or_escaping_off_is_refused() {
        for bad in [
            "{{ head }}<SCRIPT>alert(1)</SCRIPT>{{ queue }}",
            "{{ head }}<img src=x onerror=alert(1)>{{ queue }}",
            "{{ head }}<a href=\"JavaScript:alert(1)\">x</a>{{ queue }}",
            "{{ head }}<div\nonclick = \"x\">{{ queue }}</div>",
            "{% autoescape false %}{{ head }}{% endautoescape %}{{ queue }}",
            "{{ head }}{{ queue|safe }}",
            "{{ head }}<iframe src=/></iframe>{{ queue }}",
            "{{ head }}<style>body{}</style>{{ queue }}",
            "{{ head }}{% include 'queue.html' %}",
        ] {
            let result = check(&page(bad)).and_then(|stored| {
                // Parsing passes for the last two: rendering is what refuses them.
                let shop = ShopPage::from_stored(&stored).ok_or(Refused("no".into()))?;
                let ctx = minijinja::context! { head => "", queue => "" };
                match shop.render(ctx) {
                    Some(Ok(_)) => Ok(()),
                    _ => Err(Refused("render".into())),
                }
            });
            assert!(result.is_err(), "{bad}");
        }
        // What a reviewer tried: work without bound, a parser's stack, reading our HTML (a
        // fan's ticket, the nonce), a banned word split by a comment, the queue made inert.
        for bad in [
            "{{ head }}{% set a = 'x' * 100000000 %}{{ queue }}",
            "{{ head }}{{ 'x' ~ 'y' }}{{ queue }}",
            "{{ head }}{% for i in range(9) %}{% endfor %}{{ queue }}",
            "{{ head }}{{ x.a.a.a }}{{ queue }}",
            "{{ head }}{{ queue|split('data-ticket') }}",
            "{{ head }}{% if 'nonce' in head %}{% endif %}{{ queue }}",
            "{{ head }}{% if state == 'waiting' %}{{ queue }}",
            "{{ head }}<meta http-e{##}quiv=\"refresh\" content=\"0;url=/\">{{ queue }}",
            "{{ head }}{% macro m() %}{% endmacro %}{{ queue }}",
            "{{ head }}{{ t(state) }}{{ queue }}",
            "{{ head }}{{ t('k', n=queue) }}{{ queue }}",
        ] {
            assert!(check(&page(bad)).is_err(), "{bad}");
        }
        let fine_choice = "{{ head }}{% if state == 'waiting' and not (lang == \"ar\" or dir != 'rtl') %}\
                           <p>{{ t('wait.waiting.ahead', n=3, show=show) }}</p>{% elif show == 'x' %}\
                           {% else %}{{ file('logo.png') }}{% endif %}{{ queue }}";
        assert!(check_syntax(fine_choice).is_ok());
        let fine = "<!doctype html><html><head>{{ head }}</head><body class=\"one\">\
                    <p data-online=\"yes\">{{ t('wait.new.join') }}</p>{{ queue }}</body></html>";
        assert!(check(&page(fine)).is_ok());
    }

    #[test]
    fn words_and_files_are_held_to_the_catalog() {
        let mut doc = PageDocument::default();
        doc.messages.insert(
            "fr".into(),
            BTreeMap::from([("wait.new.join".into(), Message::Text("Entrer".into()))]),
        );
        assert!(check(&doc).is_ok());
        doc.messages.insert(
            "fr".into(),
            BTreeMap::from([("wait.new.join".into(), Message::Text("{evil}".into()))]),
        );
        assert!(check(&doc).unwrap_err().0.contains("placeholders"));
        doc.messages.clear();
        doc.messages.insert(
            "xx".into(),
            BTreeMap::from([("wait.new.join".into(), Message::Text("x".into()))]),
        );
        assert!(check(&doc).is_err());
        doc.messages.clear();
        doc.files.insert("logo.exe".into(), "AAAA".into());
        assert!(check(&doc).unwrap_err().0.contains("images"));
        doc.files.clear();
        doc.files.insert("logo.png".into(), "not base64!".into());
        assert!(check(&doc).unwrap_err().0.contains("base64"));
        doc.files.clear();
        doc.files.insert("logo.png".into(), "iVBORw0KGgo=".into());
        let stored = check(&doc).unwrap();
        assert_eq!(stored.files.len(), 1);
        assert!(stored.files[0].0.ends_with(".png"));
    }

    #[test]
    fn a_render_that_leaves_the_queue_inert_or_hidden_is_refused() {
        let (head, queue, languages) =
            ("<link h>", "<div id=\"wait\"><p id=\"eta\"></p></div>", "");
        let page = |middle: &str| format!("<html><head>{head}</head><body>{middle}</body></html>");
        assert!(check_render(&page(queue), head, queue, languages).is_ok());
        for bad in [
            format!("<!-- {queue} -->"),
            format!("<template>{queue}</template>"),
            format!("<textarea>{queue}</textarea>"),
            format!("<p title=\"{queue}\">"),
            format!("<div hidden>{queue}</div>"),
            format!("<div aria-hidden=\"true\">{queue}</div>"),
            format!("<div id=\"wait\"></div>{queue}"),
            format!("<p id=eta>9</p>{queue}"),
            format!("<img title=\">\" onerror=\"x\" src=y>{queue}"),
            format!("<iframe></iframe>{queue}"),
        ] {
            assert!(
                check_render(&page(&bad), head, queue, languages).is_err(),
                "{bad}"
            );
        }
        // A template's own words may say "hidden" or "wait" as text.
        let fine = format!("<p class=\"note\">Nothing is hidden; wait here.</p>{queue}");
        assert!(check_render(&page(&fine), head, queue, languages).is_ok());
    }

    #[test]
    fn handler_attributes_are_found_only_in_tags() {
        assert_eq!(
            handler_attribute("<img src=x onerror=y>"),
            Some("onerror".into())
        );
        assert_eq!(handler_attribute("<p>turn on = off</p>"), None);
        assert_eq!(handler_attribute("<p data-on=\"1\" class=\"on\">"), None);
        assert_eq!(handler_attribute("<svg/onload=x>"), Some("onload".into()));
    }
}
