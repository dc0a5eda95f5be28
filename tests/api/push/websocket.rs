//! Following a ticket over WebSocket, and every stream ending on shutdown.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::WAIT;
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::ticket_id;

#[tokio::test]
async fn websocket_frames_carry_the_same_json_and_event_names() {
    for backend in [Backend::Memory, Backend::Redis, Backend::Cluster] {
        let app = spawn_app_with(backend, config(1, Duration::from_secs(60))).await;
        app.create("w").await;
        let [a, b] = <[String; 2]>::try_from(app.join_many("w", 2).await).unwrap();
        let url = app.ws_url("w", &b);
        let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let mut next = async || -> Value {
            loop {
                let msg = tokio::time::timeout(WAIT, ws.next())
                    .await
                    .unwrap()
                    .unwrap()
                    .unwrap();
                if let Message::Text(t) = msg {
                    return serde_json::from_str(&t).unwrap();
                }
            }
        };
        let first = next().await;
        assert_eq!(first["event"], "waiting");
        assert_eq!(first["position"], 2);
        assert_eq!(first["ticketId"], b.as_str());
        app.open("w").await;
        let opened = next().await;
        assert!(opened.get("paused").is_none(), "open: no longer paused");
        let moved = if opened["position"] == 2 {
            next().await
        } else {
            opened
        };
        assert_eq!(
            (moved["event"].as_str(), moved["position"].as_u64()),
            (Some("waiting"), Some(1))
        );
        let admitted = next().await;
        assert_eq!(admitted["event"], "admitted");
        assert_eq!(admitted["status"], "ADMITTED");
        assert_eq!(app.ticket_json("w", &a).await["status"], "ADMITTED");
        ws.close(None).await.unwrap();
        app.stop().await;
    }
}

#[tokio::test]
async fn shutdown_ends_every_stream_cleanly() {
    let app = spawn_app_with(Backend::Memory, config(1, Duration::from_secs(60))).await;
    app.create("x").await;
    let t = ticket_id(&app.join_ok("x").await);
    let mut sse = app.events("x", &t).await;
    sse.next(WAIT).await.unwrap();
    let url = app.ws_url("x", &t);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    ws.next().await.unwrap().unwrap();
    let stopping = tokio::spawn(app.stop());
    assert!(sse.next(WAIT).await.is_none(), "SSE ends");
    // Cleanly: a close frame, never a dropped connection.
    tokio::time::timeout(WAIT, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
                None => panic!("the socket ended without a close frame"),
                Some(Err(e)) => panic!("the socket broke instead of closing: {e}"),
            }
        }
    })
    .await
    .expect("the socket closes once the server stops");
    stopping.await.unwrap();
}

/// A fan's frame past the server's bound (4 KiB) is answered with a close frame saying so
/// (1009, "message too big"), whole or fragmented, never a connection dropped mid-frame.
#[tokio::test]
async fn a_frame_too_big_is_closed_with_1009() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};

    let app = spawn_app_with(Backend::Memory, config(1, Duration::from_secs(60))).await;
    app.create("big").await;
    let t = ticket_id(&app.join_ok("big").await);
    let fragment = |op: Data, fin: bool| {
        Message::Frame(Frame::message(vec![b'x'; 3 * 1024], OpCode::Data(op), fin))
    };
    let whole = vec![Message::Binary(vec![0; 64 * 1024].into())];
    // Two frames of 3 KiB each, one message of 6 KiB.
    let fragmented = vec![fragment(Data::Text, false), fragment(Data::Continue, true)];
    for sent in [whole, fragmented] {
        let (mut ws, _) = tokio_tungstenite::connect_async(app.ws_url("big", &t))
            .await
            .unwrap();
        let first = tokio::time::timeout(WAIT, ws.next()).await.unwrap();
        assert!(matches!(first, Some(Ok(Message::Text(_)))), "{first:?}");
        for message in sent {
            // The server may close before it took the whole frame: the send's own answer
            // is not what is tested.
            let _ = ws.send(message).await;
        }
        let close: Option<CloseFrame> = tokio::time::timeout(WAIT, async {
            loop {
                match ws.next().await {
                    Some(Ok(Message::Close(close))) => return close,
                    Some(Ok(_)) => {}
                    None => panic!("the socket ended without a close frame"),
                    Some(Err(e)) => panic!("the socket broke instead of closing: {e}"),
                }
            }
        })
        .await
        .expect("a close frame in time");
        let close = close.expect("a close frame with a code");
        assert_eq!(close.code, CloseCode::Size, "{close:?}");
    }
    app.stop().await;
}
