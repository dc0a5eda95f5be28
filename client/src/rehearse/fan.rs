//! One rehearsal fan: joins, follows its ticket over SSE (unless its page is closed), gives
//! up if it runs out of patience, and buys once let in if it is a buyer.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use reqwest::{Client, Url};
use waiting_room::model::ShowId;
use waiting_room::protocol::{EventName, routes};

use crate::follow::{self, FollowError, Joined, PushStream};
use crate::load::add;
use crate::simulate::Choices;

/// What every fan of a rehearsal shares: the server, the show, and the tallies.
pub(super) struct Stage {
    pub base: Url,
    pub show: ShowId,
    pub tally: Tally,
}

/// What the fans did, counted as they do it.
#[derive(Default)]
pub(super) struct Tally {
    pub joined: AtomicU64,
    pub join_failed: AtomicU64,
    pub admitted: AtomicU64,
    pub ordered: AtomicU64,
    pub gave_up: AtomicU64,
}

/// Joins too many or too busy this many times in a row: the fan goes home.
const JOIN_ATTEMPTS: u32 = 5;

/// Plays one fan to its end.
pub(super) async fn fan(stage: Arc<Stage>, client: Client, i: u64, choices: Choices) {
    let Some(ticket) = join(&stage, &client).await else {
        add(&stage.tally.join_failed);
        return;
    };
    add(&stage.tally.joined);
    if choices.away {
        return;
    }
    let patience = choices.gives_up_after.unwrap_or(Duration::MAX);
    let give_up = tokio::time::sleep(patience.min(Duration::from_secs(86_400)));
    tokio::pin!(give_up);
    let Ok(mut stream) = PushStream::sse(&client, &stage.base, &stage.show, ticket, None).await
    else {
        return;
    };
    loop {
        tokio::select! {
            push = stream.next() => match push {
                Some(Ok(push)) if push.kind == EventName::Waiting => continue,
                Some(Ok(push)) if push.kind == EventName::Admitted => {
                    add(&stage.tally.admitted);
                    stream.close().await;
                    if let Some(after) = choices.buys_after {
                        tokio::time::sleep(after).await;
                        if order(&stage, &client, ticket, i).await {
                            add(&stage.tally.ordered);
                        }
                    }
                    return;
                }
                // Expired, unknown, closed, ended, or a stream that broke: the fan is done.
                _ => return,
            },
            () = &mut give_up, if choices.gives_up_after.is_some() => {
                stream.close().await;
                let url = follow::ticket_url(&stage.base, routes::TICKET, &stage.show, ticket);
                let _ = client.delete(url).timeout(follow::CONNECT_TIMEOUT).send().await;
                add(&stage.tally.gave_up);
                return;
            }
        }
    }
}

/// A ticket, joining again as the server asks when it is busy or the fan too quick.
async fn join(stage: &Stage, client: &Client) -> Option<uuid::Uuid> {
    for _ in 0..JOIN_ATTEMPTS {
        match follow::join(client, &stage.base, &stage.show, None).await {
            Ok(Joined::Ticket(view)) => return Some(view.ticket_id),
            Ok(Joined::TooMany(wait) | Joined::Busy(wait)) => tokio::time::sleep(wait).await,
            Err(FollowError::Busy(wait)) => tokio::time::sleep(wait).await,
            Err(e) => {
                tracing::debug!(error = %e, "join failed");
                return None;
            }
        }
    }
    None
}

/// The fan's order; whether it was taken.
async fn order(stage: &Stage, client: &Client, ticket: uuid::Uuid, i: u64) -> bool {
    let hold = format!("rehearsal-{ticket}");
    let email = format!("fan{i}@rehearsal.example");
    follow::order(client, &stage.base, &stage.show, ticket, &hold, &email)
        .await
        .is_ok_and(|status| status.is_success())
}
