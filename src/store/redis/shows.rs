//! Shows and their pace in Redis: each show's state is changed by its scripts only; the sets
//! of shows and open shows are indexes kept next to it.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use redis::{AsyncCommands, Script};

use super::{OPEN_SHOWS, RedisStore, SHOWS, ScriptArgs, pace, protocol, reply, show_script};
use crate::model::{EndReason, Phase, ShowId, ShowStats};
use crate::store::{
    Configured, Indexed, PaceControl, Pacing, Result, ShowMeta, ShowSettings, Shows, StoreError,
    TOMBSTONE_TTL, new_epoch, not_running,
};

static CONFIGURE: LazyLock<Script> = show_script!("configure.lua");
static OPEN: LazyLock<Script> = show_script!("open.lua");
static CLOSE: LazyLock<Script> = show_script!("close.lua");
static PAUSE: LazyLock<Script> = show_script!("pause.lua");
static END: LazyLock<Script> = show_script!("end.lua");
static DELETE: LazyLock<Script> = show_script!("delete.lua");
static CHECK: LazyLock<Script> = show_script!("check.lua");
static META: LazyLock<Script> = show_script!("meta.lua");
static STATS: LazyLock<Script> = show_script!("stats.lua");
static PACE: LazyLock<Script> = show_script!("pace.lua");
static CHALLENGE: LazyLock<Script> = show_script!("challenge.lua");

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Shows for RedisStore<C> {
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured> {
        let args = ScriptArgs {
            new_epoch: Some(new_epoch().to_string()),
            rate: settings.admit_per_second,
            cap: settings.max_active_buyers,
            window_ms: settings.arrival_window.map(|w| w.as_millis() as u64),
            health_url: settings.checkout_health_url,
            floor: settings.min_admit_per_second,
            // 0 withdraws an announced change.
            change_at: settings.rate_change.map(|c| c.map_or(0, |c| c.at_ms)),
            change_rate: settings.rate_change.flatten().map(|c| c.rate),
            challenge_bits: settings.join_challenge_bits,
            stock: settings.stock,
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&CONFIGURE, show, args).await?;
        let [created, epoch] = r[..] else {
            return Err(protocol("configure", &r));
        };
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
        Ok(Configured {
            created: created == 1,
            recovered: false,
            epoch: epoch as u64,
        })
    }

    async fn open(&self, show: &ShowId) -> Result<Configured> {
        let args = ScriptArgs {
            new_epoch: Some(new_epoch().to_string()),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&OPEN, show, args).await?;
        if r == [-409] {
            return Err(crate::store::draws::opens_by_itself(show));
        }
        let [created, recovered, epoch] = r[..] else {
            return Err(protocol("open", &r));
        };
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
        let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
        Ok(Configured {
            created: created == 1,
            recovered: recovered == 1,
            epoch: epoch as u64,
        })
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        let r: Vec<i64> = self.run(&CLOSE, show, ScriptArgs::none()).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        reply(show, "close", r, |r| (r == [1]).then_some(()))
    }

    async fn pause(&self, show: &ShowId) -> Result<()> {
        let r: Vec<i64> = self.run(&PAUSE, show, ScriptArgs::none()).await?;
        if let [-409, phase] = r[..] {
            return Err(not_running(show, Phase::from_code(phase)));
        }
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        reply(show, "pause", r, |r| (r == [1]).then_some(()))
    }

    async fn end(&self, show: &ShowId, reason: Option<EndReason>) -> Result<()> {
        let args = ScriptArgs {
            reason: reason.map(|r| r.as_str().to_owned()),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&END, show, args).await?;
        reply(show, "end", r, |r| (r == [1]).then_some(()))?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        // An ended show does not open by itself any more.
        let _: i64 = conn.zrem(super::SCHEDULED, show.as_str()).await?;
        Ok(())
    }

    async fn delete(&self, show: &ShowId) -> Result<bool> {
        let tombstone = TOMBSTONE_TTL.as_millis() as u64;
        let args = ScriptArgs {
            tombstone_ms: Some(tombstone),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&DELETE, show, args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        let _: i64 = conn.srem(SHOWS, show.as_str()).await?;
        let _: i64 = conn.zrem(super::SCHEDULED, show.as_str()).await?;
        Ok(r == [1])
    }

    async fn show(&self, show: &ShowId) -> Result<Option<ShowMeta>> {
        let r: Vec<i64> = self.run(&META, show, ScriptArgs::none()).await?;
        meta(&r).ok_or_else(|| protocol("meta", &r))
    }

    async fn shows(&self) -> Result<Vec<ShowId>> {
        self.members(SHOWS).await
    }

    async fn open_shows(&self) -> Result<Vec<ShowId>> {
        self.members(OPEN_SHOWS).await
    }

    async fn check_show(
        &self,
        show: &ShowId,
        known_epoch: u64,
        indexed: Indexed,
    ) -> Result<Option<ShowMeta>> {
        let args = ScriptArgs {
            known_epoch: Some(known_epoch.to_string()),
            new_epoch: Some(new_epoch().to_string()),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&CHECK, show, args).await?;
        let found = meta(&r).ok_or_else(|| protocol("check", &r))?;
        // Keep the lists whole where they disagree: a lost show stays listed, an open one
        // stays served, a closed one is not.
        let mut conn = self.conn.clone();
        if let Some(m) = found {
            if !indexed.listed {
                let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
            }
            if m.open && !indexed.open {
                let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
            } else if !m.open && indexed.open {
                let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
            }
        }
        Ok(found)
    }

    async fn stats(&self, show: &ShowId) -> Result<ShowStats> {
        let r: Vec<i64> = self.run(&STATS, show, ScriptArgs::none()).await?;
        let mut stats = reply(show, "stats", r, |r| {
            let [
                queue_length,
                admitted_valid,
                rate,
                joined,
                cap,
                open,
                lost,
                window,
                released,
                configured,
                challenge_bits,
                stock,
                ref rest @ ..,
            ] = *r
            else {
                return None;
            };
            let pace = pace(rest)?;
            let stock = (stock > 0).then_some(stock as u64);
            let window = if window < 0 {
                self.settings.arrival_window.as_secs()
            } else {
                window as u64 / 1000
            };
            Some(ShowStats {
                outflow_per_second: pace.flow_milli as f64 / 1000.0,
                paused: pace.paused,
                arrival_window_seconds: window,
                released_untaken: released as u64,
                effective_admit_per_second: rate as u32,
                show_id: show.to_string(),
                open: open == 1,
                phase: pace.phase,
                reason: None,
                stock,
                stock_left: pace.stock_left,
                lost: lost == 1,
                queue_length: queue_length as u64,
                admitted_valid: admitted_valid as u64,
                admit_per_second: configured as u32,
                max_active_buyers: cap as u32,
                joined: joined as u64,
                join_challenge_bits: challenge_bits as u32,
            })
        })?;
        if stats.phase == Phase::Ended {
            let pace = crate::model::Pace {
                phase: Phase::Ended,
                ..Default::default()
            };
            stats.reason = self.with_reason(show, pace).await?.reason;
        }
        Ok(stats)
    }

    async fn challenge_bits(&self, show: &ShowId) -> Result<u32> {
        let r: Vec<i64> = self.run(&CHALLENGE, show, ScriptArgs::none()).await?;
        reply(show, "challenge", r, |r| match *r {
            [bits] => Some(bits as u32),
            _ => None,
        })
    }
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Pacing for RedisStore<C> {
    async fn pace_control(&self, show: &ShowId) -> Result<PaceControl> {
        let r: Vec<String> = self.run(&PACE, show, ScriptArgs::none()).await?;
        match r.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["-404"] => Err(StoreError::NoSuchShow(show.clone())),
            ["-503"] => Err(StoreError::ShowLost(show.clone())),
            [url, floor, configured, current] => {
                let n = |v: &str| {
                    v.parse::<u32>()
                        .map_err(|_| StoreError::Protocol(format!("pace: {r:?}")))
                };
                Ok(PaceControl {
                    health_url: (!url.is_empty()).then(|| url.to_owned()),
                    floor: n(floor)?,
                    configured: n(configured)?,
                    current: n(current)?,
                })
            }
            _ => Err(StoreError::Protocol(format!("pace: {r:?}"))),
        }
    }

    async fn set_pace(&self, show: &ShowId, rate: u32) -> Result<bool> {
        let args = ScriptArgs {
            pace: Some(rate),
            ..Default::default()
        };
        let r: Vec<i64> = self.run(&PACE, show, args).await?;
        reply(show, "set_pace", r, |r| match *r {
            [changed] => Some(changed == 1),
            _ => None,
        })
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisStore<C> {
    /// The valid show ids in a set, sorted.
    async fn members(&self, set: &str) -> Result<Vec<ShowId>> {
        let mut conn = self.conn.clone();
        let names: Vec<String> = conn.smembers(set).await?;
        // Only this program writes the set, but never trust a key to hold a valid id.
        let mut shows: Vec<ShowId> = names.iter().filter_map(|n| n.parse().ok()).collect();
        shows.sort();
        Ok(shows)
    }
}

/// A show's meta as `meta.lua` and `check.lua` answer it: {0} no such show, or
/// {1, epoch, open, lost}.
fn meta(got: &[i64]) -> Option<Option<ShowMeta>> {
    match *got {
        [0] => Some(None),
        [1, epoch, open, lost] => Some(Some(ShowMeta {
            epoch: epoch as u64,
            open: open == 1,
            lost: lost == 1,
        })),
        _ => None,
    }
}
