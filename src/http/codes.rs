//! Access codes (docs/lanes.md), the operator's side: `POST …/{showId}/codes` adds codes from a
//! CSV, `GET …/{showId}/codes` counts them by lane. A fan brings a code when joining
//! (`X-Access-Code`, `join.rs`).
//!
//! The CSV is read as it streams in, one line at a time, each code checked and hashed at once
//! (the text of a code is never kept, logged or echoed); nothing is added until the whole
//! body has been read within its bounds, so a body refused (too large, too many lines) adds
//! nothing. Lines refused are reported by number and why.

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use futures::StreamExt;
use serde::Serialize;

use super::AppState;
use super::extract::{AppPath, Operator, show_id};
use crate::error::AppError;
use crate::model::{CodeKey, MAX_CODE, MIN_CODE, ShowId, code_ok, lane_name_ok};
use crate::store::{LaneCodes, MAX_CODES_A_CALL, MAX_CODES_A_SHOW, NewCode};

/// The most lines one upload holds.
pub(crate) const MAX_CODE_LINES: usize = 100_000;
/// The most bytes one upload holds (100,000 lines of the longest code, a lane and a count).
pub(crate) const MAX_CODES_BYTES: usize = 12 << 20;
/// The longest line read.
const MAX_LINE: usize = 256;
/// The most uses one code may have.
const MAX_USES: u32 = 1_000_000;
/// The most refused lines reported one by one (the rest are counted).
const MOST_REPORTED: usize = 100;
/// The most lanes one upload may name.
const MOST_LANES: usize = 64;

/// `?replace=true`: codes the show holds already are set anew (their uses counted again).
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct Replace {
    /// Set codes the show holds already anew, their uses counted again (default false:
    /// kept as they are).
    #[serde(default)]
    replace: bool,
}

/// What an upload did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CodesReport {
    /// Codes the show did not hold.
    added: u64,
    /// Codes it held already (or the file named twice): kept as they were, the uses they
    /// spent still spent; set anew (the later line) with `?replace=true`.
    already_held: u64,
    /// Lines refused, in all.
    refused_count: u64,
    /// The first refused lines, by number (from 1) and why; never the code.
    refused: Vec<RefusedLine>,
    /// Lanes the codes name that the show's settings do not list (now): their codes are
    /// refused at a join until a lane of that name is listed.
    unlisted_lanes: Vec<String>,
}

/// A line refused.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RefusedLine {
    /// Its number, from 1.
    line: u64,
    /// Why.
    why: String,
}

/// A show's codes, by lane.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CodeCounts {
    /// Each lane's codes and the uses they have left.
    lanes: Vec<LaneCodes>,
}

/// `POST …/{showId}/codes` (operator): adds access codes from a CSV body, a code a line:
/// `code,lane[,uses]` (uses 1 when left out: single-use); a first line `code,lane,uses` is a
/// header and skipped, as are blank lines. A code the show holds already is kept as it is (a
/// file sent twice changes nothing), or set anew with `?replace=true`.
#[utoipa::path(
    post,
    path = crate::protocol::routes::CODES,
    operation_id = "addCodes",
    tag = crate::http::openapi::OPERATOR,
    summary = "Add presale or priority codes from a CSV (`code,lane[,uses]` a line), streamed; \
         answers what was added and which lines were refused",
    params(crate::http::openapi::params::ShowPath, Replace),
    request_body(content = String, content_type = "text/csv"),
    responses(
        (status = 200, description = "What was added, and the lines refused", body = CodesReport),
        (status = 400, description = "A bad showId or query", body = crate::protocol::ErrorBody),
        (status = 401, description = "Operator token missing or wrong", body = crate::protocol::ErrorBody),
        (status = 404, description = crate::http::openapi::NO_SHOW, body = crate::protocol::ErrorBody),
        (status = 409, description = "The show would hold more codes than it may", body = crate::protocol::ErrorBody),
        (status = 413, description = "More than 100,000 lines or 12 MiB: nothing added", body = crate::protocol::ErrorBody),
        (status = 415, description = "Not `text/csv`", body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn add(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
    replace: Result<Query<Replace>, QueryRejection>,
    headers: axum::http::HeaderMap,
    body: Body,
) -> Result<impl IntoResponse, AppError> {
    let show = show_id(&show)?;
    let csv = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.trim().to_ascii_lowercase();
            v.starts_with("text/csv") || v.starts_with("text/plain")
        });
    if !csv {
        return Err(AppError::Rejected(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the codes as `Content-Type: text/csv`, `code,lane[,uses]` a line".into(),
        ));
    }
    let Query(replace) =
        replace.map_err(|e| AppError::BadRequest(format!("the query (`replace`): {e}")))?;
    let mut read = Reading::new(&show, &state.site.code_key);
    let mut stream = body.into_data_stream();
    let mut bytes = 0usize;
    let mut pending: Vec<u8> = Vec::new();
    // Past a line too long to be a code's: the rest of it is passed over, to its end.
    let mut skipping = false;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| AppError::BadRequest(format!("the body: {e}")))?;
        bytes += chunk.len();
        if bytes > MAX_CODES_BYTES {
            return Err(too_large());
        }
        pending.extend_from_slice(&chunk);
        // Whole lines are read at once; the rest waits for the next chunk.
        let mut start = 0;
        while let Some(end) = pending[start..].iter().position(|&b| b == b'\n') {
            if skipping {
                skipping = false;
            } else {
                read.line(&pending[start..start + end])?;
            }
            start += end + 1;
        }
        pending.drain(..start);
        if pending.len() > MAX_LINE {
            if !skipping {
                read.refuse_long();
                skipping = true;
            }
            pending.clear();
        }
    }
    if !pending.is_empty() && !skipping {
        read.line(&pending)?;
    }
    let Reading {
        codes,
        refused,
        refused_count,
        lanes,
        ..
    } = read;
    // The show's lanes now, to say which lanes the codes name that it does not list.
    let listed: Vec<String> = state
        .store
        .stats(&show)
        .await?
        .settings
        .lanes
        .unwrap_or_default()
        .into_iter()
        .map(|l| l.name)
        .collect();
    // Within the show's bound, or nothing at all: checked before the first batch.
    let held: u64 = state
        .store
        .code_counts(&show)
        .await?
        .iter()
        .map(|l| l.codes)
        .sum();
    if held + codes.len() as u64 > MAX_CODES_A_SHOW {
        return Err(AppError::Conflict(format!(
            "the show holds {held} codes: {} more would pass the {MAX_CODES_A_SHOW} a show may \
             hold; nothing was added",
            codes.len()
        )));
    }
    let mut added = 0;
    let mut already_held = 0;
    for batch in codes.chunks(MAX_CODES_A_CALL) {
        let done = state.store.add_codes(&show, batch, replace.replace).await?;
        added += done.added;
        already_held += done.held;
    }
    tracing::info!(%show, added, already_held, refused = refused_count, "access codes added");
    let mut unlisted_lanes: Vec<String> =
        lanes.into_iter().filter(|l| !listed.contains(l)).collect();
    unlisted_lanes.sort();
    Ok((
        StatusCode::OK,
        Json(CodesReport {
            added,
            already_held,
            refused_count,
            refused,
            unlisted_lanes,
        }),
    ))
}

/// `GET …/{showId}/codes` (operator): the show's codes by lane, with the uses left.
#[utoipa::path(
    get,
    path = crate::protocol::routes::CODES,
    operation_id = "codeCounts",
    tag = crate::http::openapi::OPERATOR,
    summary = "The show's access codes by lane, and the uses they have left",
    params(crate::http::openapi::params::ShowPath),
    responses(
        (status = 200, description = "The codes by lane", body = CodeCounts),
        (status = 400, description = "A bad showId", body = crate::protocol::ErrorBody),
        (status = 401, description = "Operator token missing or wrong", body = crate::protocol::ErrorBody),
        (status = 404, description = crate::http::openapi::NO_SHOW, body = crate::protocol::ErrorBody),
    ),
)]
pub(super) async fn counts(
    _: Operator,
    State(state): State<AppState>,
    AppPath(show): AppPath<String>,
) -> Result<impl IntoResponse, AppError> {
    let show = show_id(&show)?;
    let lanes = state.store.code_counts(&show).await?;
    Ok(Json(CodeCounts { lanes }))
}

fn too_large() -> AppError {
    AppError::Rejected(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "at most {MAX_CODE_LINES} lines and {} MiB of codes a call: nothing was added; \
             send the file in parts",
            MAX_CODES_BYTES >> 20
        ),
    )
}

/// An upload as it is read: the codes so far (hashed), the lines refused, the lanes named.
struct Reading<'a> {
    show: &'a ShowId,
    key: &'a CodeKey,
    line: u64,
    codes: Vec<NewCode>,
    refused: Vec<RefusedLine>,
    refused_count: u64,
    lanes: std::collections::BTreeSet<String>,
}

impl<'a> Reading<'a> {
    fn new(show: &'a ShowId, key: &'a CodeKey) -> Self {
        Reading {
            show,
            key,
            line: 0,
            codes: Vec::new(),
            refused: Vec::new(),
            refused_count: 0,
            lanes: std::collections::BTreeSet::new(),
        }
    }

    fn refuse(&mut self, why: String) {
        self.refused_count += 1;
        if self.refused.len() < MOST_REPORTED {
            self.refused.push(RefusedLine {
                line: self.line,
                why,
            });
        }
    }

    fn refuse_long(&mut self) {
        self.line += 1;
        self.refuse(format!("longer than {MAX_LINE} bytes"));
    }

    /// One line (without its `\n`); 413 past the most lines a call.
    fn line(&mut self, raw: &[u8]) -> Result<(), AppError> {
        self.line += 1;
        if self.line > MAX_CODE_LINES as u64 {
            return Err(too_large());
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.len() > MAX_LINE {
            self.refuse(format!("longer than {MAX_LINE} bytes"));
            return Ok(());
        }
        let Ok(text) = std::str::from_utf8(raw) else {
            self.refuse("not UTF-8 text".into());
            return Ok(());
        };
        // A spreadsheet's export may open with a byte order mark.
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty()
            || (self.line == 1 && text.eq_ignore_ascii_case("code,lane,uses"))
            || (self.line == 1 && text.eq_ignore_ascii_case("code,lane"))
        {
            return Ok(());
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        let (code, lane, uses) = match fields[..] {
            [code, lane] => (code, lane, "1"),
            [code, lane, uses] => (code, lane, uses),
            _ => {
                self.refuse("a line is code,lane or code,lane,uses".into());
                return Ok(());
            }
        };
        if !code_ok(code) {
            self.refuse(format!(
                "a code is {MIN_CODE} to {MAX_CODE} of A-Z, a-z, 0-9, '-' and '_'"
            ));
            return Ok(());
        }
        if !lane_name_ok(lane) {
            self.refuse("a lane is 1 to 24 of a-z, 0-9 and '-', not 'general'".into());
            return Ok(());
        }
        let Some(uses) = uses
            .parse::<u32>()
            .ok()
            .filter(|u| (1..=MAX_USES).contains(u))
        else {
            self.refuse(format!("uses: 1 to {MAX_USES}"));
            return Ok(());
        };
        if !self.lanes.contains(lane) {
            if self.lanes.len() >= MOST_LANES {
                self.refuse(format!("at most {MOST_LANES} lanes named in one file"));
                return Ok(());
            }
            self.lanes.insert(lane.to_owned());
        }
        self.codes.push(NewCode {
            hash: self.key.hash(self.show, code),
            lane: lane.to_owned(),
            uses,
        });
        Ok(())
    }
}
