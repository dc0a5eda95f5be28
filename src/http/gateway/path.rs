//! The one path a gateway request means, decided once: the guard judges it and the origin is
//! sent it, so no other spelling of a guarded path reaches the origin without a pass.
//!
//! The path forwarded is the request's in a canonical form: percent-encoded unreserved
//! characters decoded, every other escape in upper case, dot segments resolved (RFC 3986
//! §5.2.4), runs of `/` made one (as nginx's `merge_slashes`). What the guard compares with its
//! prefixes (a *reading*) is that path fully decoded, its letters folded when matching ignores
//! case. Some spellings are read differently by different servers: an encoded `/` or `\` (a
//! separator to some, a character to others), a raw `\` (a separator on Windows), and `;`
//! path parameters (cut off each segment by Tomcat, Jetty and Spring, kept by Express and
//! nginx, so that `/x/..;/checkout` is `/checkout` to one and `/x/..;/checkout` to the
//! other). Such a path has several readings; when any of them falls under a guarded prefix it
//! is refused, since the guard cannot know which one the origin takes. Escapes that are not
//! escapes, a NUL and bytes that are not UTF-8 are refused wherever they are.

use std::fmt;

/// A request path, canonical, and how the guard reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestPath {
    /// What the origin is sent: the canonical form.
    pub(crate) forward: String,
    /// What the guard compares with its prefixes: one reading, or several when servers
    /// differ on this path (then [`RequestPath::ambiguous`]).
    pub(crate) readings: Vec<String>,
}

impl RequestPath {
    /// Whether servers read this path differently (an encoded separator, a `;` parameter).
    pub(crate) fn ambiguous(&self) -> bool {
        self.readings.len() > 1
    }
}

/// Why a path cannot be forwarded at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BadPath {
    /// Not an absolute path (`*`, or no leading `/`).
    NotAbsolute,
    /// A `%` not followed by two hexadecimal digits.
    BadEscape,
    /// A NUL (`%00`): C-string servers end the path there.
    Nul,
    /// Bytes that are not UTF-8 once decoded.
    NotUtf8,
}

impl fmt::Display for BadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BadPath::NotAbsolute => "the request path must start with /",
            BadPath::BadEscape => "the request path has a % that is not followed by two hex digits",
            BadPath::Nul => "the request path holds a NUL (%00)",
            BadPath::NotUtf8 => "the request path does not decode to UTF-8",
        })
    }
}

/// `raw` (a request target's path, without its query) made canonical, with its readings;
/// `fold` folds their letters (matching that ignores case).
pub(crate) fn canonical(raw: &str, fold: bool) -> Result<RequestPath, BadPath> {
    if !raw.starts_with('/') {
        return Err(BadPath::NotAbsolute);
    }
    if is_plain(raw) {
        // Nothing to decode, resolve or merge: most requests.
        let reading = if fold {
            raw.to_lowercase()
        } else {
            raw.to_owned()
        };
        return Ok(RequestPath {
            forward: raw.to_owned(),
            readings: vec![reading],
        });
    }
    let mut segments: Vec<String> = Vec::new();
    let mut ambiguous = false;
    let raw_segments: Vec<&str> = raw[1..].split('/').collect();
    let last = raw_segments.len() - 1;
    for (i, raw_segment) in raw_segments.into_iter().enumerate() {
        let (segment, odd) = normalise_escapes(raw_segment)?;
        ambiguous |= odd;
        push_segment(&mut segments, segment, i == last);
    }
    let forward = join(&segments);
    let readings = if ambiguous {
        let mut readings = Vec::with_capacity(4);
        for separators in [false, true] {
            for parameters in [false, true] {
                let r = reading(&segments, separators, parameters, fold)?;
                if !readings.contains(&r) {
                    readings.push(r);
                }
            }
        }
        // Readings that all agree still come from a spelling servers differ on.
        if readings.len() == 1 {
            readings.push(readings[0].clone());
        }
        readings
    } else {
        vec![reading(&segments, false, false, fold)?]
    };
    Ok(RequestPath { forward, readings })
}

/// Whether `raw` is already canonical and read one way: no escape, no `;` or `\\`, no empty
/// or dot segment.
fn is_plain(raw: &str) -> bool {
    !raw.contains(['%', ';', '\\']) && !raw.contains("//") && !raw.contains("/.")
}

/// Whether `reading` lies under `prefix` (a reading of a prefix: no trailing `/`; "" is
/// the whole site), on a segment boundary: `/checkout` holds `/checkout` and
/// `/checkout/pay`, not `/checkouts`.
pub(crate) fn under(reading: &str, prefix: &str) -> bool {
    reading
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// A `PROTECT` prefix as the guard compares it: no trailing `/` ("" for the whole site),
/// folded with `fold`. `None` unless it is spelled canonically and read one way only: a
/// prefix spelled otherwise would guard something else than it reads as.
pub(crate) fn prefix_reading(prefix: &str, fold: bool) -> Option<String> {
    let trimmed = prefix.trim_end_matches('/');
    let spelled = if trimmed.is_empty() { "/" } else { trimmed };
    let path = canonical(spelled, fold).ok()?;
    if path.ambiguous() || path.forward != spelled {
        return None;
    }
    let reading = path.readings.into_iter().next()?;
    Some(reading.trim_end_matches('/').to_owned())
}

/// One segment's escapes made canonical: unreserved characters decoded, the rest in upper
/// case. Also whether it holds something servers read differently (an escaped `/` or `\`, a
/// raw `\`, a `;`).
fn normalise_escapes(segment: &str) -> Result<(String, bool), BadPath> {
    let bytes = segment.as_bytes();
    let mut out = String::with_capacity(segment.len());
    let mut odd = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let byte = escaped(bytes, i)?;
            match byte {
                0 => return Err(BadPath::Nul),
                b'/' | b'\\' | b';' => odd = true,
                _ => {}
            }
            if is_unreserved(byte) {
                out.push(byte as char);
            } else {
                out.push('%');
                out.push(hex_digit(byte >> 4));
                out.push(hex_digit(byte & 0xF));
            }
            i += 3;
            continue;
        }
        if b == 0 {
            return Err(BadPath::Nul);
        }
        if b == b'\\' || b == b';' {
            odd = true;
        }
        // A multi-byte character is copied whole (the path is a str).
        let width = utf8_width(b);
        out.push_str(&segment[i..i + width]);
        i += width;
    }
    Ok((out, odd))
}

/// Adds a canonical segment to the path so far, resolving dot segments and merging empty
/// ones (RFC 3986 §5.2.4, with nginx's merged slashes). `last`: the path's final segment,
/// whose emptiness (a trailing `/`) is kept.
fn push_segment(segments: &mut Vec<String>, segment: String, last: bool) {
    match segment.as_str() {
        "." => {
            if last {
                segments.push(String::new());
            }
        }
        ".." => {
            // An empty segment standing for a trailing slash is not a directory to leave.
            if segments.last().is_some_and(String::is_empty) {
                segments.pop();
            }
            segments.pop();
            if last {
                segments.push(String::new());
            }
        }
        "" => {
            if last {
                segments.push(String::new());
            }
        }
        _ => {
            if segments.last().is_some_and(String::is_empty) {
                segments.pop();
            }
            segments.push(segment);
        }
    }
}

fn join(segments: &[String]) -> String {
    let mut out = String::with_capacity(segments.iter().map(|s| s.len() + 1).sum::<usize>() + 1);
    if segments.is_empty() {
        out.push('/');
    }
    for s in segments {
        out.push('/');
        out.push_str(s);
    }
    out
}

/// The path as the guard reads it: every escape decoded; with `separators` an escaped `/`
/// or `\` (or a raw `\`) splits segments; with `parameters` each segment ends at its first
/// `;`; dot segments resolved again (decoding and cutting can make new ones), letters folded
/// with `fold`.
fn reading(
    segments: &[String],
    separators: bool,
    parameters: bool,
    fold: bool,
) -> Result<String, BadPath> {
    let mut out: Vec<String> = Vec::with_capacity(segments.len());
    let mut pieces: Vec<String> = Vec::new();
    for segment in segments {
        let decoded = decode(segment)?;
        if separators {
            pieces.extend(decoded.split(['/', '\\']).map(str::to_owned));
        } else {
            pieces.push(decoded);
        }
    }
    let last = pieces.len().saturating_sub(1);
    for (i, mut piece) in pieces.into_iter().enumerate() {
        if parameters && let Some(at) = piece.find(';') {
            piece.truncate(at);
        }
        if fold {
            piece = piece.to_lowercase();
        }
        push_segment(&mut out, piece, i == last);
    }
    Ok(join(&out))
}

/// Every escape of `segment` decoded (its escapes are valid: `normalise_escapes` checked them).
fn decode(segment: &str) -> Result<String, BadPath> {
    if !segment.contains('%') {
        return Ok(segment.to_owned());
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(escaped(bytes, i)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| BadPath::NotUtf8)
}

/// The byte the escape at `bytes[at]` (a `%`) stands for.
fn escaped(bytes: &[u8], at: usize) -> Result<u8, BadPath> {
    let hex = |i: usize| {
        bytes
            .get(i)
            .and_then(|b| (*b as char).to_digit(16))
            .ok_or(BadPath::BadEscape)
    };
    Ok((hex(at + 1)? * 16 + hex(at + 2)?) as u8)
}

/// RFC 3986 §2.3: ALPHA / DIGIT / "-" / "." / "_" / "~".
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_digit(n: u8) -> char {
    char::from_digit(u32::from(n), 16)
        .expect("a nibble")
        .to_ascii_uppercase()
}

/// How many bytes the UTF-8 character starting with `b` takes.
fn utf8_width(b: u8) -> usize {
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}
