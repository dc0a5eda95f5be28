//! What the queue's scripts answer (`join.lua`, `status.lua`, `admit.lua`, …), decoded by name
//! (`crate::store::redis::reply` holds the decoding every script shares: refusals, epochs as
//! text, `cjson`'s empty lists).

use serde::Deserialize;
use uuid::Uuid;

use crate::model::{Pace, Sale, ShowId, TicketState};
use crate::store::redis::reply::{epoch, list, not_now};
use crate::store::{
    AdmitOutcome, DueCall, DueCalls, Joined, PaceFigures, Result, Status, StoreError, Touched,
};

/// The ticket's [`Status`] as a script answered where it stands, under the show's `epoch`,
/// `pace` and `version` its call read (one place for both replies that tell a ticket where it
/// stands: status and join).
fn status(state: TicketState, epoch: u64, (pace, sale): (Pace, Sale), version: u64) -> Status {
    Status {
        arrival: state.arrival(),
        state,
        epoch,
        pace,
        sale,
        version,
    }
}

/// `status.lua`: where each ticket of the call stands, in the order they were sent, and the
/// show's version, epoch and pace they share.
#[derive(Debug, Deserialize)]
pub(super) struct StatusReply {
    #[serde(deserialize_with = "list")]
    tickets: Vec<TicketState>,
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
        let (epoch, version, read) = (self.epoch, self.version, self.pace.read());
        Ok(self
            .tickets
            .into_iter()
            .map(|ticket| Ok(status(ticket, epoch, read.clone(), version)))
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
    Joined { ticket: TicketState },
    /// The ticket kept under the join's idempotency key, live (or joined earlier in the same
    /// call), and where it stands.
    Replayed {
        ticket_id: Uuid,
        ticket: TicketState,
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
    /// Joined a lane by its access code: where the new ticket stands (its arrival the
    /// lane's).
    Laned { ticket: TicketState },
    /// The access code let nobody in: `unknown`, `used_up` or `lane_closed`.
    CodeRefused { why: String },
    /// The show takes fans with an access code only.
    CodeRequired,
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
        let shared = self.version.zip(self.pace.as_ref().map(PaceFigures::read));
        let (epoch, opens_in_ms) = (self.epoch, self.opens_in_ms);
        let joined = |ticket: Uuid, standing: TicketState| -> Result<Joined> {
            let (version, read) = shared.clone().ok_or_else(|| {
                StoreError::Protocol("join: a ticket answered without the pace".into())
            })?;
            let status = status(standing, epoch, read, version);
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
                        Some(opens_in_ms) => TicketState::PreQueue {
                            arrival,
                            opens_in_ms,
                        },
                        None => TicketState::Waiting { position, arrival },
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
                JoinEntry::Outcome(JoinOutcome::Laned { ticket: standing }) => {
                    joined(ticket, standing).map(|j| (j, false))
                }
                JoinEntry::Outcome(JoinOutcome::CodeRefused { why }) => {
                    Err(StoreError::CodeRefused(match why.as_str() {
                        "used_up" => "this access code has been used as often as it may",
                        "lane_closed" => "this access code's lane is not open now",
                        _ => "this access code is not one of this show's",
                    }))
                }
                JoinEntry::Outcome(JoinOutcome::CodeRequired) => Err(StoreError::CodeRefused(
                    "this sale takes fans with an access code only (X-Access-Code)",
                )),
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

/// `bypass.lua`.
#[derive(Debug, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(super) enum BypassReply {
    Admitted { arrival: u64 },
    Replayed { ticket: uuid::Uuid, arrival: u64 },
    NotOpen,
    SoldOut,
    TooMany,
    LinkVoid,
    LinkUsed,
}

/// `is_admitted.lua`.
#[derive(Debug, Deserialize)]
pub(super) struct IsAdmittedReply {
    pub(super) admitted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis::reply::decode;

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
}
