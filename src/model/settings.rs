//! A show's settings, in one shape: what an operator sends (`PUT …/{showId}` and
//! `PUT …/{showId}/config`), what is checked, what the store keeps whole with the show and
//! hands whole to its scripts (`settings()` in `prelude.lua`), what `GET …/stats` answers
//! (`"settings"`), and what the console's form is built from (this type's schema in
//! `/openapi.json`).
//!
//! A setting lives here once: its field (its doc comment is its documentation, in the
//! schema and the console), its bounds and its check in [`ShowSettings::check`]; every field
//! is optional, and one left out keeps what the show has (or the server's default). The rule
//! that reads it reads it from the stored settings.

use std::time::Duration;

use axum::http::Uri;
use serde::{Deserialize, Serialize};

/// The most admissions a second a show may be set to.
pub const MAX_RATE: u32 = 10_000;
/// The highest cap on admitted fans who have not bought yet: an hour at the highest rate.
pub const MAX_ACTIVE_BUYERS: u32 = MAX_RATE * 3600;
/// The shortest arrival window (0 turns it off): a fan following live says it is there every
/// few seconds, and a window must hold several of those.
pub const MIN_ARRIVAL_WINDOW: Duration = Duration::from_secs(10);
/// The longest arrival window (`arrivalWindowSeconds`): a day.
pub const MAX_ARRIVAL_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// The most seats a show may sell: far above any venue, low enough for Lua's numbers.
pub const MAX_STOCK: u64 = 100_000_000;
/// The most leading zero bits a join's proof of work may be asked for.
pub const MAX_CHALLENGE_BITS: u32 = 32;
/// The longest checkout health URL.
pub const MAX_HEALTH_URL: usize = 512;
/// The longest beacon name (`drawBeacon`), in printable ASCII.
pub const MAX_BEACON: usize = 200;
/// The longest beacon value (`drawBeaconValue`), in printable ASCII.
pub const MAX_BEACON_VALUE: usize = 512;
/// The longest queue a show may be bounded to (`maxQueueLength`).
pub(crate) const MAX_QUEUE_LENGTH: u64 = 100_000_000;
/// The longest `presenceGraceSeconds`: an hour.
pub(crate) const MAX_PRESENCE_GRACE: u64 = 3600;
/// The longest `awayHoldSeconds`: a day.
pub(crate) const MAX_AWAY_HOLD: u64 = 24 * 3600;
/// The furthest ahead `notifyAheadSeconds` may call: a day.
pub(crate) const MAX_NOTIFY_AHEAD: u64 = 24 * 3600;
/// The longest `notifyUrl`.
pub(crate) const MAX_NOTIFY_URL: usize = 512;
/// The most entries `pushServices` may hold, and the longest each.
pub(crate) const MAX_PUSH_SERVICES: usize = 32;
const MAX_PUSH_SERVICE: usize = 253;
/// The most events a show's schedule may hold (`events`).
pub(crate) const MAX_EVENTS: usize = 100;
/// The longest name of an event.
const MAX_EVENT_NAME: usize = 64;
/// The furthest ahead a time may be set (`opensAt`, `rateChangeAt`, an event's times).
const MOST_AHEAD: Duration = Duration::from_secs(366 * 24 * 3600);

/// A show's settings; each field is optional, and one left out keeps what the show has.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShowSettings {
    /// Admissions a second (1 to 10,000; default: the server's `ADMIT_PER_SECOND`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admit_per_second: Option<u32>,
    /// Cap on admitted fans who have not bought yet; 0 removes the cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active_buyers: Option<u32>,
    /// With a cap: seconds an admission may go untaken (no poll, no live stream, no order)
    /// before its place goes to the next fan; 0 keeps every admission its full lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_window_seconds: Option<u64>,
    /// Let the pace follow the checkout: the admitter asks this `http://` URL every tick
    /// and halves the rate in force while it answers slowly or with an error, raising it
    /// again slowly once it is healthy. `""` stops following it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout_health_url: Option<String>,
    /// The lowest rate the pace may fall to while it follows the checkout (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_admit_per_second: Option<u32>,
    /// A fair start (RFC 3339, in the future): fans who join before it wait in a pre-queue,
    /// drawn into a random order when the show opens by itself at this time. Set it before
    /// anyone joins; it may move until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<String>,
    /// Public randomness the draw will take in, named before the pre-queue closes (for
    /// example "drand quicknet round 12345678", a round published after `opensAt`): not even
    /// the operator can then steer the draw. The draw waits for its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_beacon: Option<String>,
    /// The named beacon's value, once published (after the pre-queue closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_beacon_value: Option<String>,
    /// Announce a rate change (RFC 3339, in the future; `""` withdraws it): from then on the
    /// rate is `rateChangeTo`, and until then every ETA counts with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_change_at: Option<String>,
    /// The rate from `rateChangeAt` on (1 to 10,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_change_to: Option<u32>,
    /// Proof of work before joining: leading zero bits SHA-256 of `challenge:nonce` must
    /// have (0 to 32; 0, the default, asks none). Takes effect at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_challenge_bits: Option<u32>,
    /// Seats for sale (0 removes the stock): the admitter never lets in more fans than
    /// seats neither sold nor held by a running admission, waiting fans are told the seats
    /// left (`stockLeft`), and the last seat sold ends the on-sale (`sold out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<u64>,
    /// The most fans the show's queue holds (0, the default: no bound; at most 100,000,000):
    /// a join past it is answered 503 with `Retry-After` until places free up. A fan already
    /// in line, joining again with its `Idempotency-Key`, is answered its place as ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 100_000_000)]
    pub max_queue_length: Option<u64>,
    /// Seconds a waiting fan counts as present after its last live stream ended or its last
    /// poll (default 30; 1 to 3,600). A fan with a live stream on any instance is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 3600)]
    pub presence_grace_seconds: Option<u64>,
    /// Seconds an away fan keeps its place (default 900; at most 86,400): while away it is
    /// passed over, not admitted, and admitted ahead of every later arrival once back; away
    /// longer, its place is released and it is told `EXPIRED`. 0 admits fans in turn whether
    /// present or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 86400)]
    pub away_hold_seconds: Option<u64>,
    /// A fan who asked to be called (Web Push or `notifyUrl`) is called `soon` this many
    /// seconds before its expected admission (default 120; at most 86,400).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(maximum = 86400)]
    pub notify_ahead_seconds: Option<u64>,
    /// The operator's own service that calls fans back (SMS, e-mail): an `http://` or
    /// `https://` URL that is POSTed `{showId, ticketId, event, position, etaSeconds}`, signed
    /// as a JWT with the pass keys (`""` stops it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify_url: Option<String>,
    /// The push services a fan's Web Push subscription may name, by host (`*.` for a
    /// domain's subdomains); only `https`, never a private address. An entry that is a whole
    /// origin with an address (`http://127.0.0.1:8123`) allows exactly that origin (default:
    /// the browsers' public push services).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_services: Option<Vec<String>>,
    /// The sale's schedule (at most 100 events, in order of their starts, none overlapping;
    /// `[]` removes it): while an event runs its `settings` are laid over the show's, applied
    /// by the admitter at the tick that finds it started or ended, recorded in the audit and
    /// pushed to every fan. An event may set `admitPerSecond`, `maxActiveBuyers`,
    /// `joinChallengeBits`, `maxQueueLength`, `presenceGraceSeconds`, `awayHoldSeconds` and
    /// `notifyAheadSeconds`, `lanes` and `codesOnly`. Sent whole: a list sent replaces the one
    /// the show had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 100)]
    pub events: Option<Vec<ScheduledEvent>>,
    /// Requests let through without queueing (at most 32 rules; `[]` removes them): a token
    /// in `X-Bypass-Token` (kept as its SHA-256), an address range, links an operator signs.
    /// Each is admitted at once while the on-sale is open and a seat is left, counted and
    /// audited by kind (docs/bypass.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 32)]
    pub bypass: Option<Vec<super::BypassRule>>,
    /// The lanes fans with an access code wait in (at most 8; `[]` removes them; docs/lanes.md):
    /// each takes its `share` of the rate while it holds fans, or goes first with `priority`;
    /// first come, first served inside each. A code names its lane (`POST …/codes`). A lane
    /// removed while fans wait in it is served first until it is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 8)]
    pub lanes: Option<Vec<super::LaneRule>>,
    /// Only fans with an access code may join (a presale): a join without one is refused
    /// (403), and a code that is refused sends nobody to the general queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codes_only: Option<bool>,
}

/// One event of a show's schedule (`events`): from `startsAt` until `endsAt`, or until the
/// next event starts, or for good, its settings are laid over the show's.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduledEvent {
    /// A name for people reading the schedule ("presale", "general sale"): 1 to 64
    /// printable ASCII characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it starts (RFC 3339; within a year ahead, and it may lie in the past, so that a
    /// schedule sent again mid-sale is the same schedule).
    pub starts_at: String,
    /// When it ends (RFC 3339, after `startsAt`, before the next event starts); without it,
    /// it runs until the next event starts, or for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
    /// The settings in force while it runs, laid over the show's (only those an event may
    /// set: see `events`; none: the show's own).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub settings: Box<ShowSettings>,
    /// The phase the on-sale enters when the event starts (`open`, `paused` or `ended`), by
    /// the admitter's tick, as the operator's call would; an operator may still change it
    /// by hand afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<EventPhase>,
}

/// A phase an event of the schedule puts the on-sale in when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventPhase {
    /// The admitter serves the show (`POST …/open`).
    Open,
    /// Admission stops, every place kept (`POST …/pause`).
    Paused,
    /// The on-sale is over (`POST …/end`).
    Ended,
}

/// An event's times and settings as the store's scripts take them: ms since the epoch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EventTimes {
    /// When it starts.
    pub s: u64,
    /// When it ends, if it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e: Option<u64>,
    /// Its settings.
    pub set: ShowSettings,
    /// The phase it enters when it starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ph: Option<EventPhase>,
}

/// A setting out of range: which, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {why}")]
pub struct SettingError {
    /// The field, as the operator spells it (`admitPerSecond`).
    pub field: &'static str,
    /// What it must be.
    pub why: String,
}

fn refuse(field: &'static str, why: impl Into<String>) -> SettingError {
    SettingError {
        field,
        why: why.into(),
    }
}

impl ShowSettings {
    /// Whether no setting at all was sent.
    pub fn is_empty(&self) -> bool {
        *self == ShowSettings::default()
    }

    /// Checks every field sent against its bounds, at `now_ms` (ms since the epoch: the
    /// times set must lie ahead of it).
    pub fn check(&self, now_ms: u64) -> Result<(), SettingError> {
        let rate = |field, value: Option<u32>| match value {
            Some(r) if !(1..=MAX_RATE).contains(&r) => {
                Err(refuse(field, format!("must be between 1 and {MAX_RATE}")))
            }
            _ => Ok(()),
        };
        rate("admitPerSecond", self.admit_per_second)?;
        rate("minAdmitPerSecond", self.min_admit_per_second)?;
        rate("rateChangeTo", self.rate_change_to)?;
        if self
            .max_active_buyers
            .is_some_and(|cap| cap > MAX_ACTIVE_BUYERS)
        {
            return Err(refuse(
                "maxActiveBuyers",
                format!("must be at most {MAX_ACTIVE_BUYERS}"),
            ));
        }
        let (shortest, longest) = (MIN_ARRIVAL_WINDOW.as_secs(), MAX_ARRIVAL_WINDOW.as_secs());
        if self
            .arrival_window_seconds
            .is_some_and(|w| w != 0 && !(shortest..=longest).contains(&w))
        {
            return Err(refuse(
                "arrivalWindowSeconds",
                format!("0 (off) or between {shortest} and {longest}"),
            ));
        }
        if let Some(url) = self.checkout_health_url.as_deref()
            && !url.is_empty()
        {
            health_uri(url).map_err(|why| refuse("checkoutHealthUrl", why))?;
        }
        if let Some(at) = self.opens_at.as_deref() {
            future_ms("opensAt", at, now_ms)?;
        }
        printable("drawBeacon", &self.draw_beacon, MAX_BEACON)?;
        printable("drawBeaconValue", &self.draw_beacon_value, MAX_BEACON_VALUE)?;
        match (self.rate_change_at.as_deref(), self.rate_change_to) {
            (None, None) | (Some(""), None) => {}
            (Some(at), Some(_)) if !at.is_empty() => {
                future_ms("rateChangeAt", at, now_ms)?;
            }
            _ => {
                return Err(refuse(
                    "rateChangeAt",
                    "rateChangeAt and rateChangeTo go together (rateChangeAt \"\" alone \
                     withdraws the change)",
                ));
            }
        }
        if self
            .join_challenge_bits
            .is_some_and(|bits| bits > MAX_CHALLENGE_BITS)
        {
            return Err(refuse(
                "joinChallengeBits",
                format!("must be between 0 (off) and {MAX_CHALLENGE_BITS}"),
            ));
        }
        if self
            .max_queue_length
            .is_some_and(|most| most > MAX_QUEUE_LENGTH)
        {
            return Err(refuse(
                "maxQueueLength",
                format!("must be between 0 (no bound) and {MAX_QUEUE_LENGTH}"),
            ));
        }
        if self
            .presence_grace_seconds
            .is_some_and(|g| !(1..=MAX_PRESENCE_GRACE).contains(&g))
        {
            return Err(refuse(
                "presenceGraceSeconds",
                format!("must be between 1 and {MAX_PRESENCE_GRACE}"),
            ));
        }
        if self.away_hold_seconds.is_some_and(|h| h > MAX_AWAY_HOLD) {
            return Err(refuse(
                "awayHoldSeconds",
                format!("must be between 0 (off) and {MAX_AWAY_HOLD}"),
            ));
        }
        if self
            .notify_ahead_seconds
            .is_some_and(|a| a > MAX_NOTIFY_AHEAD)
        {
            return Err(refuse(
                "notifyAheadSeconds",
                format!("must be between 0 and {MAX_NOTIFY_AHEAD}"),
            ));
        }
        if let Some(url) = self.notify_url.as_deref()
            && !url.is_empty()
        {
            notify_uri(url).map_err(|why| refuse("notifyUrl", why))?;
        }
        if let Some(services) = &self.push_services {
            if services.len() > MAX_PUSH_SERVICES {
                return Err(refuse(
                    "pushServices",
                    format!("at most {MAX_PUSH_SERVICES} entries"),
                ));
            }
            for entry in services {
                if entry.is_empty()
                    || entry.len() > MAX_PUSH_SERVICE
                    || !entry.chars().all(|c| c.is_ascii_graphic())
                {
                    return Err(refuse(
                        "pushServices",
                        format!("each entry is 1 to {MAX_PUSH_SERVICE} printable ASCII characters"),
                    ));
                }
            }
        }
        if self.stock.is_some_and(|stock| stock > MAX_STOCK) {
            return Err(refuse(
                "stock",
                format!("must be between 0 (none) and {MAX_STOCK}"),
            ));
        }
        if let Some(events) = &self.events {
            check_events(events, now_ms)?;
        }
        if let Some(rules) = &self.bypass {
            super::bypass::check_rules(rules).map_err(|why| refuse("bypass", why))?;
        }
        if let Some(lanes) = &self.lanes {
            super::lanes::check_lanes(lanes).map_err(|why| refuse("lanes", why))?;
        }
        Ok(())
    }

    /// Only the settings an event may set ([`ShowSettings::events`]).
    fn for_an_event(&self) -> ShowSettings {
        ShowSettings {
            admit_per_second: self.admit_per_second,
            max_active_buyers: self.max_active_buyers,
            join_challenge_bits: self.join_challenge_bits,
            max_queue_length: self.max_queue_length,
            presence_grace_seconds: self.presence_grace_seconds,
            away_hold_seconds: self.away_hold_seconds,
            notify_ahead_seconds: self.notify_ahead_seconds,
            lanes: self.lanes.clone(),
            codes_only: self.codes_only,
            ..ShowSettings::default()
        }
    }

    /// The schedule sent, in ms, from checked settings (`Some(vec![])` removes it).
    pub fn event_times(&self) -> Option<Vec<EventTimes>> {
        let events = self.events.as_ref()?;
        Some(
            events
                .iter()
                .filter_map(|e| {
                    Some(EventTimes {
                        s: parse_ms(&e.starts_at)?,
                        e: e.ends_at.as_deref().and_then(parse_ms),
                        set: e.settings.for_an_event(),
                        ph: e.phase,
                    })
                })
                .collect(),
        )
    }

    /// The arrival window sent, if any (zero: off).
    pub fn arrival_window(&self) -> Option<Duration> {
        self.arrival_window_seconds.map(Duration::from_secs)
    }

    /// The rate change sent: `Some(None)` withdraws the one announced. Read from checked
    /// settings (a time that does not parse reads as none sent).
    pub fn rate_change(&self) -> Option<Option<AnnouncedRate>> {
        match (self.rate_change_at.as_deref(), self.rate_change_to) {
            (Some(""), _) => Some(None),
            (Some(at), Some(rate)) => Some(Some(AnnouncedRate {
                at_ms: parse_ms(at)?,
                rate,
            })),
            _ => None,
        }
    }

    /// Whether any fair-start field was sent.
    pub fn schedules(&self) -> bool {
        self.opens_at.is_some() || self.draw_beacon.is_some() || self.draw_beacon_value.is_some()
    }

    /// The fair start sent, from checked settings.
    pub fn schedule(&self) -> Schedule {
        Schedule {
            opens_at_ms: self.opens_at.as_deref().and_then(parse_ms),
            beacon: self.draw_beacon.clone(),
            beacon_value: self.draw_beacon_value.clone(),
        }
    }

    /// Settings as a store kept them (JSON text; `None`: none set). Fields this build does
    /// not know (kept by a newer one, in a rolling deploy) are passed over with a warning
    /// rather than failing the read.
    pub fn read(kept: Option<&str>) -> ShowSettings {
        let Some(text) = kept else {
            return ShowSettings::default();
        };
        serde_json::from_str(text).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "stored settings this build cannot read whole");
            // Field by field: each one this build reads is kept.
            let fields: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(text).unwrap_or_default();
            let mut read = ShowSettings::default();
            for (name, value) in fields {
                let one = serde_json::Value::Object([(name, value)].into_iter().collect());
                if let Ok(field) = serde_json::from_value::<ShowSettings>(one) {
                    read = read.merged(&field);
                }
            }
            read
        })
    }

    /// These settings without the fair start's, which the show's draw keeps (`GET …/draw`).
    pub fn without_schedule(&self) -> ShowSettings {
        ShowSettings {
            opens_at: None,
            draw_beacon: None,
            draw_beacon_value: None,
            ..self.clone()
        }
    }

    /// These settings with `patch`'s fields laid over them: what a show has after a
    /// `PUT …/config`.
    pub fn merged(&self, patch: &ShowSettings) -> ShowSettings {
        let (mut all, patch) = (
            serde_json::to_value(self).unwrap_or_default(),
            serde_json::to_value(patch).unwrap_or_default(),
        );
        if let (Some(all), Some(patch)) = (all.as_object_mut(), patch.as_object()) {
            all.extend(patch.clone());
        }
        serde_json::from_value(all).unwrap_or_default()
    }
}

/// A rate change announced ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnnouncedRate {
    /// When the new rate takes over (ms since the Unix epoch).
    pub at_ms: u64,
    /// The rate from then on, a second.
    pub rate: u32,
}

/// What an operator sets about a show's opening; `None` leaves it as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// When the show opens by itself (ms since the epoch).
    pub opens_at_ms: Option<u64>,
    /// The public randomness the draw will take in, named in advance ("drand quicknet round
    /// 1234567").
    pub beacon: Option<String>,
    /// Its value, given once the pre-queue has closed.
    pub beacon_value: Option<String>,
}

/// A health URL an operator may name: `http://host[:port]/path`, at most [`MAX_HEALTH_URL`].
pub fn health_uri(url: &str) -> Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|e| format!("not a URL ({e})"))?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() || url.len() > MAX_HEALTH_URL {
        return Err(format!(
            "must be an http:// URL of at most {MAX_HEALTH_URL} characters"
        ));
    }
    Ok(uri)
}

/// A notify URL an operator may name: `http://` or `https://`, a host, at most
/// [`MAX_NOTIFY_URL`]. The operator's own service: a private address is allowed.
pub(crate) fn notify_uri(url: &str) -> Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|e| format!("not a URL ({e})"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https"))
        || uri.host().is_none()
        || url.len() > MAX_NOTIFY_URL
    {
        return Err(format!(
            "must be an http:// or https:// URL of at most {MAX_NOTIFY_URL} characters"
        ));
    }
    Ok(uri)
}

fn parse_ms(text: &str) -> Option<u64> {
    let at: jiff::Timestamp = text.parse().ok()?;
    u64::try_from(at.as_millisecond()).ok()
}

/// A time the operator sets (`field`) as ms since the epoch: RFC 3339, after `now_ms`,
/// within a year.
fn future_ms(field: &'static str, text: &str, now_ms: u64) -> Result<u64, SettingError> {
    let ms = parse_ms(text)
        .ok_or_else(|| refuse(field, "an RFC 3339 time, such as 2026-12-01T10:00:00Z"))?;
    if ms <= now_ms {
        return Err(refuse(field, "must be in the future"));
    }
    if ms > now_ms + MOST_AHEAD.as_millis() as u64 {
        return Err(refuse(field, "at most a year ahead"));
    }
    Ok(ms)
}

/// A schedule an operator may set: at most [`MAX_EVENTS`], each with its times in RFC 3339
/// (within a year ahead), ending after it starts, in order of their starts with none
/// overlapping the next, each setting only what an event may and that within its bounds.
fn check_events(events: &[ScheduledEvent], now_ms: u64) -> Result<(), SettingError> {
    let field = "events";
    if events.len() > MAX_EVENTS {
        return Err(refuse(field, format!("at most {MAX_EVENTS} events")));
    }
    let latest = now_ms + MOST_AHEAD.as_millis() as u64;
    let time = |i: usize, text: &str| {
        parse_ms(text).filter(|&ms| ms <= latest).ok_or_else(|| {
            refuse(
                field,
                format!(
                    "event {}: times are RFC 3339, such as 2026-12-01T10:00:00Z, at most \
                         a year ahead",
                    i + 1
                ),
            )
        })
    };
    let mut free_from = 0;
    for (i, e) in events.iter().enumerate() {
        let n = i + 1;
        printable(field, &e.name, MAX_EVENT_NAME).map_err(|_| {
            refuse(
                field,
                format!("event {n}: a name is 1 to {MAX_EVENT_NAME} printable ASCII characters"),
            )
        })?;
        let starts = time(i, &e.starts_at)?;
        if starts < free_from {
            return Err(refuse(
                field,
                format!(
                    "event {n}: starts before the one ahead of it ends (events go in order, none overlapping)"
                ),
            ));
        }
        free_from = starts;
        if let Some(ends) = &e.ends_at {
            let ends = time(i, ends)?;
            if ends <= starts {
                return Err(refuse(field, format!("event {n}: ends before it starts")));
            }
            free_from = ends;
        }
        if e.settings.for_an_event() != *e.settings.as_ref() {
            return Err(refuse(
                field,
                format!(
                    "event {n}: an event may set admitPerSecond, maxActiveBuyers, \
                     joinChallengeBits, maxQueueLength, presenceGraceSeconds, awayHoldSeconds, \
                     notifyAheadSeconds, lanes and codesOnly"
                ),
            ));
        }
        e.settings
            .check(now_ms)
            .map_err(|inner| refuse(field, format!("event {n}: {inner}")))?;
    }
    Ok(())
}

/// `value`, if sent, is 1 to `most` printable ASCII characters.
fn printable(field: &'static str, value: &Option<String>, most: usize) -> Result<(), SettingError> {
    match value {
        Some(v)
            if v.is_empty() || v.len() > most || !v.bytes().all(|b| (b' '..=b'~').contains(&b)) =>
        {
            Err(refuse(
                field,
                format!("1 to {most} printable ASCII characters"),
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    fn field_of(settings: &ShowSettings) -> Option<&'static str> {
        settings.check(NOW).err().map(|e| e.field)
    }

    #[test]
    fn each_field_is_checked_against_its_bounds() {
        let bad = [
            (json_settings(r#"{"admitPerSecond":0}"#), "admitPerSecond"),
            (
                json_settings(r#"{"admitPerSecond":10001}"#),
                "admitPerSecond",
            ),
            (
                json_settings(r#"{"maxActiveBuyers":36000001}"#),
                "maxActiveBuyers",
            ),
            (
                json_settings(r#"{"arrivalWindowSeconds":5}"#),
                "arrivalWindowSeconds",
            ),
            (
                json_settings(r#"{"checkoutHealthUrl":"ftp://x"}"#),
                "checkoutHealthUrl",
            ),
            (
                json_settings(r#"{"minAdmitPerSecond":0}"#),
                "minAdmitPerSecond",
            ),
            (
                json_settings(r#"{"opensAt":"2020-01-01T00:00:00Z"}"#),
                "opensAt",
            ),
            (json_settings(r#"{"drawBeacon":""}"#), "drawBeacon"),
            (json_settings(r#"{"rateChangeTo":5}"#), "rateChangeAt"),
            (
                json_settings(r#"{"joinChallengeBits":33}"#),
                "joinChallengeBits",
            ),
            (json_settings(r#"{"stock":100000001}"#), "stock"),
        ];
        for (settings, field) in bad {
            assert_eq!(field_of(&settings), Some(field), "{settings:?}");
        }
        let good = json_settings(
            r#"{"admitPerSecond":50,"maxActiveBuyers":0,"arrivalWindowSeconds":0,
                "checkoutHealthUrl":"","stock":0,"rateChangeAt":""}"#,
        );
        assert_eq!(good.check(NOW), Ok(()));
    }

    #[test]
    fn an_unknown_field_is_refused_by_name() {
        let e = serde_json::from_str::<ShowSettings>(r#"{"admitPerSec":5}"#).unwrap_err();
        assert!(e.to_string().contains("admitPerSec"), "{e}");
    }

    #[test]
    fn a_patch_lays_its_fields_over_what_a_show_has() {
        let had = json_settings(r#"{"admitPerSecond":50,"stock":100}"#);
        let patch = json_settings(r#"{"stock":0,"joinChallengeBits":8}"#);
        assert_eq!(
            had.merged(&patch),
            json_settings(r#"{"admitPerSecond":50,"stock":0,"joinChallengeBits":8}"#)
        );
        // Stored whole, answered whole: fields left out stay out.
        assert_eq!(
            serde_json::to_string(&had).unwrap(),
            r#"{"admitPerSecond":50,"stock":100}"#
        );
    }

    #[test]
    fn settings_kept_by_a_newer_build_are_read_as_far_as_known() {
        let kept = r#"{"admitPerSecond":50,"aSettingFromLater":true,"stock":7}"#;
        assert_eq!(
            ShowSettings::read(Some(kept)),
            json_settings(r#"{"admitPerSecond":50,"stock":7}"#)
        );
        assert_eq!(ShowSettings::read(None), ShowSettings::default());
    }

    #[test]
    fn a_rate_change_reads_as_sent_or_withdrawn() {
        let change = json_settings(r#"{"rateChangeAt":"2027-01-15T10:00:00Z","rateChangeTo":9}"#);
        let at = change.rate_change().unwrap().unwrap();
        assert_eq!((at.at_ms, at.rate), (1_800_007_200_000, 9));
        assert_eq!(
            json_settings(r#"{"rateChangeAt":""}"#).rate_change(),
            Some(None)
        );
        assert_eq!(ShowSettings::default().rate_change(), None);
    }

    #[test]
    fn the_settings_table_names_every_setting_and_no_other() {
        let schema =
            serde_json::to_value(<ShowSettings as utoipa::PartialSchema>::schema()).unwrap();
        let mut fields: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let table = include_str!("../../docs/settings.md");
        let mut rows: Vec<&str> = table
            .lines()
            .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
            .collect();
        fields.sort_unstable();
        rows.sort_unstable();
        assert_eq!(rows, fields, "docs/settings.md against ShowSettings");
    }

    #[test]
    fn a_schedule_reads_in_ms_with_only_what_an_event_may_set() {
        let sent = json_settings(
            r#"{"events":[
                {"name":"presale","startsAt":"2027-01-15T09:00:00Z","endsAt":"2027-01-15T10:00:00Z",
                 "settings":{"admitPerSecond":50}},
                {"startsAt":"2027-01-15T11:00:00Z","settings":{"maxActiveBuyers":9}}]}"#,
        );
        assert_eq!(sent.check(NOW), Ok(()));
        let times = sent.event_times().unwrap();
        assert_eq!(
            times
                .iter()
                .map(|t| (t.s, t.e, t.set.admit_per_second, t.set.max_active_buyers))
                .collect::<Vec<_>>(),
            [
                (1_800_003_600_000, Some(1_800_007_200_000), Some(50), None),
                (1_800_010_800_000, None, None, Some(9)),
            ]
        );
        // A stock in an event is refused by name, with the event's place.
        let stock = json_settings(
            r#"{"events":[{"startsAt":"2027-01-15T09:00:00Z","settings":{"stock":5}}]}"#,
        );
        let e = stock.check(NOW).unwrap_err();
        assert!(e.field == "events" && e.why.starts_with("event 1:"), "{e}");
        assert_eq!(
            json_settings(r#"{"events":[]}"#).event_times(),
            Some(vec![])
        );
    }

    fn json_settings(text: &str) -> ShowSettings {
        serde_json::from_str(text).unwrap()
    }
}
