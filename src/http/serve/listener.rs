//! The accept loop, in place of `axum::serve`, for what that one cannot be told:
//!
//! - A request head must arrive within `HEADER_TIMEOUT`, and a kept-alive connection may sit
//!   idle no longer (hyper 1.x starts the same timer again when a connection goes idle).
//!   Without it, a client that sends half a head holds a connection forever.
//! - At most `MAX_CONNECTIONS` connections are served. `RESERVE_CONNECTIONS` more serve only
//!   health checks, metrics and the operator, so the people running an on-sale still get in
//!   while fans fill the server; beyond those, a connection is answered 503 and closed.
//! - One client address (IPv6: its /64) holds at most `MAX_CONNECTIONS_PER_CLIENT` of them
//!   (half of `MAX_CONNECTIONS` unless set), so a single client cannot fill the server.
//! - A request's body must arrive in full within `HEADER_TIMEOUT` of its head: a client
//!   that announces a body and trickles it (or never sends it) is answered 408 and cut.
//! - A connection holds its place for as long as its socket lives, WebSocket included: the
//!   place travels with the socket through hyper's upgrade, and out of hyper with a held SSE
//!   stream (`handover.rs`).
//! - On shutdown no connection is accepted, every connection is asked to finish (streams end
//!   by themselves: they watch the same token), and after [`DRAIN_GRACE`] the rest are cut.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use super::DRAIN_GRACE;
use super::handover::{Handoff, Placed};
pub(crate) use super::places::ConnectionLimits;
use super::places::{Place, Places};
use super::timer::LazyTimer;
use crate::error::AppError;
use crate::http::credentials::presents_token;
use crate::http::{AppState, OwnPaths, service};

/// What a client turned away is told to wait, in seconds.
const BUSY_RETRY_SECONDS: &str = "5";

/// What a client turned away reads.
const BUSY_MESSAGE: &str =
    "the waiting room is at its connection limit; try again in a few seconds";

/// How often turned-away connections are reported in the log, at most.
const OVERLOAD_REPORT_EVERY: Duration = Duration::from_secs(60);

/// Serves `state`'s router on `listener` until `state.life.shutdown` is cancelled, then drains:
/// on the caller's runtime when `limits.threads` is 0, else on that many threads of their
/// own, each a single-threaded runtime accepting from the same socket (as nginx's workers):
/// a connection and everything it waits for (the origin's answer, in gateway mode) stay on
/// one thread, where the work-stealing runtime hands them between threads at every step
/// (measured: BENCHMARKS.md, "Gateway mode").
pub(crate) async fn serve(listener: TcpListener, state: AppState, limits: ConnectionLimits) {
    let places = Arc::new(Places::new(&limits));
    if limits.threads == 0 {
        return accept_loop(listener, places, state, limits).await;
    }
    let std_listener = match listener.into_std() {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot hand the listening socket to the serving threads");
            return;
        }
    };
    let mut finished = Vec::new();
    for i in 0..limits.threads {
        let (done, finished_one) = tokio::sync::oneshot::channel::<()>();
        finished.push(finished_one);
        let listener = match std_listener.try_clone() {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "cannot share the listening socket with a serving thread");
                break;
            }
        };
        let (places, state, limits) = (places.clone(), state.clone(), limits.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("serve-{i}"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        tracing::error!(error = %e, "a serving thread has no runtime");
                        return;
                    }
                };
                runtime.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => accept_loop(listener, places, state, limits).await,
                        Err(e) => tracing::error!(error = %e, "a serving thread cannot listen"),
                    }
                });
                let _ = done.send(());
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start a serving thread");
        }
    }
    // Each ends once shutdown began and its connections drained (or it never started).
    for finished_one in finished {
        let _ = finished_one.await;
    }
}

/// Accepts and serves connections on one runtime until shutdown, then drains them.
async fn accept_loop(
    listener: TcpListener,
    places: Arc<Places>,
    state: AppState,
    limits: ConnectionLimits,
) {
    let stop = state.life.shutdown.clone();
    let operator_token = state.site.admin_token.clone();
    let (app, own) = service(state.clone());
    // Gateway mode: requests for the origin's paths skip the router; on a thread of its
    // own, through a pool of origin connections of that thread's.
    let client = (limits.threads > 0).then(crate::http::gateway::origin_client);
    let direct = own.map(|own| Arc::new(Direct { own, state, client }));
    let mut http = http1::Builder::new();
    http.timer(LazyTimer)
        .header_read_timeout(limits.header_timeout);
    let connections = TaskTracker::new();
    let mut overload = Overload::default();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e, &stop).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let Some(place) = places.admit(peer.ip()) else {
            overload.refused();
            turn_away(stream);
            continue;
        };
        if place.reserve {
            overload.reserved();
        }
        // Pushed events are small writes; Nagle would hold each back for an ACK.
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            http: http.clone(),
            app: app.clone(),
            direct: direct.clone(),
            operator_token: operator_token.clone(),
            peer,
            tasks: connections.clone(),
            body_timeout: limits.header_timeout,
            write_idle: limits.write_idle,
        };
        connections.spawn(connection.serve(stream, place, stop.clone()));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// One accepted connection and what serving it needs.
struct Connection {
    http: http1::Builder,
    app: Router,
    direct: Option<Arc<Direct>>,
    operator_token: Arc<str>,
    peer: SocketAddr,
    /// Where a handed-over stream's task is tracked, so that shutdown waits for it too.
    tasks: TaskTracker,
    /// How long a request's body may take after its head.
    body_timeout: Duration,
    /// How long a client may take nothing of what it is sent.
    write_idle: Duration,
}

impl Connection {
    async fn serve(self, stream: TcpStream, place: Place, stop: CancellationToken) {
        let Connection {
            http,
            app,
            direct,
            operator_token,
            peer,
            tasks,
            body_timeout,
            write_idle,
        } = self;
        let handoff = Arc::new(Handoff::default());
        // What every request of the connection needs, behind one counter: a request clones
        // it once.
        let shared = Arc::new(Serving {
            app,
            direct,
            operator_token,
            peer,
            tasks,
            stop: stop.clone(),
            handoff: handoff.clone(),
            reserve: place.reserve,
            body_timeout,
        });
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let shared = shared.clone();
            async move { Ok::<_, std::convert::Infallible>(shared.serve(req).await) }
        });
        let io = TokioIo::new(Placed::new(stream, place, handoff, write_idle));
        let mut conn = pin!(http.serve_connection(io, service).with_upgrades());
        let result = tokio::select! {
            result = conn.as_mut() => result,
            () = stop.cancelled() => {
                // An idle connection closes now, a busy one after its response (a stream
                // ends on the same token); a client that sends nothing more is cut.
                conn.as_mut().graceful_shutdown();
                match tokio::time::timeout(DRAIN_GRACE, conn).await {
                    Ok(result) => result,
                    Err(_) => {
                        tracing::debug!(%peer, "connection cut after the drain grace");
                        return;
                    }
                }
            }
        };
        if let Err(e) = result {
            // Timeouts and clients that hang up are the everyday life of a public server.
            tracing::debug!(%peer, error = %e, timeout = e.is_timeout(), "connection ended");
        }
    }
}

/// What serving one connection's requests needs.
struct Serving {
    app: Router,
    direct: Option<Arc<Direct>>,
    operator_token: Arc<str>,
    peer: SocketAddr,
    tasks: TaskTracker,
    stop: CancellationToken,
    handoff: Arc<Handoff>,
    /// A reserve place: only health, metrics and the operator are served.
    reserve: bool,
    body_timeout: Duration,
}

impl Serving {
    async fn serve(&self, req: Request<Incoming>) -> Response {
        if self.reserve && !reserve_serves(&req, &self.operator_token) {
            return busy();
        }
        // The whole body by the deadline, or the handler reads an error (408); a request
        // without a body needs no timer.
        let mut req = req.map(|body| {
            if hyper::body::Body::is_end_stream(&body) {
                axum::body::Body::new(body)
            } else {
                let deadline = Instant::now() + self.body_timeout;
                axum::body::Body::new(DeadlineBody::new(body, deadline))
            }
        });
        if let Some(direct) = self
            .direct
            .as_ref()
            .filter(|d| !d.own.serves(req.uri().path()))
        {
            return crate::http::gateway::forward(
                &direct.state,
                self.peer,
                req,
                direct.client.as_ref(),
            )
            .await;
        }
        // What `into_make_service_with_connect_info` would have added.
        req.extensions_mut().insert(ConnectInfo(self.peer));
        let (method, version) = (req.method().clone(), req.version());
        let response = match self.app.clone().oneshot(req).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        if Handoff::wanted(&method, version, &response) {
            return self.handoff.take(response, &self.tasks, &self.stop);
        }
        response
    }
}

/// Gateway mode's way past the router: the paths it serves, and the state the proxy needs.
struct Direct {
    own: OwnPaths,
    state: AppState,
    /// This thread's pool of origin connections, when it serves on a thread of its own.
    client: Option<crate::http::gateway::OriginClient>,
}

/// Whether a reserve connection serves `req`: liveness, readiness, metrics, the operator's
/// console page and its files, and anything bearing the operator's token. A fan's request
/// with a made-up bearer token is still a fan's request.
fn reserve_serves(req: &Request<Incoming>, operator_token: &str) -> bool {
    let path = req.uri().path();
    matches!(path, "/healthz" | "/readyz" | "/metrics" | "/admin")
        || path.starts_with("/static/")
        || presents_token(req.headers(), operator_token)
}

/// 503 for a request on a reserve connection that is not the operator's; the connection is
/// closed after it, so the place goes back to the reserve.
fn busy() -> Response {
    let mut response =
        AppError::Rejected(StatusCode::SERVICE_UNAVAILABLE, BUSY_MESSAGE.into()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from_static(BUSY_RETRY_SECONDS),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Beyond the reserve: a 503 written straight to the socket, if it takes it at once, and the
/// socket closed. Nothing is read and nothing is spawned: this must stay cheap under a flood.
fn turn_away(stream: TcpStream) {
    // The problem body every error has (crate::error::problem), spelled out: nothing is
    // built per connection here.
    let body = format!(
        r#"{{"status":503,"error":"Service Unavailable","message":"{BUSY_MESSAGE}","type":"about:blank","title":"Service Unavailable","detail":"{BUSY_MESSAGE}"}}"#
    );
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: {BUSY_RETRY_SECONDS}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

/// A failed accept: a client that left before we took it is nothing; anything else (out of
/// file descriptors, say) would fail again at once, so wait a second, as hyper 0.14 did.
async fn accept_failed(e: io::Error, stop: &CancellationToken) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed");
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
        () = stop.cancelled() => {}
    }
}

/// A request body that must end by a deadline: past it, reading fails (the handler answers
/// 408 and hyper closes the connection, whose body was never finished).
struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl DeadlineBody {
    fn new(inner: Incoming, deadline: Instant) -> Self {
        DeadlineBody {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

/// A request body that did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub(crate) struct BodyTimedOut;

impl BodyTimedOut {
    /// Whether `error` (or what caused it) is a body that came too late.
    pub(crate) fn caused(error: &(dyn std::error::Error + 'static)) -> bool {
        let mut at = Some(error);
        while let Some(e) = at {
            if e.is::<BodyTimedOut>() {
                return true;
            }
            at = e.source();
        }
        false
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = bytes::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyTimedOut.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Connections put on the reserve or turned away, reported at most once a minute: a flood
/// must not become a flood of log lines.
#[derive(Default)]
struct Overload {
    reserved: u64,
    refused: u64,
    reported: Option<Instant>,
}

impl Overload {
    fn reserved(&mut self) {
        self.reserved += 1;
        self.report();
    }

    fn refused(&mut self) {
        self.refused += 1;
        self.report();
    }

    fn report(&mut self) {
        let now = Instant::now();
        if self
            .reported
            .is_some_and(|at| now.duration_since(at) < OVERLOAD_REPORT_EVERY)
        {
            return;
        }
        tracing::warn!(
            on_reserve = self.reserved,
            turned_away = self.refused,
            "MAX_CONNECTIONS reached: connections served from the reserve (health, metrics, \
             operator only) or turned away since the last report"
        );
        self.reported = Some(now);
        self.reserved = 0;
        self.refused = 0;
    }
}
