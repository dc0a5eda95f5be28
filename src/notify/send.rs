//! The HTTP side of a call: the two clients (one for push services, whose connections go only
//! where [`guard`](super::guard) allows, one for the operator's webhook), one attempt, and the
//! retry loop around it.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, RETRY_AFTER};
use hyper::{Request, StatusCode};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::NotifySettings;
use super::guard::{CheckedResolver, refused};

/// How long a connection may take to open, within an attempt's timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of an answer's body read (so that its connection can be used again); the rest is
/// dropped with the connection.
const MAX_ANSWER: usize = 8 * 1024;

/// A pooled HTTP/1 client, over TLS for `https` URLs.
pub(crate) type HttpsClient<R> = Client<HttpsConnector<HttpConnector<R>>, Full<Bytes>>;

/// A resolver the HTTP connector can take: the system's, or [`CheckedResolver`].
pub(crate) trait Resolve:
    tower::Service<
        hyper_util::client::legacy::connect::dns::Name,
        Response: Iterator<Item = std::net::SocketAddr>,
        Error: Into<Box<dyn std::error::Error + Send + Sync>>,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<R> Resolve for R where
    R: tower::Service<
            hyper_util::client::legacy::connect::dns::Name,
            Response: Iterator<Item = std::net::SocketAddr>,
            Error: Into<Box<dyn std::error::Error + Send + Sync>>,
            Future: Send,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// The client of push services: names are resolved by [`CheckedResolver`].
pub(crate) type PushClient = HttpsClient<CheckedResolver>;

/// The client of the operator's webhook: any address.
pub(crate) type HookClient = HttpsClient<hyper_util::client::legacy::connect::dns::GaiResolver>;

/// A client whose connections open with `http`: rustls with the Mozilla roots for `https`,
/// plain TCP for `http` (which callers allow only where the rules do).
fn client<R: Resolve>(mut http: HttpConnector<R>) -> HttpsClient<R> {
    http.enforce_http(false);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
    http.set_nodelay(true);
    let https = HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new()).build(https)
}

/// The client of push services.
pub(crate) fn push_client() -> PushClient {
    client(HttpConnector::new_with_resolver(CheckedResolver))
}

/// The client of the operator's webhook.
pub(crate) fn hook_client() -> HookClient {
    client(HttpConnector::new())
}

/// What one attempt came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// A 2xx.
    Sent,
    /// Worth another try (a connection error, a timeout, a 5xx, a 429), after the wait the
    /// answer asked for, if any.
    Again(Option<Duration>, String),
    /// Final: another answer, or the guard's refusal.
    Final(String),
}

/// Sends `request` once with `client`, reading at most [`MAX_ANSWER`] of the answer.
pub(crate) async fn attempt<R: Resolve>(
    client: &HttpsClient<R>,
    request: Request<Full<Bytes>>,
) -> Attempt {
    let answer = match client.request(request).await {
        Ok(answer) => answer,
        Err(e) => {
            if let Some(why) = refused(&e) {
                return Attempt::Final(why);
            }
            return Attempt::Again(None, chain(&e));
        }
    };
    let status = answer.status();
    let retry_after = retry_after(answer.headers());
    // Read (a little of) the body, so the connection goes back to the pool.
    let _ = Limited::new(answer.into_body(), MAX_ANSWER).collect().await;
    classify(status, retry_after)
}

/// What an answer's status means for the call.
fn classify(status: StatusCode, retry_after: Option<Duration>) -> Attempt {
    if status.is_success() {
        Attempt::Sent
    } else if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        Attempt::Again(retry_after, format!("answered {status}"))
    } else {
        Attempt::Final(format!("answered {status}"))
    }
}

/// `Retry-After` in seconds (its HTTP-date form is not read: the backoff stands in).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    value.parse::<u64>().ok().map(Duration::from_secs)
}

/// An error and its causes, on one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        text.push_str(": ");
        text.push_str(&e.to_string());
        next = e.source();
    }
    text
}

/// Makes the attempts `once` makes until one is final or [`NotifySettings::attempts`] are
/// spent, each within [`NotifySettings::timeout`], waiting between them as the module docs
/// say. `Ok` when one was sent; `Err` says why the last one failed.
pub(crate) async fn with_retries<F, Fut>(
    settings: &NotifySettings,
    mut once: F,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt>,
{
    let mut backoff = settings.first_backoff;
    let attempts = settings.attempts.max(1);
    for n in 1..=attempts {
        let outcome = tokio::time::timeout(settings.timeout, once())
            .await
            .unwrap_or_else(|_| Attempt::Again(None, "timed out".into()));
        match outcome {
            Attempt::Sent => return Ok(()),
            Attempt::Final(why) => return Err(why),
            Attempt::Again(_, why) if n == attempts => {
                return Err(format!("{why} (after {attempts} attempts)"));
            }
            Attempt::Again(asked, why) => {
                let wait = asked.unwrap_or(backoff).min(settings.max_backoff);
                tracing::debug!(attempt = n, ?wait, %why, "notify: trying again");
                tokio::time::sleep(wait).await;
                backoff = backoff.saturating_mul(2);
            }
        }
    }
    unreachable!("the last attempt returns")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tokio::time::Instant;

    use super::*;

    fn settings() -> NotifySettings {
        NotifySettings {
            attempts: 5,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
            ..NotifySettings::default()
        }
    }

    /// Runs `with_retries` over the outcomes given, in order; answers the result, how many
    /// attempts were made, and the (paused) time it took.
    async fn run(outcomes: Vec<Attempt>) -> (Result<(), String>, usize, Duration) {
        let left = Mutex::new(outcomes.into_iter());
        let made = Mutex::new(0);
        let start = Instant::now();
        let result = with_retries(&settings(), || {
            *made.lock().unwrap() += 1;
            let next = left.lock().unwrap().next().expect("an outcome per attempt");
            async move { next }
        })
        .await;
        let made = *made.lock().unwrap();
        (result, made, start.elapsed())
    }

    fn again() -> Attempt {
        Attempt::Again(None, "answered 503".into())
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_tried_again_with_doubling_waits() {
        let (result, made, took) = run(vec![again(), again(), Attempt::Sent]).await;
        assert_eq!((result, made), (Ok(()), 3));
        assert_eq!(took, Duration::from_secs(1 + 2));

        let (result, made, took) = run((0..5).map(|_| again()).collect()).await;
        assert_eq!(made, 5);
        assert!(result.unwrap_err().contains("after 5 attempts"));
        assert_eq!(took, Duration::from_secs(1 + 2 + 4 + 8));
    }

    #[tokio::test(start_paused = true)]
    async fn a_final_answer_is_not_tried_again() {
        let (result, made, took) = run(vec![Attempt::Final("answered 400".into())]).await;
        assert_eq!(
            (result, made, took),
            (Err("answered 400".into()), 1, Duration::ZERO)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured_within_the_longest_wait() {
        let asked = |s| Attempt::Again(Some(Duration::from_secs(s)), "answered 429".into());
        let (result, _, took) = run(vec![asked(7), asked(600), Attempt::Sent]).await;
        assert_eq!(result, Ok(()));
        assert_eq!(took, Duration::from_secs(7 + 30));
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_that_hangs_times_out_and_is_tried_again() {
        let made = Mutex::new(0);
        let start = Instant::now();
        let result = with_retries(&settings(), || {
            let n = {
                let mut m = made.lock().unwrap();
                *m += 1;
                *m
            };
            async move {
                if n == 1 {
                    std::future::pending::<()>().await;
                }
                Attempt::Sent
            }
        })
        .await;
        assert_eq!(result, Ok(()));
        assert_eq!(start.elapsed(), Duration::from_secs(10 + 1));
    }

    #[test]
    fn answers_are_classified() {
        let s = |n| StatusCode::from_u16(n).unwrap();
        assert_eq!(classify(s(201), None), Attempt::Sent);
        assert!(matches!(classify(s(500), None), Attempt::Again(None, _)));
        assert!(matches!(
            classify(s(429), Some(Duration::from_secs(3))),
            Attempt::Again(Some(_), _)
        ));
        for n in [400, 401, 403, 404, 410, 413, 301] {
            assert!(matches!(classify(s(n), None), Attempt::Final(_)), "{n}");
        }
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, "12".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(12)));
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}
