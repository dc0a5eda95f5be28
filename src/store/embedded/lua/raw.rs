//! The two functions every call of a script runs most, `redis.call` (and `redis.pcall`) and
//! `cjson.decode`, written against the Lua stack: mlua's typed API makes a reference for every
//! value it hands over, and a join's `ZADD` of a whole call's tickets, or the JSON of its
//! arguments, hands over hundreds. Here a command's arguments are read where Lua keeps them,
//! and a reply or a decoded document is built on the stack directly.
//!
//! Lua raises an error with `longjmp`, which must not cross a Rust frame that still owns
//! something to drop: each function does its Rust work in a scope that ends, dropping all it
//! owns, before it raises. (Only the allocator failing inside Lua could jump out of a scope
//! early; what that leaks is the least of that process's troubles.)

use std::ffi::c_int;

use mlua::ffi::{self, lua_State};

use super::NOT_FROM_SCRIPTS;
use crate::store::embedded::commands::{self, Db, Reply};

/// The deepest document `cjson.decode` reads, as lua-cjson.
const MAX_DEPTH: usize = 1000;

/// `redis.call(command, arg…)`: the reply, or the command's error raised.
pub(super) unsafe extern "C-unwind" fn redis_call(state: *mut lua_State) -> c_int {
    unsafe { call(state, true) }
}

/// `redis.pcall(command, arg…)`: the reply, an error as `{err = …}`.
pub(super) unsafe extern "C-unwind" fn redis_pcall(state: *mut lua_State) -> c_int {
    unsafe { call(state, false) }
}

unsafe fn call(state: *mut lua_State, raise: bool) -> c_int {
    let raised = {
        // SAFETY: the arguments are on the stack for the whole call.
        match unsafe { run(state) } {
            Reply::Error(e) if raise => {
                unsafe { push_bytes(state, e.as_bytes()) };
                true
            }
            reply => {
                unsafe { push_reply(state, reply) };
                false
            }
        }
    };
    if raised {
        unsafe { ffi::lua_error(state) }
    }
    1
}

/// Where an argument's bytes are.
enum Arg {
    /// A Lua string on the stack.
    Lua(*const u8, usize),
    /// A number, written in `numbers[from..to]`.
    Number(usize, usize),
}

/// Runs the command whose name and arguments are on the stack.
unsafe fn run(state: *mut lua_State) -> Reply {
    let n = unsafe { ffi::lua_gettop(state) };
    if n < 1 {
        return Reply::Error(
            "ERR Please specify at least one argument for this redis lib call".into(),
        );
    }
    let mut numbers = String::new();
    let mut found = Vec::with_capacity(n as usize);
    for i in 1..=n {
        match unsafe { ffi::lua_type(state, i) } {
            ffi::LUA_TSTRING => {
                let mut len = 0;
                let p = unsafe { ffi::lua_tolstring(state, i, &mut len) };
                found.push(Arg::Lua(p.cast(), len));
            }
            ffi::LUA_TNUMBER => {
                let x = unsafe { ffi::lua_tonumber(state, i) };
                let from = numbers.len();
                numbers.push_str(&commands::format_double(x));
                found.push(Arg::Number(from, numbers.len()));
            }
            _ => {
                return Reply::Error(
                    "ERR Lua redis lib command arguments must be strings or integers".into(),
                );
            }
        }
    }
    let args: Vec<&[u8]> = found
        .iter()
        .map(|a| match *a {
            // SAFETY: a string on the stack stays where it is while it is there.
            Arg::Lua(p, len) if !p.is_null() => unsafe { std::slice::from_raw_parts(p, len) },
            Arg::Lua(..) => &[][..],
            Arg::Number(from, to) => &numbers.as_bytes()[from..to],
        })
        .collect();
    if NOT_FROM_SCRIPTS
        .iter()
        .any(|c| args[0].eq_ignore_ascii_case(c.as_bytes()))
    {
        return Reply::Error("ERR This Redis command is not allowed from script".into());
    }
    // SAFETY: this state is the one mlua made; it outlives the call.
    let lua = unsafe { mlua::Lua::get_or_init_from_ptr(state) };
    match lua.try_app_data_mut::<Db>() {
        Ok(Some(mut db)) => commands::run(&mut db, &args),
        _ => Reply::Error("ERR the store is busy".into()),
    }
}

unsafe fn push_bytes(state: *mut lua_State, bytes: &[u8]) {
    unsafe { ffi::lua_pushlstring_(state, bytes.as_ptr().cast(), bytes.len()) }
}

/// Pushes a reply as a script sees it (RESP2): nil `false`, status `{ok = …}`, error
/// `{err = …}`, array a table.
unsafe fn push_reply(state: *mut lua_State, reply: Reply) {
    unsafe {
        ffi::lua_checkstack(state, 4);
        match reply {
            Reply::Nil => ffi::lua_pushboolean(state, 0),
            Reply::Int(i) => ffi::lua_pushnumber(state, i as f64),
            Reply::Bulk(b) => push_bytes(state, &b),
            Reply::Status(s) => {
                ffi::lua_createtable(state, 0, 1);
                push_bytes(state, s.as_bytes());
                ffi::lua_setfield(state, -2, c"ok".as_ptr());
            }
            Reply::Error(e) => {
                ffi::lua_createtable(state, 0, 1);
                push_bytes(state, e.as_bytes());
                ffi::lua_setfield(state, -2, c"err".as_ptr());
            }
            Reply::Array(items) => {
                ffi::lua_createtable(state, items.len().min(c_int::MAX as usize) as c_int, 0);
                for (i, item) in items.into_iter().enumerate() {
                    push_reply(state, item);
                    ffi::lua_rawseti_(state, -2, (i + 1) as c_int);
                }
            }
        }
    }
}

/// `cjson.decode(text)`: objects and arrays as tables, `null` as `cjson.null`.
pub(super) unsafe extern "C-unwind" fn cjson_decode(state: *mut lua_State) -> c_int {
    let raised = {
        let mut len = 0;
        let p = unsafe { ffi::lua_tolstring(state, 1, &mut len) };
        let outcome = if p.is_null() {
            Err("bad argument #1 to 'decode' (string expected)".to_owned())
        } else {
            // SAFETY: the argument stays on the stack while it is read.
            let text = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) };
            let mut parser = Parser {
                text,
                at: 0,
                state,
                scratch: Vec::new(),
            };
            parser.document()
        };
        match outcome {
            Ok(()) => false,
            Err(message) => {
                unsafe { push_bytes(state, message.as_bytes()) };
                true
            }
        }
    };
    if raised {
        unsafe { ffi::lua_error(state) }
    }
    1
}

/// A JSON reader that pushes what it reads.
struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    state: *mut lua_State,
    /// A string with escapes, as decoded.
    scratch: Vec<u8>,
}

impl Parser<'_> {
    fn document(&mut self) -> Result<(), String> {
        self.value(1)?;
        self.blank();
        if self.at < self.text.len() {
            return Err(self.error("Expected the end but found trailing garbage"));
        }
        Ok(())
    }

    fn error(&self, what: &str) -> String {
        format!("{what} at character {}", self.at + 1)
    }

    fn blank(&mut self) {
        while self
            .text
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn expect(&mut self, word: &[u8]) -> Result<(), String> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(())
        } else {
            Err(self.error("Expected value but found invalid token"))
        }
    }

    /// Reads one value and pushes it.
    fn value(&mut self, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(self.error("Found too many nested data structures"));
        }
        // SAFETY: `state` is the running state; a table, a key and a value at most at once.
        if unsafe { ffi::lua_checkstack(self.state, 3) } == 0 {
            return Err(self.error("Too many nested data structures for the stack"));
        }
        self.blank();
        let state = self.state;
        match self.text.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                unsafe { ffi::lua_createtable(state, 0, 4) };
                self.blank();
                if self.text.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(());
                }
                loop {
                    self.blank();
                    if self.text.get(self.at) != Some(&b'"') {
                        return Err(
                            self.error("Expected object key string but found invalid token")
                        );
                    }
                    self.string()?;
                    self.blank();
                    if self.text.get(self.at) != Some(&b':') {
                        return Err(self.error("Expected colon but found invalid token"));
                    }
                    self.at += 1;
                    self.value(depth + 1)?;
                    unsafe { ffi::lua_rawset(state, -3) };
                    self.blank();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(());
                        }
                        _ => {
                            return Err(
                                self.error("Expected comma or object end but found invalid token")
                            );
                        }
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                unsafe { ffi::lua_createtable(state, 4, 0) };
                self.blank();
                if self.text.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(());
                }
                let mut i: c_int = 1;
                loop {
                    self.value(depth + 1)?;
                    unsafe { ffi::lua_rawseti_(state, -2, i) };
                    i = i.saturating_add(1);
                    self.blank();
                    match self.text.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(());
                        }
                        _ => {
                            return Err(
                                self.error("Expected comma or array end but found invalid token")
                            );
                        }
                    }
                }
            }
            Some(b'"') => self.string(),
            Some(b't') => {
                self.expect(b"true")?;
                unsafe { ffi::lua_pushboolean(state, 1) };
                Ok(())
            }
            Some(b'f') => {
                self.expect(b"false")?;
                unsafe { ffi::lua_pushboolean(state, 0) };
                Ok(())
            }
            Some(b'n') => {
                self.expect(b"null")?;
                // cjson.null: the null light userdata.
                unsafe { ffi::lua_pushlightuserdata(state, std::ptr::null_mut()) };
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => {
                let from = self.at;
                while self
                    .text
                    .get(self.at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.at += 1;
                }
                let number = std::str::from_utf8(&self.text[from..self.at])
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok());
                match number {
                    Some(x) => {
                        unsafe { ffi::lua_pushnumber(state, x) };
                        Ok(())
                    }
                    None => {
                        self.at = from;
                        Err(self.error("Expected value but found invalid number"))
                    }
                }
            }
            _ => Err(self.error("Expected value but found invalid token")),
        }
    }

    /// Reads a string (at its opening quote) and pushes it.
    fn string(&mut self) -> Result<(), String> {
        self.at += 1;
        let from = self.at;
        // Without escapes (the common case) it is pushed from where it lies.
        loop {
            match self.text.get(self.at) {
                None => return Err(self.error("Expected string end but found end of input")),
                Some(b'"') => {
                    unsafe { push_bytes(self.state, &self.text[from..self.at]) };
                    self.at += 1;
                    return Ok(());
                }
                Some(b'\\') => break,
                Some(_) => self.at += 1,
            }
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.text[from..self.at]);
        loop {
            match self.text.get(self.at) {
                None => return Err(self.error("Expected string end but found end of input")),
                Some(b'"') => {
                    self.at += 1;
                    unsafe { push_bytes(self.state, &self.scratch) };
                    return Ok(());
                }
                Some(b'\\') => {
                    let escaped = self.text.get(self.at + 1).copied();
                    self.at += 2;
                    let byte = match escaped {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => {
                            let c = self.unicode()?;
                            let mut buf = [0; 4];
                            self.scratch
                                .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            continue;
                        }
                        _ => {
                            self.at -= 2;
                            return Err(self.error("Expected string but found invalid escape code"));
                        }
                    };
                    self.scratch.push(byte);
                }
                Some(&b) => {
                    self.scratch.push(b);
                    self.at += 1;
                }
            }
        }
    }

    /// The character of a `\u` escape (after its `u`), a surrogate pair taken whole.
    fn unicode(&mut self) -> Result<char, String> {
        let invalid = |p: &Self| p.error("Expected value but found invalid unicode escape code");
        let hex = |p: &mut Self| -> Option<u32> {
            let digits = p.text.get(p.at..p.at + 4)?;
            let value = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
            p.at += 4;
            Some(value)
        };
        let high = hex(self).ok_or_else(|| invalid(self))?;
        if !(0xD800..0xDC00).contains(&high) {
            return char::from_u32(high).ok_or_else(|| invalid(self));
        }
        if !self.text[self.at..].starts_with(b"\\u") {
            return Err(invalid(self));
        }
        self.at += 2;
        let low = hex(self).ok_or_else(|| invalid(self))?;
        if !(0xDC00..0xE000).contains(&low) {
            return Err(invalid(self));
        }
        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            .ok_or_else(|| invalid(self))
    }
}
