//! The "your turn" call: what sends it to a fan's browser (Web Push) or to the operator's own
//! SMS or e-mail service (a webhook). When to call, and who asked to be called, is decided
//! elsewhere; this module only sends, and never holds its caller up.
//!
//! # The API
//!
//! - [`Notifier::new`] builds the sender: a bounded queue and a task on the server's
//!   `TaskTracker` that sends what is queued, at most [`NotifySettings::in_flight`] calls at
//!   once, each with its own timeout, so one slow endpoint holds up no other. It stops when
//!   `shutdown` is cancelled (calls under way are abandoned and counted as dropped).
//! - [`Notifier::call`] queues one [`Call`] on one [`Channel`]: it never blocks and never
//!   awaits; `false` means the queue was full (counted as dropped).
//! - [`Notifier::vapid_public_key`] is what `GET /.well-known/vapid` answers and a page hands
//!   `pushManager.subscribe` as `applicationServerKey`.
//! - [`Notifier::counts`]: sent, failed and dropped calls per channel kind.
//! - [`check_subscription`] reads a fan's `PushSubscription.toJSON()` at subscribe time;
//!   [`check_push_services`] checks a show's allow-list setting, [`check_webhook_url`] its
//!   `notifyUrl`. Each [`Refusal`]'s message is fit for a 400's body.
//!
//! # Web Push
//!
//! A `POST` to the subscription's endpoint (RFC 8030) with `TTL`, `Urgency: high`,
//! `Content-Encoding: aes128gcm`, `Content-Type: application/octet-stream`, and
//! `Authorization: vapid t=<JWT>, k=<key>` (RFC 8292: an ES256 JWT with `aud` the endpoint's
//! origin, `exp` 12 hours on, `sub` the operator's contact). The body is the call's JSON,
//! encrypted for the browser ([`webpush`]). The VAPID key follows the signing `PASS_KEYS`
//! secret ([`vapid`]). Where a push may go is the allow-list and address rule of [`guard`].
//!
//! # The webhook
//!
//! A `POST` to the show's `notifyUrl` (`http` or `https`, set by the operator, so any address
//! is allowed), with the call's JSON as its body and `Authorization: Bearer <JWT>`: the same
//! claims signed as passes are (EdDSA, `kid` naming a key of `GET /.well-known/jwks.json`),
//! with `iss` `waiting-room`, `aud` the `notifyUrl`, `iat`, and `exp` a few minutes on
//! ([`webhook`]). A receiver verifies the token with the JWKS, checks `aud` is its own URL,
//! and may take the claims rather than the body.
//!
//! # The call's JSON
//!
//! `{"showId": "…", "ticketId": "…", "event": "soon" | "admitted", "position": 3,
//! "etaSeconds": 42}` (`etaSeconds` is `null` when no ETA is known).
//!
//! # Retries
//!
//! Both channels try again on a connection error, a timeout, a 5xx or a 429 (after its
//! `Retry-After` in seconds, when it gives one), waiting 1 s, 2 s, 4 s… between attempts, up
//! to [`NotifySettings::attempts`]; any other answer is final. A push refused by the guard is
//! never tried again.
//!
//! - [`guard`]: the allow-list and the address check of Web Push endpoints.
//! - [`subscription`]: a fan's push subscription, checked.
//! - [`vapid`]: the server's VAPID key and token.
//! - [`webpush`]: the RFC 8291 encryption of a message.
//! - [`webhook`]: the webhook's signed token.
//! - [`send`]: the HTTP clients and the retry loop.
//! - [`notifier`]: the queue and the tasks that send.

mod guard;
mod notifier;
mod send;
mod subscription;
mod vapid;
mod webhook;
mod webpush;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;

use crate::model::ShowId;

pub use self::guard::DEFAULT_PUSH_SERVICES;
pub use self::notifier::Notifier;
pub use self::subscription::{
    MAX_ENDPOINT, MAX_SUBSCRIPTION_JSON, Subscription, check_push_services, check_subscription,
};
pub use self::webhook::check_webhook_url;

/// The channel a fan asks to be called by through the show's `notifyUrl`, as it is kept
/// beside push subscriptions.
pub const WEBHOOK_CHANNEL: &str = r#"{"webhook":true}"#;

/// What a call tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallEvent {
    /// The fan's turn is near (`"soon"`).
    Soon,
    /// The fan is admitted and may buy now (`"admitted"`).
    Admitted,
}

/// One call to one fan: its JSON is the Web Push payload and the webhook's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Call {
    /// The show (`showId`).
    #[serde(rename = "showId")]
    pub show: ShowId,
    /// The fan's ticket (`ticketId`).
    #[serde(rename = "ticketId")]
    pub ticket: Uuid,
    /// What is told (`event`).
    pub event: CallEvent,
    /// How many wait ahead, plus one (`position`).
    pub position: u64,
    /// The wait the fan's ETA says, in seconds, if one is known (`etaSeconds`).
    #[serde(rename = "etaSeconds")]
    pub eta_seconds: Option<u64>,
}

/// Where a call goes.
#[derive(Clone, Debug)]
pub enum Channel {
    /// The fan's browser, through its push service.
    WebPush {
        /// The fan's subscription, as [`check_subscription`] read it.
        subscription: Subscription,
        /// The show's allow-list (`pushServices`), checked again at send time; empty stands
        /// for [`DEFAULT_PUSH_SERVICES`].
        push_services: Arc<[String]>,
    },
    /// The operator's webhook: the show's `notifyUrl`.
    Webhook(String),
}

/// What the sender is set with.
#[derive(Clone, Debug)]
pub struct NotifySettings {
    /// The VAPID `sub` claim: how a push service reaches the operator (`mailto:` or
    /// `https:`).
    pub subject: String,
    /// How long a push service keeps an undelivered push (its `TTL` header).
    pub push_ttl: Duration,
    /// How long one attempt may take, connecting included.
    pub timeout: Duration,
    /// Attempts per call, the first included.
    pub attempts: u32,
    /// The wait before the second attempt; each later one waits twice the one before.
    pub first_backoff: Duration,
    /// The longest wait between two attempts, whatever `Retry-After` asks.
    pub max_backoff: Duration,
    /// Calls queued and not yet being sent, at most; past it a call is dropped.
    pub queue: usize,
    /// Calls being sent at once, at most.
    pub in_flight: usize,
}

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings {
            subject: "mailto:operator@waiting-room.invalid".into(),
            push_ttl: Duration::from_secs(600),
            timeout: Duration::from_secs(10),
            attempts: 5,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            queue: 10_000,
            in_flight: 64,
        }
    }
}

/// What became of the calls of one channel kind since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// Accepted by the push service or the webhook (a 2xx).
    pub sent: u64,
    /// Given up on: a final refusal, or every attempt failed.
    pub failed: u64,
    /// Never sent: the queue was full, or the server stopped first.
    pub dropped: u64,
}

/// What became of the calls since start, per channel kind: for metrics and the console.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotifyCounts {
    /// Web Push calls.
    pub web_push: KindCounts,
    /// Webhook calls.
    pub webhook: KindCounts,
}

/// Why a subscription, an allow-list or a URL was refused; the message says what to fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The subscription's JSON is over [`MAX_SUBSCRIPTION_JSON`] bytes.
    #[error("the subscription is longer than {MAX_SUBSCRIPTION_JSON} bytes")]
    TooLong,
    /// Not the JSON of `PushSubscription.toJSON()`; what the parser said.
    #[error(
        "the subscription is not PushSubscription JSON \
         ({{\"endpoint\", \"keys\": {{\"p256dh\", \"auth\"}}}}): {0}"
    )]
    NotJson(String),
    /// The endpoint is over [`MAX_ENDPOINT`] bytes.
    #[error("the subscription's endpoint is longer than {MAX_ENDPOINT} bytes")]
    EndpointTooLong,
    /// The URL is not an absolute `http(s)` URL without user info.
    #[error("the URL is not an absolute http(s) URL without user info")]
    EndpointNotUrl,
    /// A push service named by host must be reached over `https`.
    #[error("the push service must be reached over https")]
    NotHttps,
    /// The endpoint's host (and port) is not on the show's push-service allow-list.
    #[error("the push service {0} is not on this show's allow-list (pushServices)")]
    HostNotAllowed(String),
    /// `p256dh` is not base64url of an uncompressed P-256 point (65 bytes, on the curve).
    #[error("keys.p256dh must be base64url of an uncompressed P-256 public key (65 bytes)")]
    BadP256dh,
    /// `auth` is not base64url of 16 bytes.
    #[error("keys.auth must be base64url of 16 bytes")]
    BadAuth,
    /// An allow-list entry (its first 64 characters) is neither a host name, `*.` and a
    /// name, nor an origin with an IP address.
    #[error(
        "pushServices entry {0:?}: expected a host name, *.name, or an origin with an IP \
         address (http://127.0.0.1:8123)"
    )]
    BadPushService(String),
}
