//! One show as the hub sees it: the positional state mirrored from the store, and the fans
//! following it here. The arithmetic that makes pushed positions equal polled ranks lives here.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::watch;
use uuid::Uuid;

use super::Update;
use crate::model::TicketState;
use crate::store::{EventKind, ShowEvent, ShowSnapshot};

/// Fans of one show on this instance, and the show state their positions derive from.
pub(super) struct ShowFans {
    /// `None` while a snapshot is being read.
    pub(super) state: Option<Mirror>,
    /// Events that arrived while loading, replayed on top of the snapshot.
    pub(super) buffered: Vec<ShowEvent>,
    /// Keyed by (sequence, connection id): iteration goes in queue order.
    pub(super) fans: BTreeMap<(u64, u64), Fan>,
}

pub(super) struct Fan {
    pub(super) ticket: Uuid,
    /// The version of the state this fan was last told; older events are not for it.
    pub(super) from_version: u64,
    pub(super) tx: watch::Sender<Update>,
}

/// The hub's copy of a show's positional state.
#[derive(Debug)]
pub(super) struct Mirror {
    pub(super) version: u64,
    pub(super) head: u64,
    pub(super) left: BTreeSet<u64>,
    pub(super) rate: u32,
    pub(super) ttl_ms: u64,
}

impl From<ShowSnapshot> for Mirror {
    fn from(s: ShowSnapshot) -> Self {
        Mirror {
            version: s.version,
            head: s.head,
            left: s.left.into_iter().collect(),
            rate: s.rate,
            ttl_ms: s.ttl_ms,
        }
    }
}

/// What applying an event to a mirror found.
pub(super) enum Applied {
    Stale,
    Gap,
    Moved,
}

impl Mirror {
    pub(super) fn apply(&mut self, e: &ShowEvent) -> Applied {
        if e.version <= self.version {
            return Applied::Stale;
        }
        if e.version != self.version + 1 {
            return Applied::Gap;
        }
        self.version = e.version;
        self.head = e.head;
        self.rate = e.rate;
        self.ttl_ms = e.ttl_ms;
        match e.kind {
            EventKind::Leave => {
                if let Some(seq) = e.left {
                    self.left.insert(seq);
                }
            }
            EventKind::Tick => self.left = self.left.split_off(&(self.head + 1)),
            EventKind::Rate => {}
        }
        Applied::Moved
    }
}

impl ShowFans {
    pub(super) fn loading() -> Self {
        ShowFans {
            state: None,
            buffered: Vec::new(),
            fans: BTreeMap::new(),
        }
    }

    /// Pushes every fan behind the mirror its state at the mirror's version; fans that were
    /// admitted or left get their last update and are let go.
    pub(super) fn recompute(&mut self) {
        let Some(m) = &self.state else { return };
        let mut leavers = m.left.range(m.head + 1..).copied().peekable();
        let mut gone = 0u64;
        let mut finished = Vec::new();
        for (&(seq, id), fan) in &mut self.fans {
            if fan.from_version >= m.version {
                continue;
            }
            let state = if seq <= m.head {
                TicketState::Admitted {
                    expires_in_ms: m.ttl_ms,
                }
            } else {
                while leavers.next_if(|&l| l < seq).is_some() {
                    gone += 1;
                }
                if leavers.peek() == Some(&seq) {
                    TicketState::Unknown
                } else {
                    TicketState::Waiting {
                        position: seq - m.head - gone,
                    }
                }
            };
            fan.from_version = m.version;
            let update = Update::new(fan.ticket, state, m.rate, m.version);
            if !matches!(state, TicketState::Waiting { .. }) {
                finished.push((seq, id));
            }
            fan.tx.send_if_modified(|current| {
                if current.view == update.view {
                    return false;
                }
                *current = update;
                true
            });
        }
        for key in finished {
            self.fans.remove(&key);
        }
    }
}
