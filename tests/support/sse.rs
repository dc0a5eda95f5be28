//! Following a ticket over Server-Sent Events, as a test reads them.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

/// One Server-Sent Event as a test sees it.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// A minimal SSE reader over a real HTTP response: enough of the format for our server's
/// events (named events, ids, one-line JSON data, comments).
pub struct SseReader {
    stream: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl SseReader {
    pub async fn connect(client: &Client, url: &str, last_event_id: Option<&str>) -> SseReader {
        let mut req = client.get(url).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        SseReader::from_response(req.send().await.unwrap())
    }

    /// Reads the events of an answer already had (asserting a 200 event stream).
    pub fn from_response(r: Response) -> SseReader {
        assert_eq!(r.status(), StatusCode::OK, "{}", r.url());
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        SseReader {
            stream: r.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// The next event, `None` when the stream ended; panics after `within`.
    pub async fn next(&mut self, within: Duration) -> Option<SseEvent> {
        tokio::time::timeout(within, self.next_inner())
            .await
            .unwrap_or_else(|_| panic!("no SSE event within {within:?}"))
    }

    async fn next_inner(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let (mut event, mut id, mut data) = (None, None, None);
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data = Some(serde_json::from_str(v.trim()).unwrap());
                    }
                }
                match (event, data) {
                    (Some(event), Some(data)) => return Some(SseEvent { event, id, data }),
                    _ => continue, // a keep-alive comment or a bare retry
                }
            }
            match self.stream.next().await {
                Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                _ => return None,
            }
        }
    }

    /// Everything already received, without waiting for more than `quiet`.
    pub async fn drain(&mut self, quiet: Duration) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout(quiet, self.next_inner()).await {
            out.push(e);
        }
        out
    }
}
