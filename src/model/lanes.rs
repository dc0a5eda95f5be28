//! Lanes (docs/lanes.md): a show's queue split by access code. A fan who joins with a presale
//! or priority code waits in its code's lane, first in first out inside it; each lane has a
//! share of the admission rate while it holds fans, or strict priority; the general queue
//! (lane 0) takes what the lanes leave.
//!
//! Every lane numbers its own arrivals densely, from `slot × LANE_SPAN + 1`, so one arrival
//! number names a fan across lanes (the audit's and the draw's name), its lane is
//! `arrival / LANE_SPAN`, and a position inside a lane is worked out as in the general queue:
//! arrivals past the lane's head, less those that left.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ShowId;

/// Arrival numbers of lane `k` run from `k × LANE_SPAN + 1`: 2⁴⁰ (a trillion arrivals a
/// lane; the highest lane's stay below 2⁴⁴, exact in Lua's doubles and in JSON).
pub const LANE_SPAN: u64 = 1 << 40;
/// The most lanes a show may hold besides the general queue.
pub const MAX_LANES: usize = 8;
/// The longest lane name.
pub(crate) const MAX_LANE_NAME: usize = 24;

/// One lane of a show (`lanes`): its name, and either a share of the rate or strict
/// priority.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LaneRule {
    /// 1 to 24 of `a-z`, `0-9` and `-` ("presale", "fan-club"); `general` is the queue
    /// without a code.
    pub name: String,
    /// Percent of the admission rate the lane takes while it holds fans (1 to 99; the
    /// shares of all lanes at most 99, the general queue takes the rest and whatever an
    /// empty lane leaves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 99)]
    pub share: Option<u8>,
    /// Strict priority: every place goes to this lane while it holds fans (lanes with
    /// priority are served in the order listed, before every shared lane).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub priority: bool,
}

/// Checks a show's lanes: at most [`MAX_LANES`], names well formed and distinct, each with a
/// share or priority (not both), the shares summing to at most 99.
pub(crate) fn check_lanes(lanes: &[LaneRule]) -> Result<(), String> {
    if lanes.len() > MAX_LANES {
        return Err(format!("at most {MAX_LANES} lanes"));
    }
    let mut total = 0u32;
    for (i, lane) in lanes.iter().enumerate() {
        let n = i + 1;
        if !lane_name_ok(&lane.name) {
            return Err(format!(
                "lane {n}: a name is 1 to {MAX_LANE_NAME} of a-z, 0-9 and '-', not 'general'"
            ));
        }
        if lanes[..i].iter().any(|l| l.name == lane.name) {
            return Err(format!("lane {n}: '{}' is named twice", lane.name));
        }
        match (lane.share, lane.priority) {
            (Some(_), true) => {
                return Err(format!("lane {n}: a share or priority, not both"));
            }
            (None, false) => return Err(format!("lane {n}: give it a share or priority")),
            (Some(s), false) if !(1..=99).contains(&s) => {
                return Err(format!("lane {n}: a share is 1 to 99 percent"));
            }
            (Some(s), false) => total += u32::from(s),
            (None, true) => {}
        }
    }
    if total > 99 {
        return Err(format!(
            "the lanes' shares sum to {total} %: at most 99, the general queue keeps the rest"
        ));
    }
    Ok(())
}

/// The shortest access code: codes must not be guessed, and the audit names each by a hash.
pub const MIN_CODE: usize = 6;
/// The longest access code.
pub const MAX_CODE: usize = 64;

/// An access code a join brings (`X-Access-Code`), as the store judges it: the code's hash,
/// never the code, and whether its fan would rather join the general queue than be refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessCode {
    /// [`CodeKey::hash`] of the code.
    pub hash: String,
    /// Join the general queue if the code is refused (`X-Access-Code-Fallback: general`).
    pub fallback: bool,
}

/// Whether `code` is of an access code's shape: [`MIN_CODE`] to [`MAX_CODE`] of `A-Z`, `a-z`,
/// `0-9`, `-` and `_` (so no control character, separator or space reaches a log or a CSV).
pub fn code_ok(code: &str) -> bool {
    (MIN_CODE..=MAX_CODE).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The secret access codes are kept under (`ACCESS_CODE_KEY`, or derived from the operator
/// token): without it, neither what the store holds nor what the audit shows tells a code.
#[derive(Clone)]
pub struct CodeKey([u8; 32]);

impl CodeKey {
    /// The key `ACCESS_CODE_KEY` names, or, unset, one derived from the operator token.
    pub fn new(configured: Option<&str>, admin_token: &str) -> CodeKey {
        let material = match configured.map(str::trim).filter(|k| !k.is_empty()) {
            Some(key) => format!("access-code-key:{key}"),
            None => format!("access-code-key-from-admin-token:{admin_token}"),
        };
        CodeKey(Sha256::digest(material.as_bytes()).into())
    }

    /// How a show keeps `code`: HMAC-SHA256 under this key of `show:code`, in hex. The store
    /// holds only this, and the audit its first 16 digits; codes differ between shows even
    /// when their text is alike.
    pub fn hash(&self, show: &ShowId, code: &str) -> String {
        use hmac::{KeyInit, Mac};
        let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes any key length");
        mac.update(format!("{show}:{code}").as_bytes());
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl std::fmt::Debug for CodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeKey(…)")
    }
}

/// Whether `name` may name a lane.
pub fn lane_name_ok(name: &str) -> bool {
    (1..=MAX_LANE_NAME).contains(&name.len())
        && name != "general"
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The lane an arrival number belongs to (0: the general queue).
pub fn lane_of(arrival: u64) -> u8 {
    u8::try_from(arrival / LANE_SPAN).unwrap_or(u8::MAX)
}

/// A lane's name, held inline so that the pace that carries it stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct LaneName {
    len: u8,
    bytes: [u8; MAX_LANE_NAME],
}

impl LaneName {
    /// `name` when it may name a lane.
    pub fn new(name: &str) -> Option<LaneName> {
        if !lane_name_ok(name) {
            return None;
        }
        let mut bytes = [0; MAX_LANE_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        Some(LaneName {
            len: name.len() as u8,
            bytes,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl std::fmt::Debug for LaneName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// One lane as the pace tells it: its slot, name, how it is served, how many wait in it, and
/// where its head stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LaneFigure {
    /// Its slot (arrivals from `slot × LANE_SPAN + 1`); 0 is the general queue.
    pub slot: u8,
    /// Its name (empty for the general queue).
    pub name: LaneName,
    /// Its share of the rate, percent (0 with priority).
    pub share: u8,
    /// Served before every shared lane while it holds fans.
    pub priority: bool,
    /// Fans waiting in it (passed-over fans included).
    pub waiting: u64,
    /// The highest arrival of the lane admitted so far.
    pub head: u64,
    /// Its fans passed over while away, who stand ahead of its queued ones.
    pub parked: u64,
}

/// A show's lanes as the pace tells them, the general queue among them: empty when the show
/// has none (every fan is in the general queue, served at the whole rate).
///
/// Shared, not inline: a pace rides in every status the hub holds and hands each stream
/// (two or three copies a fan), and the figures of nine lanes inline made each ~500 bytes
/// for the few shows that have lanes at all.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Lanes {
    lanes: Option<std::sync::Arc<[LaneFigure]>>,
}

impl Lanes {
    /// The lanes `figures` (at most [`MAX_LANES`] + 1 are kept), in the order they are served.
    pub fn new(figures: impl IntoIterator<Item = LaneFigure>) -> Lanes {
        let lanes: Vec<LaneFigure> = figures.into_iter().take(MAX_LANES + 1).collect();
        Lanes {
            lanes: (!lanes.is_empty()).then(|| lanes.into()),
        }
    }

    /// Whether the show has lanes.
    pub fn any(&self) -> bool {
        self.lanes.is_some()
    }

    /// The lanes, in the order they are served.
    pub fn iter(&self) -> impl Iterator<Item = &LaneFigure> {
        self.lanes.iter().flat_map(|l| l.iter())
    }

    /// Lane `slot`, if the show has it.
    pub fn get(&self, slot: u8) -> Option<&LaneFigure> {
        self.iter().find(|l| l.slot == slot)
    }

    /// The head of lane `slot`: its highest arrival admitted (`general_head` for the general
    /// queue; the lane's first arrival less one when the pace does not name it).
    pub fn head(&self, slot: u8, general_head: u64) -> u64 {
        if slot == 0 {
            return general_head;
        }
        self.get(slot)
            .map_or(u64::from(slot) * LANE_SPAN, |l| l.head)
    }

    /// How many admissions, over every lane, come before the fan at `position` in lane `slot`
    /// is let in, while each lane takes its share (or all, with priority) of every tick and an
    /// emptied lane leaves its share to the others: the place that fan would hold in one
    /// queue, which its ETA is worked out from. Lanes that fill meanwhile are not foreseen.
    pub fn admissions_until(&self, slot: u8, position: u64) -> u64 {
        let Some(me) = self.get(slot) else {
            return position;
        };
        let mut before = 0f64;
        // Priority lanes first, in order: each drains whole before the next is served.
        for l in self.iter().filter(|l| l.priority) {
            if l.slot == slot {
                return (before as u64).saturating_add(position);
            }
            before += l.waiting as f64;
        }
        if me.priority {
            return (before as u64).saturating_add(position);
        }
        // Shared lanes: each takes its share of every place among those still holding fans.
        let mut left: Vec<(u8, f64, f64)> = self
            .iter()
            .filter(|l| !l.priority)
            .map(|l| {
                let waiting = if l.slot == slot {
                    position as f64
                } else {
                    l.waiting as f64
                };
                (l.slot, f64::from(l.share.max(1)), waiting)
            })
            .filter(|&(s, _, w)| w > 0.0 || s == slot)
            .collect();
        loop {
            let total: f64 = left.iter().map(|&(_, share, _)| share).sum();
            // The admissions until the first of them empties.
            let Some(&(first, _, _)) = left
                .iter()
                .min_by(|a, b| (a.2 * total / a.1).total_cmp(&(b.2 * total / b.1)))
            else {
                return before as u64;
            };
            let step = left
                .iter()
                .find(|l| l.0 == first)
                .map_or(0.0, |&(_, share, w)| w * total / share);
            before += step;
            if first == slot {
                return before.ceil() as u64;
            }
            for l in &mut left {
                l.2 -= step * l.1 / total;
            }
            left.retain(|l| l.0 != first && (l.2 > 1e-9 || l.0 == slot));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(slot: u8, share: u8, priority: bool, waiting: u64) -> LaneFigure {
        LaneFigure {
            slot,
            name: LaneName::new(if slot == 0 { "x" } else { "presale" }).unwrap_or_default(),
            share,
            priority,
            waiting,
            head: u64::from(slot) * LANE_SPAN,
            parked: 0,
        }
    }

    #[test]
    fn lanes_are_checked_whole() {
        let ok = |share, priority| LaneRule {
            name: "presale".into(),
            share,
            priority,
        };
        assert!(check_lanes(&[ok(Some(80), false)]).is_ok());
        assert!(check_lanes(&[ok(None, true)]).is_ok());
        assert!(check_lanes(&[ok(None, false)]).is_err());
        assert!(check_lanes(&[ok(Some(80), true)]).is_err());
        assert!(check_lanes(&[ok(Some(100), false)]).is_err());
        let two = [
            ok(Some(60), false),
            LaneRule {
                name: "fans".into(),
                share: Some(40),
                priority: false,
            },
        ];
        assert!(check_lanes(&two).unwrap_err().contains("sum to 100"));
        assert!(check_lanes(&[ok(Some(1), false), ok(Some(1), false)]).is_err());
        for bad in [
            "",
            "General",
            "general",
            "a b",
            "é",
            "x\u{7}",
            &"a".repeat(25),
        ] {
            let rule = LaneRule {
                name: bad.into(),
                share: Some(10),
                priority: false,
            };
            assert!(check_lanes(&[rule]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_arrival_names_its_lane() {
        assert_eq!(lane_of(1), 0);
        assert_eq!(lane_of(LANE_SPAN), 1);
        assert_eq!(lane_of(3 * LANE_SPAN + 7), 3);
        assert_eq!(
            LaneName::new("fan-club").map(|n| n.as_str().to_owned()),
            Some("fan-club".into())
        );
        assert!(LaneName::new("general").is_none());
    }

    #[test]
    fn a_share_lane_drains_at_its_share_then_the_rest_take_the_whole_rate() {
        // 80 % to presale (100 waiting), 20 % to the general queue (1,000 waiting).
        let lanes = Lanes::new([lane(1, 80, false, 100), lane(0, 20, false, 1000)]);
        // The 40th of presale: 40 / 0.8 = 50 admissions.
        assert_eq!(lanes.admissions_until(1, 40), 50);
        // Presale empties after 125 admissions, when 25 of the general queue are in; the 100th
        // of the general queue comes 75 admissions later.
        assert_eq!(lanes.admissions_until(0, 100), 200);
        // The 10th of the general queue comes before presale empties: 10 / 0.2.
        assert_eq!(lanes.admissions_until(0, 10), 50);
        // Without lanes, a position is its own count.
        assert_eq!(Lanes::default().admissions_until(0, 17), 17);
    }

    #[test]
    fn priority_lanes_go_whole_before_the_shared_ones() {
        let lanes = Lanes::new([
            lane(2, 0, true, 30),
            lane(1, 50, false, 10),
            lane(0, 50, false, 100),
        ]);
        assert_eq!(lanes.admissions_until(2, 5), 5);
        // 30 of priority, then half the places to each shared lane.
        assert_eq!(lanes.admissions_until(1, 10), 50);
        assert_eq!(lanes.admissions_until(0, 4), 38);
        // Past the shared lane's 10 (20 admissions), the rest is whole.
        assert_eq!(lanes.admissions_until(0, 20), 60);
    }
}
