//! Operator calls, all behind the bearer token: create, configure and delete a show, open and
//! close its on-sale, read its figures.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{AppJson, AppPath, AppState, Operator, OptionalJson, show_id};
use crate::error::AppError;
use crate::model::{EndReason, ShowId, ShowStats};

/// The most seats a show may sell: far above any venue, low enough for Lua's numbers.
pub(super) const MAX_STOCK: u64 = 100_000_000;
/// The highest cap on admitted fans who have not bought yet: an hour at the highest rate.
pub(super) const MAX_ACTIVE_BUYERS: u32 = MAX_RATE * 3600;
/// The longest arrival window (`arrivalWindowSeconds`): a day.
pub(super) const MAX_ARRIVAL_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// The longest beacon name (`drawBeacon`), in printable ASCII.
pub(super) const MAX_BEACON: usize = 200;
/// The longest beacon value (`drawBeaconValue`), in printable ASCII.
pub(super) const MAX_BEACON_VALUE: usize = 512;
use crate::pass::MAX_CHALLENGE_BITS;
use crate::store::{AnnouncedRate, MAX_RATE, MIN_ARRIVAL_WINDOW, Schedule, ShowSettings};

/// `POST …/{showId}/open`: 204; creates the show if needed, the admitter serves it and the
/// gate closes. A show whose state was lost starts again from nothing: this is the
/// operator's deliberate re-open.
#[utoipa::path(
    post,
    path = crate::protocol::routes::OPEN,
    operation_id = "openShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Open the on-sale (the gate closes), creating the show if needed; re-opens a lost \
         show from nothing",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Open"),
        (
            status = 409,
            description = "A scheduled show, which opens by itself at its `opensAt`",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn open(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    let opened = state.store.open(&show).await?;
    if opened.recovered {
        tracing::warn!(%show, "a lost show re-opened from nothing");
    }
    state.watchdog.remember(&show, opened.epoch, true);
    tracing::info!(%show, "on-sale opened");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST …/{showId}/close`: 204; the original's close: no more admissions and no gate, and
/// fans still queued are sent on. 404 for a show nobody made.
#[utoipa::path(
    post,
    path = crate::protocol::routes::CLOSE,
    operation_id = "closeShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Close the on-sale (the original's close): no more admissions and no gate; fans \
         still queued are told `CLOSED` and sent on",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Closed"),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn close(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    state.store.close(&show).await?;
    tracing::warn!(%show, "on-sale closed: the gate is lifted, orders need no admission");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST …/{showId}/pause`: 204; admission stops at once, every place is kept and the gate
/// stays shut (`open` resumes). 409 before the show opened or once it ended.
#[utoipa::path(
    post,
    path = crate::protocol::routes::PAUSE,
    operation_id = "pauseShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Pause the on-sale: admission stops at once, every place is kept, the gate stays \
         shut; `open` resumes",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Paused"),
        (
            status = 409,
            description = "Not opened yet, or ended: nothing to pause",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn pause(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    state.store.pause(&show).await?;
    tracing::info!(%show, "on-sale paused");
    Ok(StatusCode::NO_CONTENT)
}

/// What `POST …/{showId}/end` takes: why, optionally.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EndRequest {
    /// Why the on-sale ended (`"sold out"`), told to every fan still queued: 1 to 64 bytes
    /// of printable text.
    pub reason: Option<String>,
}

/// `POST …/{showId}/end` `{"reason"}` (optional body): 204; the on-sale is over: joins are
/// 410, the gate stays shut (fans admitted before may finish), every fan still queued is
/// pushed the end.
#[utoipa::path(
    post,
    path = crate::protocol::routes::END,
    operation_id = "endShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "End the on-sale: joins are 410, the gate stays shut (admissions running may still \
         buy), every fan still queued is told `ENDED` with the reason",
    params(crate::http::openapi::params::ShowPath),
    request_body = Option<EndRequest>,
    responses(
        (status = 204, description = "Ended"),
        (
            status = 400,
            description = "A reason that is empty, too long or not printable",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn end(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    OptionalJson(request): OptionalJson<EndRequest>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    let request = request.unwrap_or_default();
    let reason = match request.reason {
        None => None,
        Some(text) => Some(EndReason::new(&text).ok_or_else(|| {
            AppError::BadRequest(format!(
                "reason: 1 to {} bytes of printable text",
                EndReason::MAX
            ))
        })?),
    };
    state.store.end(&show, reason).await?;
    tracing::info!(%show, reason = reason.as_ref().map(EndReason::as_str), "on-sale ended");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET …/{showId}/stats`: open or not, lost or not, queue length, valid admissions, rate.
#[utoipa::path(
    get,
    path = crate::protocol::routes::STATS,
    operation_id = "showStats",
    tag = crate::http::openapi::OPERATOR,
    summary = "A show's figures",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 200, description = "The figures", body = ShowStats),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
pub(super) async fn stats(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<Json<ShowStats>, AppError> {
    let show = show_id(&show)?;
    Ok(Json(state.store.stats(&show).await?))
}

/// A show's settings, as `PUT …/{showId}` and `PUT …/{showId}/config` take them; each field
/// is optional.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ShowConfig {
    pub admit_per_second: Option<u32>,
    /// Cap on admitted fans who have not bought yet; 0 removes the cap.
    pub max_active_buyers: Option<u32>,
    /// With a cap: seconds an admission may go untaken (no poll, no live stream, no order)
    /// before its place goes to the next fan; 0 keeps every admission its full lifetime.
    pub arrival_window_seconds: Option<u64>,
    /// Let the pace follow the checkout: the admitter asks this `http://` URL every tick
    /// and halves the rate in force while it answers slowly or with an error, raising it
    /// again slowly once it is healthy. `""` stops following it.
    pub checkout_health_url: Option<String>,
    /// The lowest rate the pace may fall to while it follows the checkout (default 1).
    pub min_admit_per_second: Option<u32>,
    /// A fair start (RFC 3339, in the future): fans who join before it wait in a pre-queue,
    /// drawn into a random order when the show opens by itself at this time. Set it before
    /// anyone joins; it may move until then.
    pub opens_at: Option<String>,
    /// Public randomness the draw will take in, named before the pre-queue closes (for
    /// example "drand quicknet round 12345678", a round published after `opensAt`): not even
    /// the operator can then steer the draw. The draw waits for its value.
    pub draw_beacon: Option<String>,
    /// The named beacon's value, once published (after the pre-queue closed).
    pub draw_beacon_value: Option<String>,
    /// Announce a rate change (RFC 3339, in the future; `""` withdraws it): from then on the
    /// rate is `rateChangeTo`, and until then every ETA counts with it.
    pub rate_change_at: Option<String>,
    /// The rate from `rateChangeAt` on (1 to 10,000).
    pub rate_change_to: Option<u32>,
    /// Proof of work before joining: leading zero bits SHA-256 of `challenge:nonce` must
    /// have (0 to 32; 0, the default, asks none). Takes effect at once.
    pub join_challenge_bits: Option<u32>,
    /// Seats for sale (0 removes the stock): the admitter never lets in more fans than
    /// seats neither sold nor held by a running admission, waiting fans are told the seats
    /// left (`stockLeft`), and the last seat sold ends the on-sale (`sold out`).
    pub stock: Option<u64>,
}

impl ShowConfig {
    /// The settings, or a 400 naming the field that is out of range.
    fn settings(&self) -> Result<ShowSettings, AppError> {
        if self
            .admit_per_second
            .is_some_and(|rate| !(1..=MAX_RATE).contains(&rate))
        {
            return Err(AppError::BadRequest(format!(
                "admitPerSecond: must be between 1 and {MAX_RATE}"
            )));
        }
        if self
            .max_active_buyers
            .is_some_and(|cap| cap > MAX_ACTIVE_BUYERS)
        {
            return Err(AppError::BadRequest(format!(
                "maxActiveBuyers: must be at most {MAX_ACTIVE_BUYERS}"
            )));
        }
        let (shortest, longest) = (MIN_ARRIVAL_WINDOW.as_secs(), MAX_ARRIVAL_WINDOW.as_secs());
        if self
            .arrival_window_seconds
            .is_some_and(|w| w != 0 && !(shortest..=longest).contains(&w))
        {
            return Err(AppError::BadRequest(format!(
                "arrivalWindowSeconds: 0 (off) or between {shortest} and {longest}"
            )));
        }
        if let Some(url) = self.checkout_health_url.as_deref()
            && !url.is_empty()
        {
            crate::throttle::health_uri(url)
                .map_err(|e| AppError::BadRequest(format!("checkoutHealthUrl: {e}")))?;
        }
        if self
            .min_admit_per_second
            .is_some_and(|rate| !(1..=MAX_RATE).contains(&rate))
        {
            return Err(AppError::BadRequest(format!(
                "minAdmitPerSecond: must be between 1 and {MAX_RATE}"
            )));
        }
        let rate_change = self.rate_change()?;
        if self.stock.is_some_and(|stock| stock > MAX_STOCK) {
            return Err(AppError::BadRequest(format!(
                "stock: must be between 0 (none) and {MAX_STOCK}"
            )));
        }
        if self
            .join_challenge_bits
            .is_some_and(|bits| bits > MAX_CHALLENGE_BITS)
        {
            return Err(AppError::BadRequest(format!(
                "joinChallengeBits: must be between 0 (off) and {MAX_CHALLENGE_BITS}"
            )));
        }
        Ok(ShowSettings {
            rate_change,
            admit_per_second: self.admit_per_second,
            max_active_buyers: self.max_active_buyers,
            arrival_window: self.arrival_window_seconds.map(Duration::from_secs),
            checkout_health_url: self.checkout_health_url.clone(),
            min_admit_per_second: self.min_admit_per_second,
            join_challenge_bits: self.join_challenge_bits,
            stock: self.stock,
        })
    }
}

impl ShowConfig {
    /// The fair start's settings, or a 400 naming the field that is wrong.
    fn schedule(&self) -> Result<Schedule, AppError> {
        let opens_at_ms = match self.opens_at.as_deref() {
            None => None,
            Some(text) => Some(future_time("opensAt", text)?),
        };
        let text = |field: &str, value: &Option<String>, most: usize| match value {
            Some(v)
                if v.is_empty()
                    || v.len() > most
                    || !v.bytes().all(|b| (b' '..=b'~').contains(&b)) =>
            {
                Err(AppError::BadRequest(format!(
                    "{field}: 1 to {most} printable ASCII characters"
                )))
            }
            v => Ok(v.clone()),
        };
        Ok(Schedule {
            opens_at_ms,
            beacon: text("drawBeacon", &self.draw_beacon, MAX_BEACON)?,
            beacon_value: text("drawBeaconValue", &self.draw_beacon_value, MAX_BEACON_VALUE)?,
        })
    }

    /// The announced rate change, or a 400 naming what is wrong with it.
    fn rate_change(&self) -> Result<Option<Option<AnnouncedRate>>, AppError> {
        match (self.rate_change_at.as_deref(), self.rate_change_to) {
            (None, None) => Ok(None),
            (Some(""), None) => Ok(Some(None)),
            (Some(at), Some(rate)) if !at.is_empty() => {
                if !(1..=MAX_RATE).contains(&rate) {
                    return Err(AppError::BadRequest(format!(
                        "rateChangeTo: must be between 1 and {MAX_RATE}"
                    )));
                }
                let at_ms = future_time("rateChangeAt", at)?;
                Ok(Some(Some(AnnouncedRate { at_ms, rate })))
            }
            _ => Err(AppError::BadRequest(
                "rateChangeAt and rateChangeTo go together (rateChangeAt \"\" alone withdraws \
                 the change)"
                    .into(),
            )),
        }
    }

    /// Whether any fair-start field was sent.
    fn schedules(&self) -> bool {
        self.opens_at.is_some() || self.draw_beacon.is_some() || self.draw_beacon_value.is_some()
    }
}

/// The furthest ahead an opening may be scheduled.
const MOST_AHEAD: Duration = Duration::from_secs(366 * 24 * 3600);

/// A time the operator sets (`field`) as ms since the epoch: RFC 3339, in the future,
/// within a year.
fn future_time(field: &str, text: &str) -> Result<u64, AppError> {
    let bad = |why: &str| AppError::BadRequest(format!("{field}: {why}"));
    let at: jiff::Timestamp = text
        .parse()
        .map_err(|_| bad("an RFC 3339 time, such as 2026-12-01T10:00:00Z"))?;
    let ms = at.as_millisecond();
    let now = crate::clock::wall_ms() as i64;
    if ms <= now {
        return Err(bad("must be in the future"));
    }
    if ms > now + MOST_AHEAD.as_millis() as i64 {
        return Err(bad("at most a year ahead"));
    }
    Ok(ms as u64)
}

/// `PUT /orders/waiting-room/{showId}` with the show's settings (an empty object or no body
/// takes the server's defaults): 201 with its figures when it is new, 200 when it existed.
/// The on-sale stays closed until `open`.
#[utoipa::path(
    put,
    path = crate::protocol::routes::SHOW,
    operation_id = "createShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Create a show, or change its settings; its on-sale stays closed",
    params(crate::http::openapi::params::ShowPath),
    request_body = Option<ShowConfig>,
    responses(
        (status = 201, description = "The show is new: its figures", body = ShowStats),
        (status = 200, description = "The show existed: its figures", body = ShowStats),
        (
            status = 400,
            description = "A bad showId, or a setting out of range",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "A fair-start setting that does not fit the show now: `opensAt` once \
                 it opened, fans joined or its pre-queue closed; `drawBeacon` without `opensAt` \
                 or after the pre-queue closed; `drawBeaconValue` out of turn",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn create(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    OptionalJson(config): OptionalJson<ShowConfig>,
) -> Result<Response, AppError> {
    let show = show_id(&show)?;
    let config = config.unwrap_or_default();
    let (created, stats) = configure(&state, &show, &config).await?;
    if created {
        let location = crate::protocol::routes::show(crate::protocol::routes::SHOW, show.as_str());
        return Ok((
            StatusCode::CREATED,
            [(axum::http::header::LOCATION, location)],
            Json(stats),
        )
            .into_response());
    }
    Ok((StatusCode::OK, Json(stats)).into_response())
}

/// `DELETE /orders/waiting-room/{showId}`: 204 once the show and all its state are gone
/// (fans following it are told their tickets are unknown); 404 if there was none. Orders
/// already placed stay readable at `/orders/{id}`.
#[utoipa::path(
    delete,
    path = crate::protocol::routes::SHOW,
    operation_id = "deleteShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Delete a show and its state; its followers are told `unknown`; orders stay",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 204, description = "Gone"),
        (
            status = 404,
            description = crate::http::openapi::NO_SHOW,
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn delete(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<StatusCode, AppError> {
    let show = show_id(&show)?;
    if !state.store.delete(&show).await? {
        return Err(AppError::NotFound(format!("no on-sale named {show}")));
    }
    state.watchdog.forget(&show);
    state.metrics.forget_show(&show);
    tracing::info!(%show, "show deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// `PUT …/{showId}/config` with `{"admitPerSecond": N, "maxActiveBuyers": M}`: creates the
/// show if needed; takes effect at the next tick; a new rate pushes every waiting fan a new
/// ETA. Answers the show's figures.
#[utoipa::path(
    put,
    path = crate::protocol::routes::CONFIG,
    operation_id = "configureShow",
    tag = crate::http::openapi::OPERATOR,
    summary = "Change any of a show's settings, creating it if needed; applies from the next tick; \
         a new rate pushes every waiting fan a new ETA",
    params(crate::http::openapi::params::ShowPath),
    request_body = ShowConfig,
    responses(
        (status = 200, description = "The figures after", body = ShowStats),
        (
            status = 400,
            description = "No setting sent, or one out of range",
            body = crate::protocol::ErrorBody,
        ),
        (
            status = 409,
            description = "A fair-start setting that does not fit the show now: `opensAt` once \
                 it opened, fans joined or its pre-queue closed; `drawBeacon` without `opensAt` \
                 or after the pre-queue closed; `drawBeaconValue` out of turn",
            body = crate::protocol::ErrorBody,
        ),
    ),
)]
#[tracing::instrument(skip_all, fields(show = %show))]
pub(super) async fn set_config(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    AppJson(config): AppJson<ShowConfig>,
) -> Result<Json<ShowStats>, AppError> {
    let show = show_id(&show)?;
    if config.admit_per_second.is_none()
        && config.max_active_buyers.is_none()
        && config.arrival_window_seconds.is_none()
        && config.checkout_health_url.is_none()
        && config.min_admit_per_second.is_none()
        && config.rate_change_at.is_none()
        && config.rate_change_to.is_none()
        && config.join_challenge_bits.is_none()
        && config.stock.is_none()
        && !config.schedules()
    {
        return Err(AppError::BadRequest(
            "send at least one of admitPerSecond, maxActiveBuyers, arrivalWindowSeconds, \
             checkoutHealthUrl, minAdmitPerSecond, rateChangeAt, rateChangeTo, \
             joinChallengeBits, stock, opensAt, drawBeacon, drawBeaconValue"
                .into(),
        ));
    }
    Ok(Json(configure(&state, &show, &config).await?.1))
}

/// Applies checked settings, creating the show if needed: whether it was created, and its
/// figures after.
async fn configure(
    state: &AppState,
    show: &ShowId,
    config: &ShowConfig,
) -> Result<(bool, ShowStats), AppError> {
    let settings = config.settings()?;
    let schedule = config.schedule()?;
    let configured = state.store.configure(show, settings.clone()).await?;
    state.watchdog.remember(show, configured.epoch, false);
    if config.schedules() {
        state.store.schedule(show, schedule.clone()).await?;
        if let Some(at) = config.opens_at.as_deref() {
            tracing::info!(%show, opens_at = at, "on-sale scheduled; pre-queue open");
        }
    }
    if configured.created {
        tracing::info!(%show, "show created");
    }
    if let Some(rate) = settings.admit_per_second {
        tracing::info!(%show, rate, "admission rate changed");
    }
    if let Some(cap) = settings.max_active_buyers {
        tracing::info!(%show, cap, "active buyer cap changed");
    }
    if let Some(bits) = settings.join_challenge_bits {
        tracing::info!(%show, bits, "join challenge difficulty changed");
    }
    Ok((configured.created, state.store.stats(show).await?))
}
