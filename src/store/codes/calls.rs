//! [`Codes`] as the store calls them (on Redis and on the embedded store alike):
//! `add_codes.lua` and `code_counts.lua`, per-show scripts as every other.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use serde::Deserialize;

use super::{Codes, CodesAdded, LaneCodes, MAX_CODES_A_CALL, MAX_CODES_A_SHOW, NewCode};
use crate::model::ShowId;
use crate::store::redis::reply::list;
use crate::store::redis::{RedisStore, ShowScript, show_script};
use crate::store::{Result, StoreError};

static ADD_CODES: LazyLock<ShowScript> = show_script!("add_codes");
static CODE_COUNTS: LazyLock<ShowScript> = show_script!("code_counts");

/// `add_codes.lua`'s own arguments: the codes, and the most a show holds.
#[derive(serde::Serialize)]
struct AddArgs<'a> {
    codes: Vec<CodeArgs<'a>>,
    most: u64,
    replace: bool,
}

/// One code as `add_codes.lua` takes it.
#[derive(serde::Serialize)]
struct CodeArgs<'a> {
    hash: &'a str,
    lane: &'a str,
    uses: u32,
}

/// `add_codes.lua`'s answer.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum AddReply {
    Added { added: u64, held: u64 },
    TooMany { held: u64 },
}

/// `code_counts.lua`'s answer.
#[derive(Debug, Deserialize)]
struct CountsReply {
    #[serde(deserialize_with = "list")]
    lanes: Vec<LaneCount>,
}

#[derive(Debug, Deserialize)]
struct LaneCount {
    lane: String,
    codes: u64,
    uses_left: u64,
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Codes for RedisStore<C> {
    async fn add_codes(
        &self,
        show: &ShowId,
        codes: &[NewCode],
        replace: bool,
    ) -> Result<CodesAdded> {
        if codes.len() > MAX_CODES_A_CALL {
            return Err(StoreError::Protocol(format!(
                "add_codes: {} codes in one call, at most {MAX_CODES_A_CALL}",
                codes.len()
            )));
        }
        let args = AddArgs {
            codes: codes
                .iter()
                .map(|c| CodeArgs {
                    hash: &c.hash,
                    lane: &c.lane,
                    uses: c.uses,
                })
                .collect(),
            most: MAX_CODES_A_SHOW,
            replace,
        };
        match self.run(&ADD_CODES, show, &args).await? {
            AddReply::Added { added, held } => Ok(CodesAdded { added, held }),
            AddReply::TooMany { held } => Err(StoreError::Conflict(format!(
                "the show holds {held} codes: at most {MAX_CODES_A_SHOW} in all"
            ))),
        }
    }

    async fn code_counts(&self, show: &ShowId) -> Result<Vec<LaneCodes>> {
        let r: CountsReply = self.run(&CODE_COUNTS, show, &()).await?;
        Ok(r.lanes
            .into_iter()
            .map(|l| LaneCodes {
                lane: l.lane,
                codes: l.codes,
                uses_left: l.uses_left,
            })
            .collect())
    }
}
