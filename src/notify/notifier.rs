//! The sender: a bounded queue of calls, and the tasks that send them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use hyper::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::guard::Allowed;
use super::send::{self, Attempt, HookClient, PushClient};
use super::vapid::Vapid;
use super::{Call, Channel, KindCounts, NotifyCounts, NotifySettings, webhook, webpush};
use crate::clock::wall_ms;
use crate::pass::Keyring;

/// Sends calls (see the [module docs](super)). Cloning it is cheap: every clone feeds the one
/// queue.
#[derive(Clone)]
pub struct Notifier {
    queue: mpsc::Sender<Job>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("vapid", &self.shared.vapid.public_key())
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

/// One queued call.
struct Job {
    channel: Channel,
    call: Call,
}

/// What the sending tasks share.
struct Shared {
    keys: Arc<Keyring>,
    vapid: Vapid,
    settings: NotifySettings,
    push: PushClient,
    hook: HookClient,
    web_push: Counters,
    webhook: Counters,
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
}

impl Counters {
    fn read(&self) -> KindCounts {
        KindCounts {
            sent: self.sent.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

impl Notifier {
    /// A sender signing with `keys` (the VAPID key is derived from the key signing now, once;
    /// webhook tokens are signed with the key signing when each is sent), its queue drained by
    /// a task on `tasks` until `shutdown`. Call it within a tokio runtime.
    pub fn new(
        keys: Arc<Keyring>,
        settings: NotifySettings,
        tasks: &TaskTracker,
        shutdown: CancellationToken,
    ) -> Notifier {
        let (queue, jobs) = mpsc::channel(settings.queue.max(1));
        let shared = Arc::new(Shared {
            vapid: Vapid::derive(&keys.signing()),
            keys,
            settings,
            push: send::push_client(),
            hook: send::hook_client(),
            web_push: Counters::default(),
            webhook: Counters::default(),
        });
        tasks.spawn(dispatch(jobs, shared.clone(), tasks.clone(), shutdown));
        Notifier { queue, shared }
    }

    /// Queues `call` on `channel`: never blocks, never awaits. `false` when the queue is full
    /// or the sender stopped; the call is then counted as dropped.
    pub fn call(&self, channel: Channel, call: Call) -> bool {
        let counters = self.shared.counters(&channel);
        match self.queue.try_send(Job { channel, call }) {
            Ok(()) => true,
            Err(_) => {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// The VAPID public key: base64url (no padding) of the uncompressed P-256 point.
    pub fn vapid_public_key(&self) -> &str {
        self.shared.vapid.public_key()
    }

    /// What became of the calls since start.
    pub fn counts(&self) -> NotifyCounts {
        NotifyCounts {
            web_push: self.shared.web_push.read(),
            webhook: self.shared.webhook.read(),
        }
    }
}

impl Shared {
    fn counters(&self, channel: &Channel) -> &Counters {
        match channel {
            Channel::WebPush { .. } => &self.web_push,
            Channel::Webhook(_) => &self.webhook,
        }
    }
}

/// Takes the queued calls one by one and sends each on a task of its own, at most
/// `in_flight` at once; on `shutdown`, counts what is left as dropped.
async fn dispatch(
    mut jobs: mpsc::Receiver<Job>,
    shared: Arc<Shared>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
) {
    let places = Arc::new(Semaphore::new(shared.settings.in_flight.max(1)));
    loop {
        let job = tokio::select! {
            () = shutdown.cancelled() => break,
            job = jobs.recv() => match job { Some(job) => job, None => break },
        };
        let place = tokio::select! {
            () = shutdown.cancelled() => {
                shared.counters(&job.channel).dropped.fetch_add(1, Ordering::Relaxed);
                break;
            }
            place = places.clone().acquire_owned() => place.expect("the semaphore is never closed"),
        };
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            let counters = shared.counters(&job.channel);
            tokio::select! {
                () = shutdown.cancelled() => {
                    counters.dropped.fetch_add(1, Ordering::Relaxed);
                }
                result = deliver(&shared, &job) => {
                    match result {
                        Ok(()) => counters.sent.fetch_add(1, Ordering::Relaxed),
                        Err(_) => counters.failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            }
            drop(place);
        });
    }
    jobs.close();
    while let Ok(job) = jobs.try_recv() {
        shared
            .counters(&job.channel)
            .dropped
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends one call, with its retries; logs how it ended.
async fn deliver(shared: &Shared, job: &Job) -> Result<(), String> {
    let result = match &job.channel {
        Channel::WebPush {
            subscription,
            push_services,
        } => web_push(shared, subscription, push_services, &job.call).await,
        Channel::Webhook(url) => hook(shared, url, &job.call).await,
    };
    let (kind, to) = match &job.channel {
        Channel::WebPush { subscription, .. } => ("web push", format!("{subscription:?}")),
        Channel::Webhook(url) => ("webhook", url.clone()),
    };
    match &result {
        Ok(()) => tracing::debug!(
            kind,
            to,
            show = %job.call.show,
            ticket = %job.call.ticket,
            "notify: sent"
        ),
        Err(why) => tracing::warn!(
            kind,
            to,
            show = %job.call.show,
            ticket = %job.call.ticket,
            why,
            "notify: not sent"
        ),
    }
    result
}

/// One Web Push call: the allow-list again (a show's may have changed since the fan
/// subscribed), then the encrypted message, with retries.
async fn web_push(
    shared: &Shared,
    subscription: &super::Subscription,
    push_services: &[String],
    call: &Call,
) -> Result<(), String> {
    let target = Allowed::parse(push_services)
        .and_then(|allowed| allowed.check(subscription.endpoint()))
        .map_err(|refusal| refusal.to_string())?;
    let json = serde_json::to_vec(call).expect("a call always serialises");
    let body = webpush::encrypt(subscription.public_key(), subscription.auth(), &json)
        .ok_or("the call is longer than one record")?;
    let body = Bytes::from(body);
    let authority = target.uri.authority().expect("checked").clone();
    let scheme = target.uri.scheme_str().unwrap_or("https");
    let default_port = if scheme == "https" { 443 } else { 80 };
    let audience = match authority.port_u16() {
        Some(port) if port != default_port => format!("{scheme}://{}:{port}", authority.host()),
        _ => format!("{scheme}://{}", authority.host()),
    }
    .to_ascii_lowercase();
    let vapid = shared
        .vapid
        .authorization(&audience, &shared.settings.subject, wall_ms() / 1000);
    let ttl = shared.settings.push_ttl.as_secs().to_string();
    send::with_retries(&shared.settings, || {
        let request = Request::post(target.uri.clone())
            .header("ttl", ttl.as_str())
            .header("urgency", "high")
            .header(CONTENT_ENCODING, "aes128gcm")
            .header(CONTENT_TYPE, "application/octet-stream")
            .header(AUTHORIZATION, vapid.as_str())
            .body(Full::new(body.clone()));
        async move {
            match request {
                Ok(request) => send::attempt(&shared.push, request).await,
                Err(e) => Attempt::Final(format!("no request: {e}")),
            }
        }
    })
    .await
}

/// One webhook call, with retries; each attempt signs a token of its own, so a late retry
/// still carries a fresh one.
async fn hook(shared: &Shared, url: &str, call: &Call) -> Result<(), String> {
    webhook::check_webhook_url(url).map_err(|refusal| refusal.to_string())?;
    let uri: hyper::Uri = url.parse().map_err(|_| "the notifyUrl is not a URL")?;
    let json = Bytes::from(serde_json::to_vec(call).expect("a call always serialises"));
    send::with_retries(&shared.settings, || {
        let token = webhook::authorization(&shared.keys, url, call, wall_ms() / 1000);
        let request = Request::post(uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(AUTHORIZATION, token)
            .body(Full::new(json.clone()));
        async move {
            match request {
                Ok(request) => send::attempt(&shared.hook, request).await,
                Err(e) => Attempt::Final(format!("no request: {e}")),
            }
        }
    })
    .await
}
