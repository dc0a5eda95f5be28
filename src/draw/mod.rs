//! The fair start's draw, as anyone can recompute it.
//!
//! Fans who join a scheduled show before it opens wait in a pre-queue, numbered by arrival
//! (1, 2, … n). When the show opens, the pre-queue is put in a random order that nobody could
//! steer:
//!
//! 1. When the operator schedules the show, the server draws a secret **seed** (64 hex
//!    digits) and publishes its **commitment**: SHA-256 of the original's text.
//! 2. At the opening the pre-queue closes with `n` fans. The **participants digest** is
//!    SHA-256 of the arrival numbers 1 to n, one per line (`seq 1 n | sha256sum`).
//! 3. If the operator named a public randomness **beacon** in advance (a future drand round,
//!    say), its value, published after the pre-queue closed, joins in; otherwise it is empty.
//! 4. The **draw key** is SHA-256 of `seed \n digest \n beacon \n`
//!    (`printf '%s\n%s\n%s\n' SEED DIGEST BEACON | sha256sum`).
//! 5. The drawn order is a keyed permutation of 1..=n under that key ([`Permutation`]):
//!    arrival `a` is drawn to place `P(a)`. After the pre-queue, fans queue first come first
//!    served behind it: arrival `a > n` keeps place `a`.
//!
//! The permutation is a balanced Feistel network over the smallest even number of bits that
//! holds n − 1, eight rounds, with cycle-walking so that it maps 1..=n onto itself: no list
//! is shuffled or rewritten, so a million-fan draw costs nothing at open, and a fan's place is
//! arithmetic (the hub and the store compute it per fan). The round function is MurmurHash3's
//! 32-bit finaliser of the right half XOR the round's key word (the draw key's eight big-endian
//! 32-bit words). `prelude.lua` computes the same permutation for the Redis store; a test pins
//! both to the same answers.

use sha2::{Digest, Sha256};

mod lanes;
mod verify;

pub use self::verify::{ArrivalReport, Verified, Violation, verify};

/// The name of the draw's algorithm, published with every draw.
pub const ALGORITHM: &str = "sha256-commit/feistel-fmix32-8r/v1";

/// Rounds of the Feistel network.
const ROUNDS: usize = 8;

/// A fresh secret seed: 32 random bytes, as 64 hex digits.
pub fn new_seed() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// SHA-256 of `text`, as 64 hex digits.
pub fn sha256_hex(text: &[u8]) -> String {
    hex::encode(Sha256::digest(text))
}

/// The commitment to a seed: SHA-256 of its text.
pub fn commitment(seed: &str) -> String {
    sha256_hex(seed.as_bytes())
}

/// SHA-256 of the arrival numbers 1 to `n`, one per line (each line ends with `\n`; none for
/// n = 0).
pub fn participants_digest(n: u64) -> String {
    let mut hasher = Sha256::new();
    let mut line = String::with_capacity(24);
    for a in 1..=n {
        line.clear();
        line.push_str(&a.to_string());
        line.push('\n');
        hasher.update(line.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// The draw key: SHA-256 of `seed \n digest \n beacon \n`, as 64 hex digits.
pub fn draw_key(seed: &str, digest: &str, beacon: &str) -> String {
    sha256_hex(format!("{seed}\n{digest}\n{beacon}\n").as_bytes())
}

/// Whether `s` is 64 lowercase hex digits (a seed, a digest, a key).
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The keyed permutation of 1..=n the draw puts the pre-queue in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u32; ROUNDS],
}

impl Permutation {
    /// The permutation of 1..=`n` under `key` (64 hex digits); `None` if the key is not one.
    pub fn new(key: &str, n: u64) -> Option<Permutation> {
        if !is_hex64(key) {
            return None;
        }
        let bytes = hex::decode(key).ok()?;
        let mut keys = [0u32; ROUNDS];
        for (i, word) in bytes.chunks_exact(4).enumerate() {
            keys[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        // Bits to hold n − 1 (0 for n ≤ 1), split into two halves of at least one bit.
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        (half_bits <= 26).then_some(Permutation { n, half_bits, keys })
    }

    /// How many arrivals it orders.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether it orders nobody.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The place (1..=n) arrival `a` (1..=n) was drawn to.
    pub fn place(&self, a: u64) -> u64 {
        debug_assert!((1..=self.n).contains(&a));
        self.walk(a - 1, |x| self.encrypt(x)) + 1
    }

    /// The arrival (1..=n) drawn to place `p` (1..=n).
    pub fn arrival_at(&self, p: u64) -> u64 {
        debug_assert!((1..=self.n).contains(&p));
        self.walk(p - 1, |x| self.decrypt(x)) + 1
    }

    /// Cycle-walking: the network permutes 0..4^half_bits, which holds 0..n; applied until
    /// the value falls back inside, it permutes 0..n.
    fn walk(&self, mut x: u64, step: impl Fn(u64) -> u64) -> u64 {
        loop {
            x = step(x);
            if x < self.n {
                return x;
            }
        }
    }

    fn mask(&self) -> u64 {
        (1u64 << self.half_bits) - 1
    }

    fn round(&self, i: usize, half: u64) -> u64 {
        u64::from(fmix32(half as u32 ^ self.keys[i])) & self.mask()
    }

    fn encrypt(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half_bits, x & self.mask());
        for i in 0..ROUNDS {
            (l, r) = (r, l ^ self.round(i, r));
        }
        (l << self.half_bits) | r
    }

    fn decrypt(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half_bits, x & self.mask());
        for i in (0..ROUNDS).rev() {
            (l, r) = (r ^ self.round(i, l), l);
        }
        (l << self.half_bits) | r
    }
}

/// MurmurHash3's 32-bit finaliser.
fn fmix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^= x >> 16;
    x
}

/// The place in the queue of arrival `a`: its drawn place if the pre-queue was drawn and it
/// was in it, else its arrival number (everyone after the pre-queue queues behind it).
pub fn order_key(a: u64, drawn: Option<&Permutation>) -> u64 {
    match drawn {
        Some(p) if a <= p.len() => p.place(a),
        _ => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00123456789abcdef0123456789abcdef";

    #[test]
    fn the_draw_is_a_permutation_of_1_to_n_and_its_inverse_undoes_it() {
        for n in (1..=70).chain([255, 256, 257, 1000, 4097]) {
            let p = Permutation::new(KEY, n).unwrap();
            let mut seen = vec![false; n as usize + 1];
            for a in 1..=n {
                let place = p.place(a);
                assert!((1..=n).contains(&place), "n {n}: {a} -> {place}");
                assert!(!seen[place as usize], "n {n}: place {place} twice");
                seen[place as usize] = true;
                assert_eq!(p.arrival_at(place), a, "n {n}");
            }
        }
    }

    #[test]
    fn the_order_depends_on_the_key_and_is_not_the_arrival_order() {
        let n = 1000;
        let a = Permutation::new(KEY, n).unwrap();
        let b = Permutation::new(&"1".repeat(64), n).unwrap();
        let moved = (1..=n).filter(|&x| a.place(x) != x).count();
        assert!(moved > 950, "only {moved} of {n} moved");
        let same = (1..=n).filter(|&x| a.place(x) == b.place(x)).count();
        assert!(same < 20, "{same} of {n} at the same place under two keys");
    }

    #[test]
    fn known_answers_pin_the_algorithm() {
        // The Redis store's Lua draws the same places (tests/api/draw/lua.rs).
        let p = Permutation::new(KEY, 1_000_000).unwrap();
        let places: Vec<u64> = [1, 2, 3, 500_000, 1_000_000]
            .iter()
            .map(|&a| p.place(a))
            .collect();
        assert_eq!(places, KNOWN_PLACES);
    }

    /// Places of arrivals 1, 2, 3, 500000 and 1000000 among 1,000,000 under `KEY`.
    pub(crate) const KNOWN_PLACES: [u64; 5] = [453_700, 503_431, 259_020, 31_032, 643_476];

    #[test]
    fn digests_are_what_the_shell_computes() {
        // printf '' | sha256sum ; seq 1 3 | sha256sum
        assert_eq!(
            participants_digest(0),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(participants_digest(3), sha256_hex(b"1\n2\n3\n"));
        assert_eq!(
            commitment("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(draw_key("s", "d", ""), sha256_hex(b"s\nd\n\n"));
    }

    #[test]
    fn keys_must_be_64_hex_digits() {
        assert!(Permutation::new("xyz", 10).is_none());
        assert!(Permutation::new(&"A".repeat(64), 10).is_none());
        assert!(is_hex64(&new_seed()));
    }

    #[test]
    fn order_keys_put_the_pre_queue_first() {
        let p = Permutation::new(KEY, 10).unwrap();
        let mut keys: Vec<u64> = (1..=15).map(|a| order_key(a, Some(&p))).collect();
        assert_eq!(&keys[10..], &[11, 12, 13, 14, 15]);
        keys.sort();
        assert_eq!(keys, (1..=15).collect::<Vec<_>>());
        assert_eq!(order_key(3, None), 3);
    }
}
