//! A held SSE stream leaves hyper once its head is decided, to cost a few KiB instead of ~16.
//!
//! hyper keeps an 8 KiB read buffer and an 8 KiB write buffer for every HTTP/1 connection as
//! long as it serves it; for a fan who waits an hour on one stream that is most of what the
//! connection costs (BENCHMARKS.md §1). hyper lets go of a connection only when it ends or is
//! upgraded, so a ticket stream's response (marked [`HandOver`] by its handler, after every
//! check and the first state) is taken out of hyper at the socket:
//!
//! 1. The service serialises the real head (status and every header the router's layers set)
//!    and hands hyper a `101` that ends the exchange instead.
//! 2. [`Placed`] swallows that `101` (the client never sees it) and, when hyper closes the
//!    connection, keeps the socket and its place instead of shutting it.
//! 3. [`stream_out`] writes the real head, then the SSE body chunked, as hyper would have,
//!    from a task of its own that holds nothing but the socket, the body and a few bytes.
//!
//! Nothing else changes on the wire: the same head, chunked transfer, the same events and
//! keep-alives; the stream still ends on shutdown, and a client hanging up ends it at once.

use std::future::Future;
use std::io;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, StatusCode, Version};
use axum::response::Response;
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::DRAIN_GRACE;
use super::places::Place;
use crate::http::wire::header_lines;

/// Marks a response whose body is served outside hyper (a ticket's SSE stream).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandOver;

/// The socket and its place, on their way out of hyper.
struct Socket {
    stream: TcpStream,
    _place: Place,
}

/// What a connection's service and its socket share: where the socket goes once hyper is done.
#[derive(Default)]
pub(super) struct Handoff {
    /// Set once the service answered hyper with the stand-in `101`.
    armed: AtomicBool,
    to: Mutex<Option<oneshot::Sender<Socket>>>,
}

impl Handoff {
    /// Whether `response` (answering a `method` request of `version`) leaves hyper.
    pub(super) fn wanted(method: &Method, version: Version, response: &Response) -> bool {
        // Chunked transfer is HTTP/1.1's: an HTTP/1.0 client stays with hyper, and so does a
        // HEAD (axum answers it with the GET's head, and hyper knows to send no body).
        method == Method::GET
            && version == Version::HTTP_11
            && response.extensions().get::<HandOver>().is_some()
    }

    /// Takes `response` over: its head and body go to a task of their own (tracked by
    /// `tasks`), and hyper is given a `101` to write, which the socket swallows.
    /// On `stop` the stream ends by itself (the follower watches the same token); a client that
    /// does not take its last bytes is cut after [`DRAIN_GRACE`], as hyper's connections are.
    pub(super) fn take(
        &self,
        response: Response,
        tasks: &TaskTracker,
        stop: &CancellationToken,
    ) -> Response {
        let (tx, rx) = oneshot::channel();
        *self.to.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        self.armed.store(true, Ordering::Release);
        let (parts, body) = response.into_parts();
        let head = head(parts.status, &parts.headers);
        let stop = stop.clone();
        tasks.spawn(async move {
            let cut = async {
                stop.cancelled().await;
                tokio::time::sleep(DRAIN_GRACE).await;
            };
            tokio::select! {
                () = stream_out(rx, head, body) => {}
                () = cut => tracing::debug!("handed-over stream cut after the drain grace"),
            }
        });
        let mut stand_in = Response::new(Body::empty());
        *stand_in.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        stand_in
    }

    fn armed(&self) -> bool {
        self.armed.load(Ordering::Acquire)
    }
}

/// The head hyper would have written for a streamed body, byte for byte but the `date`.
fn head(status: StatusCode, headers: &axum::http::HeaderMap) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    header_lines(&mut head, headers);
    head.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
    head
}

/// Serves a handed-over stream: the head, then each piece of the body as one chunk, until the
/// body ends (then the last chunk) or the client hangs up.
async fn stream_out(socket: oneshot::Receiver<Socket>, head: Vec<u8>, body: Body) {
    // No socket: hyper ended the connection another way (the client left first).
    let Ok(Socket { mut stream, _place }) = socket.await else {
        return;
    };
    let (mut reader, mut writer) = stream.split();
    if writer.write_all(&head).await.is_err() {
        return;
    }
    drop(head);
    let mut body = body.into_data_stream();
    // A fan has nothing to say; what it sends anyway is read and dropped.
    let mut ignored = [0u8; 32];
    loop {
        tokio::select! {
            piece = body.next() => match piece {
                Some(Ok(piece)) if piece.is_empty() => {}
                Some(Ok(piece)) => {
                    let mut chunk = Vec::with_capacity(piece.len() + 12);
                    let _ = write!(chunk, "{:x}\r\n", piece.len());
                    chunk.extend_from_slice(&piece);
                    chunk.extend_from_slice(b"\r\n");
                    if writer.write_all(&chunk).await.is_err() {
                        return;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "a handed-over stream failed");
                    return;
                }
                None => {
                    let _ = writer.write_all(b"0\r\n\r\n").await;
                    let _ = writer.shutdown().await;
                    return;
                }
            },
            read = reader.read(&mut ignored) => {
                if !matches!(read, Ok(n) if n > 0) {
                    return;
                }
            }
        }
    }
}

/// A socket that holds its connection's place: after a WebSocket upgrade hyper hands the
/// socket on, and the place goes with it; after a [`HandOver`], hyper's stand-in `101` is
/// swallowed and the socket, instead of being shut, goes to [`stream_out`].
pub(super) struct Placed {
    stream: Option<TcpStream>,
    place: Option<Place>,
    handoff: std::sync::Arc<Handoff>,
    /// hyper began writing the stand-in `101`: nothing more reaches the client from hyper.
    swallowing: bool,
    /// How long a write may wait for a client that takes nothing (`UPSTREAM_IDLE_TIMEOUT`).
    write_idle: Duration,
    /// Running while a write waits: a client that stopped reading, whose kernel buffer is
    /// full. Past it the write fails, hyper drops the connection and the response it was
    /// sending (the origin's connection with it, in gateway mode).
    stall: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Placed {
    pub(super) fn new(
        stream: TcpStream,
        place: Place,
        handoff: std::sync::Arc<Handoff>,
        write_idle: Duration,
    ) -> Self {
        Placed {
            stream: Some(stream),
            place: Some(place),
            handoff,
            swallowing: false,
            write_idle,
            stall: None,
        }
    }

    /// `polled` (a write's outcome), failed once the client has taken nothing for the idle
    /// timeout. The timer runs only while writes wait, and starts again with each one that
    /// goes through.
    fn unless_stalled<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.stall = None;
            return polled;
        }
        let idle = self.write_idle;
        let stall = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if stall.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took nothing of what it was sent for UPSTREAM_IDLE_TIMEOUT",
            )));
        }
        Poll::Pending
    }

    fn stream(&mut self) -> io::Result<&mut TcpStream> {
        self.stream
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }
}

impl AsyncRead for Placed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut().stream.as_mut() {
            Some(stream) => Pin::new(stream).poll_read(cx, buf),
            // Handed over: nothing more for hyper to read.
            None => Poll::Ready(Ok(())),
        }
    }
}

/// hyper's stand-in `101` head: where it starts in `buf`, if it does. Only heads are ever in the
/// buffer it starts in (hyper queues bodies apart), so it starts the buffer or follows the end
/// of an earlier head still unsent (a client that pipelined behind an answer it had not read).
fn stand_in_at(buf: &[u8]) -> Option<usize> {
    const STAND_IN: &[u8] = b"HTTP/1.1 101 ";
    if buf.starts_with(STAND_IN) {
        return Some(0);
    }
    buf.windows(STAND_IN.len() + 4)
        .position(|w| w.starts_with(b"\r\n\r\n") && w.ends_with(STAND_IN))
        .map(|at| at + 4)
}

impl AsyncWrite for Placed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.swallowing {
            return Poll::Ready(Ok(buf.len()));
        }
        let mut until = buf.len();
        if this.handoff.armed() {
            match stand_in_at(buf) {
                Some(0) => {
                    this.swallowing = true;
                    return Poll::Ready(Ok(buf.len()));
                }
                // What came before it still goes out.
                Some(at) => until = at,
                None => {}
            }
        }
        let polled = Pin::new(this.stream()?).poll_write(cx, &buf[..until]);
        this.unless_stalled(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.swallowing {
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        if this.handoff.armed()
            && let Some((i, at)) = bufs
                .iter()
                .enumerate()
                .find_map(|(i, b)| stand_in_at(b).map(|at| (i, at)))
        {
            let polled = match (i, at) {
                (0, 0) => {
                    this.swallowing = true;
                    return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
                }
                // What came before it still goes out; hyper calls again with the rest.
                (0, at) => Pin::new(this.stream()?).poll_write(cx, &bufs[0][..at]),
                (i, _) => Pin::new(this.stream()?).poll_write_vectored(cx, &bufs[..i]),
            };
            return this.unless_stalled(cx, polled);
        }
        let polled = Pin::new(this.stream()?).poll_write_vectored(cx, bufs);
        this.unless_stalled(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.swallowing {
            return Poll::Ready(Ok(()));
        }
        let polled = Pin::new(this.stream()?).poll_flush(cx);
        this.unless_stalled(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.handoff.armed() {
            let to = this
                .handoff
                .to
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let (Some(to), Some(stream), Some(place)) =
                (to, this.stream.take(), this.place.take())
            {
                let _ = to.send(Socket {
                    stream,
                    _place: place,
                });
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(this.stream()?).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, HeaderValue, header};

    #[test]
    fn the_stand_in_is_found_at_the_start_or_after_an_unsent_head() {
        assert_eq!(
            stand_in_at(b"HTTP/1.1 101 Switching Protocols\r\n\r\n"),
            Some(0)
        );
        let earlier = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n\r\n";
        assert_eq!(stand_in_at(earlier), Some(27));
        assert_eq!(
            stand_in_at(b"HTTP/1.1 200 OK\r\nx-note: HTTP/1.1 101 \r\n\r\n"),
            None
        );
        assert_eq!(stand_in_at(b"data: {}\n\n"), None);
    }

    #[test]
    fn the_head_is_the_status_every_header_and_chunked() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        let head = String::from_utf8(head(StatusCode::OK, &headers)).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-accel-buffering: no\r\n\
             transfer-encoding: chunked\r\n\r\n"
        );
    }
}
