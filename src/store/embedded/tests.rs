//! The connection as redis-rs drives it: commands, pipelines, scripts by SHA, pub/sub, and
//! time on tokio's clock.

use std::time::Duration;

use futures::StreamExt;
use redis::{AsyncCommands, ErrorKind, Script, ServerErrorKind};

use super::*;

#[tokio::test(start_paused = true)]
async fn expiry_and_time_follow_tokios_paused_clock() {
    let mut conn = Embedded::new();
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .arg("EX")
        .arg(10)
        .query_async(&mut conn)
        .await
        .unwrap();
    let t0: (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    tokio::time::advance(Duration::from_millis(9_999)).await;
    let v: Option<String> = conn.get("k").await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    let pttl: i64 = conn.pttl("k").await.unwrap();
    assert_eq!(pttl, 1);
    tokio::time::advance(Duration::from_millis(1)).await;
    let v: Option<String> = conn.get("k").await.unwrap();
    assert_eq!(v, None);
    let t1: (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let elapsed_us = (t1.0 * 1_000_000 + t1.1) - (t0.0 * 1_000_000 + t0.1);
    assert_eq!(elapsed_us, 10_000_000);
}

#[tokio::test]
async fn pipelines_answer_each_command_and_transactions_as_one() {
    let mut conn = Embedded::new();
    let (n, (a, b)): (i64, (Option<String>, Option<String>)) = redis::pipe()
        .hset("h", "a", "1")
        .ignore()
        .incr("n", 2)
        .cmd("HMGET")
        .arg("h")
        .arg("a")
        .arg("b")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!((n, a.as_deref(), b), (2, Some("1"), None));
    let (x, y): (i64, i64) = redis::pipe()
        .atomic()
        .incr("n", 1)
        .incr("n", 1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!((x, y), (3, 4));
    // An error in a pipeline is that command's.
    let answers: Vec<redis::Value> = redis::pipe()
        .ignore_errors()
        .cmd("HGET")
        .arg("n")
        .arg("f")
        .get("n")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(matches!(&answers[0], redis::Value::ServerError(e) if e.code() == "WRONGTYPE"));
    assert_eq!(answers[1], redis::Value::BulkString(b"4".to_vec()));
}

#[tokio::test]
async fn a_script_unknown_by_sha_is_loaded_and_run() {
    let mut conn = Embedded::new();
    let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    let n: i64 = script
        .key("c")
        .arg(5)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(n, 5);
    let e = redis::cmd("EVALSHA")
        .arg("ffffffffffffffffffffffffffffffffffffffff")
        .arg(0)
        .query_async::<redis::Value>(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Server(ServerErrorKind::NoScript));
    // A script's error is an error of the call, never a panic.
    let e = Script::new("return nil .. 'x'")
        .invoke_async::<_, redis::Value>(&mut conn)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("attempt to concatenate"), "{e}");
}

#[tokio::test]
async fn what_a_script_publishes_reaches_subscribers_of_its_channel() {
    let mut conn = Embedded::new();
    let mut events = conn.subscribe("wr:events");
    let mut others = conn.subscribe("other");
    let heard: i64 = Script::new("return redis.call('PUBLISH', KEYS[1], ARGV[1])")
        .key("wr:events")
        .arg("{\"show\":\"x\"}")
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(heard, 2, "both subscribers are in this process");
    assert_eq!(&events.next().await.unwrap()[..], b"{\"show\":\"x\"}");
    let _: i64 = conn.publish("other", "o").await.unwrap();
    assert_eq!(&others.next().await.unwrap()[..], b"o");
}

#[tokio::test]
async fn the_stores_library_loads_and_its_functions_answer() {
    let mut conn = Embedded::new();
    let lib = "#!lua name=t\nredis.register_function('hello', function(keys, argv) \
               return cjson.encode({hi = argv[1]}) end)";
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(lib)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(name, "t");
    let text: String = redis::cmd("FCALL")
        .arg("hello")
        .arg(0)
        .arg("you")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(text, r#"{"hi":"you"}"#);
    let e = redis::cmd("FCALL")
        .arg("gone")
        .arg(0)
        .query_async::<String>(&mut conn)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("Function not found"), "{e}");
    let e = redis::cmd("FCALL")
        .arg("hello")
        .arg(3)
        .arg("k")
        .query_async::<String>(&mut conn)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("greater than number of args"), "{e}");
}
