//! Passes verified lately, so that a guarded request costs neither a signature check nor a
//! store read each time: each pass the store confirmed is kept by the hash of its token until
//! it runs out, and forgotten as soon as the store's feed says its admission ended (an order,
//! a redemption, given back, released) or its show was made anew.
//!
//! The cache is trusted only while this instance's hub holds a subscription to the feed:
//! when the subscription drops (a Redis restart, a failover) everything is forgotten and
//! nothing is kept until the hub is subscribed again. An admission spent on one instance is
//! refused on every other one as soon as its feed carries the news, which comes in the same
//! Redis step as the spend: before the next tick's event on that instance (pub/sub keeps a
//! connection's messages in order). A check and a spend racing each other cannot leave a
//! spent pass cached: a pass confirmed before a spend but kept after the feed told of it is
//! refused by the ended tickets it is checked against, and one confirmed across a lost
//! subscription by the generation it was read under.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::Admission;

/// The most passes kept; past it the cache starts again empty (each is confirmed again once).
const MAX_PASSES: usize = 200_000;

/// The hash a pass is kept under.
pub type TokenHash = [u8; 32];

/// Verified passes of running admissions; see the module's docs.
pub struct PassCache {
    inner: Mutex<Inner>,
    /// How long an admission can run: an ended ticket is remembered that long.
    admission_ttl_s: u64,
}

#[derive(Default)]
struct Inner {
    /// Whether the hub holds a subscription to the feed now.
    trusted: bool,
    /// Bumped whenever everything is forgotten: a confirmation read under an older one is
    /// not kept.
    generation: u64,
    passes: HashMap<TokenHash, Admission>,
    /// Tickets whose admission ended lately, until when it could have run at most (s).
    ended: HashMap<Uuid, u64>,
}

impl PassCache {
    /// An empty cache, untrusted until the hub subscribes; admissions run at most
    /// `admission_ttl_s` seconds.
    pub fn new(admission_ttl_s: u64) -> Self {
        PassCache {
            inner: Mutex::new(Inner::default()),
            admission_ttl_s,
        }
    }

    /// The hash `token` is kept under.
    pub fn key(token: &str) -> TokenHash {
        Sha256::digest(token.as_bytes()).into()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every critical section leaves the maps consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The admission of a pass confirmed lately that still runs at `now_s`, if the cache may
    /// be trusted.
    pub fn get(&self, key: &TokenHash, now_s: u64) -> Option<Admission> {
        let inner = self.lock();
        if !inner.trusted {
            return None;
        }
        let admission = inner.passes.get(key)?;
        if admission.expires_at <= now_s || inner.ended.contains_key(&admission.ticket) {
            return None;
        }
        Some(admission.clone())
    }

    /// The generation a confirmation about to be read from the store belongs to; `None`
    /// while the cache is not trusted (nothing read now is kept).
    pub fn generation(&self) -> Option<u64> {
        let inner = self.lock();
        inner.trusted.then_some(inner.generation)
    }

    /// Keeps `admission`, which the store confirmed under `generation`, unless the cache was
    /// emptied since or its ticket ended meanwhile.
    pub fn keep(&self, key: TokenHash, admission: Admission, generation: u64) {
        let mut inner = self.lock();
        if !inner.trusted
            || inner.generation != generation
            || inner.ended.contains_key(&admission.ticket)
        {
            return;
        }
        if inner.passes.len() >= MAX_PASSES {
            inner.passes.clear();
        }
        inner.passes.insert(key, admission);
    }

    /// The feed says these tickets' admissions ended at `now_s`.
    pub fn ended(&self, tickets: impl IntoIterator<Item = Uuid>, now_s: u64) {
        let mut inner = self.lock();
        let until = now_s + self.admission_ttl_s;
        for ticket in tickets {
            inner.ended.insert(ticket, until);
        }
        if inner.ended.len() >= MAX_PASSES {
            // Every pass is confirmed again rather than an ended one let through.
            inner.ended.retain(|_, until| *until > now_s);
            if inner.ended.len() >= MAX_PASSES {
                inner.forget_all();
                inner.ended.clear();
            }
        }
        inner.passes.retain(|_, a| a.expires_at > now_s);
    }

    /// Forgets everything (a show made anew, a feed that stopped): every pass is confirmed
    /// by the store again.
    pub fn forget_all(&self) {
        self.lock().forget_all();
    }

    /// The hub holds a subscription: passes may be kept from now on.
    pub fn trust(&self) {
        self.lock().trusted = true;
    }

    /// The hub lost its subscription: forgets everything and keeps nothing until it is back.
    pub fn distrust(&self) {
        let mut inner = self.lock();
        inner.trusted = false;
        inner.forget_all();
    }

    /// How many passes are kept (for tests and metrics).
    pub fn len(&self) -> usize {
        self.lock().passes.len()
    }

    /// Whether no pass is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn forget_all(&mut self) {
        self.generation += 1;
        self.passes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(ticket: Uuid, expires_at: u64) -> Admission {
        Admission {
            show: "s".parse().unwrap(),
            ticket,
            expires_at,
            kid: "k".into(),
            epoch: Some(1),
        }
    }

    #[test]
    fn kept_only_while_trusted_and_until_it_runs_out() {
        let cache = PassCache::new(300);
        let (key, t) = (PassCache::key("pass-a"), Uuid::new_v4());
        assert_eq!(
            cache.generation(),
            None,
            "untrusted: nothing is read to be kept"
        );
        cache.trust();
        let g = cache.generation().unwrap();
        cache.keep(key, admission(t, 100), g);
        assert_eq!(cache.get(&key, 99).map(|a| a.ticket), Some(t));
        assert!(cache.get(&key, 100).is_none(), "run out");
        assert!(cache.get(&PassCache::key("pass-b"), 50).is_none());
        cache.distrust();
        assert!(cache.get(&key, 50).is_none());
        assert!(cache.is_empty());
    }

    #[test]
    fn an_ended_admission_is_refused_and_never_kept_again() {
        let cache = PassCache::new(300);
        cache.trust();
        let (key, t) = (PassCache::key("pass"), Uuid::new_v4());
        let g = cache.generation().unwrap();
        cache.keep(key, admission(t, 1_000), g);
        cache.ended([t], 10);
        assert!(cache.get(&key, 11).is_none());
        // A confirmation read before the spend, kept after the feed told of it.
        cache.keep(key, admission(t, 1_000), g);
        assert!(cache.get(&key, 11).is_none());
    }

    #[test]
    fn a_confirmation_read_across_a_lost_subscription_is_not_kept() {
        let cache = PassCache::new(300);
        cache.trust();
        let g = cache.generation().unwrap();
        cache.distrust();
        cache.trust();
        let key = PassCache::key("pass");
        cache.keep(key, admission(Uuid::new_v4(), 1_000), g);
        assert!(cache.get(&key, 1).is_none());
        let g = cache.generation().unwrap();
        cache.keep(key, admission(Uuid::new_v4(), 1_000), g);
        assert!(cache.get(&key, 1).is_some());
        cache.forget_all();
        assert!(cache.get(&key, 1).is_none(), "a show made anew");
    }
}
