//! The queue's scripts as the store calls them (on Redis and on the embedded store alike), each
//! with arguments of its own; joins and status reads are gathered per show into calls of many
//! (`redis/gather.rs`).

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use uuid::Uuid;

use super::reply::{
    AdmitReply, AskCallReply, BypassReply, IsAdmittedReply, JoinReply, LeaveReply, StatusReply,
    TouchReply,
};
use super::{AdmitOutcome, BypassAsked, Bypassed, Joined, Queue, Status, Touched};
use crate::model::{AccessCode, ShowId};
use crate::pass::Proof;
use crate::store::redis::{RedisStore, ShowScript, TicketArgs, show_script};
use crate::store::{Result, StoreError};

static JOIN: LazyLock<ShowScript> = show_script!("join");
static STATUS: LazyLock<ShowScript> = show_script!("status");
static LEAVE: LazyLock<ShowScript> = show_script!("leave");
static IS_ADMITTED: LazyLock<ShowScript> = show_script!("is_admitted");
static TOUCH: LazyLock<ShowScript> = show_script!("touch");
static ADMIT: LazyLock<ShowScript> = show_script!("admit");
static NOTIFY: LazyLock<ShowScript> = show_script!("notify");
static BYPASS: LazyLock<ShowScript> = show_script!("bypass");

/// `bypass.lua`'s own arguments: the new ticket, the kind of rule that let it through, the
/// caller's key, the link (ms), and the most bypass admissions running at once.
#[derive(serde::Serialize)]
struct BypassArgs<'a> {
    ticket: Uuid,
    via: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    idem_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<LinkArgs<'a>>,
    most: u32,
}

/// A signed link as `bypass.lua` takes it.
#[derive(serde::Serialize)]
struct LinkArgs<'a> {
    id: &'a str,
    iat_ms: u64,
    exp_ms: u64,
}

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
    async fn join_coded(
        &self,
        show: &ShowId,
        key: Option<&str>,
        proof: Option<&Proof>,
        code: Option<&AccessCode>,
    ) -> Result<(Joined, bool)> {
        let join = JoinArgs {
            ticket: Uuid::new_v4(),
            idem_key: key.map(str::to_owned),
            proof_key: proof.map(|p| format!("wr:{{{show}}}:pow:{}", p.id)),
            proof_ttl_ms: proof.map(|p| p.ttl_ms.max(1)),
            proof_bits: proof.map(|p| p.bits),
            code: code.map(|c| c.hash.clone()),
            fallback: code.is_some_and(|c| c.fallback),
        };
        self.gathered(show, join, |store, show, joins| {
            Box::pin(async move { store.join_call(&show, joins).await })
        })
        .await
    }

    /// One read shared with the show's other status reads that arrive meanwhile
    /// (`gather.rs`): every fan's page reads its ticket once when it opens its stream.
    async fn status(&self, show: &ShowId, ticket: Uuid) -> Result<Status> {
        self.gathered(show, ticket, |store, show, tickets| {
            Box::pin(async move { store.status_call(&show, tickets).await })
        })
        .await
    }

    async fn bypass(&self, show: &ShowId, ticket: Uuid, asked: &BypassAsked) -> Result<Bypassed> {
        let args = BypassArgs {
            ticket,
            via: asked.via.as_str(),
            idem_key: asked.idem_key.as_deref(),
            link: asked.link.as_ref().map(|l| LinkArgs {
                id: &l.id,
                iat_ms: l.iat.saturating_mul(1000),
                exp_ms: l.exp.saturating_mul(1000),
            }),
            most: asked.most,
        };
        match self.run(&BYPASS, show, &args).await? {
            BypassReply::Admitted { arrival } => Ok(Bypassed::Admitted {
                ticket,
                arrival,
                replayed: false,
            }),
            BypassReply::Replayed { ticket, arrival } => Ok(Bypassed::Admitted {
                ticket,
                arrival,
                replayed: true,
            }),
            BypassReply::TooMany => Err(StoreError::NotNow {
                why: "the show has as many bypass admissions running as it lets at once; \
                      try again once one ends"
                    .into(),
                retry_after: std::time::Duration::from_secs(10),
            }),
            BypassReply::LinkVoid => Ok(Bypassed::LinkRefused(
                "this bypass link was signed before the show last took links on: it no \
                 longer lets anyone through",
            )),
            BypassReply::LinkUsed => Ok(Bypassed::LinkRefused(
                "this bypass link was used already: a link lets one person through",
            )),
            BypassReply::NotOpen => Err(StoreError::Conflict(
                "the on-sale is not open: nobody is let through, by a bypass or in turn".into(),
            )),
            BypassReply::SoldOut => Err(StoreError::Conflict(
                "every seat is sold or held by a running admission: a bypass takes a seat too"
                    .into(),
            )),
        }
    }

    async fn leave(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: LeaveReply = self.run(&LEAVE, show, &TicketArgs { ticket }).await?;
        Ok(r.live)
    }

    async fn is_admitted(&self, show: &ShowId, ticket: Uuid) -> Result<bool> {
        let r: IsAdmittedReply = self.run(&IS_ADMITTED, show, &TicketArgs { ticket }).await?;
        Ok(r.admitted)
    }

    async fn touch(&self, show: &ShowId, ticket: Uuid) -> Result<Touched> {
        let args = TouchArgs {
            ticket,
            window_ms: self.settings.arrival_window.as_millis() as u64,
        };
        let r: TouchReply = self.run(&TOUCH, show, &args).await?;
        Ok(r.into())
    }

    async fn admit(&self, show: &ShowId, fence: u64) -> Result<AdmitOutcome> {
        let window = self.settings.arrival_window.as_millis() as u64;
        let args = AdmitArgs {
            fence,
            window_ms: window,
        };
        let r: AdmitReply = self.run(&ADMIT, show, &args).await?;
        Ok(r.into())
    }

    async fn ask_call(&self, show: &ShowId, ticket: Uuid, channel: String) -> Result<bool> {
        let args = NotifyArgs {
            ticket,
            channel_json: channel,
        };
        let r: AskCallReply = self.run(&NOTIFY, show, &args).await?;
        Ok(matches!(r, AskCallReply::Asked))
    }
}

/// `touch.lua`'s own arguments: the ticket, and the store's arrival window (ms) for a show
/// without its own.
#[derive(serde::Serialize)]
struct TouchArgs {
    ticket: Uuid,
    window_ms: u64,
}

/// `admit.lua`'s own arguments: the admitter's fencing token, and the store's arrival window
/// (ms) for a show without its own.
#[derive(serde::Serialize)]
struct AdmitArgs {
    fence: u64,
    window_ms: u64,
}

/// `notify.lua`'s own arguments: the ticket, and how it asks to be called (JSON text).
#[derive(serde::Serialize)]
struct NotifyArgs {
    ticket: Uuid,
    channel_json: String,
}

/// `join.lua`'s own arguments: the joins of one call.
#[derive(serde::Serialize)]
struct JoinCall {
    joins: Vec<JoinArgs>,
}

/// `status.lua`'s own arguments: the tickets of one call (status reads gathered per show).
#[derive(serde::Serialize)]
struct StatusCall {
    tickets: Vec<Uuid>,
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
    /// The hash of its access code, and whether it falls back to the general queue when the
    /// code is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fallback: bool,
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
        let r: JoinReply = self.run(&JOIN, show, &JoinCall { joins }).await?;
        r.answers(show, &tickets)
    }

    /// Where the tickets `tickets` of `show` stand, in one call, in order.
    pub(super) async fn status_call(
        &self,
        show: &ShowId,
        tickets: Vec<Uuid>,
    ) -> Result<Vec<Result<Status>>> {
        let n = tickets.len();
        let r: StatusReply = self.run(&STATUS, show, &StatusCall { tickets }).await?;
        r.answers(n)
    }
}
