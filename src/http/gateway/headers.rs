//! What the gateway does to headers on their way through: hop-by-hop headers stay on their
//! hop (RFC 9110 §7.6.1), the headers the gateway owns are its own, and a client header
//! whose name holds `_` never reaches the origin (nginx's `underscores_in_headers off`):
//! servers that fold `_` into `-` (CGI, Python's wsgiref) would read `X_Admission_Ticket` as
//! the `X-Admission-Ticket` the gateway vouches for, or `X_Forwarded_For` as its address.

use std::fmt::Write as _;
use std::net::IpAddr;

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};

use crate::protocol::{CHECKED_HEADER, COMMAND_HEADER};

/// Headers that describe one connection, not the message: never passed on.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// Headers the gateway writes (or vouches for) towards the origin: a client's copy never
/// goes on as it is. `X-Forwarded-For` is rebuilt with the client appended (as nginx's
/// `$proxy_add_x_forwarded_for`); `Forwarded` and `X-Real-IP` say what the gateway did not,
/// so they are dropped.
const OWNED: [&str; 9] = [
    "x-forwarded-proto",
    "x-forwarded-host",
    "forwarded",
    "x-real-ip",
    COMMAND_HEADER,
    CHECKED_HEADER,
    "x-admission-ticket",
    // A show's bypass token is the waiting room's secret, never the origin's to log; so is a
    // fan's access code.
    "x-bypass-token",
    "x-access-code",
];

/// Whether the request asks to switch protocols (a WebSocket handshake).
pub(super) fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && connection_tokens(headers).any(|t| t.eq_ignore_ascii_case("upgrade"))
}

fn connection_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
}

/// Whether `name` is a hop-by-hop header, `Connection` included.
fn hop_by_hop(name: &HeaderName) -> bool {
    HOP_BY_HOP.contains(&name.as_str())
}

/// Removes the hop-by-hop headers and every header `Connection` names; an upgrade keeps its
/// `Upgrade` and `Connection: upgrade`.
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap, upgrade: bool) {
    // One look at the names first: most messages have none of these, and cost no removal.
    if headers
        .keys()
        .any(|name| hop_by_hop(name) || *name == header::UPGRADE)
    {
        if headers.contains_key(header::CONNECTION) {
            let named: Vec<HeaderName> = connection_tokens(headers)
                .filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok())
                .filter(|n| *n != header::UPGRADE)
                .collect();
            for name in named {
                headers.remove(name);
            }
        }
        let present: Vec<HeaderName> = headers.keys().filter(|n| hop_by_hop(n)).cloned().collect();
        for name in present {
            headers.remove(name);
        }
        if !upgrade {
            headers.remove(header::UPGRADE);
        }
    }
    if upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    }
}

/// A client's request headers made fit for the origin: hop-by-hop headers gone, every name
/// with `_` gone, the gateway's own headers written by the gateway alone: the forwarding
/// chain (`client` appended; `https`: whether fans reach us over TLS; `host`: the host they
/// asked for), `Host` the origin's, and `X-Admission-Ticket` only when `pass` is a pass the
/// gateway checked.
pub(super) fn for_origin(
    headers: &mut HeaderMap,
    upgrade: bool,
    client: IpAddr,
    https: bool,
    origin_host: &HeaderValue,
    pass: Option<&str>,
) {
    let asked_host = headers.get(header::HOST).cloned();
    let prior: Option<String> = forwarded_chain(headers);
    // One pass over the names: what the client may not send on (the most common request
    // has none of it, and costs no removal).
    let dropped: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            let name = name.as_str();
            name.contains('_') || OWNED.contains(&name) || name == "x-forwarded-for"
        })
        .cloned()
        .collect();
    for name in dropped {
        headers.remove(name);
    }
    strip_hop_by_hop(headers, upgrade);
    // `X-Forwarded-For` with the client appended, written in one buffer.
    let mut chain = prior.unwrap_or_default();
    if !chain.is_empty() {
        chain.push_str(", ");
    }
    let _ = write!(chain, "{client}");
    if let Ok(v) = HeaderValue::try_from(chain) {
        headers.insert(X_FORWARDED_FOR, v);
    }
    let proto = if https { "https" } else { "http" };
    headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(proto));
    if let Some(host) = asked_host {
        headers.insert(X_FORWARDED_HOST, host);
    }
    headers.insert(header::HOST, origin_host.clone());
    if let Some(v) = pass.and_then(|p| HeaderValue::from_str(p).ok()) {
        headers.insert(X_ADMISSION_TICKET, v);
    }
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const X_ADMISSION_TICKET: HeaderName = HeaderName::from_static("x-admission-ticket");

/// The client's `X-Forwarded-For` entries, joined, if it sent any.
fn forwarded_chain(headers: &HeaderMap) -> Option<String> {
    let mut values = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok());
    let mut chain = values.next()?.to_owned();
    for v in values {
        chain.push_str(", ");
        chain.push_str(v);
    }
    Some(chain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ADMISSION_HEADER;

    #[test]
    fn connection_headers_stay_on_their_hop() {
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, "keep-alive, x-secret".parse().unwrap());
        h.insert("x-secret", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        h.insert(header::UPGRADE, "websocket".parse().unwrap());
        h.insert("x-kept", "1".parse().unwrap());
        let mut plain = h.clone();
        strip_hop_by_hop(&mut plain, false);
        assert_eq!(plain.len(), 1, "{plain:?}");
        assert!(plain.contains_key("x-kept"));
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h[header::UPGRADE], "websocket");
        assert_eq!(h[header::CONNECTION], "upgrade");
        assert!(!h.contains_key("x-secret"));
    }

    #[test]
    fn the_origin_gets_only_what_the_gateway_vouches_for() {
        let mut h = HeaderMap::new();
        for (name, value) in [
            ("x_admission_ticket", "forged"),
            ("X_Forwarded_For", "203.0.113.9"),
            ("x-admission-ticket", "forged-too"),
            ("x-forwarded-for", "198.51.100.1"),
            ("forwarded", "for=203.0.113.9"),
            ("x-real-ip", "203.0.113.9"),
            ("x-forwarded-proto", "https"),
            ("x-waiting-room-command", "revoke"),
            ("x-admission-checked", "signature"),
            ("host", "tickets.example"),
            ("accept", "text/html"),
        ] {
            h.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        let origin = HeaderValue::from_static("origin:8000");
        let mut without = h.clone();
        for_origin(
            &mut without,
            false,
            [127, 0, 0, 1].into(),
            false,
            &origin,
            None,
        );
        let names: Vec<&str> = without.keys().map(|n| n.as_str()).collect();
        assert!(!names.iter().any(|n| n.contains('_')), "{names:?}");
        assert!(!without.contains_key(ADMISSION_HEADER));
        assert!(!without.contains_key("forwarded"));
        assert!(!without.contains_key("x-real-ip"));
        assert!(!without.contains_key(COMMAND_HEADER));
        assert!(!without.contains_key(CHECKED_HEADER));
        assert_eq!(without["x-forwarded-for"], "198.51.100.1, 127.0.0.1");
        assert_eq!(without["x-forwarded-proto"], "http");
        assert_eq!(without["x-forwarded-host"], "tickets.example");
        assert_eq!(without[header::HOST], "origin:8000");
        assert_eq!(without[header::ACCEPT], "text/html");
        for_origin(
            &mut h,
            false,
            [127, 0, 0, 1].into(),
            true,
            &origin,
            Some("eyJpass"),
        );
        assert_eq!(h[ADMISSION_HEADER], "eyJpass");
        assert_eq!(h.get_all(ADMISSION_HEADER).iter().count(), 1);
        assert_eq!(h["x-forwarded-proto"], "https");
    }
}
