//! The Redis commands the store and its scripts send, answered from the [`Keyspace`] with
//! Redis's reply shapes (RESP2, what scripts see) and its error strings.
//!
//! Only what this program sends is here, with the options it uses and those next to them
//! that cost nothing; anything else is `ERR unknown command`, as Redis answers an unknown one.
//! Keys and generic commands are in this file, the types' own in `hashes.rs` (hashes and
//! sets), `zsets.rs` and `streams.rs`. Scripts (`FCALL`, `EVALSHA`, …) are not commands of
//! this layer: the engine runs them (`../mod.rs`), and a script cannot call them.

mod hashes;
mod streams;
mod zsets;

use std::borrow::Cow;

use bytes::Bytes;
use tokio::sync::broadcast;

use super::keyspace::{Data, Keyspace, WRONGTYPE};

/// A Redis reply.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reply {
    /// The nil bulk string.
    Nil,
    Int(i64),
    Bulk(Bytes),
    /// A simple string (`+OK`).
    Status(Cow<'static, str>),
    /// An error, its code first (`ERR syntax error`).
    Error(String),
    Array(Vec<Reply>),
}

impl Reply {
    fn error(message: &str) -> Reply {
        Reply::Error(message.to_owned())
    }

    fn bulk(bytes: &[u8]) -> Reply {
        Reply::Bulk(Bytes::copy_from_slice(bytes))
    }

    fn text(text: String) -> Reply {
        Reply::Bulk(Bytes::from(text))
    }

    fn ok() -> Reply {
        Reply::Status(Cow::Borrowed("OK"))
    }
}

impl From<&'static str> for Reply {
    /// The error of a failed check (`WRONGTYPE …`, `ERR …`).
    fn from(message: &'static str) -> Reply {
        Reply::error(message)
    }
}

/// A message `PUBLISH`ed on a channel.
#[derive(Clone, Debug)]
pub(crate) struct Message {
    pub(crate) channel: Bytes,
    pub(crate) payload: Bytes,
}

/// What commands act on: the keys, the clock of this request, and where messages go.
pub(crate) struct Db {
    pub(super) keys: Keyspace,
    /// This request's time (µs since the epoch): `TIME` answers it, expiry follows its ms.
    now_us: u64,
    pub(super) events: broadcast::Sender<Message>,
}

impl Db {
    pub(super) fn new(events: broadcast::Sender<Message>) -> Db {
        Db {
            keys: Keyspace::default(),
            now_us: 0,
            events,
        }
    }

    /// Starts a request (a command, a pipeline, a script) at `now_us`.
    pub(super) fn begin(&mut self, now_us: u64) {
        self.now_us = now_us;
        self.keys.begin(now_us / 1000);
    }
}

/// A command's result: its reply, or the error reply it stopped at.
type Answer = Result<Reply, Reply>;

/// Runs one command (`args[0]` its name).
pub(crate) fn run(db: &mut Db, args: &[&[u8]]) -> Reply {
    let Some(name) = args.first() else {
        return Reply::error("ERR empty command");
    };
    let mut upper = [0u8; 24];
    let name_upper = match upper.get_mut(..name.len()) {
        Some(buf) => {
            buf.copy_from_slice(name);
            buf.make_ascii_uppercase();
            &*buf
        }
        None => &[][..],
    };
    let answer = match name_upper {
        b"GET" => arity(args, 2).and_then(|_| get(db, args[1])),
        b"SET" => arity(args, -3).and_then(|_| set(db, args)),
        b"MGET" => arity(args, -2).map(|_| mget(db, &args[1..])),
        b"INCR" => arity(args, 2).and_then(|_| incr_by(db, args[1], 1)),
        b"DECR" => arity(args, 2).and_then(|_| incr_by(db, args[1], -1)),
        b"INCRBY" => arity(args, 3).and_then(|_| incr_by(db, args[1], int(args[2])?)),
        b"DECRBY" => arity(args, 3).and_then(|_| {
            let by = int(args[2])?
                .checked_neg()
                .ok_or(Reply::error("ERR decrement would overflow"))?;
            incr_by(db, args[1], by)
        }),
        b"DEL" | b"UNLINK" => arity(args, -2).map(|_| {
            let n = args[1..].iter().filter(|k| db.keys.remove(k)).count();
            Reply::Int(n as i64)
        }),
        b"EXISTS" => arity(args, -2).map(|_| {
            let n = args[1..].iter().filter(|k| db.keys.exists(k)).count();
            Reply::Int(n as i64)
        }),
        b"TYPE" => {
            arity(args, 2).map(|_| Reply::Status(Cow::Borrowed(type_name(db.keys.get(args[1])))))
        }
        b"PEXPIRE" => arity(args, -3).and_then(|_| expire(db, args, 1)),
        b"EXPIRE" => arity(args, -3).and_then(|_| expire(db, args, 1000)),
        b"PTTL" => arity(args, 2).map(|_| ttl(db, args[1], 1)),
        b"TTL" => arity(args, 2).map(|_| ttl(db, args[1], 1000)),
        b"PERSIST" => arity(args, 2).map(|_| {
            let had = matches!(db.keys.expiry(args[1]), Some(Some(_)));
            if had {
                db.keys.set_expiry(args[1], None);
            }
            Reply::Int(i64::from(had))
        }),
        b"PUBLISH" | b"SPUBLISH" => arity(args, 3).map(|_| publish(db, args[1], args[2])),
        b"PING" => match args.len() {
            1 => Ok(Reply::Status(Cow::Borrowed("PONG"))),
            2 => Ok(Reply::bulk(args[1])),
            _ => Err(wrong_arity(args[0])),
        },
        b"ECHO" => arity(args, 2).map(|_| Reply::bulk(args[1])),
        b"TIME" => arity(args, 1).map(|_| {
            Reply::Array(vec![
                Reply::text((db.now_us / 1_000_000).to_string()),
                Reply::text((db.now_us % 1_000_000).to_string()),
            ])
        }),
        b"INFO" => Ok(Reply::text(
            "# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\n\
             executable:embedded\r\n"
                .to_owned(),
        )),
        b"SELECT" => arity(args, 2).and_then(|_| match int(args[1])? {
            0 => Ok(Reply::ok()),
            _ => Err(Reply::error("ERR DB index is out of range")),
        }),
        b"HSET" | b"HMSET" => hashes::hset(db, args),
        b"HGET" => arity(args, 3).and_then(|_| hashes::hget(db, args[1], args[2])),
        b"HMGET" => arity(args, -3).and_then(|_| hashes::hmget(db, args[1], &args[2..])),
        b"HDEL" => arity(args, -3).and_then(|_| hashes::hdel(db, args[1], &args[2..])),
        b"HLEN" => arity(args, 2).and_then(|_| hashes::hlen(db, args[1])),
        b"HEXISTS" => arity(args, 3).and_then(|_| hashes::hexists(db, args[1], args[2])),
        b"HGETALL" => arity(args, 2).and_then(|_| hashes::hgetall(db, args[1])),
        b"HINCRBY" => arity(args, 4).and_then(|_| hashes::hincrby(db, args)),
        b"HINCRBYFLOAT" => arity(args, 4).and_then(|_| hashes::hincrbyfloat(db, args)),
        b"SADD" => arity(args, -3).and_then(|_| hashes::sadd(db, args[1], &args[2..])),
        b"SREM" => arity(args, -3).and_then(|_| hashes::srem(db, args[1], &args[2..])),
        b"SMEMBERS" => arity(args, 2).and_then(|_| hashes::smembers(db, args[1])),
        b"SISMEMBER" => arity(args, 3).and_then(|_| hashes::sismember(db, args[1], args[2])),
        b"SCARD" => arity(args, 2).and_then(|_| hashes::scard(db, args[1])),
        b"ZADD" => arity(args, -4).and_then(|_| zsets::zadd(db, args)),
        b"ZREM" => arity(args, -3).and_then(|_| zsets::zrem(db, args[1], &args[2..])),
        b"ZSCORE" => arity(args, 3).and_then(|_| zsets::zscore(db, args[1], args[2])),
        b"ZRANK" => arity(args, 3).and_then(|_| zsets::zrank(db, args[1], args[2])),
        b"ZCARD" => arity(args, 2).and_then(|_| zsets::zcard(db, args[1])),
        b"ZCOUNT" => arity(args, 4).and_then(|_| zsets::zcount(db, args)),
        b"ZRANGEBYSCORE" => arity(args, -4).and_then(|_| zsets::zrangebyscore(db, args)),
        b"ZREMRANGEBYSCORE" => arity(args, 4).and_then(|_| zsets::zremrangebyscore(db, args)),
        b"ZRANGE" => arity(args, -4).and_then(|_| zsets::zrange(db, args, false)),
        b"ZREVRANGE" => arity(args, -4).and_then(|_| zsets::zrange(db, args, true)),
        b"ZPOPMIN" => arity(args, -2).and_then(|_| zsets::zpopmin(db, args)),
        b"XADD" => arity(args, -5).and_then(|_| streams::xadd(db, args)),
        b"XRANGE" => arity(args, -4).and_then(|_| streams::xrange(db, args)),
        b"XLEN" => arity(args, 2).and_then(|_| streams::xlen(db, args[1])),
        _ => Err(Reply::Error(format!(
            "ERR unknown command '{}', with args beginning with: {}",
            String::from_utf8_lossy(name),
            args[1..]
                .iter()
                .map(|a| format!("'{}' ", String::from_utf8_lossy(a)))
                .collect::<String>()
        ))),
    };
    answer.unwrap_or_else(|e| e)
}

/// Checks the argument count as Redis does: `n` exactly, or at least `-n`.
fn arity(args: &[&[u8]], n: i32) -> Result<(), Reply> {
    let len = args.len() as i32;
    if (n >= 0 && len != n) || (n < 0 && len < -n) {
        return Err(wrong_arity(args[0]));
    }
    Ok(())
}

fn wrong_arity(name: &[u8]) -> Reply {
    Reply::Error(format!(
        "ERR wrong number of arguments for '{}' command",
        String::from_utf8_lossy(name).to_ascii_lowercase()
    ))
}

/// Whether an option argument is `name` (any case).
fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

fn syntax() -> Reply {
    Reply::error("ERR syntax error")
}

/// A 64-bit integer as Redis reads one: digits with an optional `-`, nothing else.
pub(super) fn parse_int(arg: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(arg).ok()?;
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && text != "-0";
    if !canonical {
        return None;
    }
    text.parse().ok()
}

fn int(arg: &[u8]) -> Result<i64, Reply> {
    parse_int(arg).ok_or(Reply::error("ERR value is not an integer or out of range"))
}

/// A double as Redis reads one (`inf` and `-inf` too); never NaN.
pub(super) fn parse_float(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty()
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace)
    {
        return None;
    }
    let value: f64 = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => text.parse().ok()?,
    };
    (!value.is_nan()).then_some(value)
}

/// A double as Redis writes a score: an integer without a fraction, else the shortest text
/// that reads back as the same double.
pub(crate) fn format_double(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if value.fract() == 0.0 && value.abs() < 9.007_199_254_740_992e15 {
        return (value as i64).to_string();
    }
    value.to_string()
}

fn type_name(data: Option<&Data>) -> &'static str {
    match data {
        None => "none",
        Some(Data::Str(_)) => "string",
        Some(Data::Hash(_)) => "hash",
        Some(Data::Set(_)) => "set",
        Some(Data::ZSet(_)) => "zset",
        Some(Data::Stream(_)) => "stream",
    }
}

fn get(db: &Db, key: &[u8]) -> Answer {
    match db.keys.get(key) {
        None => Ok(Reply::Nil),
        Some(Data::Str(v)) => Ok(Reply::Bulk(v.clone())),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

fn mget(db: &Db, keys: &[&[u8]]) -> Reply {
    Reply::Array(
        keys.iter()
            .map(|k| match db.keys.get(k) {
                Some(Data::Str(v)) => Reply::Bulk(v.clone()),
                _ => Reply::Nil,
            })
            .collect(),
    )
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
fn set(db: &mut Db, args: &[&[u8]]) -> Answer {
    let (key, value) = (args[1], args[2]);
    let (mut nx, mut xx, mut get_old, mut keep_ttl) = (false, false, false, false);
    let mut expires_at: Option<u64> = None;
    let now = db.keys.now_ms();
    let mut i = 3;
    while i < args.len() {
        let a = args[i];
        if is(a, "NX") && !xx {
            nx = true;
        } else if is(a, "XX") && !nx {
            xx = true;
        } else if is(a, "GET") {
            get_old = true;
        } else if is(a, "KEEPTTL") && expires_at.is_none() {
            keep_ttl = true;
        } else if (is(a, "EX") || is(a, "PX") || is(a, "EXAT") || is(a, "PXAT"))
            && expires_at.is_none()
            && !keep_ttl
        {
            let Some(n) = args.get(i + 1) else {
                return Err(syntax());
            };
            let n = int(n)?;
            let invalid = || Reply::error("ERR invalid expire time in 'set' command");
            if n <= 0 {
                return Err(invalid());
            }
            let n = n as u64;
            let at = if is(a, "EX") {
                n.checked_mul(1000).and_then(|ms| ms.checked_add(now))
            } else if is(a, "PX") {
                n.checked_add(now)
            } else if is(a, "EXAT") {
                n.checked_mul(1000)
            } else {
                Some(n)
            };
            expires_at = Some(at.ok_or_else(invalid)?);
            i += 1;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    let old = match db.keys.get(key) {
        None => None,
        Some(Data::Str(v)) => Some(v.clone()),
        Some(_) if get_old => return Err(WRONGTYPE.into()),
        Some(_) => None,
    };
    let exists = db.keys.exists(key);
    let answer = |set: bool| match (get_old, &old) {
        (true, Some(v)) => Reply::Bulk(v.clone()),
        (true, None) => Reply::Nil,
        (false, _) if set => Reply::ok(),
        (false, _) => Reply::Nil,
    };
    if (nx && exists) || (xx && !exists) {
        return Ok(answer(false));
    }
    let data = Data::Str(Bytes::copy_from_slice(value));
    if keep_ttl {
        db.keys.replace(key, data);
    } else {
        db.keys.put(key, data);
    }
    if let Some(at) = expires_at {
        db.keys.set_expiry(key, Some(at));
    }
    Ok(answer(true))
}

fn incr_by(db: &mut Db, key: &[u8], by: i64) -> Answer {
    let current = match db.keys.get(key) {
        None => 0,
        Some(Data::Str(v)) => int(v)?,
        Some(_) => return Err(WRONGTYPE.into()),
    };
    let new = current
        .checked_add(by)
        .ok_or(Reply::error("ERR increment or decrement would overflow"))?;
    db.keys
        .replace(key, Data::Str(Bytes::from(new.to_string())));
    Ok(Reply::Int(new))
}

/// `PEXPIRE key ms [NX|XX|GT|LT]` (`unit` 1) and `EXPIRE key s …` (`unit` 1000).
fn expire(db: &mut Db, args: &[&[u8]], unit: i64) -> Answer {
    let key = args[1];
    let n = int(args[2])?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in &args[3..] {
        if is(a, "NX") {
            nx = true;
        } else if is(a, "XX") {
            xx = true;
        } else if is(a, "GT") {
            gt = true;
        } else if is(a, "LT") {
            lt = true;
        } else {
            return Err(Reply::Error(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(a)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || Reply::error("ERR invalid expire time in 'pexpire' command");
    let at = n
        .checked_mul(unit)
        .and_then(|ms| ms.checked_add(db.keys.now_ms() as i64))
        .ok_or_else(invalid)?;
    let Some(current) = db.keys.expiry(key) else {
        return Ok(Reply::Int(0));
    };
    let allowed = match current {
        None => !xx && !gt,
        Some(current) => !nx && (!gt || at > current as i64) && (!lt || at < current as i64),
    };
    if !allowed {
        return Ok(Reply::Int(0));
    }
    db.keys.set_expiry(key, Some(at.max(0) as u64));
    Ok(Reply::Int(1))
}

/// `PTTL` (`unit` 1) and `TTL` (`unit` 1000): -2 without the key, -1 without an expiry.
fn ttl(db: &Db, key: &[u8], unit: u64) -> Reply {
    match db.keys.expiry(key) {
        None => Reply::Int(-2),
        Some(None) => Reply::Int(-1),
        Some(Some(at)) => {
            let left = at.saturating_sub(db.keys.now_ms());
            Reply::Int(((left + unit / 2) / unit) as i64)
        }
    }
}

/// Delivers `payload` to every subscriber in this process; how many there are.
fn publish(db: &Db, channel: &[u8], payload: &[u8]) -> Reply {
    let message = Message {
        channel: Bytes::copy_from_slice(channel),
        payload: Bytes::copy_from_slice(payload),
    };
    // Nobody subscribed is fine: nobody hears it, as on Redis.
    let heard = db.events.send(message).unwrap_or(0);
    Reply::Int(heard as i64)
}

#[cfg(test)]
mod tests;
