//! The webhook's token: the call's claims signed as a pass is, so that the operator's service
//! verifies it with the server's JWKS (`GET /.well-known/jwks.json`).
//!
//! A JWT (RFC 7519), EdDSA (Ed25519), header `{"alg":"EdDSA","typ":"JWT","kid":"<key id>"}`,
//! claims: `iss` = `waiting-room`, `aud` = the `notifyUrl` it is sent to, `iat` and `exp`
//! (Unix seconds, [`TOKEN_SECONDS`] apart), and the call's own fields (`showId`, `ticketId`,
//! `event`, `position`, `etaSeconds`), the same as the body's.

use hyper::Uri;
use jsonwebtoken::{Algorithm, Header};
use serde::Serialize;

use super::{Call, Refusal};
use crate::pass::{Keyring, PASS_ISSUER};

/// How long a webhook's token is good: long enough for the retries and a clock a little off.
pub(crate) const TOKEN_SECONDS: u64 = 300;

/// The longest `notifyUrl` taken.
const MAX_URL: usize = 2048;

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'static str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    #[serde(flatten)]
    call: &'a Call,
}

/// The `Authorization` header of the call `call` to `url`, signed at `now_s` with the key that
/// signs now: `Bearer <JWT>`.
pub(crate) fn authorization(keys: &Keyring, url: &str, call: &Call, now_s: u64) -> String {
    let key = keys.signing();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(key.kid().to_owned());
    let claims = Claims {
        iss: PASS_ISSUER,
        aud: url,
        iat: now_s,
        exp: now_s + TOKEN_SECONDS,
        call,
    };
    let token = jsonwebtoken::encode(&header, &claims, &key.signer().encoding)
        .expect("claims of strings and numbers always encode");
    format!("Bearer {token}")
}

/// Checks a show's `notifyUrl`: an absolute `http` or `https` URL without user info, of at
/// most 2048 bytes. Any address is allowed: the operator sets it.
pub fn check_webhook_url(url: &str) -> Result<(), Refusal> {
    if url.len() > MAX_URL {
        return Err(Refusal::EndpointNotUrl);
    }
    let uri: Uri = url.parse().map_err(|_| Refusal::EndpointNotUrl)?;
    let authority = uri.authority().ok_or(Refusal::EndpointNotUrl)?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    if !scheme_ok || authority.as_str().contains('@') || authority.host().is_empty() {
        return Err(Refusal::EndpointNotUrl);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    use super::*;
    use crate::notify::CallEvent;

    #[test]
    fn the_token_carries_the_call_and_verifies_with_the_pass_keys() {
        let keys: Keyring = format!("k1:{}", STANDARD.encode([5u8; 32]))
            .parse()
            .unwrap();
        let call = Call {
            show: "gig".parse().unwrap(),
            ticket: uuid::Uuid::nil(),
            event: CallEvent::Soon,
            position: 3,
            eta_seconds: None,
        };
        let url = "http://10.0.0.5:8080/hook";
        let header = authorization(&keys, url, &call, 1000);
        let token = header.strip_prefix("Bearer ").unwrap();
        let head: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(head["kid"], "k1");
        assert_eq!(head["alg"], "EdDSA");
        let mut validation = jsonwebtoken::Validation::new(Algorithm::EdDSA);
        validation.set_audience(&[url]);
        validation.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(
            token,
            &keys.signing().signer().decoding,
            &validation,
        )
        .unwrap()
        .claims;
        assert_eq!(
            claims,
            serde_json::json!({"iss": "waiting-room", "aud": url, "iat": 1000, "exp": 1300,
                "showId": "gig", "ticketId": "00000000-0000-0000-0000-000000000000",
                "event": "soon", "position": 3, "etaSeconds": null})
        );
    }

    #[test]
    fn a_notify_url_is_an_http_url_any_address_allowed() {
        for ok in [
            "http://10.0.0.5:8080/hook",
            "https://sms.example/call?x=1",
            "http://localhost/h",
        ] {
            assert_eq!(check_webhook_url(ok), Ok(()), "{ok}");
        }
        for bad in [
            "ftp://x/h",
            "/hook",
            "http://user:pw@host/h",
            "not a url",
            &format!("http://h/{}", "x".repeat(MAX_URL)),
        ] {
            assert_eq!(
                check_webhook_url(bad),
                Err(Refusal::EndpointNotUrl),
                "{bad}"
            );
        }
    }
}
