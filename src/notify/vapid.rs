//! The server's VAPID key (RFC 8292): the P-256 key a push service knows this server by.
//!
//! It is derived from the signing `PASS_KEYS` secret as the pass keys are (HMAC-SHA256 of the
//! secret and a label of its own), so every instance holding the secret signs with the same
//! key and nothing more is shared. Browsers bind a subscription to the key it was made with
//! (`applicationServerKey`): when the signing key changes, the subscriptions made before must
//! be made again.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};

use crate::pass::PassKey;

/// What the VAPID key is derived under: changing it changes the key, and so every
/// subscription's.
const VAPID_DERIVATION: &[u8] = b"waiting-room web push VAPID key (P-256) v1";

/// How long a VAPID token is good: RFC 8292 allows at most 24 hours.
pub(crate) const TOKEN_SECONDS: u64 = 12 * 3600;

/// The VAPID key pair, and its public half as the `k=` parameter and `applicationServerKey`
/// spell it (base64url of the uncompressed 65-byte point).
pub(crate) struct Vapid {
    key: SigningKey,
    public: String,
}

impl Vapid {
    /// The key `signing` derives: HMAC-SHA256(secret, label), then with a counter byte after
    /// the label until the 32 bytes are a valid scalar (below the group order and not zero;
    /// a retry has a chance of about 2^-32).
    pub(crate) fn derive(signing: &PassKey) -> Vapid {
        let mut label = VAPID_DERIVATION.to_vec();
        let mut bytes = signing.derive(&label);
        let mut counter = 0u8;
        let key = loop {
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                break key;
            }
            counter = counter
                .checked_add(1)
                .expect("256 invalid scalars in a row");
            label.truncate(VAPID_DERIVATION.len());
            label.push(counter);
            bytes = signing.derive(&label);
        };
        let public = URL_SAFE_NO_PAD.encode(key.verifying_key().to_encoded_point(false));
        Vapid { key, public }
    }

    /// The public key, base64url (no padding) of the uncompressed point: what
    /// `GET /.well-known/vapid` answers and a page hands `pushManager.subscribe`.
    pub(crate) fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header of a push to the service at `audience` (its origin,
    /// `https://host[:port]`): `vapid t=<JWT ES256>, k=<public key>`, good until `now_s` +
    /// [`TOKEN_SECONDS`], naming `subject` (a `mailto:` or `https:` contact).
    pub(crate) fn authorization(&self, audience: &str, subject: &str, now_s: u64) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": audience,
            "exp": now_s + TOKEN_SECONDS,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{claims}");
        // ES256 in JWS is the raw r || s, 64 bytes (RFC 7518 §3.4), not DER.
        let signature: Signature = self.key.sign(input.as_bytes());
        let token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()));
        format!("vapid t={token}, k={}", self.public)
    }
}

#[cfg(test)]
mod tests {
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;

    use super::*;
    use crate::pass::Keyring;

    fn ring(byte: u8) -> Keyring {
        use base64::engine::general_purpose::STANDARD;
        format!("k:{}", STANDARD.encode([byte; 32]))
            .parse()
            .unwrap()
    }

    #[test]
    fn the_key_follows_the_signing_secret() {
        let a = Vapid::derive(&ring(1).signing());
        let again = Vapid::derive(&ring(1).signing());
        let b = Vapid::derive(&ring(2).signing());
        assert_eq!(a.public_key(), again.public_key());
        assert_ne!(a.public_key(), b.public_key());
        let point = URL_SAFE_NO_PAD.decode(a.public_key()).unwrap();
        assert_eq!((point.len(), point[0]), (65, 0x04));
    }

    #[test]
    fn the_token_is_an_es256_jwt_the_public_key_verifies() {
        let vapid = Vapid::derive(&ring(1).signing());
        let header = vapid.authorization("https://push.example", "mailto:a@b.invalid", 1000);
        let rest = header.strip_prefix("vapid t=").unwrap();
        let (token, k) = rest.split_once(", k=").unwrap();
        assert_eq!(k, vapid.public_key());
        let (input, signature) = token.rsplit_once('.').unwrap();
        let key = VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(k).unwrap()).unwrap();
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
        key.verify(input.as_bytes(), &signature).unwrap();
        let claims = input.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"aud": "https://push.example", "exp": 1000 + 12 * 3600,
                               "sub": "mailto:a@b.invalid"})
        );
    }
}
