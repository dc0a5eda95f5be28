//! Scripts as Redis runs them: one Lua 5.1 state (Redis's Lua) with Redis's libraries —
//! `redis` (`call`, `pcall`, `error_reply`, `status_reply`, `sha1hex`, `log`,
//! `register_function`, …), `cjson` (`cjson.rs`) and `bit` (`bit.rs`) — and Redis's
//! conversions of values between Lua and replies. `redis.call`, `redis.pcall` and
//! `cjson.decode`, what a call runs most, work on the Lua stack directly (`raw.rs`).
//!
//! The [`Db`] lives in the state's app data, where `redis.call` reaches it; whoever runs a
//! script holds the engine's lock, so a script runs alone, as in Redis. A library of functions
//! (`FUNCTION LOAD`) is run once and keeps its functions; a script (`SCRIPT LOAD`, `EVAL`) is
//! compiled once and kept by its SHA-1. Every Lua error, from a command or from the script,
//! becomes an error reply: nothing a script does panics the caller.
//!
//! The conversions are Redis's (RESP2, what scripts see by default):
//! - reply → Lua: integer → number, bulk → string, nil → `false`, array → table (its nils
//!   `false`), status → `{ok = …}`, error → `{err = …}` (`redis.pcall`; `redis.call` raises it);
//! - Lua → reply: number → integer (truncated), string → bulk, `true` → 1, `false` and `nil`
//!   → nil, `{err = …}` → error, `{ok = …}` → status, any other table → array up to its first
//!   nil;
//! - a number given to `redis.call` → its integer digits when whole, else the shortest text
//!   that reads back as the same double (Redis ≥ 7.2; 7.0 writes `%.17g`, the same double).

mod bit;
mod cjson;
mod raw;

use std::collections::HashMap;

use bytes::Bytes;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value, Variadic};

use super::commands::{Db, Reply};

/// The Lua state with its functions and scripts.
pub(crate) struct Scripting {
    lua: Lua,
    /// Functions by name (`FCALL`).
    functions: HashMap<Vec<u8>, Function>,
    /// Libraries by name, with their functions' names.
    libraries: HashMap<String, Vec<Vec<u8>>>,
    /// Scripts by SHA-1 (hex, lower case) (`EVALSHA`).
    scripts: HashMap<String, Function>,
}

/// The functions a library registers while `FUNCTION LOAD` runs it.
#[derive(Default)]
struct Registering {
    active: bool,
    functions: Vec<(Vec<u8>, Function)>,
}

/// Commands a script may not call (scripts run scripts only from outside).
const NOT_FROM_SCRIPTS: [&str; 9] = [
    "EVAL",
    "EVALSHA",
    "EVAL_RO",
    "EVALSHA_RO",
    "FCALL",
    "FCALL_RO",
    "FUNCTION",
    "SCRIPT",
    "SUBSCRIBE",
];

impl Scripting {
    /// A state holding `db`, with Redis's libraries.
    pub(crate) fn new(db: Db) -> mlua::Result<Scripting> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )?;
        let globals = lua.globals();
        // Redis leaves out what reaches the file system.
        for name in ["dofile", "loadfile", "print"] {
            globals.raw_set(name, Value::Nil)?;
        }
        globals.raw_set("redis", redis_table(&lua)?)?;
        globals.raw_set("cjson", cjson::module(&lua)?)?;
        globals.raw_set("bit", bit::module(&lua)?)?;
        // As on Redis, a script may neither create a global variable nor read one that does
        // not exist: one that would fail there fails here too.
        let guard = lua.create_table()?;
        guard.raw_set(
            "__index",
            lua.create_function(|_, (_, name): (Value, Value)| -> mlua::Result<()> {
                let name = name.to_string().unwrap_or_default();
                Err(mlua::Error::RuntimeError(format!(
                    "Script attempted to access nonexistent global variable '{name}'"
                )))
            })?,
        )?;
        guard.raw_set(
            "__newindex",
            lua.create_function(
                |_, (_, name, _): (Value, Value, Value)| -> mlua::Result<()> {
                    let name = name.to_string().unwrap_or_default();
                    Err(mlua::Error::RuntimeError(format!(
                        "Script attempted to create global variable '{name}'"
                    )))
                },
            )?,
        )?;
        globals.set_metatable(Some(guard))?;
        lua.set_app_data(db);
        lua.set_app_data(Registering::default());
        Ok(Scripting {
            lua,
            functions: HashMap::new(),
            libraries: HashMap::new(),
            scripts: HashMap::new(),
        })
    }

    /// Runs `f` on the [`Db`] (a command from outside any script).
    pub(crate) fn with_db<R>(&self, f: impl FnOnce(&mut Db) -> R) -> Option<R> {
        let mut db = self.lua.try_app_data_mut::<Db>().ok()??;
        Some(f(&mut db))
    }

    /// `FUNCTION LOAD [REPLACE] code`: runs the library, keeps the functions it registers.
    pub(crate) fn function_load(&mut self, code: &[u8], replace: bool) -> Reply {
        let Some((header, body)) = split_header(code) else {
            return error("ERR Missing library metadata");
        };
        let Some(name) = header
            .split_whitespace()
            .find_map(|w| w.strip_prefix("name="))
            .map(str::to_owned)
        else {
            return error("ERR Library name was not given");
        };
        if self.libraries.contains_key(&name) && !replace {
            return Reply::Error(format!("ERR Library '{name}' already exists"));
        }
        let registered = self.register(body, &name);
        let functions = match registered {
            Ok(functions) => functions,
            Err(e) => return Reply::Error(format!("ERR Error registering functions: {e}")),
        };
        if functions.is_empty() {
            return error("ERR No functions registered");
        }
        let old = self.libraries.remove(&name).unwrap_or_default();
        if let Some((taken, _)) = functions
            .iter()
            .find(|(f, _)| self.functions.contains_key(f) && !old.contains(f))
        {
            self.libraries.insert(name, old);
            return Reply::Error(format!(
                "ERR Function {} already exists",
                String::from_utf8_lossy(taken)
            ));
        }
        for f in &old {
            self.functions.remove(f);
        }
        let names = functions.iter().map(|(f, _)| f.clone()).collect();
        self.functions.extend(functions);
        self.libraries.insert(name.clone(), names);
        Reply::Bulk(Bytes::from(name))
    }

    /// Runs a library's code with `redis.register_function` live; what it registered.
    fn register(&self, body: &[u8], name: &str) -> mlua::Result<Vec<(Vec<u8>, Function)>> {
        let mut state = self
            .lua
            .try_app_data_mut::<Registering>()
            .map_err(mlua::Error::external)?
            .ok_or_else(|| mlua::Error::runtime("no registry"))?;
        state.active = true;
        state.functions.clear();
        drop(state);
        let ran = self.lua.load(body).set_name(format!("@{name}")).exec();
        let mut state = self
            .lua
            .try_app_data_mut::<Registering>()
            .map_err(mlua::Error::external)?
            .ok_or_else(|| mlua::Error::runtime("no registry"))?;
        state.active = false;
        let functions = std::mem::take(&mut state.functions);
        ran.map(|()| functions)
    }

    /// `FCALL name numkeys key… arg…`.
    pub(crate) fn fcall(&self, name: &[u8], keys: &[&[u8]], argv: &[&[u8]]) -> Reply {
        let Some(function) = self.functions.get(name) else {
            return error("ERR Function not found");
        };
        let called = (|| {
            let keys = strings(&self.lua, keys)?;
            let argv = strings(&self.lua, argv)?;
            function.call::<Value>((keys, argv))
        })();
        finish(called, &String::from_utf8_lossy(name))
    }

    /// `SCRIPT LOAD body`: its SHA-1.
    pub(crate) fn script_load(&mut self, body: &[u8]) -> Reply {
        match self.compile(body) {
            Ok(sha) => Reply::Bulk(Bytes::from(sha)),
            Err(e) => e,
        }
    }

    /// Compiles a script unless it is known; its SHA-1.
    fn compile(&mut self, body: &[u8]) -> Result<String, Reply> {
        let sha = sha1_smol::Sha1::from(body).digest().to_string();
        if !self.scripts.contains_key(&sha) {
            let function = self
                .lua
                .load(body)
                .set_name(format!("@user_script:{sha}"))
                .into_function()
                .map_err(|e| {
                    Reply::Error(format!(
                        "ERR Error compiling script (new function): {}",
                        message(&e)
                    ))
                })?;
            self.scripts.insert(sha.clone(), function);
        }
        Ok(sha)
    }

    /// `EVALSHA sha numkeys key… arg…`.
    pub(crate) fn evalsha(&self, sha: &[u8], keys: &[&[u8]], argv: &[&[u8]]) -> Reply {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        let Some(function) = self.scripts.get(&sha) else {
            return error("NOSCRIPT No matching script. Please use EVAL.");
        };
        let called = (|| {
            let globals = self.lua.globals();
            globals.raw_set("KEYS", strings(&self.lua, keys)?)?;
            globals.raw_set("ARGV", strings(&self.lua, argv)?)?;
            function.call::<Value>(())
        })();
        finish(called, &sha)
    }

    /// `EVAL body numkeys key… arg…`.
    pub(crate) fn eval(&mut self, body: &[u8], keys: &[&[u8]], argv: &[&[u8]]) -> Reply {
        match self.compile(body) {
            Ok(sha) => self.evalsha(sha.as_bytes(), keys, argv),
            Err(e) => e,
        }
    }

    /// `SCRIPT EXISTS sha…`.
    pub(crate) fn script_exists(&self, shas: &[&[u8]]) -> Reply {
        Reply::Array(
            shas.iter()
                .map(|s| {
                    let sha = String::from_utf8_lossy(s).to_ascii_lowercase();
                    Reply::Int(i64::from(self.scripts.contains_key(&sha)))
                })
                .collect(),
        )
    }

    /// `SCRIPT FLUSH`.
    pub(crate) fn script_flush(&mut self) {
        self.scripts.clear();
    }

    /// `FUNCTION FLUSH`.
    pub(crate) fn function_flush(&mut self) {
        self.functions.clear();
        self.libraries.clear();
    }
}

/// The first line of a library (`#!lua name=…`) and the code after it.
fn split_header(code: &[u8]) -> Option<(&str, &[u8])> {
    let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let header = std::str::from_utf8(&code[..end])
        .ok()?
        .strip_prefix("#!lua")?;
    Some((header, code.get(end..).unwrap_or_default()))
}

fn error(message: &str) -> Reply {
    Reply::Error(message.to_owned())
}

/// A Lua array of strings.
fn strings(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// The reply of a script's run.
fn finish(called: mlua::Result<Value>, name: &str) -> Reply {
    match called {
        Ok(value) => from_lua(&value),
        Err(e) => {
            let text = message(&e);
            // An error a command raised keeps its code (`WRONGTYPE …`); any other is ERR.
            let coded = text.split_once(' ').is_some_and(|(code, _)| {
                !code.is_empty() && code.bytes().all(|b| b.is_ascii_uppercase())
            });
            if coded {
                Reply::Error(format!("{text} script: {name}"))
            } else {
                Reply::Error(format!("ERR {text} script: {name}"))
            }
        }
    }
}

/// The text of a Lua error, without the callback wrappers mlua adds.
fn message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => message(cause),
        mlua::Error::RuntimeError(text) => text.clone(),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// A script's return value as a reply.
pub(crate) fn from_lua(value: &Value) -> Reply {
    match value {
        Value::Nil | Value::Boolean(false) => Reply::Nil,
        Value::Boolean(true) => Reply::Int(1),
        Value::Integer(i) => Reply::Int(*i),
        // C's cast: toward zero.
        Value::Number(n) => Reply::Int(*n as i64),
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                return Reply::Error(e.to_string_lossy());
            }
            if let Ok(Value::String(ok)) = t.raw_get::<Value>("ok") {
                return Reply::Status(ok.to_string_lossy().into());
            }
            let mut items = Vec::new();
            for i in 1.. {
                match t.raw_get::<Value>(i) {
                    Ok(Value::Nil) | Err(_) => break,
                    Ok(v) => items.push(from_lua(&v)),
                }
            }
            Reply::Array(items)
        }
        _ => Reply::Nil,
    }
}

/// The `redis` table.
fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    // SAFETY: both follow the Lua stack's rules (`raw.rs`).
    redis.raw_set("call", unsafe { lua.create_c_function(raw::redis_call)? })?;
    redis.raw_set("pcall", unsafe { lua.create_c_function(raw::redis_pcall)? })?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, text: mlua::String| {
            let t = lua.create_table()?;
            t.raw_set("err", text)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, text: mlua::String| {
            let t = lua.create_table()?;
            t.raw_set("ok", text)?;
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, text: mlua::String| {
            Ok(sha1_smol::Sha1::from(&*text.as_bytes())
                .digest()
                .to_string())
        })?,
    )?;
    redis.raw_set(
        "setresp",
        lua.create_function(|_, version: i64| match version {
            2 => Ok(()),
            _ => Err(mlua::Error::runtime(
                "RESP version must be 2 in the embedded store",
            )),
        })?,
    )?;
    for (name, level) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
    ] {
        redis.raw_set(name, level)?;
    }
    redis.raw_set(
        "log",
        lua.create_function(|_, (level, text): (i64, mlua::String)| {
            let text = text.to_string_lossy();
            match level {
                3 => tracing::warn!(target: "lua", "{text}"),
                2 => tracing::info!(target: "lua", "{text}"),
                _ => tracing::debug!(target: "lua", "{text}"),
            }
            Ok(())
        })?,
    )?;
    // Effects replication is all Redis 7 does: nothing to choose.
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set(
        "register_function",
        lua.create_function(|lua, args: Variadic<Value>| register_function(lua, args))?,
    )?;
    Ok(redis)
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name = …,
/// callback = …, flags = …}`, while a library loads.
fn register_function(lua: &Lua, args: Variadic<Value>) -> mlua::Result<()> {
    let (name, callback) = match args.as_slice() {
        [Value::String(name), Value::Function(f)] => (name.as_bytes().to_vec(), f.clone()),
        [Value::Table(t)] => {
            let name: mlua::String = t.raw_get("function_name")?;
            let callback: Function = t.raw_get("callback")?;
            (name.as_bytes().to_vec(), callback)
        }
        _ => {
            return Err(mlua::Error::runtime(
                "wrong arguments to redis.register_function",
            ));
        }
    };
    let mut state = lua
        .try_app_data_mut::<Registering>()
        .map_err(mlua::Error::external)?
        .ok_or_else(|| mlua::Error::runtime("no registry"))?;
    if !state.active {
        return Err(mlua::Error::runtime(
            "redis.register_function can only be called on FUNCTION LOAD command",
        ));
    }
    state.functions.push((name, callback));
    Ok(())
}

#[cfg(test)]
mod tests;
