//! Shows and their pace as the store calls them (on Redis and on the embedded store alike):
//! each show's state is changed by its scripts only, each with arguments of its own; the sets
//! of shows and open shows are indexes kept next to it.

use std::sync::LazyLock;

use async_trait::async_trait;
use redis::AsyncCommands;
use redis::aio::ConnectionLike;

use super::reply::{
    ChallengeReply, CloseReply, ConfigureReply, DeleteReply, EndReply, MetaReply, OpenReply,
    PauseReply, SetThrottleReply, StatsReply, ThrottleReply,
};
use super::{Configured, Indexed, ShowMeta, Shows, ThrottleControl, Throttling, not_running};
use crate::model::{EndReason, EventTimes, LaneStats, PresenceStats, ShowId, ShowStats};
use crate::store::redis::{
    EVENTS_DUE, NoArgs, OPEN_SHOWS, RedisStore, SCHEDULED, SHOWS, ShowScript, show_script,
};
use crate::store::{Result, ShowSettings, StoreError, TOMBSTONE_TTL, new_epoch};

static CONFIGURE: LazyLock<ShowScript> = show_script!("configure");
static OPEN: LazyLock<ShowScript> = show_script!("open");
static CLOSE: LazyLock<ShowScript> = show_script!("close");
static PAUSE: LazyLock<ShowScript> = show_script!("pause");
static END: LazyLock<ShowScript> = show_script!("end");
static DELETE: LazyLock<ShowScript> = show_script!("delete");
static DUE_EVENTS: LazyLock<ShowScript> = show_script!("due_events");
static CHECK: LazyLock<ShowScript> = show_script!("check");
static META: LazyLock<ShowScript> = show_script!("meta");
static STATS: LazyLock<ShowScript> = show_script!("stats");
static PACE: LazyLock<ShowScript> = show_script!("pace");
static CHALLENGE: LazyLock<ShowScript> = show_script!("challenge");

/// `configure.lua`'s own arguments: the epoch a show made now takes, the operator's settings
/// whole (laid over the show's), and those of them the scripts still read from fields of
/// their own, each absent when not given.
#[derive(serde::Serialize)]
struct ConfigureArgs {
    new_epoch: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cap: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    health_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    floor: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    change_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    change_rate: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    challenge_bits: Option<u32>,
    /// Seats for sale (0 removes the stock).
    #[serde(skip_serializing_if = "Option::is_none")]
    stock: Option<u64>,
    /// The schedule in ms (empty: removed).
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<Vec<EventTimes>>,
    settings: ShowSettings,
}

/// `open.lua`'s own arguments: the epoch a show made now takes.
#[derive(serde::Serialize)]
struct OpenArgs {
    new_epoch: String,
}

/// `check.lua`'s own arguments: the epoch the caller knows the show by, and the epoch a show
/// made now takes.
#[derive(serde::Serialize)]
struct CheckArgs {
    known_epoch: String,
    new_epoch: String,
}

/// `end.lua`'s own arguments: why the on-sale ends.
#[derive(serde::Serialize)]
struct EndArgs<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

/// `delete.lua`'s own arguments: how long the show's tombstone is kept (ms).
#[derive(serde::Serialize)]
struct DeleteArgs {
    tombstone_ms: u64,
}

/// `pace.lua`'s own arguments: the rate the checkout's health now allows (absent: a read).
#[derive(serde::Serialize)]
struct ThrottleArgs<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pace: Option<u32>,
    /// The health URL the new pace was measured at.
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
}

/// `due_events.lua`'s own arguments: the admitter's fencing token.
#[derive(serde::Serialize)]
struct DueArgs {
    fence: u64,
}

/// `due_events.lua`'s answer.
#[derive(Debug, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum DueReply {
    Applied {
        open: bool,
        next_at: Option<u64>,
    },
    Fenced {
        #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
        fence: u64,
    },
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Shows for RedisStore<C> {
    async fn configure(&self, show: &ShowId, settings: ShowSettings) -> Result<Configured> {
        let args = ConfigureArgs {
            new_epoch: new_epoch().to_string(),
            rate: settings.admit_per_second,
            cap: settings.max_active_buyers,
            window_ms: settings.arrival_window().map(|w| w.as_millis() as u64),
            health_url: settings.checkout_health_url.clone(),
            floor: settings.min_admit_per_second,
            // 0 withdraws an announced change.
            change_at: settings.rate_change().map(|c| c.map_or(0, |c| c.at_ms)),
            change_rate: settings.rate_change().flatten().map(|c| c.rate),
            challenge_bits: settings.join_challenge_bits,
            stock: settings.stock,
            events: settings.event_times(),
            settings: settings.without_schedule(),
        };
        let scheduled = args.events.as_ref().map(|e| !e.is_empty());
        let r: ConfigureReply = self.run(&CONFIGURE, show, &args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
        // A schedule sent: the admitter looks at it at its next tick, and lists it again for
        // each change from then on; none: nothing to look at.
        match scheduled {
            Some(true) => {
                let _: i64 = conn.zadd(EVENTS_DUE, show.as_str(), 0).await?;
            }
            Some(false) => {
                let _: i64 = conn.zrem(EVENTS_DUE, show.as_str()).await?;
            }
            None => {}
        }
        Ok(r.into())
    }

    async fn open(&self, show: &ShowId) -> Result<Configured> {
        let args = OpenArgs {
            new_epoch: new_epoch().to_string(),
        };
        let r: OpenReply = self.run(&OPEN, show, &args).await?;
        let OpenReply::Opened {
            created,
            recovered,
            epoch,
        } = r
        else {
            return Err(crate::store::draw::opens_by_itself(show));
        };
        let mut conn = self.conn.clone();
        let _: i64 = conn.sadd(SHOWS, show.as_str()).await?;
        let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
        Ok(Configured {
            created,
            recovered,
            epoch,
        })
    }

    async fn close(&self, show: &ShowId) -> Result<()> {
        let r: Result<CloseReply> = self.run(&CLOSE, show, &NoArgs {}).await;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        r.map(|_| ())
    }

    async fn pause(&self, show: &ShowId) -> Result<()> {
        let r: PauseReply = self.run(&PAUSE, show, &NoArgs {}).await?;
        if let PauseReply::NotRunning { phase } = r {
            return Err(not_running(show, Some(phase)));
        }
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        Ok(())
    }

    async fn end(&self, show: &ShowId, reason: Option<EndReason>) -> Result<()> {
        let args = EndArgs {
            reason: reason.as_ref().map(|r| r.as_str()),
        };
        let _: EndReply = self.run(&END, show, &args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        // An ended show does not open by itself any more.
        let _: i64 = conn.zrem(SCHEDULED, show.as_str()).await?;
        Ok(())
    }

    async fn delete(&self, show: &ShowId) -> Result<bool> {
        let tombstone = TOMBSTONE_TTL.as_millis() as u64;
        let args = DeleteArgs {
            tombstone_ms: tombstone,
        };
        let r: DeleteReply = self.run(&DELETE, show, &args).await?;
        let mut conn = self.conn.clone();
        let _: i64 = conn.srem(OPEN_SHOWS, show.as_str()).await?;
        let _: i64 = conn.srem(SHOWS, show.as_str()).await?;
        let _: i64 = conn.zrem(SCHEDULED, show.as_str()).await?;
        let _: i64 = conn.zrem(EVENTS_DUE, show.as_str()).await?;
        Ok(r.deleted)
    }

    async fn events_due(&self, now_ms: u64) -> Result<Vec<ShowId>> {
        let mut conn = self.conn.clone();
        let names: Vec<String> = conn.zrangebyscore(EVENTS_DUE, "-inf", now_ms).await?;
        Ok(names.iter().filter_map(|n| n.parse().ok()).collect())
    }

    async fn apply_due_events(&self, show: &ShowId, fence: u64) -> Result<Option<bool>> {
        let mut conn = self.conn.clone();
        let r = match self.run(&DUE_EVENTS, show, &DueArgs { fence }).await {
            Ok(r) => r,
            Err(StoreError::NoSuchShow(_)) => {
                let _: i64 = conn.zrem(EVENTS_DUE, show.as_str()).await?;
                return Ok(Some(false));
            }
            Err(e) => return Err(e),
        };
        let (open, next_at) = match r {
            DueReply::Fenced { .. } => return Ok(None),
            DueReply::Applied { open, next_at } => (open, next_at),
        };
        match next_at {
            Some(at) => {
                let _: i64 = conn.zadd(EVENTS_DUE, show.as_str(), at).await?;
            }
            None => {
                let _: i64 = conn.zrem(EVENTS_DUE, show.as_str()).await?;
            }
        }
        // An event that opened the show: the admitter serves it from its next tick.
        if open {
            let _: i64 = conn.sadd(OPEN_SHOWS, show.as_str()).await?;
        }
        Ok(Some(open))
    }

    async fn show(&self, show: &ShowId) -> Result<Option<ShowMeta>> {
        let r: MetaReply = self.run(&META, show, &NoArgs {}).await?;
        Ok(r.into())
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
        let args = CheckArgs {
            known_epoch: known_epoch.to_string(),
            new_epoch: new_epoch().to_string(),
        };
        let r: MetaReply = self.run(&CHECK, show, &args).await?;
        let found: Option<ShowMeta> = r.into();
        // Keep the lists whole where they disagree: a lost show stays listed, an open one
        // stays served, a closed one is not.
        let mut conn = self.conn.clone();
        if let Some(m) = &found {
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
        let r: StatsReply = self.run(&STATS, show, &NoArgs {}).await?;
        let (pace, sale) = r.pace.read();
        Ok(ShowStats {
            outflow_per_second: pace.flow_milli as f64 / 1000.0,
            paused: pace.paused,
            arrival_window_seconds: r
                .window_ms
                .map_or(self.settings.arrival_window.as_secs(), |w| w / 1000),
            released_untaken: r.released,
            effective_admit_per_second: r.rate,
            show_id: show.to_string(),
            open: r.open,
            phase: sale.phase,
            reason: sale.reason,
            stock: (r.stock > 0).then_some(r.stock),
            stock_left: sale.stock_left,
            lost: r.lost,
            queue_length: r.queue_length,
            admitted_valid: r.active,
            admit_per_second: r.configured_rate,
            max_active_buyers: r.cap,
            joined: r.joined,
            join_challenge_bits: r.challenge_bits,
            running_event: r.event,
            lanes: r
                .pace
                .lanes
                .iter()
                .map(|l| LaneStats {
                    name: if l.slot == 0 {
                        "general".to_owned()
                    } else {
                        l.name.clone()
                    },
                    share: (!l.priority).then_some(l.share),
                    priority: l.priority,
                    waiting: l.waiting,
                })
                .collect(),
            settings: ShowSettings::read(r.settings.as_deref()),
            presence: PresenceStats {
                away: r.away,
                passed_over: r.parked,
                released: r.expired,
                asked_to_be_called: r.calls_waiting,
            },
        })
    }

    async fn challenge_bits(&self, show: &ShowId) -> Result<u32> {
        let r: ChallengeReply = self.run(&CHALLENGE, show, &NoArgs {}).await?;
        Ok(r.bits)
    }
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Throttling for RedisStore<C> {
    async fn throttle_control(&self, show: &ShowId) -> Result<ThrottleControl> {
        let args = ThrottleArgs {
            pace: None,
            url: None,
        };
        let r: ThrottleReply = self.run(&PACE, show, &args).await?;
        Ok(r.into())
    }

    async fn set_throttled(&self, show: &ShowId, rate: u32, url: &str) -> Result<bool> {
        let args = ThrottleArgs {
            pace: Some(rate),
            url: Some(url),
        };
        let r: SetThrottleReply = self.run(&PACE, show, &args).await?;
        Ok(r.changed)
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
