//! Just enough HTTP/1.1 for a lean fan: one keep-alive connection, requests written by hand,
//! answers parsed with `httparse`, bodies of a known length or chunked, a `text/event-stream`
//! split into events, and WebSocket frames after an upgrade.
//!
//! A connection keeps one buffer while it reads: [`READ_BUFFER`] bytes, grown while a larger
//! answer or event is read (up to [`MAX_BUFFER`], past which the server is refused), shrunk
//! again once it is handled, and given back while the connection waits with nothing to
//! handle (most of a waiting fan's life). Its front holds the body decoded so far (`..text`), its back the bytes read
//! but not yet decoded (`raw..`): decoding only removes bytes (chunk sizes), so a body is
//! decoded in place.
//!
//! Nothing a server sends panics: every malformed answer, event or frame is a [`WireError`].

use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

/// What a connection reads into while nothing larger is being read.
pub const READ_BUFFER: usize = 512;

/// The largest answer head, body or event a fan reads; a server sending more is refused.
pub const MAX_BUFFER: usize = 64 * 1024;

/// The `Sec-WebSocket-Key` every fan sends ([`UPGRADE_HEADERS`]): the server only echoes a
/// digest of it, and a fixed one spares each fan a random draw and its base64.
const WS_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// The headers of a WebSocket upgrade (each ending in CRLF).
pub const UPGRADE_HEADERS: &str = "connection: Upgrade\r\nupgrade: websocket\r\n\
     sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

/// What the server must answer [`WS_KEY`] with.
static WS_ACCEPT: LazyLock<String> = LazyLock::new(|| {
    tokio_tungstenite::tungstenite::handshake::derive_accept_key(WS_KEY.as_bytes())
});

/// Why a connection could not be used.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Connecting, reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The server closed the connection.
    #[error("the server closed the connection")]
    Closed,
    /// The server sent something no well-behaved server would.
    #[error("malformed: {0}")]
    Malformed(&'static str),
    /// An answer head, body or event larger than [`MAX_BUFFER`].
    #[error("more than {MAX_BUFFER} bytes at once")]
    TooLarge,
}

/// How an answer's body is delimited, and how much of it is left to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// No body being read: the next bytes are an answer head.
    Head,
    /// A body of this many more bytes.
    Length(usize),
    /// A chunked body.
    Chunked(Chunk),
    /// Everything up to the connection's end: a body without length, or a WebSocket.
    UntilClose,
    /// The body is whole.
    Done,
}

/// Where chunked decoding stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// A chunk-size line is next.
    Size,
    /// This many bytes of the chunk are still to come.
    Data(usize),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines up to an empty one.
    Trailer,
}

/// An answer's status line and what of its headers a fan needs.
#[derive(Clone, Copy, Debug)]
pub struct Head {
    /// The HTTP status.
    pub status: u16,
    /// The server will close the connection after this answer.
    pub close: bool,
    /// `Retry-After` in seconds, if given.
    pub retry_after: Option<u32>,
    /// A 101 whose `Sec-WebSocket-Accept` answers [`WS_KEY`].
    pub ws_accepted: bool,
}

/// One Server-Sent Event, borrowed from the connection's buffer.
#[derive(Debug, Default)]
pub struct Event<'a> {
    /// `event:` (empty when not given).
    pub name: &'a [u8],
    /// `id:`, when it is a number.
    pub id: Option<u64>,
    /// `data:` (the first line of it: the server's events are one line of JSON).
    pub data: &'a [u8],
}

/// One WebSocket frame the server sent, borrowed from the connection's buffer.
#[derive(Debug)]
pub enum WsFrame<'a> {
    /// A text frame.
    Text(&'a [u8]),
    /// A ping with its payload, to be answered with a pong.
    Ping(&'a [u8]),
    /// A pong, binary frame, or anything else a fan ignores.
    Other,
    /// The server closes.
    Close,
}

/// A connection to a server.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// The decoded body: `buf[..text]`.
    text: usize,
    /// The first byte read but not yet decoded: `buf[raw..]`.
    raw: usize,
    framing: Framing,
}

impl Conn {
    /// A connection to `server`, from `source` if given.
    pub async fn open(server: SocketAddr, source: Option<IpAddr>) -> Result<Conn, WireError> {
        let socket = if server.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(ip) = source {
            socket.bind(SocketAddr::new(ip, 0))?;
        }
        let stream = socket.connect(server).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
            text: 0,
            raw: 0,
            framing: Framing::Head,
        })
    }

    /// Writes a request: `METHOD path`, `host`, `headers` (each ending in CRLF), no body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        host: &str,
        headers: &str,
    ) -> Result<(), WireError> {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\n{headers}\r\n"
        );
        self.stream.write_all(request.as_bytes()).await?;
        Ok(())
    }

    /// Reads the next answer's head; its body is then decoded by [`Conn::body`] or
    /// [`Conn::next_event`].
    pub async fn head(&mut self) -> Result<Head, WireError> {
        loop {
            if let Some(head) = self.parse_head()? {
                return Ok(head);
            }
            self.fill().await?;
        }
    }

    /// Reads the whole body of the answer whose head was read: `buf[..]` until the next call
    /// that reads. Call [`Conn::finish_body`] once it is handled.
    pub async fn body(&mut self) -> Result<&[u8], WireError> {
        loop {
            self.decode()?;
            if self.framing == Framing::Done {
                return Ok(&self.buf[..self.text]);
            }
            match self.fill().await {
                Err(WireError::Closed) if self.framing == Framing::UntilClose => {
                    self.framing = Framing::Done;
                }
                other => other?,
            }
        }
    }

    /// Drops the body read (and handled): the connection is ready for the next request.
    pub fn finish_body(&mut self) {
        self.consume(self.text);
        self.framing = Framing::Head;
    }

    /// Reads more from the server, at most [`MAX_BUFFER`] held at once. Cancel-safe: no byte
    /// read is lost when the future is dropped. A connection with nothing left to handle holds
    /// no buffer while it waits: one is taken only once the socket is readable.
    pub async fn fill(&mut self) -> Result<(), WireError> {
        loop {
            // The socket's own read-readiness slot, not a waiter of the future's: a waiting
            // fan's task stays ~150 bytes smaller (one task reads each connection).
            std::future::poll_fn(|cx| self.stream.poll_read_ready(cx)).await?;
            self.make_room()?;
            match self.stream.try_read_buf(&mut self.buf) {
                Ok(0) => return Err(WireError::Closed),
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.release_if_empty();
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Room at the back of the buffer for another read.
    fn make_room(&mut self) -> Result<(), WireError> {
        // Undecoded bytes move down next to the decoded ones, making room at the back.
        if self.raw > self.text {
            self.buf.copy_within(self.raw.., self.text);
            self.buf.truncate(self.buf.len() - (self.raw - self.text));
            self.raw = self.text;
        }
        if self.buf.len() == self.buf.capacity() {
            if self.buf.capacity() >= MAX_BUFFER {
                return Err(WireError::TooLarge);
            }
            let more = self.buf.capacity().max(READ_BUFFER);
            self.buf
                .reserve_exact(more.min(MAX_BUFFER - self.buf.capacity()));
        }
        Ok(())
    }

    /// Gives the buffer back when it holds nothing.
    fn release_if_empty(&mut self) {
        if self.buf.is_empty() {
            self.buf = Vec::new();
            (self.text, self.raw) = (0, 0);
        }
    }

    /// The next whole event of the event stream whose head was read, with the bytes it takes
    /// up (to [`Conn::consume`] once handled); `Ok(None)` when more must be read first.
    /// [`WireError::Closed`] when the server ended the stream's body.
    pub fn next_event(&mut self) -> Result<Option<(usize, Event<'_>)>, WireError> {
        loop {
            self.decode()?;
            let Some(end) = event_end(&self.buf[..self.text]) else {
                if self.framing == Framing::Done {
                    return Err(WireError::Closed);
                }
                return Ok(None);
            };
            if parse_event(&self.buf[..end]).data.is_empty() {
                // A keep-alive comment, or an event with no data: nothing to dispatch.
                self.consume(end);
                continue;
            }
            return Ok(Some((end, parse_event(&self.buf[..end]))));
        }
    }

    /// The next whole WebSocket frame, with the bytes it takes up (to [`Conn::consume`] once
    /// handled); `Ok(None)` when more must be read first.
    pub fn next_frame(&mut self) -> Result<Option<(usize, WsFrame<'_>)>, WireError> {
        self.decode()?;
        let b = &self.buf[..self.text];
        if b.len() < 2 {
            return Ok(None);
        }
        let (fin, opcode) = (b[0] & 0x80 != 0, b[0] & 0x0f);
        if b[1] & 0x80 != 0 {
            return Err(WireError::Malformed("a masked frame from the server"));
        }
        let (len, at) = match b[1] & 0x7f {
            126 if b.len() >= 4 => (usize::from(u16::from_be_bytes([b[2], b[3]])), 4),
            127 if b.len() >= 10 => {
                let mut eight = [0; 8];
                eight.copy_from_slice(&b[2..10]);
                (
                    usize::try_from(u64::from_be_bytes(eight)).unwrap_or(usize::MAX),
                    10,
                )
            }
            126 | 127 => return Ok(None),
            n => (usize::from(n), 2),
        };
        if len > MAX_BUFFER {
            return Err(WireError::TooLarge);
        }
        if b.len() < at + len {
            return Ok(None);
        }
        let payload = &b[at..at + len];
        let frame = match opcode {
            _ if !fin => return Err(WireError::Malformed("a fragmented frame")),
            0x0 => return Err(WireError::Malformed("a continuation frame")),
            0x1 => WsFrame::Text(payload),
            0x8 => WsFrame::Close,
            0x9 if len <= 125 => WsFrame::Ping(payload),
            0x9 => return Err(WireError::Malformed("a ping of more than 125 bytes")),
            _ => WsFrame::Other,
        };
        Ok(Some((at + len, frame)))
    }

    /// Sends a masked control frame (`0x8` close, `0xA` pong) with `payload` (at most 125
    /// bytes), masked with `mask`.
    pub async fn send_control(
        &mut self,
        opcode: u8,
        payload: &[u8],
        mask: [u8; 4],
    ) -> Result<(), WireError> {
        let payload = &payload[..payload.len().min(125)];
        let mut frame = [0u8; 6 + 125];
        frame[0] = 0x80 | opcode;
        frame[1] = 0x80 | payload.len() as u8;
        frame[2..6].copy_from_slice(&mask);
        for (k, byte) in payload.iter().enumerate() {
            frame[6 + k] = byte ^ mask[k % 4];
        }
        self.stream.write_all(&frame[..6 + payload.len()]).await?;
        Ok(())
    }

    /// Drops the first `n` decoded bytes, once handled; the buffer shrinks back to
    /// [`READ_BUFFER`] when what is left fits.
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.text);
        // What stays: the rest of the decoded body, then the undecoded bytes; the bytes
        // between them (an answer head, chunk sizes) are gone.
        let kept = self.text - n;
        self.buf.copy_within(n..self.text, 0);
        self.buf.copy_within(self.raw.., kept);
        let len = kept + (self.buf.len() - self.raw);
        self.buf.truncate(len);
        (self.text, self.raw) = (kept, kept);
        if self.buf.is_empty() {
            self.release_if_empty();
        } else if self.buf.capacity() > READ_BUFFER && self.buf.len() <= READ_BUFFER {
            self.buf.shrink_to(READ_BUFFER);
        }
    }

    /// Parses an answer head from the undecoded bytes, if a whole one is there.
    fn parse_head(&mut self) -> Result<Option<Head>, WireError> {
        // Interim answers (1xx but 101) are skipped in a loop: a server sending thousands
        // of them must not grow the stack.
        loop {
            debug_assert_eq!(self.framing, Framing::Head);
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut answer = httparse::Response::new(&mut headers);
            let n = match answer.parse(&self.buf[self.raw..]) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => return Ok(None),
                Err(_) => return Err(WireError::Malformed("an answer head")),
            };
            let status = answer.code.unwrap_or(0);
            let mut head = Head {
                status,
                close: answer.version == Some(0),
                retry_after: None,
                ws_accepted: false,
            };
            let (mut length, mut chunked) = (None, false);
            for h in answer.headers.iter() {
                let value = std::str::from_utf8(h.value).unwrap_or("").trim();
                let name = h.name;
                if name.eq_ignore_ascii_case("content-length") {
                    let n: usize = value
                        .parse()
                        .map_err(|_| WireError::Malformed("a content-length"))?;
                    if length.replace(n).is_some_and(|m| m != n) {
                        return Err(WireError::Malformed("two content-lengths"));
                    }
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = value
                        .rsplit(',')
                        .next()
                        .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
                } else if name.eq_ignore_ascii_case("connection") {
                    head.close |= value
                        .split(',')
                        .any(|t| t.trim().eq_ignore_ascii_case("close"));
                } else if name.eq_ignore_ascii_case("retry-after") {
                    head.retry_after = value.parse().ok();
                } else if name.eq_ignore_ascii_case("sec-websocket-accept") {
                    head.ws_accepted = value == WS_ACCEPT.as_str();
                }
            }
            self.raw += n;
            self.framing = match status {
                100..=199 if status != 101 => {
                    // An interim answer: the real one follows.
                    continue;
                }
                101 => Framing::UntilClose,
                204 | 304 => Framing::Done,
                _ if chunked => Framing::Chunked(Chunk::Size),
                _ => match length {
                    Some(n) if n > MAX_BUFFER => return Err(WireError::TooLarge),
                    Some(0) => Framing::Done,
                    Some(n) => Framing::Length(n),
                    None => {
                        head.close = true;
                        Framing::UntilClose
                    }
                },
            };
            return Ok(Some(head));
        }
    }

    /// Decodes what was read of the body into its front, as its framing says.
    fn decode(&mut self) -> Result<(), WireError> {
        loop {
            let raw = &self.buf[self.raw..];
            match self.framing {
                Framing::Head | Framing::Done => return Ok(()),
                Framing::UntilClose => {
                    let m = raw.len();
                    self.take(m);
                    return Ok(());
                }
                Framing::Length(n) => {
                    let m = n.min(raw.len());
                    self.take(m);
                    self.framing = if m == n {
                        Framing::Done
                    } else {
                        Framing::Length(n - m)
                    };
                    return Ok(());
                }
                Framing::Chunked(Chunk::Size) => {
                    let Some(eol) = find_crlf(raw) else {
                        return short(raw, "a chunk size");
                    };
                    let digits = raw[..eol].split(|&b| b == b';').next().unwrap_or(&[]);
                    let size = std::str::from_utf8(digits)
                        .ok()
                        .and_then(|d| usize::from_str_radix(d.trim(), 16).ok())
                        .ok_or(WireError::Malformed("a chunk size"))?;
                    if size > MAX_BUFFER {
                        return Err(WireError::TooLarge);
                    }
                    self.raw += eol + 2;
                    self.framing = Framing::Chunked(if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    });
                }
                Framing::Chunked(Chunk::Data(n)) => {
                    let m = n.min(raw.len());
                    if m == 0 {
                        return Ok(());
                    }
                    self.take(m);
                    self.framing = Framing::Chunked(if m == n {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(n - m)
                    });
                }
                Framing::Chunked(Chunk::DataEnd) => {
                    if raw.len() < 2 {
                        return Ok(());
                    }
                    if &raw[..2] != b"\r\n" {
                        return Err(WireError::Malformed("a chunk's end"));
                    }
                    self.raw += 2;
                    self.framing = Framing::Chunked(Chunk::Size);
                }
                Framing::Chunked(Chunk::Trailer) => {
                    let Some(eol) = find_crlf(raw) else {
                        return short(raw, "a trailer");
                    };
                    self.raw += eol + 2;
                    if eol == 0 {
                        self.framing = Framing::Done;
                    }
                }
            }
        }
    }

    /// Moves `m` undecoded bytes to the end of the decoded body.
    fn take(&mut self, m: usize) {
        if self.raw != self.text {
            self.buf.copy_within(self.raw..self.raw + m, self.text);
        }
        self.raw += m;
        self.text += m;
    }
}

/// A line not ended yet: fine while short, malformed when longer than any line should be.
fn short(raw: &[u8], what: &'static str) -> Result<(), WireError> {
    if raw.len() > 1024 {
        Err(WireError::Malformed(what))
    } else {
        Ok(())
    }
}

fn find_crlf(b: &[u8]) -> Option<usize> {
    b.windows(2).position(|w| w == b"\r\n")
}

/// Where the first event of `text` ends (after its blank line), if a whole one is there.
fn event_end(text: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(nl) = text[start..].iter().position(|&b| b == b'\n') {
        let line = &text[start..start + nl];
        if line.is_empty() || line == b"\r" {
            return Some(start + nl + 1);
        }
        start += nl + 1;
    }
    None
}

/// The fields of one event (`text` up to and with its blank line).
fn parse_event(text: &[u8]) -> Event<'_> {
    let mut event = Event::default();
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => continue,
            Some(k) => (&line[..k], &line[k + 1..]),
            None => (line, &line[line.len()..]),
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        match field {
            b"event" => event.name = value,
            b"id" => event.id = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()),
            b"data" if event.data.is_empty() => event.data = value,
            _ => {}
        }
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection to a listener of its own, and the server's end.
    async fn pair() -> (Conn, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (conn, accepted) = tokio::join!(Conn::open(addr, None), listener.accept());
        (conn.unwrap(), accepted.unwrap().0)
    }

    #[tokio::test]
    async fn thousands_of_interim_answers_are_skipped_without_growing_the_stack() {
        let (mut conn, mut server) = pair().await;
        let mut answer = "HTTP/1.1 100 Continue\r\n\r\n".repeat(2_000);
        answer.push_str("HTTP/1.1 204 No Content\r\n\r\n");
        tokio::spawn(async move { server.write_all(answer.as_bytes()).await });
        assert_eq!(conn.head().await.unwrap().status, 204);
    }

    #[tokio::test]
    async fn a_chunked_event_stream_is_decoded_and_its_buffer_given_back() {
        let (mut conn, mut server) = pair().await;
        let event = "event: waiting\nid: 3\ndata: {}\n\n";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        );
        server.write_all(answer.as_bytes()).await.unwrap();
        assert_eq!(conn.head().await.unwrap().status, 200);
        let (n, heard) = loop {
            if let Some((n, e)) = conn.next_event().unwrap() {
                break (n, (e.name.to_vec(), e.id));
            }
            conn.fill().await.unwrap();
        };
        assert_eq!(heard, (b"waiting".to_vec(), Some(3)));
        conn.consume(n);
        assert_eq!(
            conn.buf.capacity(),
            0,
            "nothing left to handle, no buffer kept"
        );
        // The stream's end, split across reads, ends the stream.
        server.write_all(b"0\r").await.unwrap();
        server.write_all(b"\n\r\n").await.unwrap();
        let ended = loop {
            match conn.next_event() {
                Err(e) => break e,
                Ok(_) => conn.fill().await.unwrap(),
            }
        };
        assert!(matches!(ended, WireError::Closed), "{ended}");
    }

    #[tokio::test]
    async fn nonsense_is_an_error_never_a_panic() {
        for answer in [
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 99999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXY",
            b"NOT HTTP\r\n\r\n",
        ] {
            let (mut conn, mut server) = pair().await;
            server.write_all(answer).await.unwrap();
            drop(server);
            let outcome = async {
                conn.head().await?;
                loop {
                    if conn.next_event()?.is_some() {
                        return Ok(());
                    }
                    conn.fill().await?;
                }
            };
            let outcome: Result<(), WireError> = outcome.await;
            assert!(outcome.is_err(), "{}", String::from_utf8_lossy(answer));
        }
    }

    #[test]
    fn events_are_split_at_blank_lines_and_comments_skipped() {
        let text = b": keep-alive\n\nevent: waiting\nid: 7\ndata: {\"a\":1}\n\nevent: x";
        let first = event_end(text).unwrap();
        assert!(parse_event(&text[..first]).data.is_empty());
        let rest = &text[first..];
        let second = event_end(rest).unwrap();
        let event = parse_event(&rest[..second]);
        assert_eq!(event.name, b"waiting");
        assert_eq!(event.id, Some(7));
        assert_eq!(event.data, b"{\"a\":1}");
        assert_eq!(event_end(&rest[second..]), None);
        let crlf = b"event: admitted\r\ndata: {}\r\n\r\n";
        assert_eq!(
            parse_event(&crlf[..event_end(crlf).unwrap()]).name,
            b"admitted"
        );
    }
}
