//! A Web Push message (RFC 8030): the call's JSON encrypted for the fan's browser with the
//! `aes128gcm` content coding (RFC 8188) under the keys of RFC 8291.
//!
//! Per message: an ephemeral P-256 key pair and a random 16-byte salt. The ECDH secret of the
//! ephemeral key and the browser's `p256dh` is mixed with the browser's `auth` secret
//! (HKDF-SHA-256, info `"WebPush: info\0" || ua_public || as_public`) into the input keying
//! material; HKDF with the salt then yields the content encryption key (16 bytes, info
//! `"Content-Encoding: aes128gcm\0"`) and the nonce (12 bytes, `"Content-Encoding: nonce\0"`).
//! The body is the header `salt || rs (4096, u32 BE) || idlen (65) || as_public` and one
//! record: AES-128-GCM of the plaintext, the last-record delimiter `0x02` and no padding.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use hkdf::Hkdf;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use sha2_v010::Sha256;

/// The record size the body declares: a single record of the call's JSON is far smaller.
pub(crate) const RECORD_SIZE: u32 = 4096;

/// The largest plaintext one record holds (the delimiter and the 16-byte tag take the rest).
const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 17;

/// `plaintext` encrypted for the browser holding the private half of `ua_public`, with its
/// `auth` secret: the whole `aes128gcm` body. `None` if the plaintext exceeds one record.
pub(crate) fn encrypt(ua_public: &PublicKey, auth: &[u8; 16], plaintext: &[u8]) -> Option<Vec<u8>> {
    let ephemeral = random_secret();
    let salt: [u8; 16] = rand::random();
    encrypt_with(ua_public, auth, plaintext, &ephemeral, &salt)
}

/// A fresh secret scalar: 32 random bytes, drawn again in the rare case (about 2^-32) they
/// are not below the group order.
fn random_secret() -> SecretKey {
    loop {
        if let Ok(secret) = SecretKey::from_slice(&rand::random::<[u8; 32]>()) {
            return secret;
        }
    }
}

/// [`encrypt`] with the ephemeral key and salt given (RFC 8291's example fixes them).
fn encrypt_with(
    ua_public: &PublicKey,
    auth: &[u8; 16],
    plaintext: &[u8],
    ephemeral: &SecretKey,
    salt: &[u8; 16],
) -> Option<Vec<u8>> {
    if plaintext.len() > MAX_PLAINTEXT {
        return None;
    }
    let ua = ua_public.to_encoded_point(false);
    let as_public = ephemeral.public_key().to_encoded_point(false);
    let shared = p256::ecdh::diffie_hellman(ephemeral.to_nonzero_scalar(), ua_public.as_affine());

    // IKM = HKDF(salt = auth, ikm = ecdh, info = "WebPush: info\0" || ua || as, 32).
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(ua.as_bytes());
    key_info.extend_from_slice(as_public.as_bytes());
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .expect("32 bytes is a valid HKDF-SHA-256 length");

    let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek)
        .expect("16 bytes is a valid HKDF-SHA-256 length");
    prk.expand(b"Content-Encoding: nonce\0", &mut nonce)
        .expect("12 bytes is a valid HKDF-SHA-256 length");

    let mut record = Vec::with_capacity(plaintext.len() + 1);
    record.extend_from_slice(plaintext);
    record.push(0x02);
    // The first (and only) record's nonce is the derived one XOR 0.
    let sealed = Aes128Gcm::new_from_slice(&cek)
        .expect("a 16-byte key")
        .encrypt(Nonce::from_slice(&nonce), record.as_slice())
        .ok()?;

    let mut body = Vec::with_capacity(16 + 4 + 1 + 65 + sealed.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(65);
    body.extend_from_slice(as_public.as_bytes());
    body.extend_from_slice(&sealed);
    Some(body)
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// RFC 8291, section 5 and appendix A: the example's keys and salt give its body.
    #[test]
    fn the_rfc_example_encrypts_to_the_rfc_body() {
        let ua_public = PublicKey::from_sec1_bytes(&b64(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        ))
        .unwrap();
        let auth: [u8; 16] = b64("BTBZMqHH6r4Tts7J_aSIgg").try_into().unwrap();
        let ephemeral =
            SecretKey::from_slice(&b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")).unwrap();
        let salt: [u8; 16] = b64("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let body = encrypt_with(
            &ua_public,
            &auth,
            b"When I grow up, I want to be a watermelon",
            &ephemeral,
            &salt,
        )
        .unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
        );
    }

    #[test]
    fn too_long_a_plaintext_is_refused() {
        let ua = random_secret().public_key();
        assert!(encrypt(&ua, &[0; 16], &vec![b'x'; MAX_PLAINTEXT]).is_some());
        assert!(encrypt(&ua, &[0; 16], &vec![b'x'; MAX_PLAINTEXT + 1]).is_none());
    }
}
