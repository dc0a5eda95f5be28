//! Where a browser's post comes from. `POST /wait/{showId}/join` is a plain HTML form and
//! `POST …/{showId}/join` needs no preflight, so any other site could make a fan's browser
//! send either (a place taken in the fan's name, or a queue flooded from fans' addresses).
//! Browsers say where a request comes from, and both joins refuse what another site sent.
//!
//! The order of the checks is Go's `net/http.CrossOriginProtection`: `Sec-Fetch-Site` when the
//! browser sends it (a page cannot forge it, and it survives proxies that rewrite `Host`),
//! else `Origin` against the site's own origin, else nothing: a request that names no origin
//! does not come from a modern browser, and only a browser can be tricked into a cross-site post.

use axum::http::uri::Authority;
use axum::http::{HeaderMap, header};

use crate::error::AppError;
pub use crate::protocol::Origin;

/// What a refused form post is told: it is read by a fan who followed another site's button.
const REFUSED: &str = "This join form was sent from another website. Open the waiting page \
     of the on-sale yourself and press Join there.";

/// `Ok` when a form post comes from this site or names no origin at all; 403 when the browser
/// says it comes from elsewhere. `public` is `PUBLIC_URL`'s origin; without it the site is
/// whatever the request's `Host` names.
pub(crate) fn check_form_post(
    headers: &HeaderMap,
    public: Option<&Origin>,
) -> Result<(), AppError> {
    check_same_site(headers, public, REFUSED)
}

/// What a refused JSON join is told.
const REFUSED_JOIN: &str = "A join sent from another website is refused: open the waiting \
     page of the on-sale yourself and join there.";

/// The same rule for `POST …/{showId}/join`: a script on another site can send it with a
/// simple content type (no preflight), and a popular site's visitors would fill a queue from
/// their own addresses. The waiting page's own `fetch` is same-origin; a client that is no
/// browser names no origin.
pub(crate) fn check_join_post(
    headers: &HeaderMap,
    public: Option<&Origin>,
) -> Result<(), AppError> {
    check_same_site(headers, public, REFUSED_JOIN)
}

/// What a refused bypass from another website is told.
const REFUSED_BYPASS: &str = "A bypass sent from another website is refused.";

/// The same rule for `POST …/{showId}/bypass`: a page of another site could make a staff
/// browser on a staff network send it (a simple request, no preflight) and take a seat each
/// time. Monitors and tools name no origin.
pub(crate) fn check_bypass_post(
    headers: &HeaderMap,
    public: Option<&Origin>,
) -> Result<(), AppError> {
    check_same_site(headers, public, REFUSED_BYPASS)
}

fn check_same_site(
    headers: &HeaderMap,
    public: Option<&Origin>,
    message: &'static str,
) -> Result<(), AppError> {
    let refused = || AppError::Forbidden(message.into());
    if let Some(site) = headers.get("sec-fetch-site") {
        // `none`: the fan's own doing (typed, bookmarked); `same-site` is a sibling
        // subdomain, which is another site for us.
        return match site.as_bytes() {
            b"same-origin" | b"none" => Ok(()),
            _ => Err(refused()),
        };
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    // `Origin: null` (a sandboxed frame, a redirect across sites) parses as nothing: refused.
    let origin: Origin = origin
        .to_str()
        .ok()
        .and_then(|o| o.parse().ok())
        .ok_or_else(refused)?;
    let ours = match public {
        Some(public) => *public == origin,
        None => host_matches(headers, &origin),
    };
    if ours { Ok(()) } else { Err(refused()) }
}

/// Whether the request's `Host` is `origin`'s host and port. `Host` carries no scheme, so a
/// port left out is the origin scheme's default.
fn host_matches(headers: &HeaderMap, origin: &Origin) -> bool {
    let Some(host) = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.parse::<Authority>().ok())
    else {
        return false;
    };
    let port = host
        .port_u16()
        .unwrap_or(Origin::default_port(origin.is_https()));
    host.host().eq_ignore_ascii_case(origin.host()) && port == origin.port()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    fn allowed(pairs: &[(&'static str, &'static str)], public: Option<&str>) -> bool {
        let public: Option<Origin> = public.map(|p| p.parse().unwrap());
        check_form_post(&headers(pairs), public.as_ref()).is_ok()
    }

    #[test]
    fn origins_parse_as_browsers_compare_them() {
        let o: Origin = "HTTPS://Tickets.Example/queue?x=1".parse().unwrap();
        assert_eq!(o.to_string(), "https://tickets.example");
        assert!(o.is_https());
        assert_eq!(
            "https://tickets.example:443".parse::<Origin>().unwrap(),
            o,
            "the default port is the same origin"
        );
        let o: Origin = "http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(o.to_string(), "http://127.0.0.1:8080");
        assert!(!o.is_https());
        assert!("ftp://example".parse::<Origin>().is_err());
        assert!("tickets.example".parse::<Origin>().is_err());
        assert!("null".parse::<Origin>().is_err());
    }

    #[test]
    fn fetch_metadata_decides_when_the_browser_sends_it() {
        assert!(allowed(&[("sec-fetch-site", "same-origin")], None));
        assert!(allowed(&[("sec-fetch-site", "none")], None));
        assert!(!allowed(&[("sec-fetch-site", "cross-site")], None));
        assert!(!allowed(&[("sec-fetch-site", "same-site")], None));
        // A proxy that rewrote Host does not make the browser's word wrong.
        assert!(allowed(
            &[
                ("sec-fetch-site", "same-origin"),
                ("origin", "https://tickets.example"),
                ("host", "backend:8080"),
            ],
            None
        ));
    }

    #[test]
    fn without_fetch_metadata_the_origin_must_be_the_host() {
        let host = ("host", "tickets.example:8080");
        assert!(allowed(
            &[("origin", "http://tickets.example:8080"), host],
            None
        ));
        assert!(allowed(
            &[("origin", "http://TICKETS.example:8080"), host],
            None
        ));
        assert!(!allowed(
            &[("origin", "http://evil.example:8080"), host],
            None
        ));
        assert!(!allowed(
            &[("origin", "http://tickets.example:9090"), host],
            None
        ));
        assert!(!allowed(&[("origin", "null"), host], None));
        // No Host to compare with: nothing proves the origin is ours.
        assert!(!allowed(&[("origin", "http://tickets.example:8080")], None));
        // Default ports: `Host: tickets.example` is port 443 for an https origin.
        let bare = ("host", "tickets.example");
        assert!(allowed(
            &[("origin", "https://tickets.example"), bare],
            None
        ));
        assert!(!allowed(
            &[("origin", "https://tickets.example:8443"), bare],
            None
        ));
        // Neither header (curl, an old browser): nothing to judge, let through.
        assert!(allowed(&[host], None));
    }

    #[test]
    fn a_public_url_is_the_only_origin_accepted() {
        let public = Some("https://tickets.example");
        let host = ("host", "backend:8080");
        assert!(allowed(
            &[("origin", "https://tickets.example"), host],
            public
        ));
        // Same host over http is another origin.
        assert!(!allowed(
            &[("origin", "http://tickets.example"), host],
            public
        ));
        assert!(!allowed(&[("origin", "http://backend:8080"), host], public));
    }
}
