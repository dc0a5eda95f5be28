//! Sorted set commands.

use bytes::Bytes;

use super::{Answer, Db, Reply, format_double, int, is, parse_float, syntax};
use crate::store::embedded::zset::{Bound, ZSet};

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member …]`.
pub(super) fn zadd(db: &mut Db, args: &[&[u8]]) -> Answer {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while let Some(a) = args.get(i) {
        if is(a, "NX") {
            nx = true;
        } else if is(a, "XX") {
            xx = true;
        } else if is(a, "GT") {
            gt = true;
        } else if is(a, "LT") {
            lt = true;
        } else if is(a, "CH") {
            ch = true;
        } else if is(a, "INCR") {
            incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(syntax());
    }
    if nx && xx {
        return Err(Reply::error(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (nx && (gt || lt)) || (gt && lt) {
        return Err(Reply::error(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && pairs.len() != 2 {
        return Err(Reply::error(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    // Every score is read before anything changes: one bad score changes nothing.
    let scores = pairs
        .chunks_exact(2)
        .map(|p| parse_float(p[0]).ok_or(Reply::error("ERR value is not a valid float")))
        .collect::<Result<Vec<f64>, Reply>>()?;
    let key = args[1];
    let flags = Flags {
        nx,
        xx,
        gt,
        lt,
        ch,
        incr,
    };
    let set = db.keys.typed_or_new::<ZSet>(key)?;
    let answer = add_scored(set, pairs, scores, flags);
    db.keys.drop_if_empty::<ZSet>(key);
    answer
}

/// `ZADD`'s options.
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

fn add_scored(set: &mut ZSet, pairs: &[&[u8]], scores: Vec<f64>, f: Flags) -> Answer {
    let (mut added, mut changed) = (0, 0);
    let mut incr_reply = Reply::Nil;
    for (pair, score) in pairs.chunks_exact(2).zip(scores) {
        let member = pair[1];
        match set.score(member) {
            Some(current) => {
                if f.nx {
                    continue;
                }
                let score = if f.incr { current + score } else { score };
                if score.is_nan() {
                    return Err(Reply::error("ERR resulting score is not a number (NaN)"));
                }
                if (f.gt && score <= current) || (f.lt && score >= current) {
                    continue;
                }
                if score != current {
                    set.insert(score, member);
                    changed += 1;
                }
                incr_reply = Reply::text(format_double(score));
            }
            None => {
                if f.xx {
                    continue;
                }
                set.insert(score, member);
                added += 1;
                incr_reply = Reply::text(format_double(score));
            }
        }
    }
    if f.incr {
        return Ok(incr_reply);
    }
    Ok(Reply::Int(added + if f.ch { changed } else { 0 }))
}

pub(super) fn zrem(db: &mut Db, key: &[u8], members: &[&[u8]]) -> Answer {
    let Some(set) = db.keys.typed_mut::<ZSet>(key)? else {
        return Ok(Reply::Int(0));
    };
    let removed = members.iter().filter(|m| set.remove(m)).count();
    db.keys.drop_if_empty::<ZSet>(key);
    Ok(Reply::Int(removed as i64))
}

pub(super) fn zscore(db: &Db, key: &[u8], member: &[u8]) -> Answer {
    Ok(
        match db.keys.typed::<ZSet>(key)?.and_then(|s| s.score(member)) {
            Some(score) => Reply::text(format_double(score)),
            None => Reply::Nil,
        },
    )
}

pub(super) fn zrank(db: &Db, key: &[u8], member: &[u8]) -> Answer {
    Ok(
        match db.keys.typed::<ZSet>(key)?.and_then(|s| s.rank(member)) {
            Some(rank) => Reply::Int(rank as i64),
            None => Reply::Nil,
        },
    )
}

pub(super) fn zcard(db: &Db, key: &[u8]) -> Answer {
    Ok(Reply::Int(
        db.keys.typed::<ZSet>(key)?.map_or(0, ZSet::len) as i64
    ))
}

/// A range bound: `5`, `(5` (exclusive), `-inf`, `+inf`.
fn bound(arg: &[u8]) -> Result<Bound, Reply> {
    let bad = || Reply::error("ERR min or max is not a float");
    let (exclusive, number) = match arg.strip_prefix(b"(") {
        Some(rest) => (true, rest),
        None => (false, arg),
    };
    Ok(Bound {
        score: parse_float(number).ok_or_else(bad)?,
        exclusive,
    })
}

/// The ranks `[from, to)` of `key`'s members within `args[2]..args[3]`.
fn score_ranks(set: &ZSet, args: &[&[u8]]) -> Result<(usize, usize), Reply> {
    Ok(set.score_ranks(bound(args[2])?, bound(args[3])?))
}

pub(super) fn zcount(db: &Db, args: &[&[u8]]) -> Answer {
    let (min, max) = (bound(args[2])?, bound(args[3])?);
    Ok(Reply::Int(match db.keys.typed::<ZSet>(args[1])? {
        Some(set) => {
            let (from, to) = set.score_ranks(min, max);
            (to - from) as i64
        }
        None => 0,
    }))
}

/// Members (and their scores, `WITHSCORES`) as a flat reply.
fn listed(members: Vec<(f64, Bytes)>, scores: bool) -> Reply {
    let mut out = Vec::with_capacity(members.len() * if scores { 2 } else { 1 });
    for (score, member) in members {
        out.push(Reply::Bulk(member));
        if scores {
            out.push(Reply::text(format_double(score)));
        }
    }
    Reply::Array(out)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub(super) fn zrangebyscore(db: &Db, args: &[&[u8]]) -> Answer {
    let (min, max) = (bound(args[2])?, bound(args[3])?);
    let (mut scores, mut offset, mut count) = (false, 0i64, -1i64);
    let mut i = 4;
    while let Some(a) = args.get(i) {
        if is(a, "WITHSCORES") {
            scores = true;
        } else if is(a, "LIMIT") && i + 2 < args.len() {
            offset = int(args[i + 1])?;
            count = int(args[i + 2])?;
            i += 2;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    let Some(set) = db.keys.typed::<ZSet>(args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if offset < 0 {
        return Ok(Reply::Array(Vec::new()));
    }
    let (from, to) = set.score_ranks(min, max);
    let from = from.saturating_add(offset as usize).min(to);
    let to = if count < 0 {
        to
    } else {
        from.saturating_add(count as usize).min(to)
    };
    Ok(listed(set.range(from, to), scores))
}

pub(super) fn zremrangebyscore(db: &mut Db, args: &[&[u8]]) -> Answer {
    let Some(set) = db.keys.typed_mut::<ZSet>(args[1])? else {
        // The bounds are still checked.
        bound(args[2])?;
        bound(args[3])?;
        return Ok(Reply::Int(0));
    };
    let (from, to) = score_ranks(set, args)?;
    let gone = set.range(from, to);
    for (_, member) in &gone {
        set.remove(member);
    }
    db.keys.drop_if_empty::<ZSet>(args[1]);
    Ok(Reply::Int(gone.len() as i64))
}

/// Redis's index range: negative counts from the end; `[from, to)` once clamped.
fn index_range(len: usize, start: i64, stop: i64) -> (usize, usize) {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        return (0, 0);
    }
    (start as usize, stop as usize + 1)
}

/// `ZRANGE key start stop [REV] [WITHSCORES]` and `ZREVRANGE key start stop [WITHSCORES]`
/// (`reverse`): by index only.
pub(super) fn zrange(db: &Db, args: &[&[u8]], reverse: bool) -> Answer {
    let (start, stop) = (int(args[2])?, int(args[3])?);
    let (mut reverse, mut scores) = (reverse, false);
    for a in &args[4..] {
        if is(a, "WITHSCORES") {
            scores = true;
        } else if is(a, "REV") && !args[0].eq_ignore_ascii_case(b"ZREVRANGE") {
            reverse = true;
        } else {
            return Err(syntax());
        }
    }
    let Some(set) = db.keys.typed::<ZSet>(args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let len = set.len();
    let (from, to) = index_range(len, start, stop);
    let members = if reverse {
        let mut m = set.range(len - to, len - from);
        m.reverse();
        m
    } else {
        set.range(from, to)
    };
    Ok(listed(members, scores))
}

/// `ZPOPMIN key [count]`: member, score, member, score…
pub(super) fn zpopmin(db: &mut Db, args: &[&[u8]]) -> Answer {
    if args.len() > 3 {
        return Err(syntax());
    }
    let count = match args.get(2) {
        Some(n) => {
            let n = int(n)?;
            if n < 0 {
                return Err(Reply::error("ERR value is out of range, must be positive"));
            }
            n as usize
        }
        None => 1,
    };
    let Some(set) = db.keys.typed_mut::<ZSet>(args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let popped = set.range(0, count);
    for (_, member) in &popped {
        set.remove(member);
    }
    db.keys.drop_if_empty::<ZSet>(args[1]);
    Ok(listed(popped, true))
}
