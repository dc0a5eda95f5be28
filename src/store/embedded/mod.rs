//! The embedded store's Redis: an in-process server of exactly the commands the Redis store
//! sends, so that [`RedisStore`](super::RedisStore) runs unchanged on it and every rule is
//! the one Lua script Redis runs.
//!
//! [`Embedded`] is a connection (`redis::aio::ConnectionLike`): each command, pipeline or
//! script is answered in-process with the `redis::Value` Redis would send. Behind it:
//!
//! - `keyspace.rs`: the keys (strings, hashes, sets, sorted sets, streams) and their expiry;
//!   `zset.rs`, a sorted set with ranks in O(log n);
//! - `commands/`: the commands, with Redis's reply shapes and error strings;
//! - `lua/`: Lua 5.1 with Redis's `redis`, `cjson` and `bit`, running the store's library of
//!   functions (`FCALL`) and its scripts (`EVALSHA`);
//! - pub/sub: `PUBLISH` reaches this process's subscribers ([`Embedded::subscribe`]).
//!
//! One lock guards it all, and a request (a command, a pipeline, a script) holds it from start
//! to end, so a script runs alone, as in Redis. Time is tokio's clock from the wall clock at
//! creation: `TIME`, expiry and stream ids follow it, so tests can pause and advance it. Not
//! durable: the process's end forgets everything.

mod commands;
mod keyspace;
mod lua;
mod zset;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;

use self::commands::{Db, Message, Reply};
use self::lua::Scripting;

/// Messages a subscriber may fall behind by before it skips some (it then sees a gap in a
/// show's versions and reads a snapshot, as after a lost subscription to Redis).
const EVENTS_BUFFERED: usize = 4096;

/// A connection to the in-process Redis; clones share it.
#[derive(Clone)]
pub struct Embedded {
    shared: Arc<Shared>,
}

struct Shared {
    engine: Mutex<Scripting>,
    events: broadcast::Sender<Message>,
    /// The wall clock at `anchor`, in µs since the epoch.
    anchor_us: u64,
    anchor: Instant,
}

impl Default for Embedded {
    fn default() -> Self {
        Self::new()
    }
}

impl Embedded {
    /// An empty server.
    pub fn new() -> Embedded {
        let (events, _) = broadcast::channel(EVENTS_BUFFERED);
        let db = Db::new(events.clone());
        // Only the allocator failing stops a Lua state from being made.
        let engine = Scripting::new(db).expect("a Lua state can be made");
        let anchor_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        Embedded {
            shared: Arc::new(Shared {
                engine: Mutex::new(engine),
                events,
                anchor_us,
                anchor: Instant::now(),
            }),
        }
    }

    /// µs since the epoch by tokio's clock.
    fn now_us(&self) -> u64 {
        self.shared.anchor_us + self.shared.anchor.elapsed().as_micros() as u64
    }

    fn lock(&self) -> MutexGuard<'_, Scripting> {
        // A panic under the lock leaves the keys as a script had them half-way, as a Redis
        // killed mid-script would; carrying on serves every other show.
        self.shared
            .engine
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs one command now; its reply as Redis sends it.
    pub(crate) fn execute(&self, cmd: &Cmd) -> Value {
        let mut engine = self.lock();
        let now = self.now_us();
        engine.with_db(|db| db.begin(now));
        to_value(execute(&mut engine, &arguments(cmd)))
    }

    /// Runs a pipeline's commands in one go (a transaction answers as Redis does: `OK`,
    /// `QUEUED` for each, then their replies in one array).
    fn execute_pipeline(&self, pipeline: &Pipeline) -> Vec<Value> {
        let mut engine = self.lock();
        let now = self.now_us();
        engine.with_db(|db| db.begin(now));
        let replies: Vec<Value> = pipeline
            .cmd_iter()
            .map(|cmd| to_value(execute(&mut engine, &arguments(cmd))))
            .collect();
        if !pipeline.is_transaction() {
            return replies;
        }
        let mut out = vec![Value::Okay];
        out.extend(replies.iter().map(|_| Value::SimpleString("QUEUED".into())));
        out.push(Value::Array(replies));
        out
    }

    /// Every message published on `channel` from now on. A subscriber that falls more than
    /// [`EVENTS_BUFFERED`] behind skips what it missed.
    pub(crate) fn subscribe(&self, channel: &'static str) -> BoxStream<'static, Bytes> {
        BroadcastStream::new(self.shared.events.subscribe())
            .filter_map(move |m| async move {
                m.ok()
                    .filter(|m| m.channel == channel.as_bytes())
                    .map(|m| m.payload)
            })
            .boxed()
    }
}

impl ConnectionLike for Embedded {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let value = self.execute(cmd);
        Box::pin(async move { Ok(value) })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let values = self.execute_pipeline(pipeline);
        Box::pin(async move { Ok(values.into_iter().skip(offset).take(count).collect()) })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

/// A command's arguments, its name first.
fn arguments(cmd: &Cmd) -> Vec<&[u8]> {
    cmd.args_iter()
        .map(|a| match a {
            Arg::Simple(bytes) => bytes,
            // A cursor (`SCAN`) starts at 0; no command of the store scans.
            _ => b"0",
        })
        .collect()
}

/// Runs a command: the scripting ones here, every other in `commands/`.
fn execute(engine: &mut Scripting, args: &[&[u8]]) -> Reply {
    let Some(name) = args.first() else {
        return Reply::Error("ERR empty command".into());
    };
    let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
    if is("FCALL") || is("FCALL_RO") {
        return with_keys(args, |keys, argv| engine.fcall(args[1], keys, argv));
    }
    if is("EVALSHA") || is("EVALSHA_RO") {
        return with_keys(args, |keys, argv| engine.evalsha(args[1], keys, argv));
    }
    if is("EVAL") || is("EVAL_RO") {
        let body = args.get(1).copied().unwrap_or_default();
        return with_keys(args, |keys, argv| engine.eval(body, keys, argv));
    }
    if is("SCRIPT") {
        return script(engine, args);
    }
    if is("FUNCTION") {
        return function(engine, args);
    }
    engine
        .with_db(|db| commands::run(db, args))
        .unwrap_or_else(|| Reply::Error("ERR the store is busy".into()))
}

/// Splits `NAME target numkeys key… arg…` into keys and arguments for `run`.
fn with_keys(args: &[&[u8]], run: impl FnOnce(&[&[u8]], &[&[u8]]) -> Reply) -> Reply {
    if args.len() < 3 {
        return Reply::Error(format!(
            "ERR wrong number of arguments for '{}' command",
            String::from_utf8_lossy(args[0]).to_ascii_lowercase()
        ));
    }
    let Some(n) = commands::parse_int(args[2]) else {
        return Reply::Error("ERR value is not an integer or out of range".into());
    };
    if n < 0 {
        return Reply::Error("ERR Number of keys can't be negative".into());
    }
    let rest = &args[3..];
    if n as usize > rest.len() {
        return Reply::Error("ERR Number of keys can't be greater than number of args".into());
    }
    let (keys, argv) = rest.split_at(n as usize);
    run(keys, argv)
}

/// `SCRIPT LOAD body`, `SCRIPT EXISTS sha…`, `SCRIPT FLUSH`.
fn script(engine: &mut Scripting, args: &[&[u8]]) -> Reply {
    match args.get(1).map(|s| s.to_ascii_uppercase()).as_deref() {
        Some(b"LOAD") if args.len() == 3 => engine.script_load(args[2]),
        Some(b"EXISTS") if args.len() > 2 => engine.script_exists(&args[2..]),
        Some(b"FLUSH") => {
            engine.script_flush();
            Reply::Status("OK".into())
        }
        _ => {
            Reply::Error("ERR unknown subcommand or wrong number of arguments for 'script'".into())
        }
    }
}

/// `FUNCTION LOAD [REPLACE] code`, `FUNCTION FLUSH`.
fn function(engine: &mut Scripting, args: &[&[u8]]) -> Reply {
    match args.get(1).map(|s| s.to_ascii_uppercase()).as_deref() {
        Some(b"LOAD") if args.len() == 3 => engine.function_load(args[2], false),
        Some(b"LOAD") if args.len() == 4 && args[2].eq_ignore_ascii_case(b"REPLACE") => {
            engine.function_load(args[3], true)
        }
        Some(b"FLUSH") => {
            engine.function_flush();
            Reply::Status("OK".into())
        }
        _ => Reply::Error(
            "ERR unknown subcommand or wrong number of arguments for 'function'".into(),
        ),
    }
}

/// A reply as redis-rs reads it off the wire.
fn to_value(reply: Reply) -> Value {
    match reply {
        Reply::Nil => Value::Nil,
        Reply::Int(i) => Value::Int(i),
        Reply::Bulk(b) => Value::BulkString(b.to_vec()),
        Reply::Status(s) if s == "OK" => Value::Okay,
        Reply::Status(s) => Value::SimpleString(s.into_owned()),
        Reply::Error(e) => {
            // An error line is one line.
            let line = e.replace(['\r', '\n'], " ");
            redis::parse_redis_value(format!("-{line}\r\n").as_bytes())
                .unwrap_or_else(|_| Value::SimpleString(line))
        }
        Reply::Array(items) => Value::Array(items.into_iter().map(to_value).collect()),
    }
}

#[cfg(test)]
mod tests;
