//! What a request presents of itself: the operator's bearer token, a cookie's values, the
//! ticket a fan's browser keeps (and the cookie that keeps it). Read by the router's
//! extractors, the fan's calls, the page, the gateway and the connection layer alike.

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq;
use uuid::Uuid;

use crate::model::ShowId;

/// The cookie that remembers a fan's ticket for one show's page. Its `Path` is the show's
/// page, so each show has its own and no other page ever receives it.
pub(crate) const TICKET_COOKIE: &str = "wr_ticket";

/// The `Set-Cookie` value that keeps `ticket` for `show`'s page, or (`None`) forgets it;
/// `secure` over https (`PUBLIC_URL`).
///
/// The server alone writes this cookie, on every join and leave, whether the page's script
/// or its no-script form made them: it is `HttpOnly` (no script needs it: the page's own
/// script keeps the ticket in localStorage), and a browser would not let a script overwrite
/// an `HttpOnly` cookie anyway. It goes only to the show's page; over https, only over https.
pub(crate) fn set_ticket_cookie(show: &ShowId, ticket: Option<Uuid>, secure: bool) -> String {
    let (value, age) = match ticket {
        Some(t) => (t.to_string(), 86_400),
        None => (String::new(), 0),
    };
    cookie(TICKET_COOKIE, &value, &format!("/wait/{show}"), age, secure)
}

/// The `Set-Cookie` value of every cookie the server writes: `HttpOnly` (no script reads
/// one), `SameSite=Lax`, `Secure` over https; `age` 0 forgets it.
pub(crate) fn cookie(name: &str, value: &str, path: &str, age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path={path}; Max-Age={age}; HttpOnly; SameSite=Lax{secure}")
}

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

/// The ticket in the `wr_ticket` cookie, if any is a UUID. The browser sends the cookie of
/// the most specific path first, which is this show's.
pub(crate) fn ticket_cookie(headers: &HeaderMap) -> Option<Uuid> {
    cookies(headers, TICKET_COOKIE).find_map(|v| Uuid::parse_str(v).ok())
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
