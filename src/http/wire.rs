//! HTTP/1.1 bytes written by hand, where hyper does not write them: the head of a stream
//! handed over to its own task (serve/handover.rs) and the gateway's lean origin leg
//! (gateway/upstream.rs).

use axum::http::HeaderMap;

/// Writes `headers` into a message head, one `name: value` line each, as HTTP/1.1 spells
/// them.
pub(crate) fn header_lines(head: &mut Vec<u8>, headers: &HeaderMap) {
    for (name, value) in headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
}
