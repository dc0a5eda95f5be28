//! The queue and its admissions in Redis, one script a call; joins and status reads are
//! gathered per show into calls of many (`gather.rs`).

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use uuid::Uuid;

use super::reply::{
    AdmitReply, AskCallReply, IsAdmittedReply, JoinReply, LeaveReply, StatusReply, TouchReply,
};
use super::{RedisStore, ScriptArgs, ShowScript, show_script};
use crate::model::ShowId;
use crate::pass::Proof;
use crate::store::Touched;
use crate::store::{AdmitOutcome, Joined, Queue, Result, Status};

static JOIN: LazyLock<ShowScript> = show_script!("join");
static STATUS: LazyLock<ShowScript> = show_script!("status");
static LEAVE: LazyLock<ShowScript> = show_script!("leave");
static IS_ADMITTED: LazyLock<ShowScript> = show_script!("is_admitted");
static TOUCH: LazyLock<ShowScript> = show_script!("touch");
static ADMIT: LazyLock<ShowScript> = show_script!("admit");
static NOTIFY: LazyLock<ShowScript> = show_script!("notify");

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Queue for RedisStore<C> {
    async fn join(&self, show: &ShowId) -> Result<Joined> {
        self.join_proven(show, None, None).await.map(|(j, _)| j)
    }

    async fn join_once(&self, show: &ShowId, key: &str) -> Result<(Joined, bool)> {
        self.join_proven(show, Some(key), None).await
    }

    /// One call whatever happens (`join.lua` answers a replayed key's ticket itself), shared
    /// with the show's other joins that arrive meanwhile (`gather.rs`).
    async fn join_proven(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
    ) -> Result<(Joined, bool)> {
        let join = JoinArgs {
            ticket: Uuid::new_v4(),
            idem_key: key.map(str::to_owned),
            proof_key: proof.map(|p| format!("wr:{{{show}}}:pow:{}", p.id)),
            proof_ttl_ms: proof.map(|p| p.ttl_ms.max(1)),
            proof_bits: proof.map(|p| p.bits),
        };
        self.gathered(&self.joins, show, join, |store, show, joins| {
            Box::pin(async move { store.join_call(&show, joins).await })
        })
        .await
    }

    /// One read shared with the show's other status reads that arrive meanwhile
    /// (`gather.rs`): every fan's page reads its ticket once when it opens its stream.
    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        self.gathered(&self.statuses, show, ticket, |store, show, tickets| {
            Box::pin(async move { store.status_call(&show, tickets).await })
        })
        .await
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

    async fn ask_call(&self, show: &ShowId, ticket: Uuid, channel: String) -> Result<bool> {
        let args = ScriptArgs {
            channel_json: Some(channel),
            ..ScriptArgs::ticket(ticket)
        };
        let r: AskCallReply = self.run(&NOTIFY, show, args).await?;
        Ok(matches!(r, AskCallReply::Asked))
    }
}

/// One join of a call of `join.lua`, as it reads it.
#[derive(Debug, serde::Serialize)]
pub(super) struct JoinArgs {
    /// The ticket it gets if it goes in.
    ticket: Uuid,
    /// Its `Idempotency-Key`, as the client sent it: the field of the show's hash `idem` that
    /// keeps its ticket.
    #[serde(skip_serializing_if = "Option::is_none")]
    idem_key: Option<String>,
    /// Where its proof of work is marked spent, for how long, and the proof's zero bits.
    #[serde(skip_serializing_if = "Option::is_none")]
    proof_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proof_ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proof_bits: Option<u32>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// The joins `joins` of `show` in one call: each one's answer, in order (the call's error
    /// when it failed as a whole: Redis, or a show that is not live).
    pub(super) async fn join_call(
        &self,
        show: &ShowId,
        joins: Vec<JoinArgs>,
    ) -> Result<Vec<Result<(Joined, bool)>>> {
        let tickets: Vec<Uuid> = joins.iter().map(|j| j.ticket).collect();
        let args = ScriptArgs {
            joins: Some(joins),
            ..ScriptArgs::none()
        };
        let r: JoinReply = self.run(&JOIN, show, args).await?;
        r.answers(show, &tickets)
    }

    /// Where the tickets `tickets` of `show` stand, in one call, in order.
    pub(super) async fn status_call(
        &self,
        show: &ShowId,
        tickets: Vec<Uuid>,
    ) -> Result<Vec<Result<Status>>> {
        let n = tickets.len();
        let args = ScriptArgs {
            tickets: Some(tickets),
            ..ScriptArgs::none()
        };
        let r: StatusReply = self.run(&STATUS, show, args).await?;
        r.answers(n)
    }
}
