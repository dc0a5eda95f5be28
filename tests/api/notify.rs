//! The your-turn call, sent for real: Web Push to a push service that verifies VAPID and
//! decrypts with independent libraries, the webhook to a receiver that verifies its token with
//! the JWKS, and the retries each answer earns.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;
use waiting_room::notify::{
    Call, CallEvent, Channel, KindCounts, Notifier, NotifySettings, check_subscription,
};
use waiting_room::pass::Keyring;

use crate::support::notify::StandIn;

/// A sender as a server would make one, with retries a few milliseconds apart.
struct Sender {
    notifier: Notifier,
    keys: Arc<Keyring>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

impl Sender {
    fn start(attempts: u32) -> Sender {
        let keys: Arc<Keyring> = Arc::new(
            "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=,k0:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
                .parse()
                .unwrap(),
        );
        let settings = NotifySettings {
            subject: "mailto:ops@tickets.invalid".into(),
            attempts,
            first_backoff: Duration::from_millis(10),
            ..NotifySettings::default()
        };
        let tasks = TaskTracker::new();
        let shutdown = CancellationToken::new();
        let notifier = Notifier::new(keys.clone(), settings, &tasks, shutdown.clone());
        Sender {
            notifier,
            keys,
            tasks,
            shutdown,
        }
    }

    /// The counts once `done` holds of them (polled; a bound only against a hang).
    async fn counts_when(&self, done: impl Fn(KindCounts, KindCounts) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let c = self.notifier.counts();
            if done(c.web_push, c.webhook) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "counts stuck at {c:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn call(event: CallEvent) -> Call {
    Call {
        show: "gig".parse().unwrap(),
        ticket: Uuid::new_v4(),
        event,
        position: 12,
        eta_seconds: Some(90),
    }
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_push_arrives_signed_and_decrypts_to_the_call() {
    let service = StandIn::push_service();
    let sender = Sender::start(5);
    // Loopback is allowed only by naming its origin exactly.
    let allow: Arc<[String]> = Arc::new([service.url.clone()]);
    let subscription_json = serde_json::to_vec(&service.hello["subscription"]).unwrap();
    let subscription = check_subscription(&subscription_json, &allow).unwrap();
    let the_call = call(CallEvent::Soon);

    assert!(sender.notifier.call(
        Channel::WebPush {
            subscription,
            push_services: allow
        },
        the_call.clone()
    ));
    let got = service.received_when(|r| !r.is_empty()).await;
    sender.counts_when(|push, _| push.sent == 1).await;

    let push = &got[0];
    assert_eq!(push.get("error"), None, "{push:#}");
    assert_eq!(
        push["payload"],
        json!({"showId": "gig", "ticketId": the_call.ticket.to_string(), "event": "soon",
               "position": 12, "etaSeconds": 90})
    );
    assert_eq!(push["jwtHeader"]["alg"], "ES256");
    let claims = &push["claims"];
    assert_eq!(claims["aud"], service.url.as_str());
    assert_eq!(claims["sub"], "mailto:ops@tickets.invalid");
    let exp = claims["exp"].as_u64().unwrap();
    let now = now_s();
    assert!(
        exp > now + 11 * 3600 && exp <= now + 12 * 3600 + 5,
        "exp {exp}, now {now}"
    );
    assert_eq!(push["k"], sender.notifier.vapid_public_key());
    let headers = &push["headers"];
    assert_eq!(headers["content-encoding"], "aes128gcm");
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["urgency"], "high");
    assert_eq!(headers["ttl"], "600");
}

#[tokio::test]
async fn a_push_off_the_shows_allow_list_is_never_sent() {
    let service = StandIn::push_service();
    let sender = Sender::start(5);
    let allow: Arc<[String]> = Arc::new([service.url.clone()]);
    let subscription_json = serde_json::to_vec(&service.hello["subscription"]).unwrap();
    let subscription = check_subscription(&subscription_json, &allow).unwrap();
    // The show's allow-list changed since the fan subscribed: back to the public services.
    sender.notifier.call(
        Channel::WebPush {
            subscription,
            push_services: Arc::new([]),
        },
        call(CallEvent::Admitted),
    );
    sender.counts_when(|push, _| push.failed == 1).await;
    assert_eq!(service.received().await, Vec::<Value>::new());
}

/// The webhook's records at `path`, once `n` arrived, each verified by the receiver.
async fn hook_records(receiver: &StandIn, path: &str, n: usize) -> Vec<Value> {
    let got = receiver
        .received_when(|r| r.iter().filter(|r| r["path"] == path).count() >= n)
        .await;
    let mine: Vec<Value> = got.into_iter().filter(|r| r["path"] == path).collect();
    for record in &mine {
        assert_eq!(record.get("error"), None, "{record:#}");
    }
    mine
}

#[tokio::test]
async fn a_webhook_is_signed_with_the_pass_keys_and_tried_again_on_503() {
    let sender = Sender::start(5);
    let receiver = StandIn::webhook(&sender.keys.jwks());
    let url = format!("{}/flaky", receiver.url);
    let the_call = call(CallEvent::Admitted);

    sender
        .notifier
        .call(Channel::Webhook(url.clone()), the_call.clone());
    sender.counts_when(|_, hook| hook.sent == 1).await;

    let records = hook_records(&receiver, "/flaky", 3).await;
    assert_eq!(records.len(), 3, "503, 503, then 200");
    let body = json!({"showId": "gig", "ticketId": the_call.ticket.to_string(),
                      "event": "admitted", "position": 12, "etaSeconds": 90});
    for record in &records {
        assert_eq!(record["body"], body);
        assert_eq!(record["kid"], "k1", "signed with the signing key");
        let claims = &record["claims"];
        assert_eq!(claims["aud"], url.as_str());
        assert_eq!(claims["iss"], "waiting-room");
        for field in ["showId", "ticketId", "event", "position", "etaSeconds"] {
            assert_eq!(claims[field], body[field], "{field}");
        }
        let (iat, exp) = (
            claims["iat"].as_u64().unwrap(),
            claims["exp"].as_u64().unwrap(),
        );
        assert_eq!(exp - iat, 300);
    }
}

#[tokio::test]
async fn a_webhook_answering_429_is_tried_again_after_retry_after() {
    let sender = Sender::start(5);
    let receiver = StandIn::webhook(&sender.keys.jwks());
    sender.notifier.call(
        Channel::Webhook(format!("{}/limited", receiver.url)),
        call(CallEvent::Soon),
    );
    sender.counts_when(|_, hook| hook.sent == 1).await;
    assert_eq!(hook_records(&receiver, "/limited", 2).await.len(), 2);
}

#[tokio::test]
async fn a_webhook_answering_400_is_not_tried_again() {
    let sender = Sender::start(5);
    let receiver = StandIn::webhook(&sender.keys.jwks());
    sender.notifier.call(
        Channel::Webhook(format!("{}/bad", receiver.url)),
        call(CallEvent::Soon),
    );
    sender.counts_when(|_, hook| hook.failed == 1).await;
    // A later call's arrival shows nothing more of the first is on its way.
    sender.notifier.call(
        Channel::Webhook(format!("{}/ok", receiver.url)),
        call(CallEvent::Soon),
    );
    sender.counts_when(|_, hook| hook.sent == 1).await;
    assert_eq!(hook_records(&receiver, "/bad", 1).await.len(), 1);
}

#[tokio::test]
async fn a_webhook_that_keeps_failing_is_given_up_after_its_attempts() {
    let sender = Sender::start(3);
    let receiver = StandIn::webhook(&sender.keys.jwks());
    sender.notifier.call(
        Channel::Webhook(format!("{}/down", receiver.url)),
        call(CallEvent::Soon),
    );
    sender.counts_when(|_, hook| hook.failed == 1).await;
    assert_eq!(hook_records(&receiver, "/down", 3).await.len(), 3);
}

#[tokio::test]
async fn a_stopped_sender_drops_calls_and_counts_them() {
    let sender = Sender::start(5);
    sender.shutdown.cancel();
    sender.tasks.close();
    sender.tasks.wait().await;
    let queued = sender.notifier.call(
        Channel::Webhook("http://127.0.0.1:9/never".into()),
        call(CallEvent::Soon),
    );
    assert!(!queued);
    assert_eq!(sender.notifier.counts().webhook.dropped, 1);
}
