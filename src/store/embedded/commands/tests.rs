//! The command layer against Redis's own answers (reply shapes, error strings, formats).

use super::*;

fn db() -> Db {
    let (events, _) = broadcast::channel(16);
    let mut db = Db::new(events);
    db.begin(1_700_000_000_000_000);
    db
}

fn run_s(db: &mut Db, args: &[&str]) -> Reply {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    run(db, &args)
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

fn err(s: &str) -> Reply {
    Reply::Error(s.to_owned())
}

#[test]
fn strings_answer_as_redis_does() {
    let mut db = db();
    assert_eq!(run_s(&mut db, &["GET", "k"]), Reply::Nil);
    assert_eq!(run_s(&mut db, &["SET", "k", "v"]), Reply::ok());
    assert_eq!(run_s(&mut db, &["get", "k"]), bulk("v"));
    assert_eq!(run_s(&mut db, &["SET", "k", "w", "NX"]), Reply::Nil);
    assert_eq!(run_s(&mut db, &["SET", "k", "w", "XX", "GET"]), bulk("v"));
    assert_eq!(
        run_s(&mut db, &["SET", "n", "1", "NX", "PX", "0"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(
        run_s(&mut db, &["SET", "n", "1", "NX", "NX", "XX"]),
        err("ERR syntax error")
    );
    assert_eq!(run_s(&mut db, &["INCRBY", "n", "5"]), Reply::Int(5));
    assert_eq!(
        run_s(&mut db, &["INCR", "k"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run_s(&mut db, &["MGET", "n", "nope", "k"]),
        Reply::Array(vec![bulk("5"), Reply::Nil, bulk("w")])
    );
    assert_eq!(run_s(&mut db, &["DEL", "n", "nope", "k"]), Reply::Int(2));
    assert_eq!(
        run_s(&mut db, &["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run_s(&mut db, &["SET", "big", "9223372036854775807"]),
        Reply::ok()
    );
    assert_eq!(
        run_s(&mut db, &["INCR", "big"]),
        err("ERR increment or decrement would overflow")
    );
    assert!(
        matches!(run_s(&mut db, &["NOPE", "x"]), Reply::Error(e) if e.starts_with("ERR unknown command 'NOPE'"))
    );
}

#[test]
fn a_key_of_another_type_is_wrongtype_everywhere() {
    let mut db = db();
    run_s(&mut db, &["HSET", "h", "f", "1"]);
    run_s(&mut db, &["SET", "s", "x"]);
    let wrong = err(WRONGTYPE);
    assert_eq!(run_s(&mut db, &["GET", "h"]), wrong);
    assert_eq!(run_s(&mut db, &["HGET", "s", "f"]), wrong);
    assert_eq!(run_s(&mut db, &["ZADD", "h", "1", "m"]), wrong);
    assert_eq!(run_s(&mut db, &["ZRANK", "s", "m"]), wrong);
    assert_eq!(run_s(&mut db, &["SISMEMBER", "h", "m"]), wrong);
    assert_eq!(run_s(&mut db, &["XADD", "h", "*", "a", "b"]), wrong);
    // MGET answers nil for a non-string, as Redis does.
    assert_eq!(
        run_s(&mut db, &["MGET", "h"]),
        Reply::Array(vec![Reply::Nil])
    );
    assert_eq!(run_s(&mut db, &["TYPE", "h"]), Reply::Status("hash".into()));
}

#[test]
fn hashes_count_and_increment_as_redis_does() {
    let mut db = db();
    assert_eq!(
        run_s(&mut db, &["HSET", "h", "a", "1", "b", "2"]),
        Reply::Int(2)
    );
    assert_eq!(
        run_s(&mut db, &["HSET", "h", "a", "3", "c", "4"]),
        Reply::Int(1)
    );
    assert_eq!(
        run_s(&mut db, &["HSET", "h", "a"]),
        err("ERR wrong number of arguments for 'hset' command")
    );
    assert_eq!(
        run_s(&mut db, &["HMGET", "h", "a", "zz", "c"]),
        Reply::Array(vec![bulk("3"), Reply::Nil, bulk("4")])
    );
    assert_eq!(run_s(&mut db, &["HINCRBY", "h", "a", "-5"]), Reply::Int(-2));
    assert_eq!(
        run_s(&mut db, &["HINCRBYFLOAT", "h", "x", "0.1"]),
        bulk("0.1")
    );
    // Redis's long double sum, rounded to 17 decimals: 0.3, not 0.30000000000000004.
    assert_eq!(
        run_s(&mut db, &["HINCRBYFLOAT", "h", "x", "0.2"]),
        bulk("0.3")
    );
    assert_eq!(
        run_s(&mut db, &["HINCRBYFLOAT", "h", "x", "-0.3"]),
        bulk("0")
    );
    assert_eq!(
        run_s(&mut db, &["HINCRBYFLOAT", "h", "x", "1733000000.5"]),
        bulk("1733000000.5")
    );
    assert_eq!(
        run_s(&mut db, &["HINCRBYFLOAT", "h", "y", "1e3"]),
        bulk("1000")
    );
    run_s(&mut db, &["HSET", "h", "s", "abc"]);
    assert_eq!(
        run_s(&mut db, &["HINCRBYFLOAT", "h", "s", "1"]),
        err("ERR hash value is not a float")
    );
    assert_eq!(
        run_s(&mut db, &["HINCRBY", "h", "s", "1"]),
        err("ERR hash value is not an integer")
    );
    assert_eq!(run_s(&mut db, &["HLEN", "h"]), Reply::Int(6));
    assert_eq!(
        run_s(&mut db, &["HDEL", "h", "a", "b", "c", "x", "y", "s", "zz"]),
        Reply::Int(6)
    );
    // The emptied hash is gone.
    assert_eq!(run_s(&mut db, &["EXISTS", "h"]), Reply::Int(0));
}

#[test]
fn sorted_sets_rank_range_and_pop_as_redis_does() {
    let mut db = db();
    assert_eq!(
        run_s(
            &mut db,
            &["ZADD", "z", "3", "c", "1", "a", "2", "b", "2.5", "bb"]
        ),
        Reply::Int(4)
    );
    assert_eq!(run_s(&mut db, &["ZADD", "z", "1", "a"]), Reply::Int(0));
    assert_eq!(
        run_s(&mut db, &["ZADD", "z", "x", "a"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        run_s(&mut db, &["ZADD", "z", "NX", "XX", "1", "a"]),
        err("ERR XX and NX options at the same time are not compatible")
    );
    assert_eq!(
        run_s(&mut db, &["ZADD", "z", "GT", "0", "a"]),
        Reply::Int(0)
    );
    assert_eq!(run_s(&mut db, &["ZSCORE", "z", "a"]), bulk("1"));
    assert_eq!(run_s(&mut db, &["ZSCORE", "z", "bb"]), bulk("2.5"));
    assert_eq!(run_s(&mut db, &["ZRANK", "z", "c"]), Reply::Int(3));
    assert_eq!(run_s(&mut db, &["ZRANK", "z", "none"]), Reply::Nil);
    assert_eq!(
        run_s(&mut db, &["ZCOUNT", "z", "(1", "+inf"]),
        Reply::Int(3)
    );
    assert_eq!(
        run_s(&mut db, &["ZCOUNT", "z", "x", "+inf"]),
        err("ERR min or max is not a float")
    );
    assert_eq!(
        run_s(
            &mut db,
            &[
                "ZRANGEBYSCORE",
                "z",
                "-inf",
                "2.5",
                "WITHSCORES",
                "LIMIT",
                "1",
                "2"
            ]
        ),
        Reply::Array(vec![bulk("b"), bulk("2"), bulk("bb"), bulk("2.5")])
    );
    assert_eq!(
        run_s(&mut db, &["ZREVRANGE", "z", "0", "0", "WITHSCORES"]),
        Reply::Array(vec![bulk("c"), bulk("3")])
    );
    assert_eq!(
        run_s(&mut db, &["ZRANGE", "z", "-2", "-1"]),
        Reply::Array(vec![bulk("bb"), bulk("c")])
    );
    assert_eq!(
        run_s(&mut db, &["ZPOPMIN", "z", "2"]),
        Reply::Array(vec![bulk("a"), bulk("1"), bulk("b"), bulk("2")])
    );
    assert_eq!(
        run_s(&mut db, &["ZREMRANGEBYSCORE", "z", "-inf", "(3"]),
        Reply::Int(1)
    );
    assert_eq!(run_s(&mut db, &["ZCARD", "z"]), Reply::Int(1));
    assert_eq!(run_s(&mut db, &["ZREM", "z", "c", "d"]), Reply::Int(1));
    assert_eq!(run_s(&mut db, &["EXISTS", "z"]), Reply::Int(0));
    assert_eq!(run_s(&mut db, &["ZPOPMIN", "z"]), Reply::Array(vec![]));
}

#[test]
fn streams_number_entries_and_trim_in_whole_nodes() {
    let mut db = db();
    let first = run_s(&mut db, &["XADD", "s", "*", "kind", "tick"]);
    assert_eq!(first, bulk("1700000000000-0"));
    assert_eq!(
        run_s(&mut db, &["XADD", "s", "*", "kind", "draw"]),
        bulk("1700000000000-1")
    );
    assert_eq!(
        run_s(&mut db, &["XADD", "s", "1-1", "a", "b"]),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(
        run_s(
            &mut db,
            &["XRANGE", "s", "(1700000000000-0", "+", "COUNT", "5"]
        ),
        Reply::Array(vec![Reply::Array(vec![
            bulk("1700000000000-1"),
            Reply::Array(vec![bulk("kind"), bulk("draw")]),
        ])])
    );
    for _ in 0..300 {
        run_s(&mut db, &["XADD", "s", "MAXLEN", "~", "150", "*", "k", "v"]);
    }
    // Approximate trimming keeps at least the threshold, and less than a node more.
    let Reply::Int(len) = run_s(&mut db, &["XLEN", "s"]) else {
        panic!("XLEN answers a number")
    };
    assert!((150..250).contains(&len), "{len}");
    run_s(&mut db, &["XADD", "s", "MAXLEN", "10", "*", "k", "v"]);
    assert_eq!(run_s(&mut db, &["XLEN", "s"]), Reply::Int(10));
}

#[test]
fn expiry_follows_the_request_clock() {
    let mut db = db();
    let now = 1_700_000_000_000_000;
    run_s(&mut db, &["SET", "k", "v", "PX", "100"]);
    run_s(&mut db, &["HSET", "h", "f", "v"]);
    assert_eq!(run_s(&mut db, &["PEXPIRE", "h", "50", "XX"]), Reply::Int(0));
    assert_eq!(run_s(&mut db, &["PEXPIRE", "h", "50"]), Reply::Int(1));
    assert_eq!(run_s(&mut db, &["PTTL", "k"]), Reply::Int(100));
    assert_eq!(run_s(&mut db, &["PTTL", "nope"]), Reply::Int(-2));
    db.begin(now + 60_000);
    assert_eq!(run_s(&mut db, &["HGET", "h", "f"]), Reply::Nil);
    assert_eq!(run_s(&mut db, &["PTTL", "k"]), Reply::Int(40));
    db.begin(now + 100_000);
    assert_eq!(run_s(&mut db, &["GET", "k"]), Reply::Nil);
    // Both were swept when the request began: nothing is kept for them.
    assert_eq!(db.keys.len(), 0);
    run_s(&mut db, &["SET", "p", "1"]);
    assert_eq!(run_s(&mut db, &["PTTL", "p"]), Reply::Int(-1));
    assert_eq!(
        run_s(&mut db, &["TIME"]),
        Reply::Array(vec![bulk("1700000000"), bulk("100000")])
    );
}

#[test]
fn sets_and_publish() {
    let (events, mut heard) = broadcast::channel(4);
    let mut db = Db::new(events);
    db.begin(0);
    assert_eq!(run_s(&mut db, &["SADD", "s", "a", "b", "a"]), Reply::Int(2));
    assert_eq!(run_s(&mut db, &["SISMEMBER", "s", "b"]), Reply::Int(1));
    assert_eq!(run_s(&mut db, &["SREM", "s", "a", "b"]), Reply::Int(2));
    assert_eq!(run_s(&mut db, &["SMEMBERS", "s"]), Reply::Array(vec![]));
    assert_eq!(run_s(&mut db, &["PUBLISH", "ch", "hello"]), Reply::Int(1));
    let m = heard.try_recv().unwrap();
    assert_eq!(
        (&m.channel[..], &m.payload[..]),
        (&b"ch"[..], &b"hello"[..])
    );
}

#[test]
fn numbers_read_and_write_as_redis_does() {
    assert_eq!(parse_int(b"-12"), Some(-12));
    for bad in [
        &b"+1"[..],
        b"01",
        b" 1",
        b"1.0",
        b"",
        b"-0",
        b"99999999999999999999",
    ] {
        assert_eq!(parse_int(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
    assert_eq!(parse_float(b"-inf"), Some(f64::NEG_INFINITY));
    assert_eq!(parse_float(b"nan"), None);
    assert_eq!(format_double(3.0), "3");
    assert_eq!(format_double(-0.5), "-0.5");
    assert_eq!(format_double(1733000000.123), "1733000000.123");
    assert_eq!(format_double(f64::INFINITY), "inf");
}
