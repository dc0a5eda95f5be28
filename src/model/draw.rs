//! The fair start's JSON: a scheduled show's draw (`GET …/draw`) and its audit
//! (`GET …/audit`), as `waiting-room-client verify` reads them.

use serde::{Deserialize, Serialize};

/// `GET …/{showId}/draw`: the commitment from the moment the show is scheduled; the seed,
/// the participants and the beacon's value once drawn. The draw is recomputed from these
/// alone (see docs/draw.md, and [`crate::draw`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrawView {
    /// The scheduled show, as named in the path.
    pub show_id: String,
    /// When the show opens by itself (RFC 3339, UTC).
    pub opens_at: String,
    /// `scheduled` (the pre-queue takes fans), `closed` (the pre-queue closed; the draw
    /// waits for the beacon's value) or `drawn`.
    pub state: DrawStage,
    /// How the order is worked out (see docs/draw.md).
    pub algorithm: String,
    /// SHA-256 of the secret seed, published before anyone joins.
    pub commitment: String,
    /// The public randomness named in advance, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon: Option<String>,
    /// Once the pre-queue closed: how many arrivals it holds (1 to this number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub participants: Option<u64>,
    /// Once drawn: SHA-256 of the arrival numbers 1 to `participants`, one per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub participants_digest: Option<String>,
    /// Once drawn: the seed (its SHA-256 is `commitment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// Once drawn: the beacon's value ("" without a beacon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beacon_value: Option<String>,
    /// Once drawn: SHA-256 of `seed \n participantsDigest \n beaconValue \n`, the
    /// permutation's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_key: Option<String>,
    /// Once drawn: when (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn_at: Option<String>,
}

/// Where a draw stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DrawStage {
    /// Before `opensAt`: the pre-queue takes fans; only the commitment is out.
    Scheduled,
    /// The pre-queue closed at `opensAt`; the draw waits for the beacon's value.
    Closed,
    /// The pre-queue is in its drawn order; the seed and what went in are published.
    Drawn,
}

/// `GET …/{showId}/audit`: a page of the audit, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    /// Up to `limit` records after `after`, oldest first.
    pub records: Vec<AuditRecord>,
    /// Pass as `after` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One record of a show's audit: a tick that admitted someone, or the draw.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// The record's id in the audit (page on with `after`).
    pub id: String,
    /// What happened; it says which of the optional fields are present.
    pub kind: AuditKind,
    /// The store's clock (ms since the epoch).
    pub at_ms: u64,
    /// The admitter's fencing token.
    pub fence: u64,
    /// The show's incarnation: another once the show is made again or re-opened after a loss.
    pub epoch: u64,
    /// Ticks: the rate in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// Ticks: the arrival numbers admitted, in admission order, as inclusive ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admitted: Vec<[u64; 2]>,
    /// Ticks: the arrivals whose turn came while they were away, passed over and keeping
    /// their places (see docs/presence.md), as inclusive ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed: Vec<[u64; 2]>,
    /// Ticks: the arrivals passed over before and let in this tick once back (also in
    /// `admitted`), as ascending inclusive ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub returned: Vec<[u64; 2]>,
    /// Ticks: the arrivals whose places were released, away longer than the hold, as
    /// ascending inclusive ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expired: Vec<[u64; 2]>,
    /// The draw: the pre-queue's size and digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub participants: Option<u64>,
    /// The draw: SHA-256 of the arrival numbers 1 to `participants`, one per line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub participants_digest: Option<String>,
    /// Orders and redemptions: the buyer's arrival number, never more of the buyer (0: the order came with
    /// no admission, while the gate was lifted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<u64>,
    /// Phase changes: the phase the on-sale entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<super::Phase>,
    /// Stock changes: the seats for sale from then on (0: no stock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stock: Option<u64>,
    /// Schedule changes: the event running from then on, by its place in the list from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<u32>,
    /// Bypasses: the kind of rule that let the fan through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<super::BypassKind>,
    /// Code uses: the first 16 hex digits of the code's hash (never the code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Code uses: the lane the code let its fan into (its `arrival` is the lane's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    /// Ticks of a show with lanes: the places the lanes shared (the tick's, less the fans let
    /// in once back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub places: Option<u64>,
    /// Ticks of a show with lanes: each lane's turn, in the order served (docs/lanes.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lanes: Vec<LaneTurn>,
}

/// One lane's part of a tick (`lanes` of a tick record).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaneTurn {
    /// The lane's slot (0: the general queue; arrivals of slot k run from k × 2⁴⁰ + 1).
    pub slot: u8,
    /// Its share of the places, percent; absent with priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<u8>,
    /// Fans queued in it when the tick began.
    pub queued: u64,
    /// Fans of it let in.
    pub let_in: u64,
    /// Fans of it reached: let in, or passed over while away.
    pub reached: u64,
}

impl LaneTurn {
    /// Lane turns as a tick record keeps them: `slot:share:queued:let in:reached`, share `p`
    /// for priority, comma-separated; `None` if the text is not that.
    pub fn parse_all(text: &str) -> Option<Vec<LaneTurn>> {
        // The general queue and at most eight lanes, and lanes removed with fans still in
        // them: never more turns than slots.
        if text.split(',').count() > 256 {
            return None;
        }
        let turns: Vec<LaneTurn> = text
            .split(',')
            .map(|item| {
                let mut p = item.split(':');
                let slot = p.next()?.parse().ok()?;
                let share = match p.next()? {
                    "p" => None,
                    s => Some(s.parse().ok()?),
                };
                let turn = LaneTurn {
                    slot,
                    share,
                    queued: p.next()?.parse().ok()?,
                    let_in: p.next()?.parse().ok()?,
                    reached: p.next()?.parse().ok()?,
                };
                p.next().is_none().then_some(turn)
            })
            .collect::<Option<_>>()?;
        let mut seen = [false; 256];
        for t in &turns {
            if std::mem::replace(&mut seen[usize::from(t.slot)], true) {
                return None;
            }
        }
        Some(turns)
    }
}

impl AuditRecord {
    /// A record of `kind` at `at_ms`, with nothing else said yet (the store gives its id
    /// and epoch).
    pub fn new(kind: AuditKind, at_ms: u64) -> AuditRecord {
        AuditRecord {
            id: String::new(),
            kind,
            at_ms,
            fence: 0,
            epoch: 0,
            rate: None,
            admitted: Vec::new(),
            passed: Vec::new(),
            returned: Vec::new(),
            expired: Vec::new(),
            participants: None,
            participants_digest: None,
            arrival: None,
            phase: None,
            stock: None,
            event: None,
            via: None,
            code: None,
            lane: None,
            places: None,
            lanes: Vec::new(),
        }
    }
}

/// An audit record's id, `<ms>-<n>` (a Redis stream id; the embedded store writes its ids the
/// same way): where a page of the audit starts after. Parsed at the edge, so a store is never
/// handed a cursor it cannot page from: digits only, each part within 64 bits, and an id some
/// record could follow (the very last stream id has no successor for Redis to start from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence part.
    pub seq: u64,
}

impl RecordId {
    /// The least id after this one, if any: where a page after it starts.
    pub fn next(self) -> Option<RecordId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(RecordId { ms: self.ms, seq }),
            None => Some(RecordId {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }
}

/// Why an audit cursor was refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "a record id: `<ms>-<n>`, both parts digits within 64 bits, as a page's `next` gives it \
     (and not the last id there can be: nothing follows it)"
)]
pub struct InvalidRecordId;

impl std::str::FromStr for RecordId {
    type Err = InvalidRecordId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // `u64::from_str` alone would take a leading `+`.
        let part = |p: &str| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<u64>().ok())
                .flatten()
        };
        let (ms, seq) = s.split_once('-').ok_or(InvalidRecordId)?;
        let id = RecordId {
            ms: part(ms).ok_or(InvalidRecordId)?,
            seq: part(seq).ok_or(InvalidRecordId)?,
        };
        id.next().map(|_| id).ok_or(InvalidRecordId)
    }
}

impl std::fmt::Display for RecordId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// The kinds of audit record.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum AuditKind {
    /// An admission tick that let someone through, passed someone over or released a place
    /// (`rate`, `admitted`; `passed`, `returned`, `expired` with presence).
    Tick,
    /// The pre-queue drawn into its order (`participants`, `participantsDigest`).
    Draw,
    /// An order placed through the gate (by the buyer's arrival number).
    Order,
    /// The on-sale opened, paused, closed (the gate lifted) or ended.
    Phase,
    /// The operator set the seats for sale.
    Stock,
    /// An admission spent by a checkout outside (`POST …/redeem`), by its arrival number.
    Redeem,
    /// A failover lost writes: the arrival counter was found lower than numbers handed out,
    /// and raised to `arrival` (no number is handed out twice from then on).
    Lost,
    /// A fan let through without queueing by a bypass rule (`via`: the rule's kind), admitted
    /// at once under `arrival`.
    Bypass,
    /// A fan joined a lane with an access code (`code`: its hash's first 16 hex digits,
    /// `lane`, `arrival`).
    Code,
    /// The schedule's running event changed (`event`: which, by its place in the list from
    /// 1; absent: none runs any more), with the rate in force from then (`rate`).
    Event,
}

/// Arrival numbers, in admission order, as inclusive ranges of consecutive numbers.
pub fn to_ranges(arrivals: &[u64]) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &a in arrivals {
        match out.last_mut() {
            Some(last) if last[1] + 1 == a => last[1] = a,
            _ => out.push([a, a]),
        }
    }
    out
}

/// Ranges as the Redis store keeps them: `a-b` or `a`, comma-separated.
pub fn ranges_text(ranges: &[[u64; 2]]) -> String {
    ranges
        .iter()
        .map(|[a, b]| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The ranges back from their text; `None` if it is not one. Arrivals count from 1, a range
/// runs upwards, and none reaches `u64::MAX`: whoever reads them may count `b - a + 1` and
/// walk `a..=b` without a wrap.
pub fn parse_ranges(text: &str) -> Option<Vec<[u64; 2]>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',')
        .map(|item| {
            let [a, b] = match item.split_once('-') {
                Some((a, b)) => [a.parse().ok()?, b.parse().ok()?],
                None => [item.parse().ok()?; 2],
            };
            (0 < a && a <= b && b < u64::MAX).then_some([a, b])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_fold_into_ranges_and_back() {
        let arrivals = [4, 5, 6, 9, 2, 3, 10];
        let ranges = to_ranges(&arrivals);
        assert_eq!(ranges, vec![[4, 6], [9, 9], [2, 3], [10, 10]]);
        let text = ranges_text(&ranges);
        assert_eq!(text, "4-6,9,2-3,10");
        assert_eq!(parse_ranges(&text), Some(ranges));
        assert_eq!(parse_ranges(""), Some(vec![]));
        for hostile in ["3-2", "0", "0-4", "1-18446744073709551615", "1,-2", "1-2-3"] {
            assert_eq!(parse_ranges(hostile), None, "{hostile}");
        }
        assert_eq!(parse_ranges("1-x"), None);
    }

    #[test]
    fn record_ids_are_stream_ids_with_a_successor() {
        for (text, next) in [
            ("0-0", "0-1"),
            ("1767225600000-3", "1767225600000-4"),
            ("18446744073709551615-1", "18446744073709551615-2"),
            ("5-18446744073709551615", "6-0"),
            ("007-01", "7-2"),
        ] {
            let id: RecordId = text.parse().unwrap_or_else(|_| panic!("{text}"));
            assert_eq!(id.next().unwrap().to_string(), next, "{text}");
        }
        for bad in [
            "",
            "-",
            "1",
            "1-",
            "-1",
            "a-1",
            "1-2-3",
            " 1-2",
            "18446744073709551616-0",
            "+1-0",
            "1-+0",
            // The last id there can be: no record follows it.
            "18446744073709551615-18446744073709551615",
        ] {
            assert!(bad.parse::<RecordId>().is_err(), "{bad}");
        }
    }
}
