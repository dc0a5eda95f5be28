//! A `text/event-stream` parser, as the HTML standard's EventSource reads one.
//!
//! Bytes go in as they arrive, in chunks cut anywhere (even inside a CRLF or a UTF-8
//! character); whole events come out. It keeps what an EventSource keeps across events: the
//! last event id, which a reconnect sends back as `Last-Event-ID`, and the reconnection time
//! the server asked for with `retry:`.

use std::time::Duration;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `message` when the server named none.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last event id in force when this event was dispatched (ids carry over).
    pub id: Option<String>,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read; kept as bytes so a UTF-8 character split across chunks
    /// is decoded whole.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF starting the next one belongs to that line end.
    after_cr: bool,
    /// The byte-order mark is skipped once, at the very start of the stream only.
    started: bool,
    event: String,
    data: String,
    /// Whether any `data:` field was seen since the last dispatch (`data:` with nothing
    /// after it still counts).
    has_data: bool,
    last_id: Option<String>,
    retry: Option<Duration>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser for a reconnection: the last event id carries over, as in an EventSource.
    pub fn resuming(last_id: Option<String>) -> Self {
        SseParser {
            last_id,
            ..Self::default()
        }
    }

    /// The id to send as `Last-Event-ID` on reconnecting.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection time the server last asked for.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Feeds one chunk; returns the events it completed, in order.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if chunk.is_empty() {
            return events;
        }
        if !self.started {
            // The BOM may itself arrive split; wait until three bytes or a mismatch decide.
            let probe_len = (self.line.len() + chunk.len()).min(3);
            let mut probe = self.line.clone();
            probe.extend_from_slice(&chunk[..probe_len - self.line.len()]);
            if b"\xEF\xBB\xBF".starts_with(&probe) {
                if probe.len() < 3 {
                    self.line = probe;
                    return events;
                }
                chunk = &chunk[3 - self.line.len()..];
                self.line.clear();
            }
            self.started = true;
        }
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&chunk[..end]);
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.process_line(&line) {
                events.push(event);
            }
            let crlf = chunk[end] == b'\r' && chunk.get(end + 1) == Some(&b'\n');
            if chunk[end] == b'\r' && end + 1 == chunk.len() {
                self.after_cr = true;
            }
            chunk = &chunk[end + if crlf { 2 } else { 1 }..];
        }
        self.line.extend_from_slice(chunk);
        events
    }

    fn process_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        let line = String::from_utf8_lossy(line);
        if line.starts_with(':') {
            // A comment: the server's keep-alive.
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // An id holding NUL is ignored, by the standard: it could not be sent back.
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            // Unknown fields are ignored, so servers can add some.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            // No data: nothing is dispatched, but the event name is reset all the same.
            return None;
        }
        Some(SseEvent {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Vec<SseEvent> {
        SseParser::new().feed(input)
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        }
    }

    #[test]
    fn reads_named_events_with_ids() {
        let got = parse_all(b"event: waiting\nid: 7\ndata: {\"position\":3}\n\n");
        assert_eq!(got, vec![ev("waiting", "{\"position\":3}", Some("7"))]);
    }

    #[test]
    fn joins_multi_line_data_and_defaults_the_name() {
        let got = parse_all(b"data: one\ndata:two\ndata\n\n");
        assert_eq!(got, vec![ev("message", "one\ntwo\n", None)]);
    }

    #[test]
    fn skips_comments_and_unknown_fields() {
        let got = parse_all(b": keep-alive\n\nfoo: bar\n:another\ndata: x\n\n");
        assert_eq!(got, vec![ev("message", "x", None)]);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_its_name_does_not_leak() {
        let got = parse_all(b"event: waiting\nid: 1\n\ndata: y\n\n");
        // The id sticks (ids carry over), the name does not.
        assert_eq!(got, vec![ev("message", "y", Some("1"))]);
    }

    #[test]
    fn accepts_every_line_ending() {
        for input in [
            &b"event: a\r\ndata: 1\r\n\r\n"[..],
            &b"event: a\rdata: 1\r\r"[..],
            &b"event: a\ndata: 1\n\n"[..],
        ] {
            assert_eq!(parse_all(input), vec![ev("a", "1", None)], "{input:?}");
        }
    }

    #[test]
    fn chunks_cut_anywhere_give_the_same_events() {
        let input = "\u{FEFF}event: waiting\r\nid: 42\r\ndata: position 1 · soon\r\n\r\n: ping\r\n\
                     event: admitted\r\ndata: a\r\ndata: b\r\n\r\n"
            .as_bytes();
        let whole = parse_all(input);
        assert_eq!(
            whole,
            vec![
                ev("waiting", "position 1 · soon", Some("42")),
                ev("admitted", "a\nb", Some("42"))
            ]
        );
        for size in 1..input.len() {
            let mut parser = SseParser::new();
            let got: Vec<_> = input.chunks(size).flat_map(|c| parser.feed(c)).collect();
            assert_eq!(got, whole, "chunk size {size}");
        }
    }

    #[test]
    fn a_leading_bom_is_dropped_once_only() {
        let got = parse_all(b"\xEF\xBB\xBFdata: x\n\n");
        assert_eq!(got, vec![ev("message", "x", None)]);
        // Later in the stream the same bytes are data, not a BOM.
        let got = parse_all("data: x\n\ndata: \u{FEFF}y\n\n".as_bytes());
        assert_eq!(got[1].data, "\u{FEFF}y");
    }

    #[test]
    fn retry_takes_digits_only_and_ids_with_nul_are_ignored() {
        let mut p = SseParser::new();
        p.feed(b"retry: 2000\nid: 5\n\nretry: 3s\nid: a\0b\n\n");
        assert_eq!(p.retry(), Some(Duration::from_millis(2000)));
        assert_eq!(p.last_event_id(), Some("5"));
    }

    #[test]
    fn an_empty_id_resets_the_last_event_id() {
        let mut p = SseParser::resuming(Some("9".into()));
        p.feed(b"id\n\n");
        assert_eq!(p.last_event_id(), Some(""));
    }

    #[test]
    fn only_one_space_after_the_colon_is_stripped() {
        assert_eq!(parse_all(b"data:  two\n\n")[0].data, " two");
    }

    #[test]
    fn an_unfinished_event_is_held_until_its_blank_line() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: x\n").is_empty());
        assert_eq!(p.feed(b"\n"), vec![ev("message", "x", None)]);
    }
}
