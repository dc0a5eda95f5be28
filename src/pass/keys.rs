//! The keyring of signed passes and join challenges: `PASS_KEYS`, the first key signs, every
//! key verifies, so keys rotate without a cut.
//!
//! Each key is a secret of at least 32 bytes. Join challenges are MACed with it (HMAC-SHA256:
//! only instances check them); admission passes are JWTs signed with an Ed25519 key derived
//! from it, so an edge holds only the public half (`GET /.well-known/jwks.json`).

use std::fmt;
use std::str::FromStr;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The shortest secret a key may have: HMAC-SHA256's own block of security.
pub const MIN_SECRET_BYTES: usize = 32;

/// What the Ed25519 key derived from a secret is derived under: changing it changes every
/// public key.
const ED25519_DERIVATION: &[u8] = b"waiting-room admission pass signing key (Ed25519) v1";

/// One key: its id (named in every pass it signs), its secret, and the Ed25519 key pair
/// derived from the secret that signs passes.
#[derive(Clone)]
pub struct PassKey {
    kid: String,
    secret: Vec<u8>,
    signer: std::sync::Arc<SigningPair>,
}

/// The Ed25519 pair a secret derives, as the JWT crate takes it, and the public key as a JWK
/// spells it (`x`: base64url of its 32 bytes).
pub(crate) struct SigningPair {
    pub(crate) encoding: jsonwebtoken::EncodingKey,
    pub(crate) decoding: jsonwebtoken::DecodingKey,
    pub(crate) x: String,
}

impl SigningPair {
    /// The pair `secret` derives: its seed is HMAC-SHA256(secret, [`ED25519_DERIVATION`]), so
    /// every instance holding the secret signs with the same key and nothing more is shared.
    fn derive(secret: &[u8]) -> SigningPair {
        use ed25519_dalek::pkcs8::EncodePrivateKey;
        let mut mac =
            <HmacSha256 as KeyInit>::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(ED25519_DERIVATION);
        let seed: [u8; 32] = mac.finalize().into_bytes().into();
        let signing = ed25519_dalek::SigningKey::from_bytes(&seed);
        let der = signing
            .to_pkcs8_der()
            .expect("an Ed25519 key always encodes as PKCS#8");
        let x = URL_SAFE_NO_PAD.encode(signing.verifying_key().to_bytes());
        SigningPair {
            encoding: jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes()),
            decoding: jsonwebtoken::DecodingKey::from_ed_components(&x)
                .expect("a public key of 32 bytes in base64url"),
            x,
        }
    }
}

impl PassKey {
    /// The key's id: 1 to 32 characters of `A-Z a-z 0-9 _ -`.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The Ed25519 pair that signs this key's passes.
    pub(crate) fn signer(&self) -> &SigningPair {
        &self.signer
    }

    /// HMAC-SHA256(secret, `label`): 32 bytes only this secret yields under this label, as
    /// the Ed25519 seed is derived, for another key that must follow the same secret (the
    /// Web Push VAPID key). The secret itself never leaves the key.
    pub(crate) fn derive(&self, label: &[u8]) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(label);
        mac.finalize().into_bytes().into()
    }

    fn new(kid: String, secret: Vec<u8>) -> PassKey {
        let signer = std::sync::Arc::new(SigningPair::derive(&secret));
        PassKey {
            kid,
            secret,
            signer,
        }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC takes a key of any length; this cannot fail.
        <HmacSha256 as KeyInit>::new_from_slice(&self.secret).expect("HMAC takes any key length")
    }
}

impl fmt::Debug for PassKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret, in a log or a panic message.
        write!(f, "PassKey({})", self.kid)
    }
}

/// Every key in force, the signing one first. Shared keys rotate: [`Keyring::replace`] puts
/// the store's newer set in force while passes and challenges are being signed and checked.
#[derive(Debug)]
pub struct Keyring {
    keys: std::sync::RwLock<std::sync::Arc<Vec<PassKey>>>,
    /// The keys were drawn at start, not configured: other instances cannot verify them.
    generated: bool,
}

impl Clone for Keyring {
    fn clone(&self) -> Self {
        Keyring {
            keys: std::sync::RwLock::new(self.current()),
            generated: self.generated,
        }
    }
}

/// Why `PASS_KEYS` was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    /// No entry at all (blank entries between commas are skipped).
    #[error("PASS_KEYS is empty: give kid:base64secret[,kid:base64secret...]")]
    Empty,
    /// Entry number `.0` (from 1) has no `:` between key id and secret.
    #[error("PASS_KEYS entry {0}: expected kid:base64secret")]
    NoColon(usize),
    /// Entry number `.0`'s key id is not 1 to 32 of `[A-Za-z0-9_-]`.
    #[error(
        "PASS_KEYS entry {0}: the key id must be 1 to 32 characters of A-Z, a-z, 0-9, '_' or '-'"
    )]
    BadKid(usize),
    /// Entry number `.0` (key id `.1`): the secret is neither standard nor URL-safe base64.
    #[error("PASS_KEYS entry {0} ({1}): the secret is not base64")]
    NotBase64(usize, String),
    /// Entry number `.0` (key id `.1`): its secret has `.2` bytes, under [`MIN_SECRET_BYTES`].
    #[error(
        "PASS_KEYS entry {0} ({1}): the secret has {2} bytes, at least {MIN_SECRET_BYTES} are needed"
    )]
    Short(usize, String, usize),
    /// The key id named is given twice.
    #[error("PASS_KEYS: key id {0} appears twice")]
    Duplicate(String),
}

fn valid_kid(kid: &str) -> bool {
    (1..=32).contains(&kid.len())
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

impl FromStr for Keyring {
    type Err = KeyringError;

    /// `kid:base64secret[,kid:base64secret...]`; the secret in standard or URL-safe base64,
    /// padded or not, of at least [`MIN_SECRET_BYTES`] bytes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut keys: Vec<PassKey> = Vec::new();
        for (i, entry) in s.split(',').map(str::trim).enumerate() {
            let n = i + 1;
            if entry.is_empty() {
                continue;
            }
            let (kid, secret) = entry.split_once(':').ok_or(KeyringError::NoColon(n))?;
            if !valid_kid(kid) {
                return Err(KeyringError::BadKid(n));
            }
            let secret =
                decode_secret(secret).ok_or_else(|| KeyringError::NotBase64(n, kid.to_owned()))?;
            if secret.len() < MIN_SECRET_BYTES {
                return Err(KeyringError::Short(n, kid.to_owned(), secret.len()));
            }
            if keys.iter().any(|k| k.kid == kid) {
                return Err(KeyringError::Duplicate(kid.to_owned()));
            }
            keys.push(PassKey::new(kid.to_owned(), secret));
        }
        if keys.is_empty() {
            return Err(KeyringError::Empty);
        }
        Ok(Keyring::of(keys, false))
    }
}

fn decode_secret(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    STANDARD
        .decode(s)
        .or_else(|_| STANDARD_NO_PAD.decode(s))
        .or_else(|_| URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')))
        .ok()
}

impl Keyring {
    /// One random 32-byte key (id `local`), for a server started without `PASS_KEYS`: its
    /// passes verify on this instance only.
    pub fn generate() -> Keyring {
        let secret: [u8; 32] = rand::random();
        Keyring::of(vec![PassKey::new("local".into(), secret.to_vec())], true)
    }

    fn of(keys: Vec<PassKey>, generated: bool) -> Keyring {
        Keyring {
            keys: std::sync::RwLock::new(std::sync::Arc::new(keys)),
            generated,
        }
    }

    /// The keys in force now.
    fn current(&self) -> std::sync::Arc<Vec<PassKey>> {
        self.keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Puts `other`'s keys in force (a rotation of the shared key); true when they differ.
    pub fn replace(&self, other: Keyring) -> bool {
        let new = other.current();
        let mut keys = self
            .keys
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = keys.iter().map(|k| &k.kid).ne(new.iter().map(|k| &k.kid));
        *keys = new;
        changed
    }

    /// A random 32-byte key with a random id (`r` and 8 hex digits), as `PASS_KEYS` spells
    /// one (`kid:base64secret`), to be shared through the store. A secret: never logged.
    pub fn new_shared_key() -> String {
        let secret: [u8; 32] = rand::random();
        format!(
            "r{:08x}:{}",
            rand::random::<u32>(),
            URL_SAFE_NO_PAD.encode(secret)
        )
    }

    /// Whether the keys were drawn at start rather than configured.
    pub fn generated(&self) -> bool {
        self.generated
    }

    /// The key that signs now.
    pub fn signing(&self) -> PassKey {
        self.current()[0].clone()
    }

    /// The key ids in force, the signing one first.
    pub fn kids(&self) -> Vec<String> {
        self.current().iter().map(|k| k.kid.clone()).collect()
    }

    /// The public keys in force as a JSON Web Key Set (RFC 7517), the signing one first: what
    /// `GET /.well-known/jwks.json` serves and an edge verifies passes with.
    pub fn jwks(&self) -> serde_json::Value {
        let keys: Vec<serde_json::Value> = self
            .current()
            .iter()
            .map(|k| {
                serde_json::json!({
                    "kty": "OKP",
                    "crv": "Ed25519",
                    "x": k.signer.x,
                    "kid": k.kid,
                    "use": "sig",
                    "alg": "EdDSA",
                })
            })
            .collect();
        serde_json::json!({ "keys": keys })
    }

    /// The key `kid`, if it is in force.
    pub(crate) fn key(&self, kid: &str) -> Option<PassKey> {
        self.current().iter().find(|k| k.kid == kid).cloned()
    }

    /// `message` signed with `key`: base64url (no padding) of its HMAC-SHA256. The caller
    /// names the same key in the message, so a rotation in between cannot mismatch them.
    pub(crate) fn sign_with(key: &PassKey, message: &[u8]) -> String {
        let mut mac = key.mac();
        mac.update(message);
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Whether `tag` (base64url, no padding) is the MAC of `message` under the key `kid`;
    /// `None` when no key has that id. The comparison takes constant time.
    pub(crate) fn verify(&self, kid: &str, message: &[u8], tag: &str) -> Option<bool> {
        let keys = self.current();
        let key = keys.iter().find(|k| k.kid == kid)?;
        let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else {
            return Some(false);
        };
        let mut mac = key.mac();
        mac.update(message);
        Some(mac.verify_slice(&tag).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // 32 bytes

    #[test]
    fn keys_parse_in_order_and_bad_ones_are_named() {
        let ring: Keyring = format!("k2:{SECRET}, k1:{SECRET}").parse().unwrap();
        assert_eq!(ring.kids(), ["k2", "k1"]);
        assert!(!ring.generated());
        assert!(matches!("".parse::<Keyring>(), Err(KeyringError::Empty)));
        assert!(matches!(
            "nocolon".parse::<Keyring>(),
            Err(KeyringError::NoColon(1))
        ));
        assert!(matches!(
            format!("a.b:{SECRET}").parse::<Keyring>(),
            Err(KeyringError::BadKid(1))
        ));
        assert!(matches!(
            "k:!!!".parse::<Keyring>(),
            Err(KeyringError::NotBase64(1, _))
        ));
        assert!(matches!(
            "k:c2hvcnQ=".parse::<Keyring>(),
            Err(KeyringError::Short(1, _, 5))
        ));
        assert!(matches!(
            format!("k:{SECRET},k:{SECRET}").parse::<Keyring>(),
            Err(KeyringError::Duplicate(_))
        ));
        // The secret never shows in a debug print.
        assert!(!format!("{ring:?}").contains(SECRET));
    }

    #[test]
    fn a_mac_verifies_under_its_key_only() {
        let ring: Keyring = format!("new:{SECRET},old:{}", STANDARD.encode([7u8; 32]))
            .parse()
            .unwrap();
        let tag = Keyring::sign_with(&ring.signing(), b"hello");
        assert_eq!(ring.verify("new", b"hello", &tag), Some(true));
        assert_eq!(ring.verify("new", b"hellO", &tag), Some(false));
        assert_eq!(ring.verify("old", b"hello", &tag), Some(false));
        assert_eq!(ring.verify("gone", b"hello", &tag), None);
        assert_eq!(ring.verify("new", b"hello", "not base64!"), Some(false));
    }
}
