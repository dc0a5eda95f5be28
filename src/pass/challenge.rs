//! Join challenges (proof of work): minted with no store call, checked with none, spent in
//! the same store step as the join.
//!
//! A challenge is `c1.<kid>.<showId>.<exp>.<rand>.<mac>`: `exp` its end in Unix seconds,
//! `rand` 16 random bytes and `mac` the HMAC-SHA256 (under the key `kid` of `PASS_KEYS`) of
//! everything before the last `.`, both base64url without padding. Nobody but the server
//! needs to read one: a client treats it as an opaque string. A proof is
//! `X-Join-Proof: <challenge>:<nonce>`, good when SHA-256 of the ASCII bytes
//! `<challenge>:<nonce>` starts with the show's number of zero bits.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::Keyring;
use crate::model::ShowId;

pub use crate::protocol::JOIN_PROOF_HEADER as PROOF_HEADER;

/// How long a challenge may be solved and spent.
pub const CHALLENGE_TTL_SECONDS: u64 = 300;

pub use crate::model::MAX_CHALLENGE_BITS;

/// The longest nonce a proof may carry.
pub const MAX_NONCE_LEN: usize = 64;

const PREFIX: &str = "c1";

/// A proof whose challenge this server minted for this show, still running: what the store
/// needs to spend it (with the join) and to judge it against the show's difficulty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The challenge's random part: names it where it is spent.
    pub id: String,
    /// How long the challenge still runs: the spent mark need last no longer.
    pub ttl_ms: u64,
    /// The leading zero bits SHA-256 of `challenge:nonce` really has.
    pub bits: u32,
}

/// Why a proof was refused before the store was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// Not `<challenge>:<nonce>` with a challenge of this server's shape and a nonce of 1 to
    /// [`MAX_NONCE_LEN`] visible characters (a join answers 400).
    #[error(
        "X-Join-Proof is malformed: expected <challenge>:<nonce> (nonce 1 to 64 visible characters)"
    )]
    Malformed,
    /// Its MAC does not verify under any key of the keyring (a join answers 403).
    #[error("X-Join-Proof: this server did not mint that challenge")]
    Forged,
    /// Minted for another show, the one named (a join answers 403).
    #[error("X-Join-Proof: the challenge is for another show ({0})")]
    OtherShow(String),
    /// Past its end, [`CHALLENGE_TTL_SECONDS`] after it was minted (a join answers 403).
    #[error("X-Join-Proof: the challenge ran out; ask for a new one")]
    Expired,
}

/// The leading zero bits of SHA-256(`input`).
pub fn leading_zero_bits(input: &[u8]) -> u32 {
    let digest = Sha256::digest(input);
    let mut bits = 0;
    for byte in digest.iter() {
        bits += byte.leading_zeros();
        if *byte != 0 {
            break;
        }
    }
    bits
}

/// Counts nonces `0, 1, 2, …` until SHA-256(`challenge:nonce`) starts with `bits` zero bits:
/// the nonce, and how many hashes it took. What every client does (in Rust here, as the CLI
/// and the tests solve; `static/pow-worker.js` in the browser).
pub fn solve(challenge: &str, bits: u32) -> (u64, u64) {
    let mut nonce = 0u64;
    loop {
        let input = format!("{challenge}:{nonce}");
        if leading_zero_bits(input.as_bytes()) >= bits {
            return (nonce, nonce + 1);
        }
        nonce += 1;
    }
}

impl Keyring {
    /// A fresh challenge for `show`, running until `now_s + CHALLENGE_TTL_SECONDS`.
    pub fn mint_challenge(&self, show: &ShowId, now_s: u64) -> String {
        self.mint_challenge_until(show, now_s + CHALLENGE_TTL_SECONDS)
    }

    /// A fresh challenge for `show`, running until `exp` (Unix seconds).
    pub fn mint_challenge_until(&self, show: &ShowId, exp: u64) -> String {
        let rand: [u8; 16] = rand::random();
        let key = self.signing();
        let kid = key.kid();
        let message = format!(
            "{PREFIX}.{kid}.{show}.{exp}.{}",
            URL_SAFE_NO_PAD.encode(rand)
        );
        let mac = Keyring::sign_with(&key, message.as_bytes());
        format!("{message}.{mac}")
    }

    /// The proof an `X-Join-Proof` value makes for a join of `show` at `now_ms`: minted here,
    /// for this show, still running, and how much work it shows. Whether that is enough, and
    /// whether it was spent before, the store says in the join's own step.
    pub fn check_proof(
        &self,
        value: &str,
        show: &ShowId,
        now_ms: u64,
    ) -> Result<Proof, ProofError> {
        let (challenge, nonce) = value.rsplit_once(':').ok_or(ProofError::Malformed)?;
        if nonce.is_empty()
            || nonce.len() > MAX_NONCE_LEN
            || !nonce.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(ProofError::Malformed);
        }
        let (message, mac) = challenge.rsplit_once('.').ok_or(ProofError::Malformed)?;
        let mut right = message.rsplitn(3, '.');
        let (Some(rand), Some(exp), Some(head)) = (right.next(), right.next(), right.next()) else {
            return Err(ProofError::Malformed);
        };
        let mut left = head.splitn(3, '.');
        let (Some(PREFIX), Some(kid), Some(minted_for)) = (left.next(), left.next(), left.next())
        else {
            return Err(ProofError::Malformed);
        };
        if rand.is_empty()
            || rand.len() > 32
            || !rand
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        {
            return Err(ProofError::Malformed);
        }
        let exp: u64 = exp.parse().map_err(|_| ProofError::Malformed)?;
        if self.verify(kid, message.as_bytes(), mac) != Some(true) {
            return Err(ProofError::Forged);
        }
        if minted_for != show.as_str() {
            return Err(ProofError::OtherShow(minted_for.to_owned()));
        }
        let ends_ms = exp.saturating_mul(1000);
        if now_ms >= ends_ms {
            return Err(ProofError::Expired);
        }
        Ok(Proof {
            id: rand.to_owned(),
            ttl_ms: ends_ms - now_ms,
            bits: leading_zero_bits(value.as_bytes()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keyring {
        Keyring::generate()
    }

    #[test]
    fn zero_bits_are_counted_across_bytes() {
        // SHA-256("abc") = ba78…: no leading zero.
        assert_eq!(leading_zero_bits(b"abc"), 0);
        let (nonce, hashes) = solve("x", 12);
        assert_eq!(hashes, nonce + 1);
        assert!(leading_zero_bits(format!("x:{nonce}").as_bytes()) >= 12);
    }

    #[test]
    fn a_solved_challenge_proves_its_work() {
        let keys = keys();
        let show: ShowId = "s.1".parse().unwrap();
        let challenge = keys.mint_challenge(&show, 1_000);
        let (nonce, _) = solve(&challenge, 8);
        let proof = keys
            .check_proof(&format!("{challenge}:{nonce}"), &show, 1_000_000)
            .unwrap();
        assert!(proof.bits >= 8);
        assert_eq!(proof.ttl_ms, CHALLENGE_TTL_SECONDS * 1000);
        // Two challenges never share an id.
        assert_ne!(keys.mint_challenge(&show, 1_000), challenge);
    }

    #[test]
    fn foreign_forged_and_old_challenges_are_refused() {
        let keys = keys();
        let show: ShowId = "s".parse().unwrap();
        let other: ShowId = "t".parse().unwrap();
        let challenge = keys.mint_challenge(&other, 1_000);
        assert_eq!(
            keys.check_proof(&format!("{challenge}:1"), &show, 1_000_000),
            Err(ProofError::OtherShow("t".into()))
        );
        assert_eq!(
            Keyring::generate().check_proof(&format!("{challenge}:1"), &other, 1_000_000),
            Err(ProofError::Forged)
        );
        let forged = challenge.replacen(".t.", ".s.", 1);
        assert_eq!(
            keys.check_proof(&format!("{forged}:1"), &show, 1_000_000),
            Err(ProofError::Forged)
        );
        let ends = (1_000 + CHALLENGE_TTL_SECONDS) * 1000;
        assert_eq!(
            keys.check_proof(&format!("{challenge}:1"), &other, ends),
            Err(ProofError::Expired)
        );
        for bad in [
            "",
            "x",
            "x:",
            &challenge,
            &format!("{challenge}: "),
            "c1.a.b.c.d.e:1",
        ] {
            assert!(keys.check_proof(bad, &other, 1_000_000).is_err(), "{bad}");
        }
    }
}
