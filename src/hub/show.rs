//! One show as the hub sees it: the positional state mirrored from the store, and the fans
//! following it here. Pushed positions equal polled ranks because both come from
//! [`position`]; here the fans are walked in queue order, counting the leavers on the way.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::watch;
use uuid::Uuid;

use super::cadence::{BURST, Moment, Phase};
use crate::clock::wall_ms;
use crate::model::{LANE_SPAN, Pace, Sale, TicketState, TicketStatus, TicketView, lane_of};
use crate::store::{DrawPhase, EventKind, ShowEvent, ShowSnapshot, Status, position};

/// Fans of one show on this instance, and the show state their positions derive from.
pub(super) struct ShowFans {
    /// `None` while a snapshot is being read.
    pub(super) state: Option<Mirror>,
    /// Events that arrived while loading, replayed on top of the snapshot.
    pub(super) buffered: Vec<ShowEvent>,
    /// Keyed by (arrival, connection id): iteration goes in arrival order, which is queue
    /// order except for a drawn pre-queue.
    pub(super) fans: BTreeMap<(u64, u64), Fan>,
    /// Leaves arrived that the fans have not been told yet: a burst of them is folded into
    /// one recompute.
    pub(super) recompute_pending: bool,
    /// Fans pushed on the last tick, to tell a burst from the cadence's steady flow.
    pub(super) last_tick_pushes: usize,
    /// Pages the last recompute left showing leaves ahead they were not told, in a queue that
    /// stands still (no tick will re-tell them): a refresh is due ([`super::LAG_REFRESH`]).
    pub(super) lagging: bool,
    /// A refresh is scheduled.
    pub(super) refresh_pending: bool,
}

pub(super) struct Fan {
    pub(super) ticket: Uuid,
    /// The epoch of the show the ticket was issued in.
    pub(super) epoch: u64,
    /// The version of the state this fan was last told; older events are not for it.
    pub(super) from_version: u64,
    /// The ticket's state, as its streams here are to show it.
    pub(super) tx: watch::Sender<Status>,
    /// Its drawn place, once worked out (a show is drawn once an epoch).
    pub(super) place: Option<u64>,
    /// What its page knows of the ticks' phase, from the pushes it had right after a tick.
    pub(super) phase: Phase,
}

/// The hub's copy of a show's positional state.
#[derive(Debug)]
pub(super) struct Mirror {
    pub(super) epoch: u64,
    pub(super) version: u64,
    pub(super) head: u64,
    pub(super) left: BTreeSet<u64>,
    /// Fans passed over while away who hold their places, ahead of every queued fan.
    pub(super) parked: u64,
    pub(super) pace: Pace,
    pub(super) sale: Sale,
    pub(super) ttl_ms: u64,
    pub(super) draw: DrawPhase,
}

impl From<ShowSnapshot> for Mirror {
    fn from(s: ShowSnapshot) -> Self {
        Mirror {
            epoch: s.epoch,
            version: s.version,
            head: s.head,
            left: s.left.into_iter().collect(),
            parked: s.parked,
            pace: s.pace,
            sale: s.sale,
            ttl_ms: s.ttl_ms,
            draw: s.draw,
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
        if e.kind == EventKind::Spent {
            // Admissions ended: nobody's position moved (the pass cache hears of it).
            return Applied::Stale;
        }
        if e.epoch != self.epoch {
            // The show was created anew (or deleted): only a snapshot tells what it is now.
            return Applied::Gap;
        }
        if e.kind == EventKind::Reset {
            // The reset that made this very epoch: the mirror was read after it.
            return Applied::Stale;
        }
        if e.version <= self.version {
            return Applied::Stale;
        }
        if e.kind == EventKind::Draw {
            // Who stands where changed (the opening moved, the pre-queue closed or was
            // drawn): the snapshot carries the draw.
            return Applied::Gap;
        }
        if e.version != self.version + 1 {
            return Applied::Gap;
        }
        self.version = e.version;
        self.head = e.head;
        self.parked = e.parked;
        self.pace = Pace::from(&e.pace);
        self.sale = Sale::from(&e.pace);
        self.ttl_ms = e.ttl_ms;
        match e.kind {
            EventKind::Leave => {
                if let Some(arrival) = e.left {
                    self.left.insert(arrival);
                }
            }
            EventKind::Tick => {
                self.left = self.left.split_off(&(self.head + 1));
                // Each lane's leavers at or below its head moved nobody any more.
                for lane in self.pace.lanes.iter().filter(|l| l.slot > 0) {
                    let from = u64::from(lane.slot) * LANE_SPAN;
                    let gone: Vec<u64> = self.left.range(from..=lane.head).copied().collect();
                    for l in gone {
                        self.left.remove(&l);
                    }
                }
            }
            EventKind::Rate | EventKind::Reset | EventKind::Draw | EventKind::Spent => {}
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
            recompute_pending: false,
            last_tick_pushes: 0,
            lagging: false,
            refresh_pending: false,
        }
    }

    /// The connections following the ticket with arrival number `arrival`, oldest first.
    pub(super) fn streams_of(&self, arrival: u64) -> Vec<(u64, u64)> {
        self.fans
            .range((arrival, 0)..=(arrival, u64::MAX))
            .map(|(&key, _)| key)
            .collect()
    }

    /// Works out every fan behind the mirror its state at the mirror's version and pushes it
    /// where the push cadence says (`on_tick`: this follows a tick; `front`: `PUSH_FRONT`;
    /// `refresh`: every fan, told every leave ahead);
    /// fans that left, or whose ticket belongs to another epoch, get their last update and
    /// are let go.
    ///
    /// Fans the mirror says were admitted are let go without an update and returned: an
    /// admission is pushed only once the store confirms it, so a ticket the store does not
    /// know (its state was lost and its sequence reused) is never told it may buy.
    ///
    /// The cadence compares what each page shows with the truth in the words of the ticket
    /// JSON ([`TicketState::view`]); no state worked out here is an admission, so there is
    /// nothing to sign.
    pub(super) fn recompute(
        &mut self,
        on_tick: bool,
        front: u64,
        refresh: bool,
    ) -> Vec<((u64, u64), Fan)> {
        self.recompute_pending = false;
        self.lagging = false;
        let Some(m) = &self.state else {
            return Vec::new();
        };
        let moment = Moment {
            tick_sec: m.pace.tick_sec,
            on_tick,
            front,
            refresh,
        };
        // One walk over fans and leavers together, both in queue order: `gone` is the number
        // of leavers ahead of the fan at hand.
        let order = queue_order(&mut self.fans, &m.draw);
        // Lanes (docs/lanes.md) come one after the other in queue order, each from its own
        // head: the walk over leavers starts again at each.
        let mut lane = 0u8;
        let mut head = m.head;
        let mut parked = m.parked;
        let mut leavers = m.left.range(m.head + 1..).copied().peekable();
        let mut gone = 0u64;
        let mut finished = Vec::new();
        let mut admitted = Vec::new();
        let mut on_this_tick = Vec::new();
        for (key, (arrival, id)) in order {
            let Some(fan) = self.fans.get_mut(&(arrival, id)) else {
                continue;
            };
            let same_epoch = fan.epoch == m.epoch;
            if same_epoch && fan.from_version >= m.version && !refresh {
                continue;
            }
            let state = if !same_epoch {
                TicketState::Unknown
            } else if let Some(key) = key {
                if lane_of(arrival) != lane {
                    lane = lane_of(arrival);
                    head = m.pace.lanes.head(lane, m.head);
                    parked = match lane {
                        0 => m.parked,
                        _ => m.pace.lanes.get(lane).map_or(0, |l| l.parked),
                    };
                    leavers = m.left.range(head + 1..).copied().peekable();
                    gone = 0;
                }
                if key <= head {
                    admitted.push((arrival, id));
                    continue;
                }
                while leavers.next_if(|&l| l < key).is_some() {
                    gone += 1;
                }
                if leavers.peek() == Some(&key) {
                    TicketState::Unknown
                } else {
                    TicketState::Waiting {
                        position: position(key, head, gone) + parked,
                        arrival,
                    }
                }
            } else {
                TicketState::PreQueue {
                    arrival,
                    opens_in_ms: m.draw.opens_in_ms(wall_ms()),
                }
            };
            fan.from_version = m.version;
            let status = Status {
                state,
                epoch: m.epoch,
                arrival: None,
                pace: m.pace.clone(),
                sale: m.sale,
                version: m.version,
            };
            let truth = state.view(fan.ticket, &m.pace, &m.sale);
            // Told it no longer waits (unknown, or the on-sale closed or ended): let go.
            let waits = truth.status == TicketStatus::Waiting;
            if !waits {
                finished.push((arrival, id));
            }
            let push = {
                let last = shown(&fan.tx.borrow(), fan.ticket);
                let push = match state {
                    TicketState::Waiting { .. } if waits => {
                        moment.should_push(&last, fan.phase, &truth)
                    }
                    _ => last != truth,
                };
                // Left behind on leaves ahead where nothing counts down: refreshed later.
                if !push && truth.countdown_per_second.is_none() && last.position != truth.position
                {
                    self.lagging = true;
                }
                push
            };
            if push {
                if on_tick && moment.tick_sec.is_some() {
                    // A second push after a burst teaches the phase, whatever this tick is.
                    let first = fan.phase != Phase::Late;
                    fan.phase = Phase::Known;
                    on_this_tick.push(((arrival, id), first));
                }
                fan.tx.send_replace(status);
            }
        }
        if on_tick {
            // A burst: far more than the last tick (the opening, a rate change). Pushed behind
            // thousands, their pages learnt a late phase: pushed again soon.
            let pushed = on_this_tick.len();
            if pushed > BURST && pushed > 2 * self.last_tick_pushes {
                for (key, _) in on_this_tick.iter().filter(|(_, first)| *first) {
                    if let Some(fan) = self.fans.get_mut(key) {
                        fan.phase = Phase::Late;
                    }
                }
            }
            self.last_tick_pushes = pushed;
        }
        for key in finished {
            self.fans.remove(&key);
        }
        admitted
            .into_iter()
            .filter_map(|key| self.fans.remove(&key).map(|fan| (key, fan)))
            .collect()
    }
}

/// What the page of `ticket` was told with `status`: the ticket JSON (an admission's pass
/// aside, which the hub never handles).
fn shown(status: &Status, ticket: Uuid) -> TicketView {
    status.state.view(ticket, &status.pace, &status.sale)
}

/// The fans in queue order, each with its place in the queue (`None` while its pre-queue
/// waits for the draw; those come first, they are told no position). Arrival order is queue
/// order, except for a drawn pre-queue, whose fans go first in drawn order.
fn queue_order(
    fans: &mut BTreeMap<(u64, u64), Fan>,
    draw: &DrawPhase,
) -> Vec<(Option<u64>, (u64, u64))> {
    let mut order: Vec<(Option<u64>, (u64, u64))> = fans
        .iter_mut()
        .map(|(&(arrival, id), fan)| {
            let key = match draw {
                DrawPhase::Drawn(p) if arrival <= p.len() => {
                    Some(*fan.place.get_or_insert_with(|| p.place(arrival)))
                }
                other => other.order_key(arrival),
            };
            (key, (arrival, id))
        })
        .collect();
    if matches!(draw, DrawPhase::Drawn(_)) {
        // Stable: fans of one ticket keep their order.
        order.sort_by_key(|&(key, _)| key);
    }
    order
}
