//! A show's own waiting page (`PUT …/{showId}/page`): the shop's template around our queue,
//! its words by language, its files served by hash; every refusal of a page that would run
//! script, lose the queue or break in some state or language, each leaving the page kept as
//! it was; the fan's language (`?lang=`, the `wr_lang` cookie, `Accept-Language`, the page's
//! default) with its digits and direction; the page as JSON for apps; the CSP nonce of the
//! page's one script; hostile languages; and the page across instances and after Redis lost it.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use waiting_room::config::Config;
use waiting_room::protocol::routes;

use crate::support::api::Api;
use crate::support::app::{config, spawn_app, spawn_app_configured, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::{ticket_id, unique_show};

both_stores!(
    a_page_is_set_read_replaced_and_deleted_and_its_files_served_by_hash,
    a_bad_page_is_refused_with_why_and_changes_nothing,
    a_preview_renders_a_page_in_any_state_and_keeps_nothing,
    a_shows_own_words_replace_the_catalogs_escaped,
    the_language_is_the_fans_choice_then_the_browsers_then_the_pages,
    the_page_as_json_is_the_same_whatever_the_language,
    each_page_allows_only_its_own_script_by_a_fresh_nonce,
    hostile_languages_give_the_english_page_and_echo_nothing,
    a_deleted_show_takes_its_page_with_it,
);

/// A shop's page around our queue: a banner before it, a footer after it, a logo and a style
/// sheet of its own, the fan's language and direction.
const SHOP: &str = r#"<!doctype html>
<html lang="{{ lang }}" dir="{{ dir }}">
<head><meta charset="utf-8"><title>{{ title }}</title>
{{ head }}<link rel="stylesheet" href="{{ file('shop.css') }}"></head>
<body class="acme">
<header><img src="{{ file('logo.png') }}" alt="ACME"><p>ACME-BANNER-V1</p>{{ languages }}</header>
<main>{{ queue }}</main>
<footer>ACME-FOOTER state={{ state }} {{ t("site.brand") }}</footer>
</body></html>"#;

/// The bytes of the shop's logo (a PNG's signature and then some).
fn logo() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..=255u8).cycle().take(3000));
    bytes
}

const CSS: &str = "body.acme { color: #123456; }\n";

/// A page of the shop's template (`SHOP`), with its logo and style sheet.
fn shop_page() -> Value {
    json!({
        "template": SHOP,
        "files": {"logo.png": STANDARD.encode(logo()), "shop.css": STANDARD.encode(CSS)},
    })
}

/// A template that places head and queue and `inside` before the queue.
fn with(inside: &str) -> String {
    format!(
        "<!doctype html><html><head>{{{{ head }}}}</head><body>{inside}{{{{ queue }}}}</body></html>"
    )
}

/// Where a file of `bytes` is served for `show`: by the first 16 bytes of its SHA-256.
fn served_at(show: &str, bytes: &[u8], ext: &str) -> String {
    let hash = hex::encode(&Sha256::digest(bytes)[..16]);
    format!("/wait/{show}/files/{hash}.{ext}")
}

async fn put_page(api: &Api, show: &str, body: &Value) -> Response {
    let path = routes::show(routes::PAGE, show);
    api.as_operator(Method::PUT, &path)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Sets the page (asserting 200); the page as kept.
async fn set_page(api: &Api, show: &str, body: &Value) -> Value {
    let r = put_page(api, show, body).await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "PUT page of {show}: {text}");
    serde_json::from_str(&text).unwrap()
}

async fn get_page(api: &Api, show: &str) -> Response {
    let path = routes::show(routes::PAGE, show);
    api.as_operator(Method::GET, &path).send().await.unwrap()
}

async fn delete_page(api: &Api, show: &str) -> Response {
    let path = routes::show(routes::PAGE, show);
    api.as_operator(Method::DELETE, &path).send().await.unwrap()
}

async fn preview(api: &Api, show: &str, query: &str, body: &Value) -> Response {
    let path = format!("{}{query}", routes::show(routes::PAGE_PREVIEW, show));
    api.as_operator(Method::POST, &path)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// One answer of the waiting page, read whole.
struct Page {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Page {
    /// The `<html lang dir>` of the page.
    fn lang(&self) -> (String, String) {
        let attr = |name: &str| {
            let tag = &self.body[self.body.find("<html").expect("an <html> tag")..];
            let tag = &tag[..tag.find('>').unwrap()];
            let at = tag.find(&format!(" {name}=\"")).map(|i| i + name.len() + 3);
            at.map(|i| tag[i..].split('"').next().unwrap().to_owned())
                .unwrap_or_default()
        };
        (attr("lang"), attr("dir"))
    }

    /// The `Set-Cookie` of the language, if any.
    fn lang_cookie(&self) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|c| c.starts_with("wr_lang="))
    }

    /// The words handed to the page's script (its `application/json` island).
    fn island(&self) -> Value {
        let start = self.body.find("id=\"wr-messages\">").expect("the island") + 17;
        let end = start + self.body[start..].find("</script>").unwrap();
        serde_json::from_str(&self.body[start..end]).expect("the island is JSON")
    }

    /// The text of the element with `id`, up to its first tag.
    fn text_of(&self, id: &str) -> &str {
        let at = self.body.find(&format!("id=\"{id}\"")).expect(id);
        let rest = &self.body[at..];
        let rest = &rest[rest.find('>').unwrap() + 1..];
        &rest[..rest.find('<').unwrap()]
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// `GET /wait/{show}{query}` with `headers` (values as bytes: some tests send what no
/// browser would).
async fn wait(api: &Api, show: &str, query: &str, headers: &[(&str, &[u8])]) -> Page {
    let mut req = api
        .client
        .get(api.url(&format!("{}{query}", routes::show(routes::WAIT_PAGE, show))));
    for (name, value) in headers {
        req = req.header(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_bytes(value).unwrap(),
        );
    }
    let r = req.send().await.unwrap();
    Page {
        status: r.status(),
        headers: r.headers().clone(),
        body: r.text().await.unwrap(),
    }
}

/// The waiting page in HTML, asserting 200.
async fn html(api: &Api, show: &str, query: &str, headers: &[(&str, &[u8])]) -> Page {
    let page = wait(api, show, query, headers).await;
    assert_eq!(page.status, StatusCode::OK, "{show}{query}: {}", page.body);
    assert!(
        page.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{:?}",
        page.headers
    );
    page
}

/// The waiting page as JSON, asserting 200.
async fn as_json(api: &Api, show: &str, query: &str, headers: &[(&str, &[u8])]) -> Value {
    let mut all = vec![("accept", b"application/json".as_slice())];
    all.extend_from_slice(headers);
    let page = wait(api, show, query, &all).await;
    assert_eq!(page.status, StatusCode::OK, "{show}{query}: {}", page.body);
    assert_eq!(page.headers["content-type"], "application/json");
    page.json()
}

/// Asserts `r` is `status` and its message says `word`.
async fn refused(r: Response, status: StatusCode, word: &str, what: &str) {
    let got = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(got, status, "{what}: {text}");
    assert!(text.contains(word), "{what}: {word:?} not in {text}");
}

/// `GET path`, read whole: status, headers, bytes.
async fn fetch(
    api: &Api,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut req = api.client.get(api.url(path));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let r = req.send().await.unwrap();
    let (status, headers) = (r.status(), r.headers().clone());
    (status, headers, r.bytes().await.unwrap().to_vec())
}

/// Asserts the file at `path` is `bytes` of `kind`, served as the same forever, and that a
/// browser holding it is answered 304.
async fn served(api: &Api, path: &str, bytes: &[u8], kind: &str) {
    let (status, headers, body) = fetch(api, path, &[]).await;
    assert_eq!(status, StatusCode::OK, "{path}");
    assert_eq!(body, bytes, "{path}");
    assert_eq!(headers["content-type"], kind, "{path}");
    assert_eq!(
        headers["cache-control"], "public, max-age=31536000, immutable",
        "{path}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let hash = path.rsplit('/').next().unwrap().split('.').next().unwrap();
    assert_eq!(etag, format!("\"{hash}\""), "{path}");
    let (status, headers, body) = fetch(api, path, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED, "{path}");
    assert!(body.is_empty());
    assert_eq!(headers["etag"], etag.as_str());
    // Another ETag is not the file's: the bytes again.
    let (status, _, body) = fetch(api, path, &[("if-none-match", "\"0000\"")]).await;
    assert_eq!((status, body.as_slice()), (StatusCode::OK, bytes), "{path}");
}

/// Whether the waiting page is the shop's (its banner) or the built-in one (its bar).
fn is_shops(page: &Page, banner: &str) -> bool {
    let shops = page.body.contains(banner);
    assert_eq!(
        shops,
        !page.body.contains("<header class=\"bar\">"),
        "the shop's page or the built-in one, never both: {}",
        page.body
    );
    shops
}

async fn a_page_is_set_read_replaced_and_deleted_and_its_files_served_by_hash(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("page");
    app.create(&show).await;
    // The built-in page, and no page of its own to read or delete.
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        delete_page(&app, &show).await.status(),
        StatusCode::NOT_FOUND
    );
    let built_in = html(&app, &show, "", &[]).await;
    assert!(!is_shops(&built_in, "ACME-BANNER"));

    // Set: kept as sent, its files by the path each is served at (by its bytes' hash). A
    // badge no template names is kept too (and fetched by nobody here, see below).
    let badge = b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
    let mut first = shop_page();
    first["files"]["Badge.SVG"] = json!(STANDARD.encode(badge));
    let kept = set_page(&app, &show, &first).await;
    let logo_at = served_at(&show, &logo(), "png");
    let css_at = served_at(&show, CSS.as_bytes(), "css");
    let badge_at = served_at(&show, badge, "svg");
    assert_eq!(
        kept,
        json!({"template": SHOP,
               "files": {"logo.png": logo_at, "shop.css": css_at, "Badge.SVG": badge_at}})
    );
    let r = get_page(&app, &show).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), kept);
    // Sent again, the same page: the same answer.
    assert_eq!(set_page(&app, &show, &first).await, kept);

    // The waiting page is the shop's around our queue, linking its files.
    let page = html(&app, &show, "", &[]).await;
    assert!(is_shops(&page, "ACME-BANNER-V1"));
    let banner = page.body.find("ACME-BANNER-V1").unwrap();
    let queue = page.body.find("<div id=\"wait\"").expect("our queue");
    let footer = page
        .body
        .find("ACME-FOOTER state=new waiting-room")
        .unwrap();
    assert!(banner < queue && queue < footer, "{}", page.body);
    assert_eq!(page.body.matches("<div id=\"wait\"").count(), 1);
    assert!(
        page.body
            .contains(&format!("<img src=\"{logo_at}\" alt=\"ACME\">"))
    );
    assert!(page.body.contains(&format!("href=\"{css_at}\"")));
    assert_eq!(page.lang(), ("en".into(), "ltr".into()));

    // The files: their bytes, typed, immutable, by ETag.
    served(&app, &logo_at, &logo(), "image/png").await;
    served(&app, &css_at, CSS.as_bytes(), "text/css; charset=utf-8").await;
    let unknown = served_at(&show, b"never sent", "png");
    // A name the show never had is unknown, whatever ETag the browser says it holds.
    let unknown_etag = format!(
        "\"{}\"",
        unknown
            .rsplit('/')
            .next()
            .unwrap()
            .split('.')
            .next()
            .unwrap()
    );
    let (status, _, _) = fetch(&app, &unknown, &[("if-none-match", &unknown_etag)]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{unknown} {unknown_etag}");
    for path in [
        unknown.clone(),
        logo_at.replace(".png", ".exe"),
        logo_at.replace(".png", ""),
        format!("/wait/{show}/files/not-a-hash.png"),
        format!("/wait/{show}/files/..%2F..%2Fetc%2Fpasswd"),
        // Another show's path to the same bytes.
        logo_at.replace(&show, "another-show"),
    ] {
        let (status, _, _) = fetch(&app, &path, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }

    // Replaced: a new template and other bytes under the same name; the old style sheet gone.
    let v2 = SHOP.replace("ACME-BANNER-V1", "ACME-BANNER-V2").replace(
        "<link rel=\"stylesheet\" href=\"{{ file('shop.css') }}\">",
        "",
    );
    let logo2 = b"GIF89a a second logo".to_vec();
    let kept2 = set_page(
        &app,
        &show,
        &json!({"template": v2, "files": {"logo.png": STANDARD.encode(&logo2)}}),
    )
    .await;
    let logo2_at = served_at(&show, &logo2, "png");
    assert_eq!(kept2["files"], json!({"logo.png": logo2_at}));
    assert_ne!(logo2_at, logo_at);
    // The instance that held version 1 shows version 2: its version changed with it.
    let page = html(&app, &show, "", &[]).await;
    assert!(is_shops(&page, "ACME-BANNER-V2"), "{}", page.body);
    assert!(!page.body.contains("ACME-BANNER-V1"));
    assert!(page.body.contains(&logo2_at) && !page.body.contains(&logo_at));
    served(&app, &logo2_at, &logo2, "image/png").await;
    // A file of the page replaced, never fetched on this instance, is gone with it.
    assert_eq!(fetch(&app, &badge_at, &[]).await.0, StatusCode::NOT_FOUND);
    // The same template with other words is another version too.
    set_page(
        &app,
        &show,
        &json!({"template": v2, "files": {"logo.png": STANDARD.encode(&logo2)},
                "messages": {"en": {"site.brand": "ACME-BRAND"}}}),
    )
    .await;
    let page = html(&app, &show, "", &[]).await;
    assert!(
        page.body.contains("ACME-FOOTER state=new ACME-BRAND"),
        "{}",
        page.body
    );

    // Deleted: the built-in page again, nothing to read, nothing to delete twice.
    let r = delete_page(&app, &show).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        delete_page(&app, &show).await.status(),
        StatusCode::NOT_FOUND
    );
    let page = html(&app, &show, "", &[]).await;
    assert!(!is_shops(&page, "ACME-BANNER"));
    assert!(!page.body.contains("ACME-BRAND"));
    // Its logo, fetched (so held) on this instance, is gone with it: a file is served only
    // while the show's page has it.
    assert_eq!(fetch(&app, &logo2_at, &[]).await.0, StatusCode::NOT_FOUND);
    // A link's `?return=` is kept by the language picker, and whatever it holds never reads
    // as a handler or a script link to the render's check: the shop's page stays.
    set_page(&app, &show, &shop_page()).await;
    for query in [
        "?return=/checkout%20onclick=alert(1)",
        "?return=/javascript:alert(1)",
        "?return=/x%22%20onmouseover=%22y",
    ] {
        let page = html(&app, &show, query, &[]).await;
        assert!(is_shops(&page, "ACME-BANNER-V1"), "{query}: {}", page.body);
    }
    delete_page(&app, &show).await;
    // Set again after a delete: the shop's page again (the instance did not keep "none").
    set_page(&app, &show, &shop_page()).await;
    assert!(is_shops(
        &html(&app, &show, "", &[]).await,
        "ACME-BANNER-V1"
    ));
    app.stop().await;
}

async fn a_bad_page_is_refused_with_why_and_changes_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("refuse");
    app.create(&show).await;
    let kept = set_page(&app, &show, &shop_page()).await;
    let file = |name: &str, len: usize| json!({ name: STANDARD.encode(vec![7u8; len]) });
    let many: serde_json::Map<String, Value> = (0..9)
        .map(|i| (format!("f{i}.png"), json!(STANDARD.encode([i as u8]))))
        .collect();
    let heavy: serde_json::Map<String, Value> = (0..5)
        .map(|i| {
            (
                format!("big{i}.woff2"),
                json!(STANDARD.encode(vec![i as u8; 500 * 1024])),
            )
        })
        .collect();
    let bad: Vec<(&str, Value, &str)> = vec![
        // Script of its own, however written.
        (
            "script",
            json!({"template": with("<SCRIPT>alert(1)</SCRIPT>")}),
            "script",
        ),
        (
            "script tag with attributes",
            json!({"template": with("<script\nsrc=//evil.example/x.js></script>")}),
            "script",
        ),
        (
            "handler",
            json!({"template": with("<img src=x onerror=alert(1)>")}),
            "event handlers",
        ),
        (
            "handler on a new line",
            json!({"template": with("<div\nonclick = \"x()\">hi</div>")}),
            "event handlers",
        ),
        (
            "svg handler",
            json!({"template": with("<svg/onload=alert(1)>")}),
            "event handlers",
        ),
        (
            "javascript link",
            json!({"template": with("<a href=\" JavaScript:alert(1)\">x</a>")}),
            "javascript:",
        ),
        (
            "iframe",
            json!({"template": with("<iframe src=\"/\"></iframe>")}),
            "frame",
        ),
        (
            "style",
            json!({"template": with("<style>body{}</style>")}),
            "style sheet",
        ),
        (
            "base",
            json!({"template": with("<base href=\"//evil.example/\">")}),
            "base",
        ),
        (
            "meta refresh",
            json!({"template": with("<meta http-equiv=\"refresh\" content=\"0;url=//evil.example\">")}),
            "http-equiv",
        ),
        (
            "escaping off",
            json!({"template": "{% autoescape false %}{{ head }}{% endautoescape %}<body>{{ queue }}</body>"}),
            "escaping",
        ),
        // No filter at all (`safe` least of all), no loop, no operator: what a template may
        // say is known before it runs.
        (
            "safe filter",
            json!({"template": with("{{ title|safe }}")}),
            "no filter",
        ),
        (
            "a missing file",
            json!({"template": with("<img src=\"{{ file('nope.png') }}\">")}),
            "nope.png",
        ),
        (
            "a runaway loop",
            json!({"template": with("{% for i in range(10000) %}{% for j in range(10000) %}{{ i }}{% endfor %}{% endfor %}")}),
            "if, elif, else and endif only",
        ),
        (
            "no parse",
            json!({"template": with("{% if %}")}),
            "a condition compares",
        ),
        // What a reviewer tried: unbounded work, a parser's stack, reading our HTML for a
        // fan's ticket, a banned word split by a comment, the queue made inert or faked.
        (
            "a string grown without bound",
            json!({"template": with("{% set a = 'x' * 100000000 %}")}),
            "operator",
        ),
        (
            "a deep chain",
            json!({"template": with(&format!("{{{{ x{} }}}}", ".a".repeat(11_000)))}),
            "characters",
        ),
        (
            "the ticket read from the queue",
            json!({"template": "{{ head }}{% if 'data-ticket' in queue %}x{% endif %}{{ queue }}"}),
            "a condition compares",
        ),
        (
            "a refresh split by a comment",
            json!({"template": with("<meta http-e{##}quiv=\"refresh\" content=\"0;url=/\">")}),
            "http-equiv",
        ),
        (
            "the queue in a comment",
            json!({"template": "<html><head>{{ head }}</head><body><!-- {{ queue }} --></body></html>"}),
            "in a comment",
        ),
        (
            "the queue hidden",
            json!({"template": "<html><head>{{ head }}</head><body><div hidden>{{ queue }}</div></body></html>"}),
            "hide",
        ),
        (
            "the head in an attribute",
            json!({"template": "<html><head><meta name=\"x\" content=\"{{ head }}\"></head><body>{{ queue }}</body></html>"}),
            "inside a tag",
        ),
        (
            "a widget's id taken",
            json!({"template": with("<div id=\"wait\"></div>")}),
            "the queue's own",
        ),
        (
            "a handler behind a quoted >",
            json!({"template": with("<img title=\">\" onerror=\"x\" src=\"/n.png\">")}),
            "event handlers",
        ),
        (
            "an override that drops the count",
            json!({"messages": {"en": {"wait.waiting.ahead": "You are next!"}}}),
            "says no {n}",
        ),
        // Our head and queue, once each, in every state.
        (
            "no head",
            json!({"template": "<html><body>{{ queue }}</body></html>"}),
            "{{ head }}",
        ),
        (
            "no queue",
            json!({"template": "<html><head>{{ head }}</head></html>"}),
            "{{ queue }}",
        ),
        (
            "two queues",
            json!({"template": with("{{ queue }}")}),
            "once",
        ),
        ("two heads", json!({"template": with("{{ head }}")}), "once"),
        (
            "queue in one state",
            json!({"template": "{{ head }}{% if state == 'waiting' %}{{ queue }}{% endif %}"}),
            "every state",
        ),
        (
            "too long",
            json!({"template": with(&"x".repeat(64 * 1024))}),
            "bytes",
        ),
        // Words: the catalog's keys, placeholders and plural forms.
        (
            "unknown key",
            json!({"messages": {"en": {"wait.no.such.key": "x"}}}),
            "no message is called",
        ),
        (
            "unknown placeholder",
            json!({"messages": {"fr": {"wait.new.join": "Entrez {evil}"}}}),
            "placeholders",
        ),
        (
            "a placeholder of another message",
            json!({"messages": {"en": {"wait.new.join": "Join {show}"}}}),
            "placeholders",
        ),
        (
            "bad plural form",
            json!({"messages": {"en": {"wait.waiting.ahead": {"few": "{n} few", "other": "{n} ahead"}}}}),
            "plural form",
        ),
        (
            "plural without other",
            json!({"messages": {"fr": {"wait.waiting.ahead": {"one": "{n} devant"}}}}),
            "other",
        ),
        (
            "a message too long",
            json!({"messages": {"en": {"wait.new.join": "j".repeat(2001)}}}),
            "characters",
        ),
        (
            "unknown language",
            json!({"messages": {"de": {"wait.new.join": "Anstellen"}}}),
            "none of",
        ),
        (
            "a region is no language",
            json!({"messages": {"fr-CA": {"wait.new.join": "Entrer"}}}),
            "none of",
        ),
        (
            "unknown default language",
            json!({"defaultLanguage": "de"}),
            "defaultLanguage",
        ),
        // Files: names, types, base64, sizes.
        (
            "a path for a name",
            json!({"files": {"../evil.png": "AAAA"}}),
            "name",
        ),
        (
            "a hidden name",
            json!({"files": {".hidden.css": "AAAA"}}),
            "name",
        ),
        (
            "a space in a name",
            json!({"files": {"my logo.png": "AAAA"}}),
            "name",
        ),
        (
            "an html file",
            json!({"files": {"page.html": "AAAA"}}),
            "images",
        ),
        (
            "a script file",
            json!({"files": {"app.js": "AAAA"}}),
            "images",
        ),
        ("no extension", json!({"files": {"logo": "AAAA"}}), "images"),
        (
            "not base64",
            json!({"files": {"logo.png": "not base64!"}}),
            "base64",
        ),
        ("nine files", json!({"files": many}), "at most 8"),
        (
            "a file too big",
            json!({"files": file("big.png", 512 * 1024 + 1)}),
            "at most 524288",
        ),
        (
            "files too big together",
            json!({"files": heavy}),
            "together",
        ),
        // Not a page at all.
        (
            "an unknown field",
            json!({"template": SHOP, "script": "alert(1)"}),
            "unknown field",
        ),
        (
            "a template of the wrong type",
            json!({"template": 42}),
            "template",
        ),
    ];
    for (what, body, word) in &bad {
        let status = match *what {
            "an unknown field" | "a template of the wrong type" => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        refused(put_page(&app, &show, body).await, status, word, what).await;
        let r = get_page(&app, &show).await;
        assert_eq!(r.json::<Value>().await.unwrap(), kept, "after {what}");
        // The same refusal from the preview, which keeps nothing either.
        let r = preview(&app, &show, "", body).await;
        assert_eq!(r.status(), status, "preview of {what}");
    }
    // More than 4 MiB: 413, before anything is read.
    let huge = json!({"template": "x".repeat(4 << 20)});
    let r = put_page(&app, &show, &huge).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        preview(&app, &show, "", &huge).await.status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // Not JSON: 415.
    let r = app
        .as_operator(Method::PUT, &routes::show(routes::PAGE, &show))
        .body(SHOP)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // Without the operator's token, or with another: 401, for every call of the page.
    let path = routes::show(routes::PAGE, &show);
    let preview_path = routes::show(routes::PAGE_PREVIEW, &show);
    for (method, path) in [
        (Method::PUT, &path),
        (Method::GET, &path),
        (Method::DELETE, &path),
        (Method::POST, &preview_path),
    ] {
        let r = app
            .client
            .request(method.clone(), app.url(path))
            .json(&shop_page())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
        let r = app
            .client
            .request(method.clone(), app.url(path))
            .bearer_auth("not-the-token")
            .json(&shop_page())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    // A show nobody made: 404 to set, read and delete; a bad show id: 400.
    let nobody = unique_show("nobody");
    refused(
        put_page(&app, &nobody, &shop_page()).await,
        StatusCode::NOT_FOUND,
        "",
        "PUT nobody",
    )
    .await;
    assert_eq!(
        get_page(&app, &nobody).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        delete_page(&app, &nobody).await.status(),
        StatusCode::NOT_FOUND
    );
    for r in [
        put_page(&app, "a:b", &shop_page()).await,
        get_page(&app, "a:b").await,
        delete_page(&app, "a:b").await,
    ] {
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    }

    // Through all of it, the page kept is the one set first, and it is what fans see.
    let r = get_page(&app, &show).await;
    assert_eq!(r.json::<Value>().await.unwrap(), kept);
    let page = html(&app, &show, "", &[]).await;
    assert!(is_shops(&page, "ACME-BANNER-V1"));
    served(
        &app,
        &served_at(&show, &logo(), "png"),
        &logo(),
        "image/png",
    )
    .await;
    app.stop().await;
}

async fn a_preview_renders_a_page_in_any_state_and_keeps_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("preview");
    app.create(&show).await;
    // Every state a page is checked in, each shown as the page's state it is.
    for (state, shown) in [
        ("new", "new"),
        ("prequeue", "prequeue"),
        ("waiting", "waiting"),
        ("paused", "waiting"),
        ("full", "waiting"),
        ("admitted", "admitted"),
        ("closed", "closed"),
        ("ended", "ended"),
        ("sold_out", "ended"),
        ("lost", "lost"),
        ("away", "released"),
        ("unknown", "unknown"),
    ] {
        let r = preview(&app, &show, &format!("?state={state}"), &shop_page()).await;
        assert_eq!(r.status(), StatusCode::OK, "{state}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        // Shown in the console's frame: nothing of it runs.
        let csp = r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.contains("script-src 'none'"), "{csp}");
        let body = r.text().await.unwrap();
        assert!(body.contains("ACME-BANNER-V1"), "{state}: {body}");
        assert!(
            body.contains(&format!("ACME-FOOTER state={shown} ")),
            "{state}: {body}"
        );
        assert!(body.contains(&format!("data-state=\"{shown}\"")), "{state}");
    }
    // In a language, with the page's own words in it; the default: waiting, in English.
    let mut doc = shop_page();
    doc["messages"] = json!({"es": {"wait.admitted.heading": "ACME dice: es tu turno"}});
    let r = preview(&app, &show, "?state=admitted&lang=es", &doc).await;
    let body = r.text().await.unwrap();
    assert!(body.contains("<html lang=\"es\" dir=\"ltr\">"), "{body}");
    assert!(body.contains("ACME dice: es tu turno"), "{body}");
    let r = preview(&app, &show, "?state=admitted&lang=ar", &doc).await;
    let body = r.text().await.unwrap();
    assert!(body.contains("<html lang=\"ar\" dir=\"rtl\">"), "{body}");
    assert!(
        body.contains("حان دورك") && !body.contains("ACME dice"),
        "{body}"
    );
    let body = preview(&app, &show, "", &doc).await.text().await.unwrap();
    assert!(body.contains("<html lang=\"en\"") && body.contains("data-state=\"waiting\""));
    // Without a template: the built-in page with the words.
    let words = json!({"messages": {"fr": {"wait.new.join": "ACME: entrez"}}});
    let body = preview(&app, &show, "?state=new&lang=fr", &words)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("<header class=\"bar\">") && body.contains("ACME: entrez"),
        "{body}"
    );

    // A state, a language or a query it does not know: 400, saying which.
    refused(
        preview(&app, &show, "?state=sleeping", &doc).await,
        StatusCode::BAD_REQUEST,
        "state",
        "state",
    )
    .await;
    refused(
        preview(&app, &show, "?lang=de", &doc).await,
        StatusCode::BAD_REQUEST,
        "lang",
        "lang",
    )
    .await;
    refused(
        preview(&app, &show, "?lang=fr-CA", &doc).await,
        StatusCode::BAD_REQUEST,
        "lang",
        "a region",
    )
    .await;
    refused(
        preview(&app, &show, "?colour=red", &doc).await,
        StatusCode::BAD_REQUEST,
        "query",
        "query",
    )
    .await;

    // Nothing was kept: no page of its own, the built-in page for fans.
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    let page = html(&app, &show, "", &[]).await;
    assert!(!is_shops(&page, "ACME-BANNER"));
    let (status, _, _) = fetch(&app, &served_at(&show, &logo(), "png"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// A template that says the page's words with counts, between markers.
const COUNTS: &str = "<p class=\"cta\">{{ t('wait.new.join') }}</p>\
     <p class=\"count\">[{{ t('wait.waiting.ahead', n=1) }}|{{ t('wait.waiting.ahead', n=1234) }}|{{ t('wait.waiting.ahead', n=12345) }}]</p>";

/// What the template of [`COUNTS`] says between its markers.
fn counts(page: &Page) -> &str {
    let at = page.body.find("<p class=\"count\">[").expect("the counts") + 18;
    &page.body[at..at + page.body[at..].find("]</p>").unwrap()]
}

async fn a_shows_own_words_replace_the_catalogs_escaped(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("words");
    app.create(&show).await;
    let tickets = app.join_many(&show, 3).await;
    let hostile_lead = "<img src=x onerror=alert(1)>";
    let hostile_join = "</script><script>alert(2)</script>";
    let messages = json!({
        "fr": {
            "wait.new.join": "Prenez place chez ACME",
            "wait.waiting.ahead": {"one": "Un seul fan devant vous chez ACME.", "other": "{n} fans devant vous chez ACME."},
        },
        "en": {
            "wait.new.lead": hostile_lead,
            "wait.new.join": hostile_join,
            "wait.connecting": hostile_join,
        },
    });
    set_page(&app, &show, &json!({ "messages": messages })).await;

    // The built-in page, with the show's words in French only.
    let fr = html(&app, &show, "?lang=fr", &[]).await;
    assert!(!is_shops(&fr, "ACME-BANNER"));
    assert!(fr.body.contains("Prenez place chez ACME"), "{}", fr.body);
    // The script's island holds the words the script says (its own too), not the page's.
    assert_eq!(
        fr.island()["messages"]["wait.waiting.ahead"]["other"],
        "{n} fans devant vous chez ACME."
    );
    assert_eq!(fr.island()["messages"]["wait.new.join"], Value::Null);
    for lang in ["en", "es", "ar"] {
        let page = html(&app, &show, &format!("?lang={lang}"), &[]).await;
        assert!(!page.body.contains("Prenez place"), "{lang}");
    }
    let es = html(&app, &show, "?lang=es", &[]).await;
    assert!(es.body.contains("Unirme a la fila"));
    assert!(!es.body.contains("onerror") && !es.body.contains("alert("));

    // The hostile words are text, escaped, never markup: in the page and in its island.
    let en = html(&app, &show, "?lang=en", &[]).await;
    assert!(
        en.body.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{}",
        en.body
    );
    assert!(
        en.body
            .contains("&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;"),
        "{}",
        en.body
    );
    assert!(!en.body.contains("<img src=x"), "{}", en.body);
    assert!(!en.body.contains("<script>alert"), "{}", en.body);
    assert_eq!(en.body.matches("<script").count(), 2, "{}", en.body);
    assert_eq!(en.body.matches("</script>").count(), 2, "{}", en.body);
    let island = en.island();
    assert_eq!(island["messages"]["wait.connecting"], hostile_join);

    // A plural of the show's own: the fan's count picks its form.
    let ahead = |page: &Page| page.text_of("ahead").to_owned();
    let q = |lang: &str, t: &str| format!("?lang={lang}&ticket={t}");
    let second = html(&app, &show, &q("fr", &tickets[1]), &[]).await;
    assert_eq!(ahead(&second), "Un seul fan devant vous chez ACME.");
    let third = html(&app, &show, &q("fr", &tickets[2]), &[]).await;
    assert_eq!(ahead(&third), "2 fans devant vous chez ACME.");
    let first = html(&app, &show, &q("fr", &tickets[0]), &[]).await;
    assert_ne!(ahead(&first), "", "the first fan is told something");
    assert!(
        !ahead(&first).contains("ACME"),
        "nobody is ahead: not the plural"
    );
    let third_en = html(&app, &show, &q("en", &tickets[2]), &[]).await;
    assert_eq!(ahead(&third_en), "2 fans are ahead of you.");
    let third_ar = html(&app, &show, &q("ar", &tickets[2]), &[]).await;
    assert_eq!(ahead(&third_ar), "أمامك معجبان.");

    // A template's words are the same words, with numbers in each language's way.
    set_page(
        &app,
        &show,
        &json!({"template": with(COUNTS), "messages": messages}),
    )
    .await;
    let fr = html(&app, &show, "?lang=fr", &[]).await;
    assert!(
        fr.body
            .contains("<p class=\"cta\">Prenez place chez ACME</p>"),
        "{}",
        fr.body
    );
    assert_eq!(
        counts(&fr),
        "Un seul fan devant vous chez ACME.|1\u{202f}234 fans devant vous chez ACME.|12\u{202f}345 fans devant vous chez ACME."
    );
    let en = html(&app, &show, "?lang=en", &[]).await;
    assert!(
        en.body
            .contains("<p class=\"cta\">&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;</p>"),
        "{}",
        en.body
    );
    assert_eq!(
        counts(&en),
        "1 fan is ahead of you.|1,234 fans are ahead of you.|12,345 fans are ahead of you."
    );
    assert_eq!(en.body.matches("<script").count(), 2, "{}", en.body);
    let es = html(&app, &show, "?lang=es", &[]).await;
    assert_eq!(
        counts(&es),
        "Tienes 1 fan delante.|Tienes 1234 fans delante.|Tienes 12.345 fans delante."
    );
    let ar = html(&app, &show, "?lang=ar", &[]).await;
    assert_eq!(
        counts(&ar),
        "أمامك معجب واحد.|أمامك ١٬٢٣٤ معجبًا.|أمامك ١٢٬٣٤٥ معجبًا."
    );
    app.stop().await;
}

async fn the_language_is_the_fans_choice_then_the_browsers_then_the_pages(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("lang");
    app.create(&show).await;
    let lang_of = |page: &Page| page.lang().0;
    let al = |v: &'static str| [("accept-language", v.as_bytes())];

    // The browser's languages, by quality; what we do not ship is passed over.
    for (header, want) in [
        ("fr-CH, fr;q=0.9, en;q=0.8", "fr"),
        ("de-DE, es;q=0.7, en;q=0.5", "es"),
        ("en;q=0.3, ar-EG;q=0.9, fr;q=0.5", "ar"),
        ("ES", "es"),
        ("fr;q=0, en;q=0.1", "en"),
        ("fr;q=0, ar;q=0.5, *;q=0.9", "ar"),
        ("x-klingon, tlh;q=0.9, i-default", "en"),
        ("", "en"),
    ] {
        let page = html(&app, &show, "", &al(header)).await;
        assert_eq!(lang_of(&page), want, "Accept-Language: {header}");
        assert_eq!(page.island()["lang"], want);
        assert_eq!(page.lang_cookie(), None, "{header}");
        assert!(
            page.headers["vary"]
                .to_str()
                .unwrap()
                .contains("Accept-Language")
        );
    }
    let page = html(&app, &show, "", &[]).await;
    assert_eq!(page.lang(), ("en".into(), "ltr".into()));
    // The picker names the page's language.
    assert!(
        page.body
            .contains("<option value=\"en\" lang=\"en\" selected>")
    );
    let ar = html(&app, &show, "", &al("ar")).await;
    assert_eq!(ar.lang(), ("ar".into(), "rtl".into()));
    assert_eq!(ar.island()["dir"], "rtl");
    assert!(
        ar.body
            .contains("<option value=\"ar\" lang=\"ar\" selected>")
    );
    assert!(ar.body.contains("انضم إلى الطابور"));

    // `?lang=` wins over the browser, and is kept in a cookie for the next pages.
    let es = html(&app, &show, "?lang=es", &al("fr")).await;
    assert_eq!(lang_of(&es), "es");
    let cookie = es.lang_cookie().expect("the choice is kept");
    assert!(cookie.starts_with("wr_lang=es;"), "{cookie}");
    for part in ["Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=31536000"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    // A region of a shipped language is the language.
    let fr = html(&app, &show, "?lang=fr-BE", &[]).await;
    assert_eq!(lang_of(&fr), "fr");
    assert!(fr.lang_cookie().unwrap().starts_with("wr_lang=fr;"));
    // The cookie wins over the browser; `?lang=` over the cookie; a `?lang=` not shipped is
    // nothing, and keeps nothing.
    let cookie = |v: &'static str| ("cookie", v.as_bytes());
    let page = html(&app, &show, "", &[cookie("wr_lang=ar"), al("fr")[0]]).await;
    assert_eq!(page.lang(), ("ar".into(), "rtl".into()));
    assert_eq!(page.lang_cookie(), None);
    let page = html(
        &app,
        &show,
        "",
        &[cookie("theme=dark; wr_lang=es"), al("fr")[0]],
    )
    .await;
    assert_eq!(lang_of(&page), "es");
    let page = html(&app, &show, "?lang=fr", &[cookie("wr_lang=ar")]).await;
    assert_eq!(lang_of(&page), "fr");
    let page = html(
        &app,
        &show,
        "?lang=zz",
        &[cookie("wr_lang=ar"), al("fr")[0]],
    )
    .await;
    assert_eq!(lang_of(&page), "ar");
    assert_eq!(page.lang_cookie(), None);
    let page = html(&app, &show, "", &[cookie("wr_lang=zz"), al("es")[0]]).await;
    assert_eq!(lang_of(&page), "es");

    // The page's default: for a browser that asks for nothing we ship, never over one that does.
    set_page(&app, &show, &json!({"defaultLanguage": "es"})).await;
    assert_eq!(lang_of(&html(&app, &show, "", &[]).await), "es");
    assert_eq!(
        lang_of(&html(&app, &show, "", &al("de, it;q=0.5")).await),
        "es"
    );
    assert_eq!(
        lang_of(&html(&app, &show, "", &al("de, fr;q=0.1")).await),
        "fr"
    );
    assert_eq!(lang_of(&html(&app, &show, "", &al("en")).await), "en");
    assert_eq!(
        lang_of(&html(&app, &show, "", &[cookie("wr_lang=ar")]).await),
        "ar"
    );
    assert_eq!(lang_of(&html(&app, &show, "?lang=en", &[]).await), "en");
    // Another show keeps English as its default.
    let other = unique_show("lang-other");
    app.create(&other).await;
    assert_eq!(lang_of(&html(&app, &other, "", &al("de")).await), "en");

    // A fan's place in each language's digits.
    let tickets = app.join_many(&show, 12).await;
    let last = &tickets[11];
    let position = |page: &Page| page.text_of("position").to_owned();
    let ar = html(&app, &show, &format!("?ticket={last}&lang=ar"), &[]).await;
    assert_eq!(position(&ar), "١٢");
    assert_eq!(ar.text_of("ahead"), "أمامك ١١ معجبًا.");
    let en = html(&app, &show, &format!("?ticket={last}"), &al("en")).await;
    assert_eq!(position(&en), "12");
    assert_eq!(en.text_of("ahead"), "11 fans are ahead of you.");
    let fr = html(&app, &show, &format!("?ticket={last}"), &al("fr")).await;
    assert_eq!(fr.text_of("ahead"), "11 fans sont devant vous.");
    app.stop().await;
}

/// What a JSON page must hold whatever the show: its id and its links.
fn links_of(show: &str) -> Value {
    json!({
        "join": routes::show(routes::JOIN, show),
        "challenge": routes::show(routes::CHALLENGE, show),
        "draw": routes::show(routes::DRAW, show),
    })
}

async fn the_page_as_json_is_the_same_whatever_the_language(backend: Backend) {
    let app = spawn_app_with(backend, config(20, Duration::from_secs(300))).await;
    let show = unique_show("json");
    app.create(&show).await;
    // A show of its own page: JSON has no words, so it changes nothing there.
    set_page(
        &app,
        &show,
        &json!({"template": SHOP, "files": shop_page()["files"], "defaultLanguage": "ar",
                "messages": {"fr": {"wait.new.join": "ACME"}}}),
    )
    .await;

    // No ticket: `new`, with the show's links.
    let new = as_json(&app, &show, "", &[]).await;
    assert_eq!(
        new,
        json!({"showId": show, "state": "new", "open": false, "paused": false, "full": false,
               "accessCodes": false, "links": links_of(&show)})
    );
    for headers in [
        vec![("accept-language", b"fr".as_slice())],
        vec![("accept-language", b"ar;q=0.9, es".as_slice())],
        vec![("cookie", b"wr_lang=es".as_slice())],
        vec![("accept-language", b"\xff\xfe garbage;q=x".as_slice())],
    ] {
        assert_eq!(as_json(&app, &show, "", &headers).await, new, "{headers:?}");
    }
    assert_eq!(as_json(&app, &show, "?lang=ar", &[]).await, new);
    // Nor does it keep a language.
    let page = wait(&app, &show, "?lang=fr", &[("accept", b"application/json")]).await;
    assert_eq!(page.lang_cookie(), None);
    let vary = page.headers["vary"].to_str().unwrap().to_owned();
    assert!(vary.contains("Accept"), "{vary}");
    assert_eq!(page.headers["cache-control"], "no-store");

    // JSON only when ranked above HTML.
    for (accept, json_wanted) in [
        ("application/json", true),
        ("application/json, text/html;q=0.5", true),
        ("text/html;q=0.4, application/json;q=0.6", true),
        ("text/html, application/json", false),
        ("application/json;q=0.5, text/html", false),
        ("application/json;q=0", false),
        (
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            false,
        ),
        ("*/*", false),
    ] {
        let page = wait(&app, &show, "", &[("accept", accept.as_bytes())]).await;
        assert_eq!(page.status, StatusCode::OK, "{accept}");
        let kind = page.headers["content-type"].to_str().unwrap();
        assert_eq!(kind == "application/json", json_wanted, "{accept}: {kind}");
        assert_eq!(
            page.body.contains("ACME-BANNER-V1"),
            !json_wanted,
            "{accept}"
        );
    }

    // Waiting: the ticket as polled, and the links that follow it.
    let tickets = app.join_many(&show, 2).await;
    let t = &tickets[1];
    let waiting = as_json(&app, &show, &format!("?ticket={t}"), &[]).await;
    let polled = app.ticket_json(&show, t).await;
    assert_eq!(waiting["ticket"], polled, "{waiting}");
    assert_eq!(waiting["state"], "waiting");
    assert_eq!(waiting["ticket"]["position"], 2);
    let mut links = links_of(&show);
    links["ticket"] = json!(routes::ticket(routes::TICKET, &show, t));
    links["events"] = json!(routes::ticket(routes::EVENTS, &show, t));
    links["ws"] = json!(routes::ticket(routes::WS, &show, t));
    assert_eq!(waiting["links"], links);
    assert_eq!(waiting["open"], false);
    // The same whatever the language, by cookie or by the ticket's cookie too.
    let in_arabic = as_json(
        &app,
        &show,
        &format!("?ticket={t}&lang=ar"),
        &[("accept-language", b"ar")],
    )
    .await;
    assert_eq!(in_arabic, waiting);
    let cookie = format!("wr_ticket={t}");
    let by_cookie = as_json(
        &app,
        &show,
        "",
        &[("cookie", cookie.as_bytes()), ("accept-language", b"fr")],
    )
    .await;
    assert_eq!(by_cookie, waiting);
    // A ticket nobody holds: `unknown`.
    let nobody = uuid::Uuid::new_v4();
    let unknown = as_json(&app, &show, &format!("?ticket={nobody}"), &[]).await;
    assert_eq!(unknown["state"], "unknown", "{unknown}");
    assert_eq!(unknown["ticket"]["status"], "UNKNOWN", "{unknown}");

    // Admitted.
    app.open(&show).await;
    app.wait_admitted(&show, t, Duration::from_secs(10)).await;
    let admitted = as_json(&app, &show, &format!("?ticket={t}"), &[]).await;
    assert_eq!(admitted["state"], "admitted", "{admitted}");
    assert_eq!(admitted["open"], true);
    assert_eq!(admitted["ticket"]["status"], "ADMITTED");
    assert_eq!(admitted["ticket"]["ticketId"], t.as_str());
    let polled = app.ticket_json(&show, t).await;
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&admitted["ticket"]),
        keys(&polled),
        "{admitted} {polled}"
    );
    let fr = as_json(
        &app,
        &show,
        &format!("?ticket={t}"),
        &[("accept-language", b"fr")],
    )
    .await;
    assert_eq!(
        (&fr["state"], keys(&fr["ticket"])),
        (&admitted["state"], keys(&polled))
    );

    // Ended, with its reason: a fan still waiting is told so (an admitted one keeps its
    // admission, as above).
    let ending = unique_show("json-end");
    app.create(&ending).await;
    let waiting = ticket_id(&app.join_ok(&ending).await);
    let r = app
        .as_operator(Method::POST, &routes::show(routes::END, &ending))
        .json(&json!({"reason": "sold out"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let query = format!("?ticket={waiting}");
    let ended = as_json(&app, &ending, &query, &[]).await;
    assert_eq!(ended["state"], "ended", "{ended}");
    assert_eq!(ended["reason"], "sold out", "{ended}");
    assert_eq!(ended["open"], false, "{ended}");
    assert_eq!(ended["ticket"]["status"], "ENDED", "{ended}");
    assert_eq!(ended["ticket"], app.ticket_json(&ending, &waiting).await);
    let ended_ar = as_json(&app, &ending, &query, &[("accept-language", b"ar")]).await;
    assert_eq!(ended_ar, ended);
    let after = as_json(&app, &show, &format!("?ticket={t}"), &[]).await;
    assert_eq!(
        after["state"], "admitted",
        "the other show's admission stands: {after}"
    );

    // A show nobody made, or a bad id: JSON errors, not pages.
    for (path, status) in [
        (unique_show("nobody"), StatusCode::NOT_FOUND),
        ("a:b".into(), StatusCode::BAD_REQUEST),
    ] {
        let page = wait(&app, &path, "", &[("accept", b"application/json")]).await;
        assert_eq!(page.status, status, "{path}");
        assert!(
            page.headers["content-type"]
                .to_str()
                .unwrap()
                .contains("json"),
            "{path}"
        );
        assert!(page.json()["message"].is_string(), "{}", page.body);
    }
    app.stop().await;
}

/// The nonce the page's CSP allows scripts by.
fn csp_nonce(page: &Page) -> String {
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    let at = csp
        .find("script-src 'nonce-")
        .unwrap_or_else(|| panic!("{csp}"))
        + 18;
    let nonce = &csp[at..at + csp[at..].find('\'').unwrap()];
    assert!(nonce.len() >= 16, "{csp}");
    nonce.to_owned()
}

/// Asserts the page has our one script, by `nonce`, and no other but the words' island.
fn one_script(page: &Page, nonce: &str) {
    let scripts: Vec<&str> = page
        .body
        .match_indices("<script")
        .map(|(i, _)| {
            let tag = &page.body[i..];
            &tag[..tag.find('>').unwrap() + 1]
        })
        .collect();
    assert_eq!(scripts.len(), 2, "{scripts:?}");
    let ours = scripts
        .iter()
        .find(|s| s.contains(" src="))
        .unwrap_or_else(|| panic!("{scripts:?}"));
    assert!(
        ours.starts_with(&format!(
            "<script nonce=\"{nonce}\" src=\"/static/wait.js?v="
        )),
        "{ours}"
    );
    let island = scripts.iter().find(|s| !s.contains(" src=")).unwrap();
    assert_eq!(
        *island,
        "<script type=\"application/json\" id=\"wr-messages\">"
    );
    assert!(!island.contains("nonce"));
}

async fn each_page_allows_only_its_own_script_by_a_fresh_nonce(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("nonce");
    app.create(&show).await;
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..2 {
        if round == 1 {
            // The shop's page: the same script, by the same kind of nonce.
            set_page(&app, &show, &shop_page()).await;
        }
        for _ in 0..3 {
            let page = html(&app, &show, "", &[]).await;
            assert_eq!(is_shops(&page, "ACME-BANNER-V1"), round == 1);
            let nonce = csp_nonce(&page);
            one_script(&page, &nonce);
            assert!(seen.insert(nonce), "a nonce used twice");
            let csp = page.headers["content-security-policy"].to_str().unwrap();
            for part in [
                "default-src 'self'",
                "style-src 'self'",
                "object-src 'none'",
                "base-uri 'none'",
            ] {
                assert!(csp.contains(part), "{csp}");
            }
            assert!(!csp.contains("unsafe-inline"), "{csp}");
        }
    }
    // The ticket's pages too, in each language.
    let t = ticket_id(&app.join_ok(&show).await);
    for lang in ["en", "fr", "es", "ar"] {
        let page = html(&app, &show, &format!("?ticket={t}&lang={lang}"), &[]).await;
        let nonce = csp_nonce(&page);
        one_script(&page, &nonce);
        assert!(seen.insert(nonce));
    }
    app.stop().await;
}

async fn hostile_languages_give_the_english_page_and_echo_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("hostile");
    app.create(&show).await;
    let long = "q".repeat(6000);
    let many = "de, ".repeat(40) + "fr";
    let english = |page: &Page, what: &str| {
        assert_eq!(page.lang(), ("en".into(), "ltr".into()), "{what}");
        assert_eq!(page.lang_cookie(), None, "{what}");
        assert!(!page.body.contains("alert("), "{what}");
        assert!(!page.body.contains("qqqqqqqq"), "{what}");
        one_script(page, &csp_nonce(page));
    };
    for query in [
        format!("?lang={long}"),
        "?lang=%3Cscript%3Ealert(1)%3C%2Fscript%3E".into(),
        "?lang=%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E".into(),
        "?lang=fr%00".into(),
        "?lang=..%2F..%2Fetc%2Fpasswd".into(),
        "?lang=&lang=".into(),
        "?lang[]=fr".into(),
    ] {
        english(&html(&app, &show, &query, &[]).await, &query);
    }
    for header in [
        b"\xff\xfe\xfd;q=1".as_slice(),
        b";;;,,,q=,fr;q=2,es;q=-1,ar;q=NaN,de;q=inf".as_slice(),
        b"<script>alert(1)</script>".as_slice(),
        long.as_bytes(),
        // Only the first 32 entries are read.
        many.as_bytes(),
    ] {
        let what = String::from_utf8_lossy(&header[..header.len().min(40)]).into_owned();
        english(
            &html(&app, &show, "", &[("accept-language", header)]).await,
            &what,
        );
    }
    for cookie in [
        "wr_lang=<script>alert(1)</script>".to_owned(),
        format!("wr_lang={long}"),
        "wr_lang=\"fr\"".into(),
        "wr_lang=".into(),
    ] {
        english(
            &html(&app, &show, "", &[("cookie", cookie.as_bytes())]).await,
            &cookie,
        );
    }
    // And a hostile `?lang=` with a ticket, with a shop's page: the same.
    set_page(&app, &show, &shop_page()).await;
    let t = ticket_id(&app.join_ok(&show).await);
    let page = html(
        &app,
        &show,
        &format!("?ticket={t}&lang=%3Cscript%3Ealert(1)"),
        &[],
    )
    .await;
    assert!(is_shops(&page, "ACME-BANNER-V1"));
    english(&page, "with a ticket");
    app.stop().await;
}

async fn a_deleted_show_takes_its_page_with_it(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("gone");
    app.create(&show).await;
    set_page(&app, &show, &shop_page()).await;
    assert!(is_shops(
        &html(&app, &show, "", &[]).await,
        "ACME-BANNER-V1"
    ));
    let r = app.delete_show(&show).await;
    assert!(r.status().is_success(), "{}", r.status());
    // Gone with the show: no page to read, none to set.
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        wait(&app, &show, "", &[]).await.status,
        StatusCode::NOT_FOUND
    );
    refused(
        put_page(&app, &show, &shop_page()).await,
        StatusCode::NOT_FOUND,
        "",
        "a deleted show",
    )
    .await;
    let (status, _, _) = fetch(&app, &served_at(&show, &logo(), "png"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Made again under the same id: the built-in page, nothing of the old one.
    app.create(&show).await;
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    assert!(!is_shops(&html(&app, &show, "", &[]).await, "ACME-BANNER"));
    let (status, _, _) = fetch(&app, &served_at(&show, &logo(), "png"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// Two instances on one Redis: a page set, replaced or deleted on one is what the other
/// shows at once, each reading it again only when its version changed.
#[tokio::test]
async fn a_page_set_on_one_instance_is_shown_by_every_instance() {
    let a = spawn_app_with(Backend::Redis, Config::for_tests()).await;
    let redis = a.redis.as_ref().unwrap().server();
    let b = spawn_app_configured(Config {
        redis_url: Some(redis.url()),
        ..Config::for_tests()
    })
    .await;
    let show = unique_show("shared");
    a.create(&show).await;
    let version = || async {
        let v: Option<String> = ::redis::cmd("HGET")
            .arg(format!("wr:{{{show}}}:page"))
            .arg("version")
            .query_async(&mut redis.conn().await)
            .await
            .unwrap();
        v
    };
    // B shows the built-in page first (and holds no page of the show).
    assert!(!is_shops(&html(&b, &show, "", &[]).await, "ACME-BANNER"));
    assert_eq!(version().await, None);

    let kept = set_page(&a, &show, &shop_page()).await;
    let v1 = version().await.expect("a version");
    assert!(is_shops(&html(&b, &show, "", &[]).await, "ACME-BANNER-V1"));
    let r = get_page(&b, &show).await;
    assert_eq!(r.json::<Value>().await.unwrap(), kept);
    served(&b, &served_at(&show, &logo(), "png"), &logo(), "image/png").await;

    // Replaced on A: another version, which B shows at its next page.
    let v2_template = SHOP.replace("ACME-BANNER-V1", "ACME-BANNER-V2");
    let mut v2 = shop_page();
    v2["template"] = json!(v2_template);
    set_page(&a, &show, &v2).await;
    let v2_version = version().await.expect("a version");
    assert_ne!(v2_version, v1);
    let page = html(&b, &show, "", &[]).await;
    assert!(is_shops(&page, "ACME-BANNER-V2"), "{}", page.body);
    // The same page set again is the same version.
    set_page(&a, &show, &v2).await;
    assert_eq!(version().await.as_deref(), Some(v2_version.as_str()));
    // Words alone make another version too, and a file's bytes.
    let mut v3 = v2.clone();
    v3["messages"] = json!({"en": {"site.brand": "ACME-BRAND-3"}});
    set_page(&a, &show, &v3).await;
    let v3_version = version().await.unwrap();
    assert_ne!(v3_version, v2_version);
    assert!(html(&b, &show, "", &[]).await.body.contains("ACME-BRAND-3"));
    let mut v4 = v3.clone();
    v4["files"]["logo.png"] = json!(STANDARD.encode(b"another logo"));
    set_page(&a, &show, &v4).await;
    assert_ne!(version().await.unwrap(), v3_version);
    let logo_at = served_at(&show, b"another logo", "png");
    assert!(html(&b, &show, "", &[]).await.body.contains(&logo_at));
    served(&b, &logo_at, b"another logo", "image/png").await;

    // Deleted on B: the built-in page on A.
    assert_eq!(
        delete_page(&b, &show).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(version().await, None);
    assert!(!is_shops(&html(&a, &show, "", &[]).await, "ACME-BANNER"));
    assert_eq!(get_page(&a, &show).await.status(), StatusCode::NOT_FOUND);
    b.stop().await;
    a.stop().await;
}

/// What Redis forgets of a page: the page key alone (the built-in page, no error), or
/// everything (the show lost: 503 pages, never 500; re-opened, the built-in page).
#[tokio::test]
async fn a_page_redis_lost_falls_back_to_the_built_in_page() {
    let mut app = spawn_app_with(Backend::Redis, Config::for_tests()).await;
    let show = unique_show("forgot");
    app.open(&show).await;
    set_page(&app, &show, &shop_page()).await;
    assert!(is_shops(
        &html(&app, &show, "", &[]).await,
        "ACME-BANNER-V1"
    ));
    let t = ticket_id(&app.join_ok(&show).await);

    // The page's key alone is lost (the instance holds the page it read).
    let mut conn = app.redis.as_ref().unwrap().server().conn().await;
    let deleted: i64 = ::redis::cmd("DEL")
        .arg(format!("wr:{{{show}}}:page"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let page = html(&app, &show, "", &[]).await;
    assert!(
        !is_shops(&page, "ACME-BANNER"),
        "a page the store no longer has"
    );
    let page = html(&app, &show, &format!("?ticket={t}&lang=fr"), &[]).await;
    assert!(!is_shops(&page, "ACME-BANNER"));
    assert_eq!(page.lang().0, "fr");
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    let (status, _, _) = fetch(&app, &served_at(&show, CSS.as_bytes(), "css"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Set again: shown again.
    set_page(&app, &show, &shop_page()).await;
    assert!(is_shops(
        &html(&app, &show, "", &[]).await,
        "ACME-BANNER-V1"
    ));

    // Redis restarts with nothing: the show is lost, and its page says so (503), never 500.
    app.redis.as_mut().unwrap().server_mut().restart().await;
    // The instance finds out within a few checks: until then the page it knew, none (404)
    // or the store unreachable (503); never a failure of ours.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let json = wait(&app, &show, "", &[("accept", b"application/json")]).await;
        assert!(
            !json.status.is_server_error() || json.status == StatusCode::SERVICE_UNAVAILABLE,
            "{} {}",
            json.status,
            json.body
        );
        let message = json.json()["message"].as_str().unwrap_or("").to_owned();
        if json.status == StatusCode::SERVICE_UNAVAILABLE && message.contains("lost") {
            assert!(
                json.headers.contains_key("retry-after"),
                "{:?}",
                json.headers
            );
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the page never said the show was lost: {}",
            json.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let lost = wait(&app, &show, "", &[]).await;
    assert_eq!(
        lost.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        lost.body
    );
    assert!(
        lost.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        lost.headers.contains_key("retry-after"),
        "{:?}",
        lost.headers
    );
    assert!(!lost.body.contains("ACME-BANNER"));
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);

    // Re-opened: a new show, the built-in page.
    app.open(&show).await;
    let page = html(&app, &show, "", &[]).await;
    assert!(!is_shops(&page, "ACME-BANNER"));
    assert_eq!(get_page(&app, &show).await.status(), StatusCode::NOT_FOUND);
    set_page(&app, &show, &shop_page()).await;
    assert!(is_shops(
        &html(&app, &show, "", &[]).await,
        "ACME-BANNER-V1"
    ));
    app.stop().await;
}
