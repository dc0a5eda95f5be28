//! The signed admission pass: what an admitted fan's ticket JSON carries as `"pass"`, and
//! what any edge holding the public keys (`GET /.well-known/jwks.json`) can check without
//! asking the store.
//!
//! A pass is a JWT (RFC 7519) in compact form, signed with EdDSA (Ed25519, RFC 8037):
//!
//! - header: `{"alg":"EdDSA","typ":"JWT","kid":"<key id>"}`; `kid` names a key of the JWKS.
//! - claims: `iss` = `waiting-room`, `sub` = the ticket id (UUID, lowercase, hyphenated),
//!   `aud` = the show id, `exp` = when the admission runs out (Unix seconds), `iat` = when the
//!   pass was signed, `jti` = a random id of this pass, `epoch` = the show's incarnation (a
//!   show deleted and made again, or started again after its state was lost, has another).
//!
//! A pass is good while `now < exp`. It proves the admission, not that it is unspent: one
//! admission places one order or is redeemed once, which the store enforces.
//!
//! The pass of earlier versions (`v1:<kid>:<showId>:<ticketId>:<exp>:<mac>`, HMAC-SHA256 of
//! the bytes before the last `:`) is still verified, so that passes signed before an upgrade
//! keep working until they run out; none is signed any more.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Keyring;
use crate::model::ShowId;

/// The version prefix of the passes of earlier versions (still verified, no longer signed).
pub const PASS_PREFIX: &str = "v1:";

/// The `iss` claim of every pass this server signs.
pub const PASS_ISSUER: &str = "waiting-room";

/// An admission, as a valid pass proves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// The show the admission is of (the JWT's `aud`).
    pub show: ShowId,
    /// The admitted ticket (the JWT's `sub`).
    pub ticket: Uuid,
    /// When the admission runs out (seconds since the Unix epoch).
    pub expires_at: u64,
    /// The key that signed it.
    pub kid: String,
    /// The show's incarnation the admission belongs to (`None`: a v1 pass, which names none).
    pub epoch: Option<u64>,
}

/// The claims of a pass.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    #[serde(default)]
    iss: String,
    sub: String,
    aud: String,
    exp: u64,
    #[serde(default)]
    iat: u64,
    #[serde(default)]
    jti: String,
    epoch: u64,
}

/// Why a pass was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PassError {
    /// Neither an EdDSA JWT with a `kid`, an `aud` show id and a `sub` UUID, nor a v1 pass.
    #[error("the admission pass is malformed (expected the JWT the waiting room signed)")]
    Malformed,
    /// Its `kid` (the first 32 characters of it) names no key in force here.
    #[error("the admission pass was signed with a key this server does not hold ({0})")]
    UnknownKey(String),
    /// The key it names exists, but its signature does not verify: a forgery.
    #[error("the admission pass's signature is wrong")]
    BadSignature,
    /// Genuine, but its `exp` has passed.
    #[error("the admission pass ran out; join the queue again")]
    Expired,
    /// Genuine, but of another show, the one named (its callers check, not `verify_pass`).
    #[error("the admission pass is for another show ({0})")]
    OtherShow(String),
}

/// Whether `value` is a pass rather than a ticket id: a JWT (whose header, base64url of
/// `{"`, always starts `eyJ`) or a v1 pass.
pub fn looks_like_pass(value: &str) -> bool {
    value.starts_with("eyJ") || value.starts_with(PASS_PREFIX)
}

impl Keyring {
    /// A pass for `ticket` of `show` (incarnation `epoch`), good until `expires_at` (Unix
    /// seconds), signed at `now_s` with the signing key.
    pub fn sign_pass(
        &self,
        show: &ShowId,
        ticket: Uuid,
        epoch: u64,
        expires_at: u64,
        now_s: u64,
    ) -> String {
        let key = self.signing();
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(key.kid().to_owned());
        let claims = Claims {
            iss: PASS_ISSUER.into(),
            sub: ticket.to_string(),
            aud: show.to_string(),
            exp: expires_at,
            iat: now_s,
            jti: Uuid::new_v4().simple().to_string(),
            epoch,
        };
        jsonwebtoken::encode(&header, &claims, &key.signer().encoding)
            .expect("claims of strings and numbers always encode")
    }

    /// The admission `pass` proves at `now_s` (Unix seconds): its signature under any key in
    /// force, then its expiry. Asks nothing of the store.
    pub fn verify_pass(&self, pass: &str, now_s: u64) -> Result<Admission, PassError> {
        if pass.starts_with(PASS_PREFIX) {
            return self.verify_v1(pass, now_s);
        }
        let header = jsonwebtoken::decode_header(pass).map_err(|_| PassError::Malformed)?;
        if header.alg != Algorithm::EdDSA {
            return Err(PassError::Malformed);
        }
        let kid = header.kid.ok_or(PassError::Malformed)?;
        let key = self
            .key(&kid)
            .ok_or_else(|| PassError::UnknownKey(kid.chars().take(32).collect()))?;
        // Expiry and audience are checked below, against `now_s` and with our own errors.
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "sub", "aud"]);
        let claims = jsonwebtoken::decode::<Claims>(pass, &key.signer().decoding, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => PassError::BadSignature,
                _ => PassError::Malformed,
            })?
            .claims;
        let show: ShowId = claims.aud.parse().map_err(|_| PassError::Malformed)?;
        let ticket = Uuid::parse_str(&claims.sub).map_err(|_| PassError::Malformed)?;
        // Checked after the signature: an expired forgery is a forgery.
        if now_s >= claims.exp {
            return Err(PassError::Expired);
        }
        Ok(Admission {
            show,
            ticket,
            expires_at: claims.exp,
            kid,
            epoch: Some(claims.epoch),
        })
    }

    /// A pass of earlier versions: `v1:<kid>:<showId>:<ticketId>:<exp>:<mac>`.
    fn verify_v1(&self, pass: &str, now_s: u64) -> Result<Admission, PassError> {
        let (message, mac) = pass.rsplit_once(':').ok_or(PassError::Malformed)?;
        let fields: Vec<&str> = message.split(':').collect();
        let [_, kid, show, ticket, exp] = fields[..] else {
            return Err(PassError::Malformed);
        };
        let show: ShowId = show.parse().map_err(|_| PassError::Malformed)?;
        let ticket = Uuid::parse_str(ticket).map_err(|_| PassError::Malformed)?;
        if exp.is_empty() || exp.len() > 12 || !exp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(PassError::Malformed);
        }
        let expires_at: u64 = exp.parse().map_err(|_| PassError::Malformed)?;
        match self.verify(kid, message.as_bytes(), mac) {
            None => return Err(PassError::UnknownKey(kid.chars().take(32).collect())),
            Some(false) => return Err(PassError::BadSignature),
            Some(true) => {}
        }
        if now_s >= expires_at {
            return Err(PassError::Expired);
        }
        Ok(Admission {
            show,
            ticket,
            expires_at,
            kid: kid.to_owned(),
            epoch: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use ed25519_dalek::Verifier;
    use hmac::{Hmac, KeyInit, Mac};

    use super::*;

    fn ring(spec: &[(&str, u8)]) -> Keyring {
        spec.iter()
            .map(|(kid, b)| format!("{kid}:{}", STANDARD.encode([*b; 32])))
            .collect::<Vec<_>>()
            .join(",")
            .parse()
            .unwrap()
    }

    fn json(part: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn a_pass_verifies_until_it_expires() {
        let keys = ring(&[("k1", 1)]);
        let show: ShowId = "s.1".parse().unwrap();
        let ticket = Uuid::new_v4();
        let pass = keys.sign_pass(&show, ticket, 77, 1_000, 900);
        let admission = keys.verify_pass(&pass, 999).unwrap();
        assert_eq!((admission.show, admission.ticket), (show, ticket));
        assert_eq!((admission.expires_at, admission.epoch), (1_000, Some(77)));
        assert_eq!(keys.verify_pass(&pass, 1_000), Err(PassError::Expired));
        assert!(looks_like_pass(&pass));
        assert!(!looks_like_pass(&ticket.to_string()));
    }

    #[test]
    fn the_documented_claims_are_what_is_signed_and_the_jwks_verifies_them() {
        // What an edge does from docs/passes.md and the JWKS alone, without this crate's decoder.
        let keys = ring(&[("k1", 9)]);
        let ticket = Uuid::nil();
        let pass = keys.sign_pass(&"show".parse().unwrap(), ticket, 5, 42, 40);
        let parts: Vec<&str> = pass.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = json(parts[0]);
        assert_eq!(header["alg"], "EdDSA");
        assert_eq!(header["kid"], "k1");
        let claims = json(parts[1]);
        assert_eq!(claims["iss"], PASS_ISSUER);
        assert_eq!(claims["sub"], ticket.to_string());
        assert_eq!(claims["aud"], "show");
        assert_eq!(
            (claims["exp"].as_u64(), claims["iat"].as_u64()),
            (Some(42), Some(40))
        );
        assert_eq!(claims["epoch"], 5);
        assert_eq!(claims["jti"].as_str().unwrap().len(), 32);
        let jwks = keys.jwks();
        let jwk = &jwks["keys"][0];
        assert_eq!(
            (jwk["kty"].as_str(), jwk["crv"].as_str()),
            (Some("OKP"), Some("Ed25519"))
        );
        assert_eq!(jwk["kid"], "k1");
        let x: [u8; 32] = URL_SAFE_NO_PAD
            .decode(jwk["x"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        let public = ed25519_dalek::VerifyingKey::from_bytes(&x).unwrap();
        let signature: [u8; 64] = URL_SAFE_NO_PAD
            .decode(parts[2])
            .unwrap()
            .try_into()
            .unwrap();
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &ed25519_dalek::Signature::from_bytes(&signature),
            )
            .expect("the JWKS key verifies the pass");
        // Two passes of one admission differ (jti), and the JWKS holds no secret.
        assert_ne!(
            pass,
            keys.sign_pass(&"show".parse().unwrap(), ticket, 5, 42, 40)
        );
        assert!(!jwks.to_string().contains(&STANDARD.encode([9u8; 32])));
        assert_eq!(
            jwk.as_object().unwrap().len(),
            6,
            "no private member: {jwk}"
        );
    }

    #[test]
    fn forged_and_foreign_passes_are_refused() {
        let old = ring(&[("old", 2)]);
        let rotated = ring(&[("new", 3), ("old", 2)]);
        let only_new = ring(&[("new", 3)]);
        let show: ShowId = "s".parse().unwrap();
        let pass = old.sign_pass(&show, Uuid::new_v4(), 1, 100, 0);
        // Rotation: the old key, second in the ring, still verifies.
        assert!(rotated.verify_pass(&pass, 1).is_ok());
        // Dropped from the ring: refused.
        assert_eq!(
            only_new.verify_pass(&pass, 1),
            Err(PassError::UnknownKey("old".into()))
        );
        // The claims changed (another show, a later expiry): the signature no longer holds.
        let parts: Vec<&str> = pass.split('.').collect();
        let mut claims = json(parts[1]);
        claims["aud"] = "t".into();
        let other_show = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(claims.to_string()),
            parts[2]
        );
        assert_eq!(
            old.verify_pass(&other_show, 1),
            Err(PassError::BadSignature)
        );
        // Another algorithm is refused whatever it signs: "none", and HMAC keyed with the
        // public key (the classic confusion of a verifier that trusts the header).
        let x = old.jwks()["keys"][0]["x"].as_str().unwrap().to_owned();
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"old"}"#),
            parts[1]
        );
        let mut hs = Header::new(Algorithm::HS256);
        hs.kid = Some("old".into());
        let confused = jsonwebtoken::encode(
            &hs,
            &json(parts[1]),
            &jsonwebtoken::EncodingKey::from_secret(x.as_bytes()),
        )
        .unwrap();
        for bad in [
            "",
            "eyJ",
            "eyJ.e30.",
            none.as_str(),
            confused.as_str(),
            "v1",
            "v1:old:s:not-a-uuid:100:x",
            "v1:old:s:00000000-0000-0000-0000-000000000000:-1:x",
            "v1:old:s:00000000-0000-0000-0000-000000000000:100:x:y",
        ] {
            assert_eq!(old.verify_pass(bad, 1), Err(PassError::Malformed), "{bad}");
        }
    }

    #[test]
    fn a_v1_pass_signed_before_an_upgrade_still_verifies() {
        let keys = ring(&[("k1", 9)]);
        let ticket = Uuid::new_v4();
        let message = format!("v1:k1:show:{ticket}:42");
        let mut mac = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&[9u8; 32]).unwrap();
        mac.update(message.as_bytes());
        let pass = format!(
            "{message}:{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        );
        let admission = keys.verify_pass(&pass, 41).unwrap();
        assert_eq!((admission.ticket, admission.epoch), (ticket, None));
        assert_eq!(keys.verify_pass(&pass, 42), Err(PassError::Expired));
        let forged = pass.replacen(":42:", ":4200:", 1);
        assert_eq!(keys.verify_pass(&forged, 41), Err(PassError::BadSignature));
    }
}
