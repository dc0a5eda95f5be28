//! Hash and set commands.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use super::{Answer, Db, Reply, format_double, parse_float, parse_int, wrong_arity};

type Hash = HashMap<Bytes, Bytes>;
type Set = HashSet<Bytes>;

/// `HSET key field value [field value …]`: how many fields are new (`HMSET`: OK).
pub(super) fn hset(db: &mut Db, args: &[&[u8]]) -> Answer {
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return Err(wrong_arity(args[0]));
    }
    let hash = db.keys.typed_or_new::<Hash>(args[1])?;
    let mut added = 0;
    for pair in args[2..].chunks_exact(2) {
        let value = Bytes::copy_from_slice(pair[1]);
        match hash.get_mut(pair[0]) {
            Some(v) => *v = value,
            None => {
                hash.insert(Bytes::copy_from_slice(pair[0]), value);
                added += 1;
            }
        }
    }
    if args[0].eq_ignore_ascii_case(b"HMSET") {
        return Ok(Reply::ok());
    }
    Ok(Reply::Int(added))
}

pub(super) fn hget(db: &Db, key: &[u8], field: &[u8]) -> Answer {
    Ok(
        match db.keys.typed::<Hash>(key)?.and_then(|h| h.get(field)) {
            Some(v) => Reply::Bulk(v.clone()),
            None => Reply::Nil,
        },
    )
}

pub(super) fn hmget(db: &Db, key: &[u8], fields: &[&[u8]]) -> Answer {
    let hash = db.keys.typed::<Hash>(key)?;
    Ok(Reply::Array(
        fields
            .iter()
            .map(|f| match hash.and_then(|h| h.get(*f)) {
                Some(v) => Reply::Bulk(v.clone()),
                None => Reply::Nil,
            })
            .collect(),
    ))
}

pub(super) fn hdel(db: &mut Db, key: &[u8], fields: &[&[u8]]) -> Answer {
    let Some(hash) = db.keys.typed_mut::<Hash>(key)? else {
        return Ok(Reply::Int(0));
    };
    let removed = fields.iter().filter(|f| hash.remove(**f).is_some()).count();
    db.keys.drop_if_empty::<Hash>(key);
    Ok(Reply::Int(removed as i64))
}

pub(super) fn hlen(db: &Db, key: &[u8]) -> Answer {
    Ok(Reply::Int(
        db.keys.typed::<Hash>(key)?.map_or(0, |h| h.len()) as i64,
    ))
}

pub(super) fn hexists(db: &Db, key: &[u8], field: &[u8]) -> Answer {
    let found = db
        .keys
        .typed::<Hash>(key)?
        .is_some_and(|h| h.contains_key(field));
    Ok(Reply::Int(i64::from(found)))
}

/// Field, value, field, value…
pub(super) fn hgetall(db: &Db, key: &[u8]) -> Answer {
    let Some(hash) = db.keys.typed::<Hash>(key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(Reply::Array(
        hash.iter()
            .flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())])
            .collect(),
    ))
}

/// `HINCRBY key field n`.
pub(super) fn hincrby(db: &mut Db, args: &[&[u8]]) -> Answer {
    let by =
        parse_int(args[3]).ok_or(Reply::error("ERR value is not an integer or out of range"))?;
    let hash = db.keys.typed_or_new::<Hash>(args[1])?;
    let current = match hash.get(args[2]) {
        None => 0,
        Some(v) => parse_int(v).ok_or(Reply::error("ERR hash value is not an integer"))?,
    };
    let new = current
        .checked_add(by)
        .ok_or(Reply::error("ERR increment or decrement would overflow"))?;
    hash.insert(
        Bytes::copy_from_slice(args[2]),
        Bytes::from(new.to_string()),
    );
    Ok(Reply::Int(new))
}

/// `HINCRBYFLOAT key field x`. Redis adds in `long double` and writes the sum with 17
/// decimals, trailing zeros cut (never an exponent); here the sum is exact in decimal
/// (`rust_decimal`, 28 digits) and rounded to 17 decimals alike, so `0.1` plus `0.2` is `0.3`
/// here as there. Past 28 digits it is a double, written as the shortest text that reads back
/// as it.
pub(super) fn hincrbyfloat(db: &mut Db, args: &[&[u8]]) -> Answer {
    let by = parse_float(args[3]).ok_or(Reply::error("ERR value is not a valid float"))?;
    let hash = db.keys.typed_or_new::<Hash>(args[1])?;
    let current = match hash.get(args[2]) {
        None => None,
        Some(v) => Some(
            parse_float(v)
                .map(|x| (x, v.clone()))
                .ok_or(Reply::error("ERR hash value is not a float"))?,
        ),
    };
    let new = current.as_ref().map_or(0.0, |(x, _)| *x) + by;
    if !new.is_finite() {
        db.keys.drop_if_empty::<Hash>(args[1]);
        return Err(Reply::error("ERR increment would produce NaN or Infinity"));
    }
    let exact = match &current {
        None => decimal(args[3]),
        Some((_, text)) => decimal(text)
            .zip(decimal(args[3]))
            .and_then(|(a, b)| a.checked_add(b)),
    };
    let text = Bytes::from(match exact {
        Some(sum) => sum.round_dp(17).normalize().to_string(),
        None if new == 0.0 => "0".to_owned(),
        None => format_double(new),
    });
    hash.insert(Bytes::copy_from_slice(args[2]), text.clone());
    Ok(Reply::Bulk(text))
}

/// A number as an exact decimal, if it has one of at most 28 digits.
fn decimal(text: &[u8]) -> Option<rust_decimal::Decimal> {
    let text = std::str::from_utf8(text).ok()?;
    if text.contains(['e', 'E']) {
        rust_decimal::Decimal::from_scientific(text).ok()
    } else {
        text.parse().ok()
    }
}

pub(super) fn sadd(db: &mut Db, key: &[u8], members: &[&[u8]]) -> Answer {
    let set = db.keys.typed_or_new::<Set>(key)?;
    let added = members
        .iter()
        .filter(|m| set.insert(Bytes::copy_from_slice(m)))
        .count();
    Ok(Reply::Int(added as i64))
}

pub(super) fn srem(db: &mut Db, key: &[u8], members: &[&[u8]]) -> Answer {
    let Some(set) = db.keys.typed_mut::<Set>(key)? else {
        return Ok(Reply::Int(0));
    };
    let removed = members.iter().filter(|m| set.remove(**m)).count();
    db.keys.drop_if_empty::<Set>(key);
    Ok(Reply::Int(removed as i64))
}

pub(super) fn smembers(db: &Db, key: &[u8]) -> Answer {
    Ok(Reply::Array(
        db.keys
            .typed::<Set>(key)?
            .into_iter()
            .flatten()
            .map(|m| Reply::Bulk(m.clone()))
            .collect(),
    ))
}

pub(super) fn sismember(db: &Db, key: &[u8], member: &[u8]) -> Answer {
    let found = db
        .keys
        .typed::<Set>(key)?
        .is_some_and(|s| s.contains(member));
    Ok(Reply::Int(i64::from(found)))
}

pub(super) fn scard(db: &Db, key: &[u8]) -> Answer {
    Ok(Reply::Int(
        db.keys.typed::<Set>(key)?.map_or(0, |s| s.len()) as i64,
    ))
}
