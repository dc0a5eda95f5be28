//! The origin's leg of the common request, without hyper's client: a `GET` or `HEAD` with no
//! body and no upgrade is written to a kept-alive origin connection as one head, and the
//! origin's answer is read back by the serving task itself. hyper's pooled client runs every
//! origin connection as a task of its own and hands each request and answer between the two
//! over channels; here the task serving the fan's connection writes, reads and frames the
//! answer in place (BENCHMARKS.md, "Gateway mode"). Every other request (a body, an upgrade,
//! another method) still goes through hyper's client.
//!
//! What hyper's client checks of an origin's answer is checked here too, as RFC 9112 §6.3
//! frames a response:
//!
//! - the head is parsed by `httparse` (what hyper parses with), at most [`MAX_HEAD`] bytes and
//!   [`MAX_HEADERS`] headers (hyper's limits);
//! - informational answers (`1xx`) are skipped, as hyper's client does; a `101` nobody asked
//!   for is refused;
//! - no body for `HEAD`, `204` and `304`; a `Transfer-Encoding` ending in `chunked` is decoded
//!   (sizes, extensions and trailers bounded); any other transfer coding, or none and no
//!   `Content-Length`, is read until the origin closes; a `Content-Length` must be digits, the
//!   same in every copy;
//! - a connection goes back to the pool only once its answer was read exactly to its end,
//!   HTTP/1.1 without `Connection: close`, with neither a transfer coding nor a length
//!   overridden by one, and not after an answer with no body that announced one (a `HEAD`'s
//!   `Content-Length`, a `204` with a length: an origin may send those bytes anyway, and they
//!   must not be read as the next request's answer); any error, or a fan that leaves before
//!   the end, closes it.
//!
//! A pooled connection the origin closed meanwhile is found on taking it (its end was read
//! already), and a `GET` or `HEAD` that finds the origin gone before a byte of the answer came
//! is sent once more on a new connection, as nginx's `proxy_next_upstream error` does.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::uri::Authority;
use axum::http::{Method, Response, StatusCode, Version};
use bytes::{Buf, Bytes, BytesMut};
use hyper::body::{Frame, SizeHint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::http::wire::header_lines;

/// The largest head an origin may answer with (hyper's read buffer limit).
pub(super) const MAX_HEAD: usize = 8192 + 4096 * 100;
/// The most headers an origin's head may have (hyper's).
pub(super) const MAX_HEADERS: usize = 100;
/// The longest chunk-size line (with its extensions) and the most trailer bytes taken.
const MAX_CHUNK_LINE: usize = 4096;
const MAX_TRAILERS: usize = 16 * 1024;
/// How long an idle origin connection is kept (hyper's pool's default).
const IDLE_FOR: Duration = Duration::from_secs(90);
/// The most idle origin connections a pool keeps.
const MAX_IDLE: usize = 256;
/// How much is read from the origin at once.
const READ_CHUNK: usize = 16 * 1024;

/// Why the origin's answer could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    /// Connecting, writing or reading failed.
    #[error("origin connection: {0}")]
    Io(#[from] io::Error),
    /// Connecting took longer than allowed.
    #[error("connecting to the origin timed out")]
    ConnectTimeout,
    /// The origin closed the connection before its answer's head was complete.
    #[error("the origin closed the connection before answering")]
    Closed,
    /// The head is not HTTP/1.x, too long, or frames its body ambiguously.
    #[error("the origin's answer is malformed: {0}")]
    Malformed(&'static str),
}

impl UpstreamError {
    /// Whether a request that met this on a reused connection may be sent again: the origin
    /// went away before answering anything.
    fn gone(&self) -> bool {
        match self {
            UpstreamError::Closed => true,
            UpstreamError::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }
}

/// One origin connection and what was read of it beyond the last answer (nothing, when it is
/// pooled).
struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    idle_since: Instant,
}

/// Idle origin connections, the most recent last.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<VecDeque<Conn>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

/// Whether a request may take the lean way: `GET` or `HEAD` (safe to send again), no body,
/// no upgrade.
pub(super) fn takes(method: &Method, body_ended: bool, upgrade: bool) -> bool {
    body_ended && !upgrade && (*method == Method::GET || *method == Method::HEAD)
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Conn>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pooled connection the origin has not closed, if any.
    fn take(&self) -> Option<Conn> {
        let now = Instant::now();
        loop {
            let mut conn = {
                let mut idle = self.lock();
                while idle
                    .front()
                    .is_some_and(|c| now.duration_since(c.idle_since) > IDLE_FOR)
                {
                    idle.pop_front();
                }
                idle.pop_back()?
            };
            // Its readiness says whether anything came since its answer ended: the origin
            // closing it (or, against the protocol, sending more). Read nothing otherwise.
            conn.buf.reserve(READ_CHUNK);
            match conn.stream.try_read_buf(&mut conn.buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(conn),
                _ => continue,
            }
        }
    }

    fn put(&self, mut conn: Conn) {
        conn.idle_since = Instant::now();
        let mut idle = self.lock();
        if idle.len() >= MAX_IDLE {
            idle.pop_front();
        }
        idle.push_back(conn);
    }

    /// Sends a bodiless `method` request for `target` with `headers` (made fit for the origin
    /// already, `Host` included) to `authority`, and reads the answer's head.
    pub(super) async fn send(
        self: &Arc<Self>,
        authority: &Authority,
        connect_timeout: Duration,
        method: &Method,
        target: &str,
        headers: &HeaderMap,
    ) -> Result<Response<OriginBody>, UpstreamError> {
        let head = request_head(method, target, headers);
        let head_request = *method == Method::HEAD;
        let mut reused = self.take();
        loop {
            let was_reused = reused.is_some();
            let mut conn = match reused.take() {
                Some(conn) => conn,
                None => connect(authority, connect_timeout).await?,
            };
            match exchange(&mut conn, &head, head_request).await {
                Ok((parts, framing)) => {
                    let body = OriginBody::new(conn, framing, self.clone());
                    return Ok(Response::from_parts(parts, body));
                }
                // Sent once more, on a new connection: nothing of an answer came.
                Err(e) if was_reused && e.gone() => {
                    tracing::debug!(error = %e, "a pooled origin connection was closed; sending again");
                }
                Err(e) => return Err(e),
            }
        }
    }
}

async fn connect(authority: &Authority, timeout: Duration) -> Result<Conn, UpstreamError> {
    let port = authority.port_u16().unwrap_or(80);
    let host = authority.host();
    // `[::1]` in a URL is `::1` to the resolver.
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
        .await
        .map_err(|_| UpstreamError::ConnectTimeout)??;
    stream.set_nodelay(true)?;
    Ok(Conn {
        stream,
        buf: BytesMut::with_capacity(READ_CHUNK),
        idle_since: Instant::now(),
    })
}

/// `METHOD target HTTP/1.1`, every header, the blank line.
fn request_head(method: &Method, target: &str, headers: &HeaderMap) -> Vec<u8> {
    let mut head = Vec::with_capacity(
        64 + target.len()
            + headers
                .iter()
                .map(|(n, v)| n.as_str().len() + v.len() + 4)
                .sum::<usize>(),
    );
    head.extend_from_slice(method.as_str().as_bytes());
    head.push(b' ');
    head.extend_from_slice(target.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    header_lines(&mut head, headers);
    head.extend_from_slice(b"\r\n");
    head
}

/// How an answer's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// No body at all.
    Empty,
    /// This many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the origin closes the connection.
    UntilClose,
}

/// The answer's framing, and whether its connection may serve another request after it.
struct Framed {
    framing: Framing,
    reusable: bool,
}

/// Writes `head` on `conn` and reads the final answer's head (skipping `1xx`).
async fn exchange(
    conn: &mut Conn,
    head: &[u8],
    head_request: bool,
) -> Result<(axum::http::response::Parts, Framed), UpstreamError> {
    conn.stream.write_all(head).await?;
    loop {
        // Parse what is there; read more only while the head is incomplete.
        if let Some(parsed) = parse_head(&mut conn.buf, head_request)? {
            return Ok(parsed);
        }
        if conn.buf.len() >= MAX_HEAD {
            return Err(UpstreamError::Malformed("a head longer than allowed"));
        }
        conn.buf.reserve(READ_CHUNK);
        if conn.stream.read_buf(&mut conn.buf).await? == 0 {
            return Err(if conn.buf.is_empty() {
                UpstreamError::Closed
            } else {
                UpstreamError::Malformed("the connection ended within the head")
            });
        }
    }
}

/// The final answer's head from the start of `buf`, taken out of it, once it is complete;
/// informational answers before it are dropped.
fn parse_head(
    buf: &mut BytesMut,
    head_request: bool,
) -> Result<Option<(axum::http::response::Parts, Framed)>, UpstreamError> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut slots);
        let len = match res.parse(&buf[..]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(UpstreamError::Malformed("more headers than allowed"));
            }
            Err(_) => return Err(UpstreamError::Malformed("not an HTTP/1.x head")),
        };
        let code = res.code.unwrap_or(0);
        let status =
            StatusCode::from_u16(code).map_err(|_| UpstreamError::Malformed("a bad status"))?;
        if status == StatusCode::SWITCHING_PROTOCOLS {
            return Err(UpstreamError::Malformed(
                "a protocol switch nobody asked for",
            ));
        }
        if status.is_informational() {
            buf.advance(len);
            continue;
        }
        let version = match res.version {
            Some(1) => Version::HTTP_11,
            _ => Version::HTTP_10,
        };
        // Where each header lies in the head, to share the head's bytes once it is frozen.
        let base = buf.as_ptr() as usize;
        let mut spans = Vec::with_capacity(res.headers.len());
        for h in res.headers.iter() {
            let name = HeaderName::from_bytes(h.name.as_bytes())
                .map_err(|_| UpstreamError::Malformed("a bad header name"))?;
            let at = h.value.as_ptr() as usize - base;
            spans.push((name, at, h.value.len()));
        }
        let head = buf.split_to(len).freeze();
        let mut headers = HeaderMap::with_capacity(spans.len());
        for (name, at, n) in spans {
            let value = HeaderValue::from_maybe_shared(head.slice(at..at + n))
                .map_err(|_| UpstreamError::Malformed("a bad header value"))?;
            headers.append(name, value);
        }
        let framed = framing(&mut headers, version, status, head_request)?;
        let mut parts = Response::new(()).into_parts().0;
        parts.status = status;
        parts.version = version;
        parts.headers = headers;
        return Ok(Some((parts, framed)));
    }
}

/// How the answer's body is framed (RFC 9112 §6.3), and whether its connection can be kept.
/// A `Content-Length` overridden by a transfer coding is removed, so that it is not passed on.
fn framing(
    headers: &mut HeaderMap,
    version: Version,
    status: StatusCode,
    head_request: bool,
) -> Result<Framed, UpstreamError> {
    let keep = version == Version::HTTP_11
        && !headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("close"));
    if head_request || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        // No body, whatever the head announces; an origin that announces one may send it
        // anyway, after the head: those bytes must never be read as the next request's answer
        // (an uploaded file's bytes in a `HEAD`'s wake would be), so its connection is closed.
        let announced = headers.contains_key(header::TRANSFER_ENCODING)
            || headers
                .get_all(header::CONTENT_LENGTH)
                .iter()
                .any(|v| v.as_bytes().trim_ascii() != b"0");
        return Ok(Framed {
            framing: Framing::Empty,
            reusable: keep && !announced,
        });
    }
    if headers.contains_key(header::TRANSFER_ENCODING) {
        // The last coding of the last line; a line that is not text is no `chunked`.
        let chunked = headers
            .get_all(header::TRANSFER_ENCODING)
            .iter()
            .next_back()
            .and_then(|v| {
                v.as_bytes()
                    .rsplit(|b| *b == b',')
                    .map(<[u8]>::trim_ascii)
                    .find(|t| !t.is_empty())
            })
            .is_some_and(|t| t.eq_ignore_ascii_case(b"chunked"));
        let overridden = headers.remove(header::CONTENT_LENGTH).is_some();
        return Ok(if chunked && version == Version::HTTP_11 {
            Framed {
                framing: Framing::Chunked,
                reusable: keep && !overridden,
            }
        } else {
            Framed {
                framing: Framing::UntilClose,
                reusable: false,
            }
        });
    }
    let mut length: Option<u64> = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        for part in value.as_bytes().split(|b| *b == b',') {
            let part = part.trim_ascii();
            if part.is_empty() || part.len() > 19 || !part.iter().all(u8::is_ascii_digit) {
                return Err(UpstreamError::Malformed("a bad Content-Length"));
            }
            let n = part.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            if length.is_some_and(|l| l != n) {
                return Err(UpstreamError::Malformed(
                    "Content-Length copies that differ",
                ));
            }
            length = Some(n);
        }
    }
    Ok(match length {
        Some(n) => Framed {
            framing: Framing::Length(n),
            reusable: keep,
        },
        None => Framed {
            framing: Framing::UntilClose,
            reusable: false,
        },
    })
}

/// Where a chunked body's reading stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// Within a chunk's data: this many bytes left.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer section after the last chunk: this many bytes of it read.
    Trailers(usize),
}

/// What is left of the body to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Left {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
}

/// The origin's answer's body, read by whoever polls it; its connection goes back to the pool
/// once the body was read exactly to its end.
pub(crate) struct OriginBody {
    conn: Option<Conn>,
    left: Left,
    reusable: bool,
    pool: Arc<Pool>,
}

impl OriginBody {
    fn new(conn: Conn, framed: Framed, pool: Arc<Pool>) -> Self {
        let left = match framed.framing {
            Framing::Empty | Framing::Length(0) => Left::Done,
            Framing::Length(n) => Left::Length(n),
            Framing::Chunked => Left::Chunked(Chunk::Size),
            Framing::UntilClose => Left::UntilClose,
        };
        let mut body = OriginBody {
            conn: Some(conn),
            left,
            reusable: framed.reusable,
            pool,
        };
        if body.left == Left::Done {
            body.finish();
        }
        body
    }

    /// The body was read to its end: its connection is pooled, if it may serve again and
    /// nothing beyond the answer arrived.
    fn finish(&mut self) {
        self.left = Left::Done;
        if let Some(conn) = self.conn.take()
            && self.reusable
            && conn.buf.is_empty()
        {
            self.pool.put(conn);
        }
    }

    /// Reads more of the connection into its buffer: the number of bytes read (0 at its end).
    fn poll_fill(conn: &mut Conn, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            ready!(conn.stream.poll_read_ready(cx))?;
            if conn.buf.capacity() - conn.buf.len() < READ_CHUNK / 4 {
                conn.buf.reserve(READ_CHUNK);
            }
            match conn.stream.try_read_buf(&mut conn.buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// What the buffered bytes give next: a piece of data, the end, or `None` (read more).
    fn step(&mut self) -> Result<Option<Option<Bytes>>, io::Error> {
        let bad = |what: &'static str| io::Error::new(io::ErrorKind::InvalidData, what);
        let Some(conn) = self.conn.as_mut() else {
            return Ok(Some(None));
        };
        let buf = &mut conn.buf;
        loop {
            match self.left {
                Left::Done => return Ok(Some(None)),
                Left::Length(n) => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let take = usize::try_from(n).unwrap_or(usize::MAX).min(buf.len());
                    let data = buf.split_to(take).freeze();
                    let rest = n - take as u64;
                    if rest == 0 {
                        self.finish();
                    } else {
                        self.left = Left::Length(rest);
                    }
                    return Ok(Some(Some(data)));
                }
                Left::UntilClose => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    return Ok(Some(Some(buf.split().freeze())));
                }
                Left::Chunked(Chunk::Size) => {
                    let Some(end) = buf.iter().position(|b| *b == b'\n') else {
                        if buf.len() > MAX_CHUNK_LINE {
                            return Err(bad("a chunk-size line longer than allowed"));
                        }
                        return Ok(None);
                    };
                    if end > MAX_CHUNK_LINE || end == 0 || buf[end - 1] != b'\r' {
                        return Err(bad("a malformed chunk-size line"));
                    }
                    let size =
                        chunk_size(&buf[..end - 1]).ok_or_else(|| bad("a bad chunk size"))?;
                    buf.advance(end + 1);
                    self.left = Left::Chunked(if size == 0 {
                        Chunk::Trailers(0)
                    } else {
                        Chunk::Data(size)
                    });
                }
                Left::Chunked(Chunk::Data(n)) => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let take = usize::try_from(n).unwrap_or(usize::MAX).min(buf.len());
                    let data = buf.split_to(take).freeze();
                    let rest = n - take as u64;
                    self.left = Left::Chunked(if rest == 0 {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(rest)
                    });
                    return Ok(Some(Some(data)));
                }
                Left::Chunked(Chunk::DataEnd) => {
                    if buf.len() < 2 {
                        return Ok(None);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(bad("a chunk not ended by CRLF"));
                    }
                    buf.advance(2);
                    self.left = Left::Chunked(Chunk::Size);
                }
                Left::Chunked(Chunk::Trailers(read)) => {
                    // Trailer lines until the empty one; the trailers are not passed on.
                    let Some(end) = buf.iter().position(|b| *b == b'\n') else {
                        if read + buf.len() > MAX_TRAILERS {
                            return Err(bad("trailers longer than allowed"));
                        }
                        return Ok(None);
                    };
                    if end == 0 || buf[end - 1] != b'\r' || read + end > MAX_TRAILERS {
                        return Err(bad("a malformed trailer section"));
                    }
                    let empty = end == 1;
                    buf.advance(end + 1);
                    if empty {
                        self.finish();
                        return Ok(Some(None));
                    }
                    self.left = Left::Chunked(Chunk::Trailers(read + end + 1));
                }
            }
        }
    }
}

/// A chunk-size line's size: hexadecimal digits, then maybe `;` and extensions (ignored).
fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.split(|b| *b == b';').next()?.trim_ascii_end();
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, d| {
        let v = (*d as char).to_digit(16)?;
        Some(n * 16 + u64::from(v))
    })
}

impl hyper::body::Body for OriginBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        loop {
            match this.step() {
                Ok(Some(Some(data))) => return Poll::Ready(Some(Ok(Frame::data(data)))),
                Ok(Some(None)) => return Poll::Ready(None),
                Ok(None) => {}
                Err(e) => {
                    this.fail();
                    return Poll::Ready(Some(Err(e)));
                }
            }
            let Some(conn) = this.conn.as_mut() else {
                return Poll::Ready(None);
            };
            match ready!(Self::poll_fill(conn, cx)) {
                Ok(0) if this.left == Left::UntilClose => {
                    this.conn = None;
                    this.left = Left::Done;
                    return Poll::Ready(None);
                }
                Ok(0) => {
                    this.fail();
                    return Poll::Ready(Some(Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the origin closed the connection within the body",
                    ))));
                }
                Ok(_) => {}
                Err(e) => {
                    this.fail();
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.left == Left::Done
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Left::Done => SizeHint::with_exact(0),
            Left::Length(n) => SizeHint::with_exact(n),
            _ => SizeHint::default(),
        }
    }
}

impl OriginBody {
    /// The body cannot be read on: its connection is closed.
    fn fail(&mut self) {
        self.conn = None;
        self.left = Left::Done;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(head: &str, head_request: bool) -> Result<Option<(u16, Framed)>, UpstreamError> {
        let mut buf = BytesMut::from(head.as_bytes());
        Ok(parse_head(&mut buf, head_request)?.map(|(p, f)| (p.status.as_u16(), f)))
    }

    #[test]
    fn framing_follows_rfc_9112() {
        let f = |head: &str| parsed(head, false).unwrap().unwrap().1;
        let plain = f("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
        assert_eq!((plain.framing, plain.reusable), (Framing::Length(5), true));
        let same = f("HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(same.framing, Framing::Length(5));
        let chunked = f("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n");
        assert_eq!(
            (chunked.framing, chunked.reusable),
            (Framing::Chunked, true)
        );
        let both = f("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n");
        assert_eq!((both.framing, both.reusable), (Framing::Chunked, false));
        let later =
            f("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: gzip\r\n\r\n");
        assert_eq!(later.framing, Framing::UntilClose);
        let other = f("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n");
        assert_eq!(
            (other.framing, other.reusable),
            (Framing::UntilClose, false)
        );
        let none = f("HTTP/1.1 200 OK\r\n\r\n");
        assert_eq!((none.framing, none.reusable), (Framing::UntilClose, false));
        let close =
            f("HTTP/1.1 200 OK\r\nconnection: keep-alive, close\r\ncontent-length: 0\r\n\r\n");
        assert_eq!((close.framing, close.reusable), (Framing::Length(0), false));
        let old = f("HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n");
        assert!(!old.reusable);
        for empty in ["204 No Content", "304 Not Modified"] {
            let e = f(&format!("HTTP/1.1 {empty}\r\ncontent-length: 9\r\n\r\n"));
            assert_eq!((e.framing, e.reusable), (Framing::Empty, false));
            let e = f(&format!("HTTP/1.1 {empty}\r\n\r\n"));
            assert_eq!((e.framing, e.reusable), (Framing::Empty, true));
        }
        // A HEAD's answer announces the GET's body: it is not read, and the connection that
        // might carry it anyway is not used again.
        let head = |h: &str| parsed(h, true).unwrap().unwrap().1;
        let announced = head("HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n");
        assert_eq!(
            (announced.framing, announced.reusable),
            (Framing::Empty, false)
        );
        let bare = head("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
        assert_eq!((bare.framing, bare.reusable), (Framing::Empty, true));
        for bad in [
            "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 0x10\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
            "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
            "HTTP/2 200\r\n\r\n",
        ] {
            assert!(parsed(bad, false).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn informational_answers_are_skipped_and_heads_wait_for_their_end() {
        let (status, framed) = parsed(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n\
             HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!((status, framed.framing), (404, Framing::Length(0)));
        assert!(
            parsed("HTTP/1.1 200 OK\r\ncontent-le", false)
                .unwrap()
                .is_none()
        );
        assert!(
            parsed("HTTP/1.1 100 Continue\r\n\r\n", false)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn chunk_sizes_are_hex_with_extensions_and_bounded() {
        assert_eq!(chunk_size(b"1a"), Some(26));
        assert_eq!(chunk_size(b"A;name=value"), Some(10));
        assert_eq!(chunk_size(b"0"), Some(0));
        assert_eq!(chunk_size(b"10 "), Some(16));
        for bad in [&b""[..], b"x", b"-1", b"1 2", b"1000000000000000", b";ext"] {
            assert_eq!(chunk_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_bodiless_gets_and_heads_take_the_lean_way() {
        assert!(takes(&Method::GET, true, false));
        assert!(takes(&Method::HEAD, true, false));
        assert!(!takes(&Method::GET, false, false));
        assert!(!takes(&Method::GET, true, true));
        assert!(!takes(&Method::POST, true, false));
        assert!(!takes(&Method::DELETE, true, false));
    }
}
