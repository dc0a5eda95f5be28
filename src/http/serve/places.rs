//! Where a connection may be served: a place in the main pool, else in the reserve (for the
//! health, metrics and operator requests only), and never more than its client block's
//! share. A place is given back when its connection ends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::client_prefix;

/// The bounds on connections (see `Config`).
#[derive(Clone, Debug)]
pub(crate) struct ConnectionLimits {
    /// For a request head to arrive, and for an idle kept-alive connection.
    pub header_timeout: Duration,
    /// Connections served in full.
    pub max_connections: usize,
    /// Connections beyond those that serve only the requests of [`reserve_serves`](super::listener::reserve_serves).
    pub reserve_connections: usize,
    /// Connections one client address block may hold (0: no bound beyond the pools).
    pub max_per_client: usize,
    /// How long a client may take nothing of what it is sent (`UPSTREAM_IDLE_TIMEOUT`).
    pub write_idle: Duration,
    /// Threads of their own that serve connections (`SERVE_THREADS`); 0: the server's
    /// runtime does.
    pub threads: usize,
}

/// The two pools of places a connection may take, and each client's share of them.
pub(super) struct Places {
    main: Arc<Semaphore>,
    reserve: Arc<Semaphore>,
    per_client: Option<Arc<PerClient>>,
}

/// Connections held per client address block; only blocks holding one have an entry.
struct PerClient {
    max: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

impl Places {
    pub(super) fn new(limits: &ConnectionLimits) -> Self {
        Places {
            main: Arc::new(Semaphore::new(limits.max_connections)),
            reserve: Arc::new(Semaphore::new(limits.reserve_connections)),
            per_client: (limits.max_per_client > 0).then(|| {
                Arc::new(PerClient {
                    max: limits.max_per_client,
                    held: Mutex::new(HashMap::new()),
                })
            }),
        }
    }

    /// A place for a connection from `peer`: in the main pool, else in the reserve, else
    /// none; none too once `peer`'s block holds its share.
    pub(super) fn admit(&self, peer: IpAddr) -> Option<Place> {
        let share = match &self.per_client {
            Some(per) => Some(ClientShare::take(per, client_prefix(peer))?),
            None => None,
        };
        if let Ok(permit) = self.main.clone().try_acquire_owned() {
            return Some(Place {
                reserve: false,
                _permit: permit,
                _share: share,
            });
        }
        let permit = self.reserve.clone().try_acquire_owned().ok()?;
        Some(Place {
            reserve: true,
            _permit: permit,
            _share: share,
        })
    }
}

/// One connection counted against its client block, until dropped.
struct ClientShare {
    per: Arc<PerClient>,
    block: IpAddr,
}

impl ClientShare {
    fn take(per: &Arc<PerClient>, block: IpAddr) -> Option<ClientShare> {
        let mut held = per
            .held
            .lock()
            .expect("connection shares are never poisoned");
        let n = held.entry(block).or_insert(0);
        if *n >= per.max {
            return None;
        }
        *n += 1;
        Some(ClientShare {
            per: per.clone(),
            block,
        })
    }
}

impl Drop for ClientShare {
    fn drop(&mut self) {
        let mut held = self
            .per
            .held
            .lock()
            .expect("connection shares are never poisoned");
        if let Some(n) = held.get_mut(&self.block) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.block);
            }
        }
    }
}

/// A connection's place, given back when dropped.
pub(super) struct Place {
    pub(super) reserve: bool,
    _permit: OwnedSemaphorePermit,
    _share: Option<ClientShare>,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits(max: usize, reserve: usize) -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: Duration::from_secs(1),
            max_connections: max,
            reserve_connections: reserve,
            max_per_client: 0,
            write_idle: Duration::from_secs(30),
            threads: 0,
        }
    }

    #[test]
    fn places_come_from_the_main_pool_then_the_reserve_then_none() {
        let gate = Places::new(&limits(2, 1));
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let a = gate.admit(ip).unwrap();
        let b = gate.admit(ip).unwrap();
        assert!(!a.reserve && !b.reserve);
        let c = gate.admit(ip).unwrap();
        assert!(c.reserve);
        assert!(gate.admit(ip).is_none());
        // A main place given back is taken by the next connection, not the reserve.
        drop(a);
        assert!(!gate.admit(ip).unwrap().reserve);
    }

    #[test]
    fn one_client_block_holds_its_share_and_no_more() {
        let gate = Places::new(&ConnectionLimits {
            max_per_client: 2,
            ..limits(10, 1)
        });
        let greedy: IpAddr = "192.0.2.1".parse().unwrap();
        let same_64: IpAddr = "2001:db8::1".parse().unwrap();
        let held: Vec<Place> = (0..2).map(|_| gate.admit(greedy).unwrap()).collect();
        assert!(
            gate.admit(greedy).is_none(),
            "a third from the same address"
        );
        assert!(gate.admit("192.0.2.2".parse().unwrap()).is_some());
        let v6: Vec<Place> = (0..2).map(|_| gate.admit(same_64).unwrap()).collect();
        assert!(
            gate.admit("2001:db8::ffff".parse().unwrap()).is_none(),
            "same /64"
        );
        drop(held);
        assert!(gate.admit(greedy).is_some(), "given back on close");
        drop(v6);
    }
}
