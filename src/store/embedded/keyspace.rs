//! The embedded store's keys: strings, hashes, sets, sorted sets and streams, each key with an
//! optional expiry, as Redis holds them.
//!
//! Expiry is Redis's: a key past its time is gone to every read (lazily), and each request
//! first sweeps a few of the keys whose time has come (actively, oldest first), so keys
//! nobody reads again (a client's join limit, a spent proof) do not pile up. Time is the one
//! `now_ms` a request runs at: frozen for a whole script, as in Redis 7.
//!
//! An aggregate (hash, set, sorted set) that loses its last element is deleted, as in Redis.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use bytes::Bytes;

use super::zset::ZSet;

/// What a key holds.
pub(super) enum Data {
    Str(Bytes),
    Hash(HashMap<Bytes, Bytes>),
    Set(HashSet<Bytes>),
    ZSet(ZSet),
    Stream(Stream),
}

/// A stream (`XADD`, `XRANGE`): entries in id order.
#[derive(Default)]
pub(super) struct Stream {
    pub(super) entries: VecDeque<(StreamId, Vec<(Bytes, Bytes)>)>,
    /// The greatest id ever added (kept when entries are trimmed).
    pub(super) last: StreamId,
}

/// A stream entry's id, `ms-seq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct StreamId {
    pub(super) ms: u64,
    pub(super) seq: u64,
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

struct Entry {
    data: Data,
    /// When the key goes (ms since the epoch).
    expires_at: Option<u64>,
}

/// The error every command answers when a key holds another type.
pub(super) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Keys swept from the expiry index per request at most: Redis's active expiry samples 20.
const SWEEP: usize = 20;

/// Every key.
#[derive(Default)]
pub(super) struct Keyspace {
    keys: HashMap<Bytes, Entry>,
    /// Keys with an expiry, by when.
    expiries: BTreeSet<(u64, Bytes)>,
    now_ms: u64,
}

/// One type of value, for the typed accessors.
pub(super) trait Kind: Sized {
    fn of(data: &Data) -> Option<&Self>;
    fn of_mut(data: &mut Data) -> Option<&mut Self>;
    fn wrap(self) -> Data;
    fn is_empty(&self) -> bool;
}

macro_rules! kind {
    ($ty:ty, $variant:ident) => {
        impl Kind for $ty {
            fn of(data: &Data) -> Option<&Self> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn of_mut(data: &mut Data) -> Option<&mut Self> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(self) -> Data {
                Data::$variant(self)
            }
            fn is_empty(&self) -> bool {
                <$ty>::is_empty(self)
            }
        }
    };
}
kind!(HashMap<Bytes, Bytes>, Hash);
kind!(HashSet<Bytes>, Set);
kind!(ZSet, ZSet);

impl Kind for Stream {
    fn of(data: &Data) -> Option<&Self> {
        match data {
            Data::Stream(v) => Some(v),
            _ => None,
        }
    }
    fn of_mut(data: &mut Data) -> Option<&mut Self> {
        match data {
            Data::Stream(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(self) -> Data {
        Data::Stream(self)
    }
    /// A stream stays when emptied by trimming, as in Redis.
    fn is_empty(&self) -> bool {
        false
    }
}

impl Keyspace {
    /// Starts a request at `now_ms`: the keys whose time came are swept (some of them).
    pub(super) fn begin(&mut self, now_ms: u64) {
        self.now_ms = now_ms;
        for _ in 0..SWEEP {
            let Some((at, _)) = self.expiries.first() else {
                break;
            };
            if *at > now_ms {
                break;
            }
            if let Some((_, key)) = self.expiries.pop_first() {
                self.keys.remove(&key);
            }
        }
    }

    pub(super) fn now_ms(&self) -> u64 {
        self.now_ms
    }

    fn live(&self, entry: &Entry) -> bool {
        entry.expires_at.is_none_or(|at| at > self.now_ms)
    }

    /// What `key` holds, unless it expired.
    pub(super) fn get(&self, key: &[u8]) -> Option<&Data> {
        self.keys.get(key).filter(|e| self.live(e)).map(|e| &e.data)
    }

    /// What `key` holds, to change; an expired key is deleted first.
    pub(super) fn get_mut(&mut self, key: &[u8]) -> Option<&mut Data> {
        let now = self.now_ms;
        match self.keys.get(key) {
            None => return None,
            Some(e) if e.expires_at.is_some_and(|at| at <= now) => {
                self.remove(key);
                return None;
            }
            Some(_) => {}
        }
        self.keys.get_mut(key).map(|e| &mut e.data)
    }

    pub(super) fn exists(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Deletes `key`; whether it was there (and live).
    pub(super) fn remove(&mut self, key: &[u8]) -> bool {
        match self.keys.remove(key) {
            Some(entry) => {
                if let Some(at) = entry.expires_at {
                    self.expiries.remove(&(at, Bytes::copy_from_slice(key)));
                }
                entry.expires_at.is_none_or(|at| at > self.now_ms)
            }
            None => false,
        }
    }

    /// Sets `key` to `data` with no expiry (a `SET` without `KEEPTTL`).
    pub(super) fn put(&mut self, key: &[u8], data: Data) {
        match self.keys.get_mut(key) {
            Some(entry) => {
                let old = entry.expires_at.take();
                entry.data = data;
                if let Some(at) = old {
                    self.expiries.remove(&(at, Bytes::copy_from_slice(key)));
                }
            }
            None => {
                self.keys.insert(
                    Bytes::copy_from_slice(key),
                    Entry {
                        data,
                        expires_at: None,
                    },
                );
            }
        }
    }

    /// Replaces what a live `key` holds, keeping its expiry (`SET … KEEPTTL`, `INCR`).
    pub(super) fn replace(&mut self, key: &[u8], data: Data) {
        if self.get_mut(key).is_some() {
            if let Some(entry) = self.keys.get_mut(key) {
                entry.data = data;
            }
        } else {
            self.put(key, data);
        }
    }

    /// The expiry of a live `key`: `None` when it has no key, `Some(None)` when it never expires.
    pub(super) fn expiry(&self, key: &[u8]) -> Option<Option<u64>> {
        self.keys
            .get(key)
            .filter(|e| self.live(e))
            .map(|e| e.expires_at)
    }

    /// Sets (or clears) the expiry of a live `key`; whether it has one. An expiry not after
    /// now deletes the key, as in Redis.
    pub(super) fn set_expiry(&mut self, key: &[u8], at: Option<u64>) -> bool {
        if self.get_mut(key).is_none() {
            return false;
        }
        if at.is_some_and(|at| at <= self.now_ms) {
            self.remove(key);
            return true;
        }
        let Some((stored, entry)) = self.keys.get_key_value(key) else {
            return false;
        };
        let (stored, old) = (stored.clone(), entry.expires_at);
        if let Some(old) = old {
            self.expiries.remove(&(old, stored.clone()));
        }
        if let Some(at) = at {
            self.expiries.insert((at, stored));
        }
        if let Some(entry) = self.keys.get_mut(key) {
            entry.expires_at = at;
        }
        true
    }

    /// The value of type `T` at `key`: `Ok(None)` when there is no key, `Err` when it holds
    /// another type.
    pub(super) fn typed<T: Kind>(&self, key: &[u8]) -> Result<Option<&T>, &'static str> {
        match self.get(key) {
            None => Ok(None),
            Some(data) => T::of(data).map(Some).ok_or(WRONGTYPE),
        }
    }

    /// The same to change, if there is one.
    pub(super) fn typed_mut<T: Kind>(
        &mut self,
        key: &[u8],
    ) -> Result<Option<&mut T>, &'static str> {
        match self.get_mut(key) {
            None => Ok(None),
            Some(data) => T::of_mut(data).map(Some).ok_or(WRONGTYPE),
        }
    }

    /// The value of type `T` at `key` to change, made empty when there is none.
    pub(super) fn typed_or_new<T: Kind + Default>(
        &mut self,
        key: &[u8],
    ) -> Result<&mut T, &'static str> {
        match self.get_mut(key) {
            Some(data) => {
                if T::of(data).is_none() {
                    return Err(WRONGTYPE);
                }
            }
            None => self.put(key, T::default().wrap()),
        }
        self.keys
            .get_mut(key)
            .and_then(|e| T::of_mut(&mut e.data))
            .ok_or(WRONGTYPE)
    }

    /// Deletes `key` if the aggregate of type `T` it holds was emptied.
    pub(super) fn drop_if_empty<T: Kind>(&mut self, key: &[u8]) {
        let empty = self
            .keys
            .get(key)
            .and_then(|e| T::of(&e.data))
            .is_some_and(T::is_empty);
        if empty {
            self.remove(key);
        }
    }

    /// Keys held (expired ones not swept yet included).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }
}
