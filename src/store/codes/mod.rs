//! Access codes (docs/lanes.md): presale and priority codes an operator adds to a show, each
//! for a lane, single-use or with a count of uses. The store keeps each code's hash
//! ([`crate::model::CodeKey::hash`]), never the code; a join spends a use (`join.lua`).

mod calls;

use async_trait::async_trait;

use super::Result;
use crate::model::ShowId;

/// One code as it is added: its hash, its lane, and how many joins it lets in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCode {
    /// [`crate::model::CodeKey::hash`] of the code.
    pub hash: String,
    /// The lane it lets its fans into.
    pub lane: String,
    /// Joins it lets in (1: single-use).
    pub uses: u32,
}

/// What adding a batch of codes did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodesAdded {
    /// Codes the show did not hold.
    pub added: u64,
    /// Codes it held already: kept as they were (the uses they spent stay spent), or set
    /// anew when asked.
    pub held: u64,
}

/// A lane's codes: how many, and the uses they have left.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaneCodes {
    /// The lane.
    pub lane: String,
    /// Codes for it.
    pub codes: u64,
    /// Their uses left, together.
    pub uses_left: u64,
}

/// A show's access codes.
#[async_trait]
pub trait Codes: Send + Sync {
    /// Adds `codes` to `show`, in one step; a code it holds already is kept as it is, or set
    /// anew with `replace`. The show must exist. At most [`MAX_CODES_A_CALL`] a call.
    async fn add_codes(
        &self,
        show: &ShowId,
        codes: &[NewCode],
        replace: bool,
    ) -> Result<CodesAdded>;
    /// The show's codes, by lane.
    async fn code_counts(&self, show: &ShowId) -> Result<Vec<LaneCodes>>;
}

/// The most codes one call adds (a CSV upload is sent in batches of it).
pub const MAX_CODES_A_CALL: usize = 2000;
/// The most codes a show holds.
pub const MAX_CODES_A_SHOW: u64 = 1_000_000;
