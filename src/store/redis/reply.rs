//! What the Redis scripts answer, by name: every script answers one JSON object, decoded here
//! into one type per reply (an enum tagged by `outcome` where a script has several outcomes),
//! never read by position. A per-show script that will not serve its show answers
//! `{"refused": …}` instead, alike from every script ([`decode`] turns it into the error).
//!
//! Two things of Lua's `cjson` shape the types: an empty table is written `{}` (so a list may
//! come as an empty object: [`list`]), and numbers are written with 14 significant digits (so
//! epochs, up to 13 digits today, travel as text all the same, as they do in the scripts' arguments).

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use uuid::Uuid;

use crate::model::{Pace, Phase, ShowId, TicketState};
use crate::store::draws::Refused;
use crate::store::{
    AdmitOutcome, Closing, Configured, Joined, PaceFigures, Redeemed, Result, ShowMeta, Status,
    StoreError, ThrottleControl, Touched,
};
use crate::store::{DueCall, DueCalls};

/// Decodes `text`, the reply of the script `script` for `show`: the show's refusal as its
/// error, else the reply as `T`; anything else is a [`StoreError::Protocol`] naming the script.
pub(super) fn decode<T: DeserializeOwned>(show: &ShowId, script: &str, text: &str) -> Result<T> {
    let bad = |e: serde_json::Error| StoreError::Protocol(format!("{script}: {e}: {text}"));
    let value: serde_json::Value = serde_json::from_str(text).map_err(bad)?;
    if let Some(refused) = value.get("refused") {
        if let Ok(rule) = RuleRefusal::deserialize(refused) {
            return Err(not_now(rule.why, rule.retry_after_ms));
        }
        return Err(ShowRefusal::deserialize(refused).map_err(bad)?.error(show));
    }
    T::deserialize(&value).map_err(bad)
}

/// Decodes the reply of a script that serves no show (`lease.lua`, `limit.lua`, …).
pub(super) fn decode_plain<T: DeserializeOwned>(script: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Protocol(format!("{script}: {e}: {text}")))
}

/// Why a script would not serve a show (`live_show()` in `prelude.lua`, and `join.lua` once
/// the on-sale ended).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ShowRefusal {
    /// Nobody made it (or it was deleted).
    NoSuchShow,
    /// Its state was lost: it is refused until an operator opens it again.
    Lost,
    /// Its on-sale ended (joins).
    Ended,
}

/// A rule of the show that refused the call for now (`unavailable()` in `prelude.lua`).
#[derive(Debug, Deserialize)]
struct RuleRefusal {
    why: String,
    retry_after_ms: u64,
}

impl ShowRefusal {
    fn error(self, show: &ShowId) -> StoreError {
        match self {
            ShowRefusal::NoSuchShow => StoreError::NoSuchShow(show.clone()),
            ShowRefusal::Lost => StoreError::ShowLost(show.clone()),
            ShowRefusal::Ended => StoreError::Ended(show.clone()),
        }
    }
}

/// A rule's refusal for now, as the store says it.
fn not_now(why: String, retry_after_ms: u64) -> StoreError {
    StoreError::NotNow {
        why,
        retry_after: std::time::Duration::from_millis(retry_after_ms.max(1000)),
    }
}

/// An epoch, as text (see the module's note on numbers).
fn epoch<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    text.parse()
        .map_err(|_| D::Error::custom(format!("epoch {text:?} is not a number")))
}

/// A list, which `cjson` writes `{}` when it is empty.
pub(super) fn list<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Object(m) if m.is_empty() => Ok(Vec::new()),
        v => Vec::<T>::deserialize(v).map_err(D::Error::custom),
    }
}

/// Where a ticket stands (`standing()` in `prelude.lua`, and `status.lua`; only the latter
/// answers `lost`: a ticket a mend after a failover marked, see `lineage.rs`).
#[derive(Debug, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(super) enum TicketReply {
    Waiting {
        position: u64,
        arrival: u64,
    },
    PreQueue {
        arrival: u64,
        opens_in_ms: u64,
    },
    Admitted {
        expires_in_ms: u64,
    },
    Unknown,
    Lost,
    /// Released after the away hold (seconds).
    Expired {
        away_hold_s: u64,
    },
}

impl TicketReply {
    /// The ticket's [`Status`], under the show's `epoch`, `pace` and `version` its call read
    /// (one place for both replies that tell a ticket where it stands: status and join).
    fn status(self, epoch: u64, pace: Pace, version: u64) -> Status {
        Status {
            arrival: self.arrival(),
            state: self.into(),
            epoch,
            pace,
            version,
        }
    }

    /// The arrival number of a queued ticket.
    fn arrival(&self) -> Option<u64> {
        match *self {
            TicketReply::Waiting { arrival, .. } | TicketReply::PreQueue { arrival, .. } => {
                Some(arrival)
            }
            TicketReply::Admitted { .. }
            | TicketReply::Unknown
            | TicketReply::Lost
            | TicketReply::Expired { .. } => None,
        }
    }
}

impl From<TicketReply> for TicketState {
    fn from(t: TicketReply) -> TicketState {
        match t {
            TicketReply::Waiting { position, arrival } => {
                TicketState::Waiting { position, arrival }
            }
            TicketReply::PreQueue {
                arrival,
                opens_in_ms,
            } => TicketState::PreQueue {
                arrival,
                opens_in_ms,
            },
            TicketReply::Admitted { expires_in_ms } => TicketState::Admitted { expires_in_ms },
            TicketReply::Unknown => TicketState::Unknown,
            TicketReply::Lost => TicketState::Lost,
            TicketReply::Expired { away_hold_s } => TicketState::Expired {
                hold_seconds: away_hold_s,
            },
        }
    }
}

/// `status.lua`: where each ticket of the call stands, in the order they were sent, and the
/// show's version, epoch and pace they share.
#[derive(Debug, Deserialize)]
pub(super) struct StatusReply {
    #[serde(deserialize_with = "list")]
    tickets: Vec<TicketReply>,
    version: u64,
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
    pace: PaceFigures,
}

impl StatusReply {
    /// Each ticket's status, for a call that sent `n` tickets.
    pub(super) fn answers(self, n: usize) -> Result<Vec<Result<Status>>> {
        if self.tickets.len() != n {
            return Err(StoreError::Protocol(format!(
                "status: {} answers for {n} tickets",
                self.tickets.len()
            )));
        }
        let (epoch, version, pace) = (self.epoch, self.version, Pace::from(self.pace));
        Ok(self
            .tickets
            .into_iter()
            .map(|ticket| Ok(ticket.status(epoch, pace, version)))
            .collect())
    }
}

/// `join.lua`: the outcome of each join of the call, in the order they were sent, and what
/// the joins answered a ticket share (the show's version and pace: absent when none was).
#[derive(Debug, Deserialize)]
pub(super) struct JoinReply {
    #[serde(deserialize_with = "list")]
    joins: Vec<JoinEntry>,
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
    version: Option<u64>,
    pace: Option<PaceFigures>,
    /// The arrival of the call's first new ticket (the others follow in order).
    first: Option<u64>,
    /// Set when the new tickets joined a pre-queue not drawn yet: ms until it opens, alike
    /// for all of them (their entries are then 0, no position).
    opens_in_ms: Option<u64>,
}

/// One join's entry in [`JoinReply`]: the common answer in short, else its outcome by name.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum JoinEntry {
    /// Joined, waiting at this position (or, with the reply's `opens_in_ms`, in the
    /// pre-queue: 0); its arrival is the call's next new one.
    Waiting(u64),
    Outcome(JoinOutcome),
}

/// One join's outcome in [`JoinReply`].
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum JoinOutcome {
    /// Queued (in a pre-queue): where the new ticket stands.
    Joined { ticket: TicketReply },
    /// The ticket kept under the join's idempotency key, live (or joined earlier in the same
    /// call), and where it stands.
    Replayed {
        ticket_id: Uuid,
        ticket: TicketReply,
    },
    /// The on-sale ended.
    Ended,
    /// The show asks a proof of work of `bits` and none came.
    ProofRequired { bits: u32 },
    /// The proof found fewer zero bits than the show asks.
    ProofTooWeak { bits: u32 },
    /// The proof was spent by an earlier join (of this call too).
    ProofSpent,
    /// A rule of the show refused this join for now (`unavailable()` in `prelude.lua`).
    Unavailable { why: String, retry_after_ms: u64 },
}

impl JoinReply {
    /// Each join's answer, for the joins the call sent with the new tickets `tickets`, in
    /// order: its ticket (`true`: the one its key kept), or its refusal.
    pub(super) fn answers(
        self,
        show: &ShowId,
        tickets: &[Uuid],
    ) -> Result<Vec<Result<(Joined, bool)>>> {
        if self.joins.len() != tickets.len() {
            return Err(StoreError::Protocol(format!(
                "join: {} outcomes for {} joins",
                self.joins.len(),
                tickets.len()
            )));
        }
        let shared = self.version.zip(self.pace.map(Pace::from));
        let (epoch, opens_in_ms) = (self.epoch, self.opens_in_ms);
        let joined = |ticket: Uuid, standing: TicketReply| -> Result<Joined> {
            let (version, pace) = shared.ok_or_else(|| {
                StoreError::Protocol("join: a ticket answered without the pace".into())
            })?;
            let status = standing.status(epoch, pace, version);
            Ok(Joined {
                ticket,
                arrival: status.arrival.unwrap_or(0),
                status,
            })
        };
        // The call's new tickets took consecutive arrivals from `first`, in order.
        let mut next_arrival = self.first;
        let mut arrival = || -> Result<u64> {
            let a = next_arrival.ok_or_else(|| {
                StoreError::Protocol("join: a new ticket without its arrival".into())
            })?;
            next_arrival = Some(a + 1);
            Ok(a)
        };
        Ok(self
            .joins
            .into_iter()
            .zip(tickets)
            .map(|(entry, &ticket)| match entry {
                JoinEntry::Waiting(position) => {
                    let arrival = arrival()?;
                    let standing = match opens_in_ms {
                        Some(opens_in_ms) => TicketReply::PreQueue {
                            arrival,
                            opens_in_ms,
                        },
                        None => TicketReply::Waiting { position, arrival },
                    };
                    joined(ticket, standing).map(|j| (j, false))
                }
                JoinEntry::Outcome(JoinOutcome::Joined { ticket: standing }) => {
                    arrival()?;
                    joined(ticket, standing).map(|j| (j, false))
                }
                JoinEntry::Outcome(JoinOutcome::Replayed {
                    ticket_id,
                    ticket: standing,
                }) => joined(ticket_id, standing).map(|j| (j, true)),
                JoinEntry::Outcome(JoinOutcome::Ended) => Err(StoreError::Ended(show.clone())),
                JoinEntry::Outcome(JoinOutcome::ProofRequired { bits }) => {
                    Err(StoreError::ProofRequired(bits))
                }
                JoinEntry::Outcome(JoinOutcome::ProofTooWeak { bits }) => {
                    Err(StoreError::ProofTooWeak(bits))
                }
                JoinEntry::Outcome(JoinOutcome::ProofSpent) => Err(StoreError::ProofSpent),
                JoinEntry::Outcome(JoinOutcome::Unavailable {
                    why,
                    retry_after_ms,
                }) => Err(not_now(why, retry_after_ms)),
            })
            .collect())
    }
}

/// `admit.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum AdmitReply {
    Admitted {
        count: u64,
        head: u64,
        version: u64,
        #[serde(default, deserialize_with = "list")]
        calls: Vec<CallReply>,
        notify_url: Option<String>,
        #[serde(default, deserialize_with = "list")]
        push_services: Vec<String>,
    },
    AlreadyThisSecond {
        next_in_ms: i64,
    },
    Fenced {
        fence: u64,
    },
    NotServed,
}

impl From<AdmitReply> for AdmitOutcome {
    fn from(a: AdmitReply) -> AdmitOutcome {
        match a {
            AdmitReply::Admitted {
                count,
                head,
                version,
                calls,
                notify_url,
                push_services,
            } => AdmitOutcome::Admitted {
                count,
                head,
                version,
                calls: DueCalls {
                    notify_url: notify_url.filter(|u| !u.is_empty()),
                    push_services: (!push_services.is_empty()).then_some(push_services),
                    calls: calls
                        .into_iter()
                        .filter_map(|c| {
                            Some(DueCall {
                                ticket: c.ticket.parse().ok()?,
                                admitted: c.event == "admitted",
                                position: c.position,
                                eta_seconds: c.eta_s,
                                channel: c.channel?,
                            })
                        })
                        .collect(),
                },
            },
            AdmitReply::AlreadyThisSecond { next_in_ms } => AdmitOutcome::AlreadyThisSecond {
                next_in: std::time::Duration::from_millis(next_in_ms.max(0) as u64),
            },
            AdmitReply::Fenced { fence } => AdmitOutcome::Fenced { fence },
            AdmitReply::NotServed => AdmitOutcome::NotServed,
        }
    }
}

/// One call `admit.lua` made due.
#[derive(Debug, Deserialize)]
pub(super) struct CallReply {
    ticket: String,
    event: String,
    position: u64,
    eta_s: Option<u64>,
    channel: Option<String>,
}

/// `notify.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum AskCallReply {
    Asked,
    NotWaiting,
}

/// `touch.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum TouchReply {
    Kept,
    NotNeeded,
    Over,
}

impl From<TouchReply> for Touched {
    fn from(t: TouchReply) -> Touched {
        match t {
            TouchReply::Kept => Touched::Kept,
            TouchReply::NotNeeded => Touched::NotNeeded,
            TouchReply::Over => Touched::Over,
        }
    }
}

/// `leave.lua`: whether the ticket was live.
#[derive(Debug, Deserialize)]
pub(super) struct LeaveReply {
    pub(super) live: bool,
}

/// `is_admitted.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct IsAdmittedReply {
    pub(super) admitted: bool,
}

/// `meta.lua` and `check.lua`: `{}` when there is no show.
#[derive(Debug, Deserialize)]
pub(super) struct MetaReply {
    show: Option<MetaFields>,
}

#[derive(Debug, Deserialize)]
struct MetaFields {
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
    open: bool,
    lost: bool,
}

impl From<MetaReply> for Option<ShowMeta> {
    fn from(m: MetaReply) -> Option<ShowMeta> {
        m.show.map(|s| ShowMeta {
            epoch: s.epoch,
            open: s.open,
            lost: s.lost,
        })
    }
}

/// `configure.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct ConfigureReply {
    created: bool,
    #[serde(deserialize_with = "epoch")]
    epoch: u64,
}

impl From<ConfigureReply> for Configured {
    fn from(c: ConfigureReply) -> Configured {
        Configured {
            created: c.created,
            recovered: false,
            epoch: c.epoch,
        }
    }
}

/// `open.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum OpenReply {
    Opened {
        created: bool,
        recovered: bool,
        #[serde(deserialize_with = "epoch")]
        epoch: u64,
    },
    /// A scheduled show not drawn yet: it opens by itself, after its draw.
    OpensByItself,
}

/// `close.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct CloseReply {
    #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
    closed: bool,
}

/// `end.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct EndReply {
    #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
    ended: bool,
}

/// `pause.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum PauseReply {
    Paused,
    /// Not opened yet, or ended: nothing to pause.
    NotRunning {
        phase: Phase,
    },
}

/// `delete.lua`: whether there was a show.
#[derive(Debug, Deserialize)]
pub(super) struct DeleteReply {
    pub(super) deleted: bool,
}

/// `challenge.lua`: the zero bits a join's proof of work must bring (0: none).
#[derive(Debug, Deserialize)]
pub(super) struct ChallengeReply {
    pub(super) bits: u32,
}

/// `pace.lua` read: what the admitter needs to follow the checkout.
#[derive(Debug, Deserialize)]
pub(super) struct ThrottleReply {
    health_url: Option<String>,
    floor: u32,
    configured: u32,
    current: u32,
}

impl From<ThrottleReply> for ThrottleControl {
    fn from(p: ThrottleReply) -> ThrottleControl {
        ThrottleControl {
            health_url: p.health_url.filter(|u| !u.is_empty()),
            lowest: p.floor,
            configured: p.configured,
            current: p.current,
        }
    }
}

/// `pace.lua` with a new rate: whether it changed.
#[derive(Debug, Deserialize)]
pub(super) struct SetThrottleReply {
    pub(super) changed: bool,
}

/// `stats.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct StatsReply {
    pub(super) queue_length: u64,
    /// Admissions still running that have not bought.
    pub(super) active: u64,
    /// The rate in force, and the configured one.
    pub(super) rate: u32,
    pub(super) configured_rate: u32,
    /// Tickets ever joined.
    pub(super) joined: u64,
    pub(super) cap: u32,
    pub(super) open: bool,
    pub(super) lost: bool,
    /// The show's own arrival window (ms), if it has one.
    pub(super) window_ms: Option<u64>,
    pub(super) released: u64,
    pub(super) challenge_bits: u32,
    /// Seats for sale (0: no stock).
    pub(super) stock: u64,
    pub(super) pace: PaceFigures,
    /// The operator's settings as `configure.lua` keeps them (JSON text).
    pub(super) settings: Option<String>,
    #[serde(default)]
    pub(super) away: u64,
    #[serde(default)]
    pub(super) parked: u64,
    #[serde(default)]
    pub(super) expired: u64,
    #[serde(default)]
    pub(super) calls_waiting: u64,
}

/// `presence.lua`: how many parked fans came back.
#[derive(Debug, Deserialize)]
pub(super) struct AttendReply {
    pub(super) back: u64,
}

/// `snapshot.lua`: epoch 0 (and only the pace) when the show does not exist or was lost.
#[derive(Debug, Deserialize)]
pub(super) struct SnapshotReply {
    #[serde(deserialize_with = "epoch")]
    pub(super) epoch: u64,
    pub(super) version: u64,
    pub(super) head: u64,
    pub(super) pace: PaceFigures,
    /// Fans passed over while away who hold their places.
    #[serde(default)]
    pub(super) parked: u64,
    /// The opening time of a scheduled show (ms).
    pub(super) opens_at: Option<u64>,
    /// The pre-queue's size once it closed.
    pub(super) closed_n: Option<u64>,
    /// The draw's key (64 hex digits) once drawn.
    pub(super) draw_key: Option<String>,
    /// The early leavers no head has passed yet.
    #[serde(default, deserialize_with = "list")]
    pub(super) left: Vec<u64>,
}

/// `schedule.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum ScheduleReply {
    Scheduled,
    Conflict { why: Refused },
}

/// `close_pre_queue.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum ClosingReply {
    Fenced,
    NotDue,
    Drawn,
    NotScheduled,
    AwaitingBeacon {
        participants: u64,
    },
    Ready {
        participants: u64,
        seed: String,
        beacon_value: String,
    },
}

impl From<ClosingReply> for Closing {
    fn from(c: ClosingReply) -> Closing {
        match c {
            ClosingReply::Fenced => Closing::Fenced,
            ClosingReply::NotDue => Closing::NotDue,
            ClosingReply::Drawn => Closing::Drawn,
            ClosingReply::NotScheduled => Closing::NotScheduled,
            ClosingReply::AwaitingBeacon { participants } => {
                Closing::AwaitingBeacon { participants }
            }
            ClosingReply::Ready {
                participants,
                seed,
                beacon_value,
            } => Closing::Ready {
                participants,
                seed,
                beacon_value,
            },
        }
    }
}

/// `draw.lua`: whether this call drew.
#[derive(Debug, Deserialize)]
pub(super) struct DrawReply {
    pub(super) drawn: bool,
}

/// `order.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum OrderReply {
    Created {
        order: String,
    },
    /// The same request again: the order it placed.
    Repeated {
        order: String,
    },
    /// The hold is another's, the show sold out, or the admission was spent.
    Conflict {
        why: String,
    },
    Forbidden,
}

/// `redeem.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum RedeemReply {
    Redeemed {
        arrival: u64,
        #[serde(deserialize_with = "epoch")]
        epoch: u64,
    },
    Spent,
    Forbidden,
}

impl From<RedeemReply> for Redeemed {
    fn from(r: RedeemReply) -> Redeemed {
        match r {
            RedeemReply::Redeemed { arrival, epoch } => Redeemed::Now { arrival, epoch },
            RedeemReply::Spent => Redeemed::Before,
            RedeemReply::Forbidden => Redeemed::NotAdmitted,
        }
    }
}

/// `lease.lua`: the token while the instance holds the lease; none while another does.
#[derive(Debug, Deserialize)]
pub(super) struct LeaseReply {
    pub(super) token: Option<u64>,
}

/// `release.lua`: whether the instance held the lease.
#[derive(Debug, Deserialize)]
pub(super) struct ReleaseReply {
    #[allow(dead_code, reason = "a reply must say it, so a wrong one is refused")]
    released: bool,
}

/// `limit.lua`: how long the client must wait (0: allowed now).
#[derive(Debug, Deserialize)]
pub(super) struct LimitReply {
    pub(super) wait_ms: u64,
}

/// `pass_keys.lua`: the signing key first, the rest newest first.
#[derive(Debug, Deserialize)]
pub(super) struct PassKeysReply {
    #[serde(deserialize_with = "list")]
    pub(super) keys: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show() -> ShowId {
        "s1".parse().unwrap()
    }

    #[test]
    fn a_refusal_is_the_shows_error_whatever_the_script() {
        let e = decode::<LeaveReply>(&show(), "leave", r#"{"refused":"lost"}"#).unwrap_err();
        assert!(matches!(e, StoreError::ShowLost(_)), "{e:?}");
        let e = decode::<JoinReply>(
            &show(),
            "join",
            r#"{"refused":{"outcome":"unavailable","why":"full","retry_after_ms":2500}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(&e, StoreError::NotNow { why, retry_after } if why == "full" && retry_after.as_millis() == 2500),
            "{e:?}"
        );
        let e = decode::<JoinReply>(&show(), "join", r#"{"refused":"ended"}"#).unwrap_err();
        assert!(matches!(e, StoreError::Ended(_)), "{e:?}");
    }

    #[test]
    fn a_reply_of_another_shape_names_its_script() {
        let e = decode::<JoinReply>(&show(), "join", r#"{"joins":[{"outcome":"nonsense"}]}"#)
            .unwrap_err();
        assert!(
            matches!(&e, StoreError::Protocol(m) if m.starts_with("join:")),
            "{e:?}"
        );
        let e = decode::<LeaveReply>(&show(), "leave", "[1]").unwrap_err();
        assert!(matches!(e, StoreError::Protocol(_)), "{e:?}");
    }

    #[test]
    fn each_join_of_a_call_gets_its_own_outcome() {
        let kept = Uuid::new_v4();
        let text = format!(
            r#"{{"epoch":"42","version":7,"pace":{{"rate":5,"flow_milli":5000,"spread_milli":0,"phase":"open","full":false}},"first":3,"joins":[2,{{"outcome":"proof_spent"}},{{"outcome":"replayed","ticket_id":"{kept}","ticket":{{"state":"admitted","expires_in_ms":900}}}},{{"outcome":"ended"}},{{"outcome":"joined","ticket":{{"state":"pre_queue","arrival":4,"opens_in_ms":5}}}},3]}}"#
        );
        let r: JoinReply = decode(&show(), "join", &text).unwrap();
        let tickets: Vec<Uuid> = (0..6).map(|_| Uuid::new_v4()).collect();
        let answers = r.answers(&show(), &tickets).unwrap();
        let (joined, replayed) = answers[0].as_ref().unwrap();
        assert_eq!(
            (joined.ticket, joined.arrival, *replayed),
            (tickets[0], 3, false)
        );
        assert_eq!((joined.status.epoch, joined.status.version), (42, 7));
        assert!(matches!(answers[1], Err(StoreError::ProofSpent)));
        let (kept_one, replayed) = answers[2].as_ref().unwrap();
        assert_eq!(
            (kept_one.ticket, kept_one.arrival, *replayed),
            (kept, 0, true)
        );
        assert!(matches!(answers[3], Err(StoreError::Ended(_))));
        let (pre, _) = answers[4].as_ref().unwrap();
        assert_eq!(pre.arrival, 4);
        let (last, _) = answers[5].as_ref().unwrap();
        assert_eq!(
            (last.arrival, last.status.state),
            (
                5,
                TicketState::Waiting {
                    position: 3,
                    arrival: 5
                }
            )
        );

        let r: JoinReply = decode(&show(), "join", &text).unwrap();
        let e = r.answers(&show(), &tickets[..5]).unwrap_err();
        assert!(matches!(e, StoreError::Protocol(_)), "{e:?}");
    }

    #[test]
    fn an_empty_list_may_come_as_cjsons_empty_object() {
        let r: PassKeysReply = decode_plain("pass_keys", r#"{"keys":{}}"#).unwrap();
        assert!(r.keys.is_empty());
        let r: PassKeysReply = decode_plain("pass_keys", r#"{"keys":["a","b"]}"#).unwrap();
        assert_eq!(r.keys, ["a", "b"]);
        assert!(decode_plain::<PassKeysReply>("pass_keys", r#"{"keys":{"a":1}}"#).is_err());
    }

    #[test]
    fn an_epoch_travels_as_text() {
        let r: ConfigureReply = decode(
            &show(),
            "configure",
            r#"{"created":true,"epoch":"9999999999999"}"#,
        )
        .unwrap();
        assert_eq!(Configured::from(r).epoch, 9_999_999_999_999);
        assert!(
            decode::<ConfigureReply>(&show(), "configure", r#"{"created":true,"epoch":1}"#)
                .is_err()
        );
    }
}
