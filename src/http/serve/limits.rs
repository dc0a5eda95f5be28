//! Streams per client address (`MAX_STREAMS_PER_CLIENT`). A fan follows a ticket over one
//! stream, a household behind one address over a few; hundreds from one address are someone
//! hoarding connections, and are refused with 429 before any stream opens. Counted on this
//! instance only: a stream is a connection to this process, so this process is what it costs.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::client_prefix;
use crate::error::AppError;

/// The open streams of every client address block, bounded per block.
#[derive(Clone)]
pub struct StreamLimits {
    shared: Arc<Shared>,
}

struct Shared {
    /// 0: no limit.
    max_per_client: u32,
    /// Only blocks with a stream open have an entry, so the map is as large as the audience.
    open: Mutex<HashMap<IpAddr, u32>>,
}

impl StreamLimits {
    /// At most `max_per_client` streams at once per address block; 0 turns the limit off.
    pub fn new(max_per_client: u32) -> Self {
        StreamLimits {
            shared: Arc::new(Shared {
                max_per_client,
                open: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// A slot for one more stream from `client`, held until the guard drops; 429 when the
    /// client's address block has all its streams open.
    pub fn open(&self, client: IpAddr) -> Result<StreamGuard, AppError> {
        let max = self.shared.max_per_client;
        if max == 0 {
            return Ok(StreamGuard { held: None });
        }
        let key = client_prefix(client);
        let mut open = self
            .shared
            .open
            .lock()
            .expect("stream counts are never poisoned");
        let count = open.entry(key).or_insert(0);
        if *count >= max {
            return Err(AppError::TooManyStreams(max));
        }
        *count += 1;
        Ok(StreamGuard {
            held: Some((self.shared.clone(), key)),
        })
    }

    /// Streams open now from `client`'s address block.
    pub fn open_from(&self, client: IpAddr) -> u32 {
        let open = self
            .shared
            .open
            .lock()
            .expect("stream counts are never poisoned");
        open.get(&client_prefix(client)).copied().unwrap_or(0)
    }
}

/// One open stream, counted against its client until dropped.
pub struct StreamGuard {
    held: Option<(Arc<Shared>, IpAddr)>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let Some((shared, key)) = self.held.take() else {
            return;
        };
        let mut open = shared
            .open
            .lock()
            .expect("stream counts are never poisoned");
        if let Some(count) = open.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_client_gets_its_limit_and_a_closed_stream_frees_a_slot() {
        let limits = StreamLimits::new(2);
        let a = limits.open(ip("203.0.113.7")).unwrap();
        let _b = limits.open(ip("203.0.113.7")).unwrap();
        let refused = limits
            .open(ip("203.0.113.7"))
            .err()
            .expect("a third is refused");
        assert!(matches!(refused, AppError::TooManyStreams(2)));
        // Another address is not affected.
        let _other = limits.open(ip("203.0.113.8")).unwrap();
        drop(a);
        assert_eq!(limits.open_from(ip("203.0.113.7")), 1);
        let _c = limits.open(ip("203.0.113.7")).unwrap();
    }

    #[test]
    fn ipv6_clients_are_counted_per_64_and_mapped_ipv4_as_ipv4() {
        let limits = StreamLimits::new(1);
        let _a = limits.open(ip("2001:db8:1:2::1")).unwrap();
        // Same /64, another interface id: the same client.
        assert!(limits.open(ip("2001:db8:1:2:ffff::9")).is_err());
        let _b = limits.open(ip("2001:db8:1:3::1")).unwrap();
        // A dual-stack socket shows IPv4 clients as ::ffff:a.b.c.d; each is its own client.
        let _c = limits.open(ip("::ffff:198.51.100.1")).unwrap();
        let _d = limits.open(ip("::ffff:198.51.100.2")).unwrap();
        assert_eq!(limits.open_from(ip("198.51.100.1")), 1);
    }

    #[test]
    fn the_map_forgets_clients_with_nothing_open() {
        let limits = StreamLimits::new(3);
        let guards: Vec<_> = (0..3)
            .map(|_| limits.open(ip("192.0.2.1")).unwrap())
            .collect();
        drop(guards);
        assert_eq!(limits.open_from(ip("192.0.2.1")), 0);
        assert!(limits.shared.open.lock().unwrap().is_empty());
    }

    #[test]
    fn zero_means_no_limit() {
        let limits = StreamLimits::new(0);
        let guards: Vec<_> = (0..1000)
            .map(|_| limits.open(ip("192.0.2.1")).unwrap())
            .collect();
        assert_eq!(guards.len(), 1000);
    }
}

/// Wrong operator tokens per client address block: past `OPERATOR_TOKEN_GUESSES`
/// ([`TokenGuesses::MAX`] unless set) within [`TokenGuesses::WINDOW`] every operator call
/// from that block is 429 until the window ends (the right token too, or the answer would
/// tell a guesser when it hit). Counted on this instance; with several instances a guesser
/// gets that many times the attempts, still nowhere near a 16-character token.
#[derive(Clone)]
pub struct TokenGuesses {
    /// Block → (wrong tokens in the window, when the window started).
    seen: Arc<Mutex<HashMap<IpAddr, (u32, Instant)>>>,
    /// Wrong tokens a block may send per window; 0: no bound.
    max: u32,
}

impl Default for TokenGuesses {
    fn default() -> Self {
        Self::new(Self::MAX)
    }
}

impl TokenGuesses {
    /// Wrong tokens one address block may send per window, by default.
    pub const MAX: u32 = crate::config::OPERATOR_TOKEN_GUESSES;
    /// How long a block's count runs from its first wrong token; then it starts from 0.
    pub const WINDOW: Duration = Duration::from_secs(60);
    /// Blocks remembered at most; past it, windows that ended are forgotten first.
    const MAX_BLOCKS: usize = 100_000;

    /// At most `max` wrong tokens per block and window; 0: no bound.
    pub fn new(max: u32) -> Self {
        TokenGuesses {
            seen: Arc::default(),
            max,
        }
    }

    /// `Err` with how long to wait while `client`'s block has used up its wrong tokens.
    pub fn check(&self, client: IpAddr) -> Result<(), Duration> {
        if self.max == 0 {
            return Ok(());
        }
        let seen = self.seen.lock().expect("token guesses are never poisoned");
        match seen.get(&client_prefix(client)) {
            Some(&(n, since)) if n >= self.max && since.elapsed() < Self::WINDOW => {
                Err(Self::WINDOW - since.elapsed())
            }
            _ => Ok(()),
        }
    }

    /// `client` sent a wrong (or no) token.
    pub fn wrong(&self, client: IpAddr) {
        if self.max == 0 {
            return;
        }
        let mut seen = self.seen.lock().expect("token guesses are never poisoned");
        if seen.len() >= Self::MAX_BLOCKS {
            seen.retain(|_, (_, since)| since.elapsed() < Self::WINDOW);
        }
        let entry = seen
            .entry(client_prefix(client))
            .or_insert((0, Instant::now()));
        if entry.1.elapsed() >= Self::WINDOW {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
    }
}
