//! The operator console: `GET /admin` (a page that holds no data: everything it shows comes
//! from bearer-authenticated API calls its script makes) and its live feed,
//! `GET /admin/stats/events`, an SSE stream of every watched show's figures once a second;
//! [`lookup`] finds a ticket for support, and [`fans`] counts every instance's live fans.
//!
//! One stream carries every show, rather than one stream per show: a browser holds at most
//! six HTTP/1.1 connections to an origin, and a console watching six shows must still be
//! able to press a button.

mod fans;
mod lookup;

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;
use tokio_stream::wrappers::ReceiverStream;
use utoipa::ToSchema;

pub(crate) use self::fans::report_fans;
pub(super) use self::lookup::{__path_lookup, lookup};
use super::page::{asset_version, html};
use super::{AppState, Operator, show_id};
use crate::clock::wall_ms;
use crate::error::AppError;
use crate::model::{DrawStage, Phase, ShowId, ShowSettings, ShowStats};
use crate::protocol::routes;
use crate::store::{DrawState, EventKind, QueueStore, ShowEvent, StoreError};

/// The console samples every show this often; its chart has one point per sample.
pub(super) const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The most shows one stream may name, beyond the open ones.
pub(super) const MAX_WATCHED: usize = 100;

/// Samples a slow console may fall behind by before the newest are dropped: a chart
/// needs the latest figures, not a backlog.
const BUFFERED_SAMPLES: usize = 4;

/// After the event subscription drops, try again every this many samples.
const RESUBSCRIBE_EVERY: u32 = 5;

#[derive(Template)]
#[template(path = "admin.html")]
struct AdminPage {
    asset: &'static str,
    routes: ConsoleRoutes,
}

/// The contract's paths, handed to the console's script so that it spells none of them.
struct ConsoleRoutes {
    open: &'static str,
    pause: &'static str,
    close: &'static str,
    end: &'static str,
    config: &'static str,
    show: &'static str,
    feed: &'static str,
    page: &'static str,
    draw: &'static str,
    codes: &'static str,
    ticket: &'static str,
    /// The OpenAPI document, whose settings schema the settings form is built from.
    openapi: &'static str,
    /// The name of that schema among the document's components.
    settings: Cow<'static, str>,
}

/// `GET /admin`: the console's page. It is public on purpose: it carries no data, and the
/// script asks for the operator token and sends it as a bearer header on every call.
#[utoipa::path(
    get,
    path = crate::protocol::routes::ADMIN,
    operation_id = "console",
    tag = crate::http::openapi::PAGES,
    summary = "The operator's console; it asks for the token",
    responses(
        (
            status = 200,
            description = crate::http::openapi::PAGE,
            body = String,
            content_type = "text/html",
        ),
    ),
)]
pub(super) async fn console() -> Response {
    html(
        StatusCode::OK,
        &AdminPage {
            asset: asset_version(),
            routes: ConsoleRoutes {
                open: routes::OPEN,
                pause: routes::PAUSE,
                close: routes::CLOSE,
                end: routes::END,
                config: routes::CONFIG,
                show: routes::SHOW,
                feed: routes::ADMIN_STATS_EVENTS,
                page: routes::WAIT_PAGE,
                draw: routes::DRAW,
                codes: routes::CODES,
                ticket: routes::ADMIN_TICKET,
                openapi: routes::OPENAPI,
                settings: ShowSettings::name(),
            },
        },
    )
}

/// The query of the operator stream.
#[derive(Debug, Default, Deserialize)]
pub(super) struct StreamQuery {
    /// Comma-separated shows to report on besides the open ones (a closed show the operator
    /// is about to open, or has just closed).
    shows: Option<String>,
}

/// One sample: every reported show's figures at one instant.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Sample {
    /// The server's clock (ms since the epoch).
    pub at: u64,
    pub shows: Vec<ShowSample>,
}

/// One show in a [`Sample`]: the `…/stats` JSON plus what only this feed knows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ShowSample {
    #[serde(flatten)]
    pub stats: ShowStats,
    /// Fans following a ticket of this show over SSE or WebSocket on this instance.
    pub connected_fans: usize,
    /// Fans following a ticket of this show live on every instance together (each
    /// instance's count reported within the last second or two); `null` while the store
    /// cannot say.
    pub fans_everywhere: Option<u64>,
    /// Tickets admitted since the previous sample, counted from the admitter's published
    /// ticks; `null` while the feed cannot hear them.
    pub admitted_since_last: Option<u64>,
    /// The checkout health URL the pace follows, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkout_health_url: Option<String>,
    /// The lowest rate the pace may fall to while it follows the checkout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_admit_per_second: Option<u32>,
    /// A rate change announced ahead, as the show's last event carried it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_change: Option<AnnouncedChange>,
    /// A scheduled show's draw, until it opens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draw: Option<DrawSummary>,
}

/// A rate change announced ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AnnouncedChange {
    /// When it takes effect (ms since the epoch, the store's clock).
    pub at_ms: u64,
    /// The rate from then on.
    pub to: u32,
}

/// Where a scheduled show's fair start stands, for the console's countdown.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DrawSummary {
    /// When the show opens by itself (ms since the epoch).
    pub opens_at_ms: u64,
    /// `scheduled`, `closed` (waiting for the beacon's value) or `drawn`.
    pub state: DrawStage,
    /// SHA-256 of the secret seed, published from the start.
    pub commitment: String,
    /// The public randomness named in advance, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beacon: Option<String>,
    /// Fans in the pre-queue: everyone who joined so far while it takes fans, its fixed
    /// size once closed.
    pub pre_queue: u64,
}

impl DrawSummary {
    fn new(d: DrawState, joined: u64) -> DrawSummary {
        let state = match (&d.drawn, d.participants) {
            (Some(_), _) => DrawStage::Drawn,
            (None, Some(_)) => DrawStage::Closed,
            (None, None) => DrawStage::Scheduled,
        };
        DrawSummary {
            opens_at_ms: d.opens_at_ms,
            state,
            commitment: d.commitment,
            beacon: d.beacon,
            pre_queue: d.participants.unwrap_or(joined),
        }
    }
}

/// `GET /admin/stats/events?shows=a,b` (operator): a `stats` event with a [`Sample`] of the
/// open shows and the named ones, every [`SAMPLE_EVERY`], until the client goes away.
#[utoipa::path(
    get,
    path = crate::protocol::routes::ADMIN_STATS_EVENTS,
    operation_id = "statsEvents",
    tag = crate::http::openapi::OPERATOR,
    summary = "The open and the named shows' figures each second, over Server-Sent Events",
    params(crate::http::openapi::params::WatchedShows),
    responses(
        (status = 200, response = inline(crate::http::openapi::StatsEvents)),
        (status = 400, description = "A bad show id in `shows`", body = crate::protocol::ErrorBody),
    ),
)]
#[tracing::instrument(skip_all)]
pub(super) async fn stats_events(
    _: Operator,
    State(state): State<AppState>,
    query: Result<Query<StreamQuery>, QueryRejection>,
) -> Result<Response, AppError> {
    let Query(query) = query.map_err(|r| AppError::Rejected(r.status(), r.body_text()))?;
    let watched = watched(query.shows.as_deref())?;
    let (tx, rx) = mpsc::channel(BUFFERED_SAMPLES);
    state.life.tasks.spawn(feed(state.clone(), watched, tx));
    let stream = ReceiverStream::new(rx).map(Ok::<_, Infallible>);
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(super::sse::KEEP_ALIVE))
        .into_response();
    // As for the fans' streams: a buffering proxy would turn the live chart into bursts.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The named shows, checked and deduplicated.
fn watched(raw: Option<&str>) -> Result<BTreeSet<ShowId>, AppError> {
    let watched = raw
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(show_id)
        .collect::<Result<BTreeSet<_>, _>>()?;
    if watched.len() > MAX_WATCHED {
        return Err(AppError::BadRequest(format!(
            "shows: at most {MAX_WATCHED} at once"
        )));
    }
    Ok(watched)
}

/// Sends a sample every second until the receiver is dropped (the console went away) or the
/// server stops. Admissions are counted from the store's events, which every instance hears
/// (with sharded pub/sub, once it listens to the show: see [`Listening`]), so the count is
/// right whichever instance runs the admitter.
async fn feed(state: AppState, watched: BTreeSet<ShowId>, tx: mpsc::Sender<Event>) {
    let mut events = subscribe(&state).await;
    let mut listening = Listening {
        store: state.store.clone(),
        shows: BTreeSet::new(),
    };
    let mut admitted: HashMap<ShowId, u64> = HashMap::new();
    let mut changes: HashMap<ShowId, Option<AnnouncedChange>> = HashMap::new();
    let mut every = tokio::time::interval(SAMPLE_EVERY);
    every.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut ticks_unsubscribed = 0u32;
    loop {
        tokio::select! {
            _ = every.tick() => {
                if events.is_none() {
                    ticks_unsubscribed += 1;
                    if ticks_unsubscribed.is_multiple_of(RESUBSCRIBE_EVERY) {
                        events = subscribe(&state).await;
                    }
                }
                let counted = events.is_some();
                let heard = Heard { admitted: &mut admitted, changes: &mut changes, counted };
                let sample = match sample(&state, &watched, heard).await {
                    Ok(sample) => sample,
                    Err(e) => {
                        // The console shows its data going stale; the log says why.
                        tracing::warn!(error = %e, "operator sample failed");
                        continue;
                    }
                };
                let reported = sample.shows.iter().filter_map(|s| s.stats.show_id.parse().ok());
                listening.set(reported.collect()).await;
                let event = Event::default()
                    .event("stats")
                    .id(sample.at.to_string())
                    .json_data(&sample)
                    .expect("a sample always serialises");
                match tx.try_send(event) {
                    Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => {}
                    Err(mpsc::error::TrySendError::Closed(_)) => return,
                }
            }
            event = next_event(&mut events) => match event {
                // Admissions that ended carry no pace: nothing for the console.
                Some(event) if event.kind == EventKind::Spent => {}
                Some(event) => {
                    // Every event carries the show's announced change (or none).
                    let change = event.pace.change_in_ms.zip(event.pace.change_rate).map(|(in_ms, to)| {
                        AnnouncedChange { at_ms: event.at_ms + in_ms, to }
                    });
                    changes.insert(event.show.clone(), change);
                    if event.kind == EventKind::Tick {
                        *admitted.entry(event.show).or_default() += event.admitted;
                    }
                }
                None => {
                    tracing::debug!("operator feed lost its event subscription");
                    events = None;
                    ticks_unsubscribed = 0;
                }
            },
            _ = tx.closed() => return,
            _ = state.life.shutdown.cancelled() => return,
        }
    }
}

/// The shows the console reports on, listened to on the store's feed (sharded pub/sub
/// carries only the shows someone here listens to), until the console goes away.
struct Listening {
    store: Arc<dyn QueueStore>,
    shows: BTreeSet<ShowId>,
}

impl Listening {
    async fn set(&mut self, now: BTreeSet<ShowId>) {
        for gone in self.shows.difference(&now) {
            self.store.unlisten(gone);
        }
        for new in now.difference(&self.shows) {
            if let Err(e) = self.store.listen(new).await {
                tracing::warn!(show = %new, error = %e, "operator feed cannot listen to a show");
            }
        }
        self.shows = now;
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        for show in &self.shows {
            self.store.unlisten(show);
        }
    }
}

async fn subscribe(state: &AppState) -> Option<BoxStream<'static, ShowEvent>> {
    match state.store.subscribe().await {
        Ok(events) => Some(events),
        Err(e) => {
            tracing::warn!(error = %e, "operator feed cannot hear admissions");
            None
        }
    }
}

/// The next event, or never while unsubscribed.
async fn next_event(events: &mut Option<BoxStream<'static, ShowEvent>>) -> Option<ShowEvent> {
    match events {
        Some(events) => events.next().await,
        None => std::future::pending().await,
    }
}

/// What the feed heard between samples: admissions per show (`counted`: while it could
/// hear them) and the latest announced rate change per show.
struct Heard<'a> {
    admitted: &'a mut HashMap<ShowId, u64>,
    changes: &'a mut HashMap<ShowId, Option<AnnouncedChange>>,
    counted: bool,
}

/// Reads the figures of the open and the watched shows, and hands over (and resets) the
/// admissions counted since the last sample.
async fn sample(
    state: &AppState,
    watched: &BTreeSet<ShowId>,
    heard: Heard<'_>,
) -> Result<Sample, AppError> {
    let mut shows: BTreeSet<ShowId> = state.store.open_shows().await?.into_iter().collect();
    // A lost show is no longer open, and is what the operator most needs to see.
    shows.extend(state.watchdog.lost());
    shows.extend(watched.iter().cloned());
    // One read for every show: each instance's report of its live fans.
    let everywhere = match state.store.fans_everywhere().await {
        Ok(fans) => Some(fans),
        Err(e) => {
            tracing::debug!(error = %e, "cannot read the live fans of every instance");
            None
        }
    };
    let at = wall_ms();
    let mut out = Vec::with_capacity(shows.len());
    for show in shows {
        let stats = match state.store.stats(&show).await {
            Ok(stats) => stats,
            // A watched show nobody made (yet) has no figures.
            Err(StoreError::NoSuchShow(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        // What the figures do not carry: the checkout the pace follows (not for a lost
        // show, which keeps no settings), and a scheduled show's draw until it opens.
        let pace = if stats.lost {
            None
        } else {
            state.store.throttle_control(&show).await.ok()
        };
        let draw = if stats.phase == Phase::Pending && !stats.lost {
            match state.store.draw(&show).await {
                Ok(draw) => draw.map(|d| DrawSummary::new(d, stats.joined)),
                Err(_) => None,
            }
        } else {
            None
        };
        let rate_change = heard
            .changes
            .get(&show)
            .copied()
            .flatten()
            .filter(|c| c.at_ms > at);
        out.push(ShowSample {
            connected_fans: state.hub.fans_of(&show),
            fans_everywhere: everywhere
                .as_ref()
                .map(|all| all.get(&show).copied().unwrap_or(0)),
            admitted_since_last: heard
                .counted
                .then(|| heard.admitted.remove(&show).unwrap_or(0)),
            checkout_health_url: pace.as_ref().and_then(|p| p.health_url.clone()),
            min_admit_per_second: pace.as_ref().map(|p| p.lowest),
            rate_change,
            draw,
            stats,
        });
    }
    // Ticks of shows nobody reports on would pile up otherwise.
    heard.admitted.clear();
    heard
        .changes
        .retain(|show, _| out.iter().any(|s| s.stats.show_id == show.as_str()));
    Ok(Sample { at, shows: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_shows_are_checked_trimmed_and_deduplicated() {
        let shows = watched(Some(" b,a,,b ")).unwrap();
        let names: Vec<&str> = shows.iter().map(ShowId::as_str).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(watched(None).unwrap().is_empty());
        assert!(matches!(
            watched(Some("ok,not ok")),
            Err(AppError::BadRequest(_))
        ));
        let too_many = (0..=MAX_WATCHED)
            .map(|i| format!("s{i}"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(matches!(
            watched(Some(&too_many)),
            Err(AppError::BadRequest(_))
        ));
    }
}
