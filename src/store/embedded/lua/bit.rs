//! `bit` as Redis ships it (LuaBitOp): operations on 32-bit integers, whose arguments are
//! rounded to whole numbers and wrapped modulo 2^32, and whose results are signed (so
//! `bit.bxor(0, 0xffffffff)` is -1).

use mlua::{Lua, Table, Variadic};

/// A number as LuaBitOp reads it: rounded to the nearest whole number (ties to even) and
/// wrapped to 32 bits.
pub(super) fn tobit(x: f64) -> i32 {
    if !x.is_finite() {
        return 0;
    }
    x.round_ties_even().rem_euclid(4_294_967_296.0) as u64 as u32 as i32
}

/// The `bit` table.
pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    bit.raw_set("tobit", lua.create_function(|_, x: f64| Ok(tobit(x)))?)?;
    bit.raw_set("bnot", lua.create_function(|_, x: f64| Ok(!tobit(x)))?)?;
    let fold = |lua: &Lua, f: fn(i32, i32) -> i32| {
        lua.create_function(move |_, (first, rest): (f64, Variadic<f64>)| {
            Ok(rest.iter().fold(tobit(first), |acc, x| f(acc, tobit(*x))))
        })
    };
    bit.raw_set("band", fold(lua, |a, b| a & b)?)?;
    bit.raw_set("bor", fold(lua, |a, b| a | b)?)?;
    bit.raw_set("bxor", fold(lua, |a, b| a ^ b)?)?;
    let shift = |lua: &Lua, f: fn(i32, u32) -> i32| {
        lua.create_function(move |_, (x, n): (f64, f64)| Ok(f(tobit(x), tobit(n) as u32 & 31)))
    };
    bit.raw_set("lshift", shift(lua, |x, n| ((x as u32) << n) as i32)?)?;
    bit.raw_set("rshift", shift(lua, |x, n| ((x as u32) >> n) as i32)?)?;
    bit.raw_set("arshift", shift(lua, |x, n| x >> n)?)?;
    bit.raw_set("rol", shift(lua, |x, n| (x as u32).rotate_left(n) as i32)?)?;
    bit.raw_set("ror", shift(lua, |x, n| (x as u32).rotate_right(n) as i32)?)?;
    bit.raw_set(
        "bswap",
        lua.create_function(|_, x: f64| Ok(tobit(x).swap_bytes()))?,
    )?;
    bit.raw_set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let (upper, digits) = (n < 0, n.unsigned_abs().min(8) as usize);
            let value = tobit(x) as u32;
            let masked = if digits == 8 {
                value
            } else {
                value & ((1u32 << (4 * digits)) - 1)
            };
            Ok(if upper {
                format!("{masked:0digits$X}")
            } else {
                format!("{masked:0digits$x}")
            })
        })?,
    )?;
    Ok(bit)
}
