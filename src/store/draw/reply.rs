//! What the fair start's scripts answer (`schedule.lua`, `close_pre_queue.lua`, `draw.lua`),
//! decoded by name.

use serde::Deserialize;

use super::{Closing, Refused};

/// `schedule.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum ScheduleReply {
    Scheduled,
    Conflict { why: Refused },
}

/// `close_pre_queue.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum ClosingReply {
    Fenced,
    NotDue,
    Drawn,
    NotScheduled,
    AwaitingBeacon {
        participants: u64,
    },
    Ready {
        participants: u64,
        seed: String,
        beacon_value: String,
    },
}

impl From<ClosingReply> for Closing {
    fn from(c: ClosingReply) -> Closing {
        match c {
            ClosingReply::Fenced => Closing::Fenced,
            ClosingReply::NotDue => Closing::NotDue,
            ClosingReply::Drawn => Closing::Drawn,
            ClosingReply::NotScheduled => Closing::NotScheduled,
            ClosingReply::AwaitingBeacon { participants } => {
                Closing::AwaitingBeacon { participants }
            }
            ClosingReply::Ready {
                participants,
                seed,
                beacon_value,
            } => Closing::Ready {
                participants,
                seed,
                beacon_value,
            },
        }
    }
}

/// `draw.lua`: whether this call drew.
#[derive(Debug, Deserialize)]
pub(super) struct DrawReply {
    pub(super) drawn: bool,
}
