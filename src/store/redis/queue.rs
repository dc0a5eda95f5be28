//! The queue and its admissions in Redis, one script a call.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use uuid::Uuid;

use super::reply::{AdmitReply, IsAdmittedReply, JoinReply, LeaveReply, StatusReply, TouchReply};
use super::{RedisStore, ScriptArgs, ShowScript, show_script};
use crate::model::{ShowId, TicketState};
use crate::pass::Proof;
use crate::store::{AdmitOutcome, Joined, Queue, Result, Status};
use crate::store::{StoreError, Touched};

static JOIN: LazyLock<ShowScript> = show_script!("join");
static STATUS: LazyLock<ShowScript> = show_script!("status");
static LEAVE: LazyLock<ShowScript> = show_script!("leave");
static IS_ADMITTED: LazyLock<ShowScript> = show_script!("is_admitted");
static TOUCH: LazyLock<ShowScript> = show_script!("touch");
static ADMIT: LazyLock<ShowScript> = show_script!("admit");

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
        let r: StatusReply = self.run(&STATUS, show, ScriptArgs::ticket(ticket)).await?;
        Ok(r.into())
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: LeaveReply = self.run(&LEAVE, show, ScriptArgs::ticket(ticket)).await?;
        Ok(r.live)
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: IsAdmittedReply = self
            .run(&IS_ADMITTED, show, ScriptArgs::ticket(ticket))
            .await?;
        Ok(r.admitted)
    }

    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<Touched> {
        let args = ScriptArgs {
            window_ms: Some(self.settings.arrival_window.as_millis() as u64),
            ..ScriptArgs::ticket(ticket)
        };
        let r: TouchReply = self.run(&TOUCH, show, args).await?;
        Ok(r.into())
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let window = self.settings.arrival_window.as_millis() as u64;
        let args = ScriptArgs {
            fence: Some(fence),
            window_ms: Some(window),
            ..Default::default()
        };
        let r: AdmitReply = self.run(&ADMIT, show, args).await?;
        Ok(r.into())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// Joins, keeping the ticket under `idem_key` when given; `None` when a live ticket is
    /// kept under that key already (`join.lua`'s `replayed`).
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
        let r: JoinReply = self.run(&JOIN, show, args).await?;
        match r {
            JoinReply::Joined(status) => {
                let status = Status::from(status);
                Ok(Some(Joined {
                    ticket,
                    seq: status.seq.unwrap_or(0),
                    status,
                }))
            }
            JoinReply::Replayed => Ok(None),
            JoinReply::ProofRequired { bits } => Err(StoreError::ProofRequired(bits)),
            JoinReply::ProofTooWeak { bits } => Err(StoreError::ProofTooWeak(bits)),
            JoinReply::ProofSpent => Err(StoreError::ProofSpent),
        }
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
        let live = !matches!(status.state, TicketState::Unknown | TicketState::Lost);
        Ok((live && epoch == status.epoch.to_string()).then(|| Joined {
            ticket,
            seq: status.seq.unwrap_or(0),
            status,
        }))
    }
}
