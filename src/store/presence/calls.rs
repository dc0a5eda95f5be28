//! Presence as the store keeps it (on Redis and on the embedded store alike): one hash,
//! `wr:presence`, a field per instance holding its latest counts and until when they hold;
//! each show's fans back and away in `presence.lua`. A report is one `HSET` (and a `PEXPIRE` of the hash, in
//! the same round trip, so the hash goes a while after every instance has gone); readers skip
//! and remove the reports that ran out.
//!
//! "Until when" is the reporting instance's wall clock, read by another's: a report lives
//! a few seconds and is renewed every second, so clocks kept within a second of each other
//! (NTP) never drop a live instance.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Attendance, Presence};
use crate::model::ShowId;
use crate::store::redis::{RedisStore, ShowScript, show_script};
use crate::store::{Result, wall_ms};

static PRESENCE_SCRIPT: std::sync::LazyLock<ShowScript> = show_script!("presence");

/// `presence.lua`'s own arguments: the reporting instance, how long its report holds (ms, on
/// the store's clock, so an instance's clock running apart from it cuts no report short), and
/// its news since the last ([`Attendance`]).
#[derive(serde::Serialize)]
struct AttendArgs<'a> {
    instance: &'a str,
    ttl_ms: u64,
    came: Vec<Uuid>,
    went: Vec<Uuid>,
    polled: Vec<Uuid>,
}

/// `presence.lua`: how many parked fans came back.
#[derive(Debug, Deserialize)]
struct AttendReply {
    back: u64,
}

/// The hash of every instance's report. No show's key starts so (theirs are `wr:{show}:…`).
const PRESENCE: &str = "wr:presence";

/// How long the hash outlives the last report: the same for every reporter, so a report
/// with a short life never cuts another's short (each report's own life is `untilMs`).
const KEEP: Duration = Duration::from_secs(60);

/// One instance's report, as the hash keeps it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    until_ms: u64,
    fans: BTreeMap<String, u64>,
}

#[async_trait]
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Presence for RedisStore<C> {
    async fn report_fans(
        &self,
        instance: &str,
        fans: &[(ShowId, u64)],
        ttl: Duration,
    ) -> Result<()> {
        let ttl_ms = ttl.as_millis() as u64;
        let report = Report {
            until_ms: wall_ms() + ttl_ms,
            fans: fans
                .iter()
                .map(|(show, n)| (show.as_str().to_owned(), *n))
                .collect(),
        };
        let value = serde_json::to_string(&report).expect("a report always serialises");
        let mut conn = self.conn.clone();
        // Both on one key: one slot on a cluster, one round trip anywhere.
        redis::pipe()
            .hset(PRESENCE, instance, value)
            .ignore()
            .pexpire(PRESENCE, ttl.max(KEEP).as_millis() as i64)
            .ignore()
            .query_async::<()>(&mut conn)
            .await?;
        Ok(())
    }

    async fn attend(
        &self,
        show: &ShowId,
        instance: &str,
        news: Attendance,
        ttl: Duration,
    ) -> Result<u64> {
        let args = AttendArgs {
            instance,
            ttl_ms: ttl.as_millis() as u64,
            came: news.came,
            went: news.went,
            polled: news.polled,
        };
        let r: AttendReply = self.run(&PRESENCE_SCRIPT, show, &args).await?;
        Ok(r.back)
    }

    async fn fans_everywhere(&self) -> Result<HashMap<ShowId, u64>> {
        let mut conn = self.conn.clone();
        let reports: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(PRESENCE)
            .query_async(&mut conn)
            .await?;
        let now = wall_ms();
        let mut sum = HashMap::new();
        let mut gone = Vec::new();
        for (instance, value) in reports {
            match serde_json::from_str::<Report>(&value) {
                Ok(report) if report.until_ms > now => {
                    for (show, n) in report.fans {
                        if let Ok(show) = show.parse::<ShowId>() {
                            *sum.entry(show).or_default() += n;
                        }
                    }
                }
                // Ran out (its instance stopped reporting), or not ours to read.
                _ => gone.push(instance),
            }
        }
        if !gone.is_empty() {
            redis::cmd("HDEL")
                .arg(PRESENCE)
                .arg(&gone)
                .query_async::<()>(&mut conn)
                .await?;
        }
        Ok(sum)
    }
}
