//! What the order gate's scripts answer (`order.lua`, `redeem.lua`), decoded by name.

use serde::Deserialize;

use super::Redeemed;
use crate::store::redis::reply::epoch;

/// `order.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum OrderReply {
    Created {
        order: String,
    },
    /// The same request again: the order it placed.
    Repeated {
        order: String,
    },
    /// The hold is another's, the show sold out, or the admission was spent.
    Conflict {
        why: String,
    },
    Forbidden,
}

/// `redeem.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum RedeemReply {
    Redeemed {
        arrival: u64,
        #[serde(deserialize_with = "epoch")]
        epoch: u64,
    },
    Spent,
    Forbidden,
}

impl From<RedeemReply> for Redeemed {
    fn from(r: RedeemReply) -> Redeemed {
        match r {
            RedeemReply::Redeemed { arrival, epoch } => Redeemed::Now { arrival, epoch },
            RedeemReply::Spent => Redeemed::Before,
            RedeemReply::Forbidden => Redeemed::NotAdmitted,
        }
    }
}
