//! What a request presents of itself: the operator's bearer token, a cookie's values. Read
//! by the router's extractors, the page, the gateway and the connection layer alike.

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq;

/// Whether `headers` carry `Authorization: Bearer <token>`.
pub(crate) fn presents_token(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        // In constant time (`subtle`): response timing does not tell how much of a guessed
        // token was right. Only a wrong length answers early, and the length is no secret.
        .is_some_and(|presented| bool::from(presented.as_bytes().ct_eq(token.as_bytes())))
}

/// The values of the cookie `name` the request carries, most specific path first (as the
/// browser sends them).
pub(crate) fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(n, _)| *n == name)
        .map(|(_, value)| value.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn the_operator_token_is_compared_whole() {
        let token = "a-long-operator-secret";
        assert!(presents_token(
            &bearer("Bearer a-long-operator-secret"),
            token
        ));
        assert!(presents_token(
            &bearer("Bearer  a-long-operator-secret "),
            token
        ));
        assert!(!presents_token(
            &bearer("Bearer a-long-operator-secreT"),
            token
        ));
        assert!(!presents_token(
            &bearer("Bearer a-long-operator-secret2"),
            token
        ));
        assert!(!presents_token(&bearer("Bearer a-long"), token));
        assert!(!presents_token(&bearer("Bearer "), token));
        assert!(!presents_token(
            &bearer("Basic a-long-operator-secret"),
            token
        ));
        assert!(!presents_token(&HeaderMap::new(), token));
    }
}
