//! Admissions any edge can check, and joins that cost work.
//!
//! - [`keys`]: the keyring (`PASS_KEYS`): the first key signs, every key verifies.
//! - [`token`]: the signed admission pass an admitted ticket carries, checked without the
//!   store.
//! - [`challenge`]: the join challenge (proof of work), minted and checked without the
//!   store, spent with the join.
//! - [`link`]: bypass links an operator signs for support staff, checked without the store.
//! - [`cache`]: passes the store confirmed lately, by the hash of their token, forgotten when
//!   the feed says their admission ended.
//! - [`layer`]: [`RequireAdmission`], the tower layer that lets only admitted requests
//!   through, for `POST /orders` and any route an application wraps with it.

pub mod cache;
pub mod challenge;
pub mod keys;
pub mod layer;
pub mod link;
pub mod token;

pub use self::cache::{PassCache, TokenHash};
pub use self::challenge::{
    CHALLENGE_TTL_SECONDS, MAX_CHALLENGE_BITS, MAX_NONCE_LEN, PROOF_HEADER, Proof, ProofError,
    leading_zero_bits, solve,
};
pub use self::keys::{Keyring, KeyringError, PassKey};
pub use self::layer::RequireAdmission;
pub use self::link::{LinkError, MAX_LINK_TTL_SECONDS, SignedLink};
pub use self::token::{Admission, PASS_ISSUER, PASS_PREFIX, PassError, looks_like_pass};
