//! Stream commands: `XADD` (with trimming), `XRANGE`, `XLEN`.

use bytes::Bytes;

use super::{Answer, Db, Reply, int, is, syntax, wrong_arity};
use crate::store::embedded::keyspace::{Stream, StreamId};

/// Entries a node of a Redis stream holds (`stream-node-max-entries`): `MAXLEN ~` trims whole
/// nodes only, so here it trims only in steps of this many, keeping at least the threshold.
const NODE_ENTRIES: usize = 100;

fn invalid_id() -> Reply {
    Reply::error("ERR Invalid stream ID specified as stream command argument")
}

/// An id as given: `ms-seq`, or `ms` with `seq` filled by `missing_seq`.
fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Reply> {
    let text = std::str::from_utf8(arg).map_err(|_| invalid_id())?;
    let (ms, seq) = match text.split_once('-') {
        Some((ms, seq)) => (ms, Some(seq)),
        None => (text, None),
    };
    let ms = ms.parse().map_err(|_| invalid_id())?;
    let seq = match seq {
        Some(seq) => seq.parse().map_err(|_| invalid_id())?,
        None => missing_seq,
    };
    Ok(StreamId { ms, seq })
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT n]] *|id field value …`.
pub(super) fn xadd(db: &mut Db, args: &[&[u8]]) -> Answer {
    let mut nomkstream = false;
    let mut trim: Option<(bool, bool, &[u8])> = None; // (by MINID, approximate, threshold)
    let mut i = 2;
    loop {
        let Some(a) = args.get(i) else {
            return Err(wrong_arity(args[0]));
        };
        if is(a, "NOMKSTREAM") {
            nomkstream = true;
        } else if is(a, "MAXLEN") || is(a, "MINID") {
            let minid = is(a, "MINID");
            let mut approx = false;
            if let Some(op) = args.get(i + 1).filter(|o| **o == b"~" || **o == b"=") {
                approx = *op == b"~";
                i += 1;
            }
            let threshold: &[u8] = args.get(i + 1).ok_or_else(syntax)?;
            trim = Some((minid, approx, threshold));
            i += 1;
            if args.get(i + 1).is_some_and(|a| is(a, "LIMIT")) {
                int(args.get(i + 2).ok_or_else(syntax)?)?;
                i += 2;
            }
        } else {
            break;
        }
        i += 1;
    }
    let fields = &args[i + 1..];
    if fields.is_empty() || !fields.len().is_multiple_of(2) {
        return Err(wrong_arity(args[0]));
    }
    let given = args[i];
    if nomkstream && !db.keys.exists(args[1]) {
        return Ok(Reply::Nil);
    }
    let now = db.keys.now_ms();
    let stream = db.keys.typed_or_new::<Stream>(args[1])?;
    let last = stream.last;
    let id = if given == b"*" {
        if now > last.ms {
            StreamId { ms: now, seq: 0 }
        } else {
            StreamId {
                ms: last.ms,
                seq: last.seq + 1,
            }
        }
    } else {
        let id = match given.strip_suffix(b"-*") {
            Some(ms) => {
                let ms = parse_id(ms, 0)?.ms;
                StreamId {
                    ms,
                    seq: if ms == last.ms { last.seq + 1 } else { 0 },
                }
            }
            None => parse_id(given, 0)?,
        };
        if id == StreamId::default() {
            return Err(Reply::error(
                "ERR The ID specified in XADD must be greater than 0-0",
            ));
        }
        if id <= last {
            return Err(Reply::error(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ));
        }
        id
    };
    let pairs = fields
        .chunks_exact(2)
        .map(|p| (Bytes::copy_from_slice(p[0]), Bytes::copy_from_slice(p[1])))
        .collect();
    stream.entries.push_back((id, pairs));
    stream.last = id;
    if let Some((minid, approx, threshold)) = trim {
        if minid {
            let min = parse_id(threshold, 0)?;
            while stream.entries.front().is_some_and(|(id, _)| *id < min) {
                stream.entries.pop_front();
            }
        } else {
            let max = usize::try_from(int(threshold)?)
                .map_err(|_| Reply::error("ERR The MAXLEN argument must be >= 0."))?;
            if approx {
                while stream.entries.len() >= max + NODE_ENTRIES {
                    stream.entries.drain(..NODE_ENTRIES).for_each(drop);
                }
            } else {
                while stream.entries.len() > max {
                    stream.entries.pop_front();
                }
            }
        }
    }
    Ok(Reply::text(id.to_string()))
}

/// A range end: `-`, `+`, `(id` (exclusive), `ms` (every seq of that ms), `ms-seq`.
fn range_end(arg: &[u8], start: bool) -> Result<Option<StreamId>, Reply> {
    if arg == b"-" {
        return Ok(Some(StreamId::default()));
    }
    if arg == b"+" {
        return Ok(Some(StreamId {
            ms: u64::MAX,
            seq: u64::MAX,
        }));
    }
    let (exclusive, id) = match arg.strip_prefix(b"(") {
        Some(id) => (true, id),
        None => (false, arg),
    };
    let id = parse_id(id, if start { 0 } else { u64::MAX })?;
    if !exclusive {
        return Ok(Some(id));
    }
    // The next id after (or before) it; none past the last there can be.
    Ok(if start {
        match id.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: id.ms, seq }),
            None => id.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    } else {
        match id.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: id.ms, seq }),
            None => id
                .ms
                .checked_sub(1)
                .map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    })
}

/// `XRANGE key start end [COUNT n]`: each entry as [id, [field, value, …]].
pub(super) fn xrange(db: &Db, args: &[&[u8]]) -> Answer {
    let (start, end) = (range_end(args[2], true)?, range_end(args[3], false)?);
    let count = match &args[4..] {
        [] => usize::MAX,
        [c, n] if is(c, "COUNT") => usize::try_from(int(n)?).unwrap_or(0),
        _ => return Err(syntax()),
    };
    let (Some(start), Some(end)) = (start, end) else {
        return Ok(Reply::Array(Vec::new()));
    };
    let Some(stream) = db.keys.typed::<Stream>(args[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let from = stream.entries.partition_point(|(id, _)| *id < start);
    Ok(Reply::Array(
        stream
            .entries
            .range(from..)
            .take_while(|(id, _)| *id <= end)
            .take(count)
            .map(|(id, fields)| {
                Reply::Array(vec![
                    Reply::text(id.to_string()),
                    Reply::Array(
                        fields
                            .iter()
                            .flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())])
                            .collect(),
                    ),
                ])
            })
            .collect(),
    ))
}

pub(super) fn xlen(db: &Db, key: &[u8]) -> Answer {
    Ok(Reply::Int(
        db.keys.typed::<Stream>(key)?.map_or(0, |s| s.entries.len()) as i64,
    ))
}
