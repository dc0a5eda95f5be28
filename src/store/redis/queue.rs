//! The queue and its admissions in Redis, one script a call.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use redis::aio::ConnectionLike;
use uuid::Uuid;

use super::{RedisStore, ScriptArgs, pace, protocol, reply, show_script};
use crate::model::{ShowId, TicketState};
use crate::pass::Proof;
use crate::store::{AdmitOutcome, Joined, Queue, Result, Status};
use crate::store::{StoreError, Touched};

static JOIN: LazyLock<Script> = show_script!("join.lua");
static STATUS: LazyLock<Script> = show_script!("status.lua");
static LEAVE: LazyLock<Script> = show_script!("leave.lua");
static IS_ADMITTED: LazyLock<Script> = show_script!("is_admitted.lua");
static TOUCH: LazyLock<Script> = show_script!("touch.lua");
static ADMIT: LazyLock<Script> = show_script!("admit.lua");

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Queue for RedisStore<C> {
    async fn join(&self, show: &ShowId) -> Result<Joined> {
        self.join_proven(show, None, None).await.map(|(j, _)| j)
    }

    async fn join_once(&self, show: &ShowId, key: &str) -> Result<(Joined, bool)> {
        self.join_proven(show, Some(key), None).await
    }

    async fn join_proven(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
    ) -> Result<(Joined, bool)> {
        let Some(key) = key else {
            let joined = self.join_as(show, None, proof).await?;
            return joined
                .map(|j| (j, false))
                .ok_or_else(|| StoreError::Protocol("join without a key was refused".into()));
        };
        let idem_key = format!("wr:{{{show}}}:idem:{key}");
        if let Some(kept) = self.kept(show, &idem_key).await? {
            return Ok((kept, true));
        }
        if let Some(joined) = self.join_as(show, Some(idem_key.clone()), proof).await? {
            return Ok((joined, false));
        }
        // Another request under the same key won the race: its ticket.
        let kept = self.kept(show, &idem_key).await?;
        kept.map(|k| (k, true))
            .ok_or_else(|| StoreError::Protocol("idempotency key lost its ticket".into()))
    }

    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        let r: Vec<i64> = self.run(&STATUS, show, ScriptArgs::ticket(ticket)).await?;
        let mut status = reply(show, "status", r, |r| {
            let [kind, value, seq, version, epoch, ref rest @ ..] = *r else {
                return None;
            };
            let (state, seq) = match kind {
                1 | 3 => (standing(kind, value, seq), Some(seq as u64)),
                2 => (
                    TicketState::Admitted {
                        expires_in_ms: value as u64,
                    },
                    None,
                ),
                _ => (TicketState::Unknown, None),
            };
            Some(Status {
                state,
                epoch: epoch as u64,
                seq,
                pace: pace(rest)?,
                version: version as u64,
            })
        })?;
        status.pace = self.with_reason(show, status.pace).await?;
        Ok(status)
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: Vec<i64> = self.run(&LEAVE, show, ScriptArgs::ticket(ticket)).await?;
        reply(show, "leave", r, |r| match *r {
            [live] => Some(live == 1),
            _ => None,
        })
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: Vec<i64> = self
            .run(&IS_ADMITTED, show, ScriptArgs::ticket(ticket))
            .await?;
        reply(show, "is_admitted", r, |r| match *r {
            [yes] => Some(yes == 1),
            _ => None,
        })
    }

    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<Touched> {
        let args = ScriptArgs {
            window_ms: Some(self.settings.arrival_window.as_millis() as u64),
            ..ScriptArgs::ticket(ticket)
        };
        let r: Vec<i64> = self.run(&TOUCH, show, args).await?;
        reply(show, "touch", r, |r| match *r {
            [1] => Some(Touched::Kept),
            [2] => Some(Touched::NotNeeded),
            [0] => Some(Touched::Over),
            _ => None,
        })
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let window = self.settings.arrival_window.as_millis() as u64;
        let args = ScriptArgs {
            fence: Some(fence),
            window_ms: Some(window),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&ADMIT, show, args).await?;
        match r[..] {
            [-1, fence] => Ok(AdmitOutcome::Fenced {
                fence: fence as u64,
            }),
            [-2, next_in] => Ok(AdmitOutcome::AlreadyThisSecond {
                next_in: Duration::from_millis(next_in.max(0) as u64),
            }),
            [-3] => Ok(AdmitOutcome::NotServed),
            [count, head, version, ..] if count >= 0 => Ok(AdmitOutcome::Admitted {
                count: count as u64,
                head: head as u64,
                version: version as u64,
            }),
            _ => Err(protocol("admit", &r)),
        }
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// Joins, keeping the ticket under `idem_key` when given; `None` when a live ticket is
    /// kept under that key already (`join.lua`'s {-409}).
    async fn join_as(
        &self,
        show: &ShowId,
        idem_key: Option<String>,
        proof: Option<&Proof>,
    ) -> Result<Option<Joined>> {
        let ticket = Uuid::new_v4();
        let args = ScriptArgs {
            idem_key,
            proof_key: proof.map(|p| format!("wr:{{{show}}}:pow:{}", p.id)),
            proof_ttl_ms: proof.map(|p| p.ttl_ms.max(1)),
            proof_bits: proof.map(|p| p.bits),
            ..ScriptArgs::ticket(ticket)
        };
        let r: Vec<i64> = self.run(&JOIN, show, args).await?;
        match r[..] {
            [-409] => return Ok(None),
            [-428, bits] => return Err(StoreError::ProofRequired(bits as u32)),
            [-4031, bits] => return Err(StoreError::ProofTooWeak(bits as u32)),
            [-4091] => return Err(StoreError::ProofSpent),
            _ => {}
        }
        reply(show, "join", r, |r| {
            let [seq, kind, value, version, epoch, ref rest @ ..] = *r else {
                return None;
            };
            Some(Some(Joined {
                ticket,
                seq: seq as u64,
                status: Status {
                    state: standing(kind, value, seq),
                    epoch: epoch as u64,
                    seq: Some(seq as u64),
                    pace: pace(rest)?,
                    version: version as u64,
                },
            }))
        })
    }

    /// The live ticket kept under `idem_key` in the show's current epoch, if any.
    async fn kept(&self, show: &ShowId, idem_key: &str) -> Result<Option<Joined>> {
        let mut conn = self.conn.clone();
        let kept: Option<String> = redis::AsyncCommands::get(&mut conn, idem_key).await?;
        let Some((epoch, ticket)) = kept.as_deref().and_then(|k| k.split_once('|')) else {
            return Ok(None);
        };
        let Ok(ticket) = Uuid::parse_str(ticket) else {
            return Ok(None);
        };
        let status = self.status(show, ticket).await?;
        let live = !matches!(status.state, TicketState::Unknown);
        Ok((live && epoch == status.epoch.to_string()).then(|| Joined {
            ticket,
            seq: status.seq.unwrap_or(0),
            status,
        }))
    }
}

/// A queued ticket's state as `standing()` in `prelude.lua` answers it: kind 1 waiting at
/// position `value`, kind 3 in a pre-queue that opens in `value` ms.
fn standing(kind: i64, value: i64, seq: i64) -> TicketState {
    let arrival = seq as u64;
    if kind == 3 {
        TicketState::PreQueue {
            arrival,
            opens_in_ms: value.max(0) as u64,
        }
    } else {
        TicketState::Waiting {
            position: value as u64,
            arrival,
        }
    }
}
