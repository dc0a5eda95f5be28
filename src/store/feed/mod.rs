//! The feed a hub mirrors: a show's positional state read at once, then every change of every
//! show as it happens.

mod calls;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};

use super::{DrawPhase, Result};
use crate::model::{
    EndReason, LaneFigure, LaneName, Lanes, Pace, Paused, Phase, RateChange, Sale, ShowId,
};

/// What a hub needs to push every fan its position without asking the store per fan.
#[async_trait]
pub trait Feed: Send + Sync {
    /// The state the hub derives positions from.
    async fn snapshot(&self, show: &ShowId) -> Result<ShowSnapshot>;
    /// The stream of every listened show's events (every show's, where the store cannot
    /// choose). It ends when the connection behind it drops; the caller subscribes again and
    /// resynchronises from snapshots.
    async fn subscribe(&self) -> Result<BoxStream<'static, ShowEvent>>;
    /// One more listener of `show`: every subscription carries its events from when this
    /// returns (read the snapshot after it). Each `listen` is matched by one [`Feed::unlisten`].
    /// A store whose subscriptions carry every show anyway (one Redis, plain pub/sub, the
    /// embedded store) has nothing to do; sharded pub/sub on a cluster subscribes the show.
    async fn listen(&self, _show: &ShowId) -> Result<()> {
        Ok(())
    }
    /// One listener of `show` fewer: once nobody listens, subscriptions may stop carrying it.
    fn unlisten(&self, _show: &ShowId) {}
}

/// Why a show's state moved; carried by every published [`ShowEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// An admission tick let the first `admitted` fans in: `head` moved.
    Tick,
    /// A waiting fan left (`left` says which sequence).
    Leave,
    /// The pace changed without a tick: the rate, a cap, a phase, the stock, an announced
    /// change.
    Rate,
    /// A scheduled show's opening moved, its pre-queue closed, or it was drawn: who stands
    /// where changed for every fan, and only a snapshot tells.
    Draw,
    /// The show's state was created anew (re-opened after a loss, or deleted): every
    /// position of the old epoch is void.
    Reset,
    /// Admissions ended without moving the queue: spent by an order or a redemption, or
    /// given back. `ended` names them; nothing else of the event is news (its version is the
    /// show's current one, and no mirror applies it).
    Spent,
}

/// One message per change of a show, published to every instance's hub.
///
/// It carries the whole small state (head, pace), so a hub that holds the `left` set can
/// derive every position and ETA from it alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowEvent {
    /// The show that changed.
    pub show: ShowId,
    /// The show's incarnation the change belongs to.
    pub epoch: u64,
    /// The show's version after the change: one more than the event before it.
    pub version: u64,
    /// Why the state moved.
    pub kind: EventKind,
    /// The highest arrival sequence admitted so far.
    pub head: u64,
    /// The sequence that left, for [`EventKind::Leave`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<u64>,
    /// Whether the show admits now (`pace.phase == open`, kept for readers of the channel).
    #[serde(default)]
    pub open: bool,
    /// The show's pace after the change.
    #[serde(flatten)]
    pub pace: PaceFigures,
    /// Tickets admitted by this tick.
    #[serde(default)]
    pub admitted: u64,
    /// Admission lifetime of the tickets this tick admitted.
    #[serde(default)]
    pub ttl_ms: u64,
    /// The store's clock when it happened (ms since the epoch).
    pub at_ms: u64,
    /// Tickets whose admission ended in this change (spent, given back, released untaken):
    /// their passes let nobody in any more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<uuid::Uuid>,
    /// Fans passed over while away who hold their places: each stands ahead of every queued
    /// fan, so it counts in every queued fan's position.
    #[serde(default)]
    pub parked: u64,
}

/// A show's pace as every script tells it (`pace_reply()` in `prelude.lua`): the one shape
/// that status reads, joins, stats, snapshots and events all carry, turned here alone into
/// the model's two: how the queue moves ([`Pace`]) and where the on-sale stands ([`Sale`]).
/// A field `pace_reply` adds is named here and given to whichever of the two it belongs. Every field may be absent (an event about spent admissions carries none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PaceFigures {
    /// The admission rate in force, a second.
    pub rate: u32,
    /// Places offered a second, smoothed, in thousandths (see [`Pace`]).
    pub flow_milli: u64,
    /// How much that flow varies, in thousandths: the ETA's range (see [`Pace`]).
    pub spread_milli: u64,
    /// Where the on-sale stands.
    pub phase: Phase,
    /// The last tick offered no place: every place behind the gate is taken.
    pub full: bool,
    /// An announced rate change: in how long (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_in_ms: Option<u64>,
    /// With `change_in_ms`: the rate announced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_rate: Option<u32>,
    /// The store's second of the show's last tick, if it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tick_sec: Option<u64>,
    /// Seats still for sale, when the show has a stock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stock_left: Option<u64>,
    /// With `ended`: why, when the operator said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Of the queued fans, the share away at the last tick, in thousandths (see [`Pace`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub away_milli: u64,
    /// Fans passed over at the last tick who still hold their places (see [`Pace`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub passed_over: u64,
    /// How much later than in its stride a full cap frees its first place (ms; see [`Pace`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub settle_ms: u64,
    /// The show's lanes, the general queue among them, in the order a tick serves them
    /// (absent: none; docs/lanes.md).
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::store::redis::reply::list"
    )]
    pub lanes: Vec<LaneFigures>,
}

/// One lane as `pace_reply` tells it (`lane_figures` in `prelude.lua`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaneFigures {
    /// Its slot (0: the general queue).
    pub slot: u8,
    /// Its name ("" for the general queue).
    pub name: String,
    /// Its share of the rate, percent.
    pub share: u8,
    /// Served first while it holds fans.
    pub priority: bool,
    /// Fans waiting in it.
    pub waiting: u64,
    /// Its highest arrival admitted.
    pub head: u64,
    /// Its fans passed over while away.
    pub parked: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<&PaceFigures> for Pace {
    fn from(p: &PaceFigures) -> Pace {
        Pace {
            rate: p.rate,
            flow_milli: p.flow_milli,
            spread_milli: p.spread_milli,
            paused: match p.phase {
                Phase::Pending => Some(Paused::Pending),
                Phase::Paused => Some(Paused::Paused),
                Phase::Open if p.full => Some(Paused::Full),
                Phase::Open | Phase::Closed | Phase::Ended => None,
            },
            change: p.change_in_ms.map(|in_ms| RateChange {
                in_ms,
                rate: p.change_rate.unwrap_or(0),
            }),
            tick_sec: p.tick_sec,
            away_milli: u16::try_from(p.away_milli.min(1000)).unwrap_or(1000),
            passed_over: u32::try_from(p.passed_over).unwrap_or(u32::MAX),
            settle_ms: u32::try_from(p.settle_ms).unwrap_or(u32::MAX),
            lanes: Lanes::new(p.lanes.iter().map(|l| LaneFigure {
                slot: l.slot,
                name: LaneName::new(&l.name).unwrap_or_default(),
                share: l.share,
                priority: l.priority,
                waiting: l.waiting,
                head: l.head,
                parked: l.parked,
            })),
        }
    }
}

impl From<&PaceFigures> for Sale {
    fn from(p: &PaceFigures) -> Sale {
        Sale {
            phase: p.phase,
            stock_left: p.stock_left,
            reason: p.reason.as_deref().and_then(EndReason::new),
        }
    }
}

impl PaceFigures {
    /// How the queue moves and where the on-sale stands, as the model holds them.
    pub fn read(&self) -> (Pace, Sale) {
        (Pace::from(self), Sale::from(self))
    }
}

/// Everything a hub needs to compute positions of a show, read atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShowSnapshot {
    /// 0 when the show does not exist (deleted, or never made).
    pub epoch: u64,
    /// The show's version the snapshot was read at; events above it come after it.
    pub version: u64,
    /// The highest arrival sequence admitted so far.
    pub head: u64,
    /// The sequences above `head` that left the queue early, in order.
    pub left: Vec<u64>,
    /// Fans passed over while away who hold their places, ahead of every queued one.
    pub parked: u64,
    /// How the queue moves now, for positions' ETAs.
    pub pace: Pace,
    /// Where the on-sale stands now.
    pub sale: Sale,
    /// How long an admission lasts.
    pub ttl_ms: u64,
    /// Where the show's draw stands: whether arrivals have a place yet, and which.
    pub draw: DrawPhase,
}
