//! The fair start as the store calls it (on Redis and on the embedded store alike):
//! `schedule.lua`, `close_pre_queue.lua`, `draw.lua`, each with arguments of its own; the
//! draw's fields in the show's meta hash, the audit in the stream `wr:{show}:audit`, and the
//! shows waiting to open in `wr:scheduled` (scored by their opening time).

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::AsyncCommands;
use redis::aio::ConnectionLike;

use super::reply::{ClosingReply, DrawReply, ScheduleReply};
use super::{AuditKind, AuditRecord, Closing, DrawState, Drawn, Draws, RecordId, parse_ranges};
use crate::draw;
use crate::model::{LaneTurn, Schedule, ShowId};
use crate::store::redis::{
    OPEN_SHOWS, RedisStore, SCHEDULED, ShowScript, show_script, stream_page,
};
use crate::store::{Result, StoreError};

static SCHEDULE: LazyLock<ShowScript> = show_script!("schedule");
static CLOSE_PRE_QUEUE: LazyLock<ShowScript> = show_script!("close_pre_queue");
static DRAW: LazyLock<ShowScript> = show_script!("draw");

/// `schedule.lua`'s own arguments: when the show opens (ms; absent: no longer scheduled),
/// the draw's seed and its published commitment, and the beacon named in advance.
#[derive(serde::Serialize)]
struct ScheduleArgs {
    #[serde(skip_serializing_if = "Option::is_none")]
    opens_at: Option<u64>,
    seed: String,
    commitment: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    beacon: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    beacon_value: Option<String>,
}

/// `close_pre_queue.lua`'s own arguments: the admitter's fencing token.
#[derive(serde::Serialize)]
struct CloseArgs {
    fence: u64,
}

/// `draw.lua`'s own arguments: the admitter's fencing token, and the draw's digest and key.
#[derive(serde::Serialize)]
struct DrawArgs<'a> {
    fence: u64,
    digest: &'a str,
    key: &'a str,
}

/// The meta fields `GET …/draw` shows, in the order [`Draws::draw`] reads them.
const DRAW_FIELDS: [&str; 11] = [
    "epoch",
    "lost",
    "deleted",
    "opens_at",
    "commitment",
    "beacon",
    "closed_n",
    "seed",
    "digest",
    "beacon_value",
    "drawn_at",
];

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Draws for RedisStore<C> {
    async fn schedule(&self, show: &ShowId, schedule: Schedule) -> Result<()> {
        let seed = draw::new_seed();
        let args = ScheduleArgs {
            opens_at: schedule.opens_at_ms,
            commitment: draw::commitment(&seed),
            seed,
            beacon: schedule.beacon,
            beacon_value: schedule.beacon_value,
        };
        let r: ScheduleReply = self.run(&SCHEDULE, show, &args).await?;
        if let ScheduleReply::Conflict { why } = r {
            return Err(why.error(show));
        }
        if let Some(at) = schedule.opens_at_ms {
            let mut conn = self.conn.clone();
            let _: i64 = conn.zadd(SCHEDULED, show.as_str(), at).await?;
        }
        Ok(())
    }

    async fn due(&self, now_ms: u64) -> Result<Vec<ShowId>> {
        let mut conn = self.conn.clone();
        let names: Vec<String> = conn.zrangebyscore(SCHEDULED, "-inf", now_ms).await?;
        Ok(names.iter().filter_map(|n| n.parse().ok()).collect())
    }

    async fn close_pre_queue(&self, show: &ShowId, fence: u64) -> Result<Closing> {
        let r: ClosingReply = self
            .run(&CLOSE_PRE_QUEUE, show, &CloseArgs { fence })
            .await?;
        let closing = Closing::from(r);
        if let Closing::Drawn | Closing::NotScheduled = closing {
            // Drawn already (by a leader that died before it could say so), or no longer
            // scheduled (deleted, or created anew): off the list.
            let mut conn = self.conn.clone();
            let _: i64 = conn.zrem(SCHEDULED, show.as_str()).await?;
        }
        Ok(closing)
    }

    async fn apply_draw(&self, show: &ShowId, fence: u64, digest: &str, key: &str) -> Result<bool> {
        let args = DrawArgs { fence, digest, key };
        let r: DrawReply = self.run(&DRAW, show, &args).await?;
        let drawn = r.drawn;
        if drawn {
            let mut conn = self.conn.clone();
            let _: i64 = conn.zrem(SCHEDULED, show.as_str()).await?;
            let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
        }
        Ok(drawn)
    }

    async fn draw(&self, show: &ShowId) -> Result<Option<DrawState>> {
        let mut conn = self.conn.clone();
        let f: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(format!("wr:{{{show}}}:meta"))
            .arg(&DRAW_FIELDS[..])
            .query_async(&mut conn)
            .await?;
        let [
            epoch,
            lost,
            deleted,
            opens_at,
            commitment,
            beacon,
            closed,
            seed,
            digest,
            beacon_value,
            drawn_at,
        ] = <[Option<String>; 11]>::try_from(f)
            .map_err(|f| StoreError::Protocol(format!("draw fields: {f:?}")))?;
        if epoch.is_none() || deleted.is_some() {
            return Err(StoreError::NoSuchShow(show.clone()));
        }
        if lost.as_deref() == Some("1") {
            return Err(StoreError::ShowLost(show.clone()));
        }
        let (Some(opens_at), Some(commitment)) = (opens_at, commitment) else {
            return Ok(None);
        };
        let number = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
        let participants = number(closed.as_deref());
        let drawn = match (seed, digest, number(drawn_at.as_deref()), participants) {
            (Some(seed), Some(digest), Some(at_ms), Some(_)) => {
                let beacon_value = beacon_value.unwrap_or_default();
                Some(Drawn {
                    key: draw::draw_key(&seed, &digest, &beacon_value),
                    seed,
                    participants_digest: digest,
                    beacon_value,
                    at_ms,
                })
            }
            _ => None,
        };
        Ok(Some(DrawState {
            opens_at_ms: number(Some(&opens_at)).unwrap_or(0),
            commitment,
            beacon,
            participants,
            drawn,
        }))
    }

    async fn audit(
        &self,
        show: &ShowId,
        after: Option<RecordId>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let mut conn = self.conn.clone();
        let meta: (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(format!("wr:{{{show}}}:meta"))
            .arg("epoch")
            .arg("deleted")
            .query_async(&mut conn)
            .await?;
        if meta.0.is_none() || meta.1.is_some() {
            return Err(StoreError::NoSuchShow(show.clone()));
        }
        let entries =
            stream_page(&self.conn, &format!("wr:{{{show}}}:audit"), after, limit).await?;
        entries
            .into_iter()
            .map(|(id, fields)| record(id, &fields))
            .collect()
    }
}

/// An audit record from its stream entry.
fn record(id: String, fields: &[(String, String)]) -> Result<AuditRecord> {
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let number = |name: &str| field(name).and_then(|v| v.parse::<u64>().ok());
    let bad = || StoreError::Protocol(format!("audit record {id}: {fields:?}"));
    let kind = match field("kind") {
        Some("tick") => AuditKind::Tick,
        Some("draw") => AuditKind::Draw,
        Some("order") => AuditKind::Order,
        Some("phase") => AuditKind::Phase,
        Some("stock") => AuditKind::Stock,
        Some("redeem") => AuditKind::Redeem,
        Some("lost") => AuditKind::Lost,
        Some("event") => AuditKind::Event,
        Some("bypass") => AuditKind::Bypass,
        Some("code") => AuditKind::Code,
        _ => return Err(bad()),
    };
    let ranges = |name: &str| match field(name) {
        Some(text) => parse_ranges(text).ok_or_else(bad),
        None => Ok(Vec::new()),
    };
    let phase = match field("phase") {
        None => None,
        Some(name) => Some(
            serde_json::from_value(serde_json::Value::String(name.to_owned()))
                .map_err(|_| bad())?,
        ),
    };
    Ok(AuditRecord {
        kind,
        at_ms: number("at_ms").ok_or_else(bad)?,
        fence: number("fence").unwrap_or(0),
        epoch: number("epoch").ok_or_else(bad)?,
        rate: number("rate").map(|r| r as u32),
        admitted: ranges("admitted")?,
        passed: ranges("passed")?,
        returned: ranges("returned")?,
        expired: ranges("expired")?,
        participants: number("participants"),
        participants_digest: field("participants_digest").map(str::to_owned),
        arrival: number("arrival"),
        phase,
        stock: number("stock"),
        event: number("event").map(|e| e as u32),
        via: match field("via") {
            None => None,
            Some(kind) => Some(
                serde_json::from_value(serde_json::Value::String(kind.to_owned()))
                    .map_err(|_| bad())?,
            ),
        },
        code: field("code").map(str::to_owned),
        lane: field("lane").map(str::to_owned),
        places: number("places"),
        lanes: match field("lanes") {
            None => Vec::new(),
            Some(text) => LaneTurn::parse_all(text).ok_or_else(bad)?,
        },
        id,
    })
}
