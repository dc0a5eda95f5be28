//! `cjson` as Redis ships it (lua-cjson 2.1 with Redis's settings), for what the scripts
//! encode and decode:
//!
//! - `encode`: a table whose keys are all whole numbers from 1 is an array (its holes
//!   `null`; too sparse, more than half holes past index 10, is an error), any other is an
//!   object, so the empty table is `{}`; numbers are written `%.14g` (NaN and infinities are an
//!   error); strings escape `"`, `\`, `/` and the control characters; `cjson.null` is `null`;
//!   nesting deeper than 1000 is an error.
//! - `decode` (`raw.rs`, on the Lua stack): objects and arrays become tables, `null` becomes
//!   `cjson.null` (a light userdata, truthy), numbers doubles, `\u` escapes UTF-8 (surrogate
//!   pairs joined); nesting deeper than 1000, or anything after the value, is an error.

use std::io::Write as _;

use mlua::{Lua, Table, Value};

/// The deepest nesting either way.
const MAX_DEPTH: usize = 1000;

/// The `cjson` table.
pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let cjson = lua.create_table()?;
    cjson.raw_set(
        "encode",
        lua.create_function(|lua, value: Value| {
            let mut out = Vec::with_capacity(128);
            encode(&value, &mut out, 1).map_err(mlua::Error::RuntimeError)?;
            lua.create_string(&out)
        })?,
    )?;
    // SAFETY: it follows the Lua stack's rules (`raw.rs`).
    cjson.raw_set("decode", unsafe {
        lua.create_c_function(super::raw::cjson_decode)?
    })?;
    cjson.raw_set("null", Value::NULL)?;
    Ok(cjson)
}

/// A double as C's `%.14g` writes it (what Lua's `tostring` and cjson write).
pub(super) fn format_g14(x: f64, out: &mut Vec<u8>) {
    if x.is_nan() {
        out.extend_from_slice(if x.is_sign_negative() {
            &b"-nan"[..]
        } else {
            &b"nan"[..]
        });
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { &b"inf"[..] } else { &b"-inf"[..] });
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() {
            &b"-0"[..]
        } else {
            &b"0"[..]
        });
        return;
    }
    // Whole numbers below 10^14 have at most 14 digits: written as they are.
    if x.fract() == 0.0 && x.abs() < 1e14 {
        let _ = write!(out, "{}", x as i64);
        return;
    }
    // The exponent of the value rounded to 14 significant digits decides the style.
    let scientific = format!("{x:.13e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        out.extend_from_slice(scientific.as_bytes());
        return;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..14).contains(&exponent) {
        out.extend_from_slice(trim_fraction(mantissa).as_bytes());
        let _ = write!(
            out,
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        );
    } else {
        let fixed = format!("{:.*}", (13 - exponent) as usize, x);
        out.extend_from_slice(trim_fraction(&fixed).as_bytes());
    }
}

/// `%g` drops a fraction's trailing zeros, and its point when nothing is left.
fn trim_fraction(number: &str) -> &str {
    if !number.contains('.') {
        return number;
    }
    number.trim_end_matches('0').trim_end_matches('.')
}

fn encode(value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { &b"true"[..] } else { &b"false"[..] }),
        Value::Integer(i) => format_g14(*i as f64, out),
        Value::Number(n) if !n.is_finite() => {
            return Err("Cannot serialise number: must not be NaN or Inf".to_owned());
        }
        Value::Number(n) => format_g14(*n, out),
        Value::String(s) => escape(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth > MAX_DEPTH {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            encode_table(t, out, depth)?;
        }
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ));
        }
    }
    Ok(())
}

fn encode_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    let mut pairs = Vec::new();
    let (mut max, mut array) = (0usize, true);
    t.for_each(|k: Value, v: Value| {
        pairs.push((k, v));
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    for (k, _) in &pairs {
        let index = match &k {
            Value::Integer(i) if *i >= 1 => Some(*i as usize),
            Value::Number(n) if *n >= 1.0 && n.fract() == 0.0 => Some(*n as usize),
            _ => None,
        };
        match index {
            Some(i) => max = max.max(i),
            None => array = false,
        }
    }
    // lua-cjson's sparse check (ratio 2, safe 10), an error by Redis's settings.
    if array && max > pairs.len() * 2 && max > 10 {
        return Err("Cannot serialise table: excessively sparse array".to_owned());
    }
    if array && max > 0 {
        let mut items: Vec<Option<&Value>> = vec![None; max];
        for (k, v) in &pairs {
            let i = match k {
                Value::Integer(i) => *i as usize,
                Value::Number(n) => *n as usize,
                _ => continue,
            };
            items[i - 1] = Some(v);
        }
        out.push(b'[');
        for (n, item) in items.into_iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            match item {
                Some(v) => encode(v, out, depth + 1)?,
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    for (n, (k, v)) in pairs.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match k {
            Value::String(s) => escape(&s.as_bytes(), out),
            Value::Integer(_) | Value::Number(_) => {
                out.push(b'"');
                let number = match k {
                    Value::Integer(i) => *i as f64,
                    Value::Number(x) => *x,
                    _ => 0.0,
                };
                format_g14(number, out);
                out.push(b'"');
            }
            _ => {
                return Err(
                    "Cannot serialise table: table key must be a number or string".to_owned(),
                );
            }
        }
        out.push(b':');
        encode(v, out, depth + 1)?;
    }
    out.push(b'}');
    Ok(())
}

/// A JSON string as lua-cjson escapes it; other bytes (UTF-8 or not) pass as they are.
fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        let escaped: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'/' => b"\\/",
            b'\n' => b"\\n",
            b'\t' => b"\\t",
            b'\r' => b"\\r",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f | 0x7f => {
                let _ = write!(out, "\\u{b:04x}");
                continue;
            }
            _ => {
                out.push(b);
                continue;
            }
        };
        out.extend_from_slice(escaped);
    }
    out.push(b'"');
}
