//! What the shows' scripts answer (`configure.lua`, `open.lua`, `stats.lua`, …), decoded by
//! name (`crate::store::redis::reply` holds the decoding every script shares).

use serde::Deserialize;

use super::{Configured, ShowMeta, ThrottleControl};
use crate::model::Phase;
use crate::store::PaceFigures;
use crate::store::redis::reply::epoch;

/// `meta.lua` and `check.lua`: `{}` when there is no show.
#[derive(Debug, Deserialize)]
pub(super) struct MetaReply {
    show: Option<MetaFields>,
}

#[derive(Debug, Deserialize)]
struct MetaFields {
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
    open: bool,
    lost: bool,
    #[serde(default)]
    lanes: bool,
    #[serde(default)]
    page: Option<String>,
}

impl From<MetaReply> for Option<ShowMeta> {
    fn from(m: MetaReply) -> Option<ShowMeta> {
        m.show.map(|s| ShowMeta {
            epoch: s.epoch,
            open: s.open,
            lost: s.lost,
            lanes: s.lanes,
            page: s.page,
        })
    }
}

/// `configure.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct ConfigureReply {
    created: bool,
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
}

impl From<ConfigureReply> for Configured {
    fn from(c: ConfigureReply) -> Configured {
        Configured {
            created: c.created,
            recovered: false,
            epoch: c.epoch,
        }
    }
}

/// `open.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum OpenReply {
    Opened {
        created: bool,
        recovered: bool,
        #[serde(deserialize_with = "epoch")]
        epoch: u64,
    },
    /// A scheduled show not drawn yet: it opens by itself, after its draw.
    OpensByItself,
}

/// `close.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct CloseReply {
    #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
    closed: bool,
}

/// `end.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct EndReply {
    #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
    ended: bool,
}

/// `pause.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum PauseReply {
    Paused,
    /// Not opened yet, or ended: nothing to pause.
    NotRunning {
        phase: Phase,
    },
}

/// `delete.lua`: whether there was a show.
#[derive(Debug, Deserialize)]
pub(super) struct DeleteReply {
    pub(super) deleted: bool,
}

/// `challenge.lua`: the zero bits a join's proof of work must bring (0: none).
#[derive(Debug, Deserialize)]
pub(super) struct ChallengeReply {
    pub(super) bits: u32,
}

/// `pace.lua` read: what the admitter needs to follow the checkout.
#[derive(Debug, Deserialize)]
pub(super) struct ThrottleReply {
    health_url: Option<String>,
    floor: u32,
    configured: u32,
    current: u32,
}

impl From<ThrottleReply> for ThrottleControl {
    fn from(p: ThrottleReply) -> ThrottleControl {
        ThrottleControl {
            health_url: p.health_url.filter(|u| !u.is_empty()),
            lowest: p.floor,
            configured: p.configured,
            current: p.current,
        }
    }
}

/// `pace.lua` with a new rate: whether it changed.
#[derive(Debug, Deserialize)]
pub(super) struct SetThrottleReply {
    pub(super) changed: bool,
}

/// `stats.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct StatsReply {
    pub(super) queue_length: u64,
    /// Admissions still running that have not bought.
    pub(super) active: u64,
    /// The rate in force, and the configured one.
    pub(super) rate: u32,
    pub(super) configured_rate: u32,
    /// Tickets ever joined.
    pub(super) joined: u64,
    pub(super) cap: u32,
    pub(super) open: bool,
    pub(super) lost: bool,
    /// The show's own arrival window (ms), if it has one.
    pub(super) window_ms: Option<u64>,
    pub(super) released: u64,
    pub(super) challenge_bits: u32,
    /// Seats for sale (0: no stock).
    pub(super) stock: u64,
    pub(super) pace: PaceFigures,
    /// The operator's settings as `configure.lua` keeps them (JSON text).
    pub(super) settings: Option<String>,
    /// The schedule's event running, by its place in the list from 1.
    #[serde(default)]
    pub(super) event: Option<u32>,
    #[serde(default)]
    pub(super) away: u64,
    #[serde(default)]
    pub(super) parked: u64,
    #[serde(default)]
    pub(super) expired: u64,
    #[serde(default)]
    pub(super) calls_waiting: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ShowId;
    use crate::store::redis::reply::decode;

    fn show() -> ShowId {
        "s1".parse().unwrap()
    }

    #[test]
    fn an_epoch_travels_as_text() {
        let r: ConfigureReply = decode(
            &show(),
            "configure",
            r#"{"created":true,"epoch":"9999999999999"}"#,
        )
        .unwrap();
        assert_eq!(Configured::from(r).epoch, 9_999_999_999_999);
        assert!(
            decode::<ConfigureReply>(&show(), "configure", r#"{"created":true,"epoch":1}"#)
                .is_err()
        );
    }
}
