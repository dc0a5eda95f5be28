//! Pace that follows the checkout: while a show names a health URL for the system behind the
//! gate, the admitter asks it once a tick and sets the rate in force between a floor and the
//! operator's rate. An error, a timeout or a slow answer halves the rate (the checkout
//! struggles: let fewer in, now); a healthy answer raises it by a tenth of the configured rate
//! (recover slowly, so a checkout that just came back is not flooded). Every change is
//! published, so every waiting fan is pushed a new ETA, and the console charts it.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Request, StatusCode, Uri, header};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::model::ShowId;
use crate::store::{Result, ThrottleControl, Throttling};

/// An answer slower than this counts as a struggling checkout.
pub(crate) const SLOW_CHECKOUT: Duration = Duration::from_millis(500);

/// How long a health check may take in all.
pub(crate) const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

pub(crate) use crate::model::health_uri;

/// Whether the checkout at `url` answers 2xx within [`SLOW_CHECKOUT`].
pub(crate) async fn healthy(url: &str) -> bool {
    let Ok(uri) = health_uri(url) else {
        return false;
    };
    let started = tokio::time::Instant::now();
    match tokio::time::timeout(CHECK_TIMEOUT, get(&uri)).await {
        Ok(Ok(status)) => status.is_success() && started.elapsed() <= SLOW_CHECKOUT,
        _ => false,
    }
}

async fn get(uri: &Uri) -> anyhow::Result<StatusCode> {
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().unwrap_or(80);
    let stream = TcpStream::connect((host, port)).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = Request::get(path)
        .header(header::HOST, uri.authority().map_or(host, |a| a.as_str()))
        .body(axum::body::Body::empty())?;
    // The connection is driven beside the request, inside this call: no task outlives it.
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        answer = sender.send_request(request) => Ok(answer?.status()),
        ended = &mut connection => {
            ended?;
            anyhow::bail!("the checkout closed the connection before answering")
        }
    }
}

/// The rate in force after one check: halved (not below the floor) when the checkout
/// struggles, else a tenth of the configured rate higher (not above it).
pub(crate) fn next_rate(control: &ThrottleControl, healthy: bool) -> u32 {
    let floor = control.lowest.clamp(1, control.configured.max(1));
    if healthy {
        let step = (control.configured / 10).max(1);
        control.current.saturating_add(step).min(control.configured)
    } else {
        (control.current / 2).max(floor)
    }
}

/// One tick's checks: every open show that follows a checkout asks it, all at once, each
/// within [`CHECK_TIMEOUT`]. Run beside the tick by the admitter.
pub(crate) async fn follow_checkouts(
    store: Arc<impl Throttling + ?Sized + 'static>,
    shows: Vec<ShowId>,
) {
    let checks = shows.iter().map(|show| {
        let store = store.as_ref();
        async move {
            if let Err(e) = follow_checkout(store, show).await {
                tracing::warn!(%show, error = %e, "could not follow the checkout");
            }
        }
    });
    futures::future::join_all(checks).await;
}

/// One check of `show`: sets the new rate in force if it follows a checkout.
pub(crate) async fn follow_checkout(
    store: &(impl Throttling + ?Sized),
    show: &ShowId,
) -> Result<()> {
    let control = store.throttle_control(show).await?;
    let Some(url) = &control.health_url else {
        return Ok(());
    };
    let healthy = healthy(url).await;
    let rate = next_rate(&control, healthy);
    if store.set_throttled(show, rate, url).await? {
        tracing::info!(%show, rate, healthy, "the pace follows the checkout");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(current: u32) -> ThrottleControl {
        ThrottleControl {
            health_url: Some("http://127.0.0.1:1/health".into()),
            lowest: 5,
            configured: 100,
            current,
        }
    }

    #[test]
    fn struggling_halves_down_to_the_floor_and_health_climbs_back_slowly() {
        assert_eq!(next_rate(&control(100), false), 50);
        assert_eq!(next_rate(&control(8), false), 5);
        assert_eq!(next_rate(&control(5), false), 5);
        assert_eq!(next_rate(&control(50), true), 60);
        assert_eq!(next_rate(&control(95), true), 100);
        assert_eq!(next_rate(&control(100), true), 100);
    }

    #[test]
    fn only_plain_http_urls_are_taken() {
        assert!(health_uri("http://checkout:8080/health").is_ok());
        for bad in [
            "https://x/health",
            "ftp://x",
            "not a url",
            "/health",
            "http://",
        ] {
            assert!(health_uri(bad).is_err(), "{bad}");
        }
    }
}
