//! Where a show's on-sale stands: its phase, the seats still for sale, why it ended. Read with
//! every ticket beside its [`super::Pace`] (how fast the queue moves): the gate and a waiting
//! fan's words follow it.

use serde::{Deserialize, Serialize};

/// Where an on-sale stands, as read with a ticket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sale {
    /// The phase: what the gate does and what a waiting fan is told.
    pub phase: Phase,
    /// Seats still for sale, when the show has a stock.
    pub stock_left: Option<u64>,
    /// Why an ended show ended, when the operator said.
    pub reason: Option<EndReason>,
}

impl Sale {
    /// An open on-sale with no stock.
    pub fn open() -> Sale {
        Sale {
            phase: Phase::Open,
            ..Sale::default()
        }
    }
}

/// Where an on-sale stands. The gate is shut in every phase but [`Phase::Closed`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Made, not opened yet (or scheduled, waiting for its opening and draw): fans may
    /// queue, nobody is admitted, nobody buys without an admission.
    #[default]
    Pending,
    /// Admitting at the show's rate.
    Open,
    /// The operator stopped admission for a while: every place is kept, the gate stays shut.
    Paused,
    /// The original's `close`: no on-sale running, no gate. Waiting fans are sent on.
    Closed,
    /// Over (sold out, or ended by the operator): joins are refused, the gate stays shut;
    /// fans admitted before may finish within their admission.
    Ended,
}

impl Phase {
    /// Whether an order needs an admission (every phase but `Closed`).
    pub fn gated(self) -> bool {
        self != Phase::Closed
    }

    /// The word on the wire (`open`, `paused`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "pending",
            Phase::Open => "open",
            Phase::Paused => "paused",
            Phase::Closed => "closed",
            Phase::Ended => "ended",
        }
    }
}

/// Why a show ended (`{"reason":"sold out"}`): at most [`EndReason::MAX`] bytes of printable
/// text, kept inline so that a [`Pace`] stays a plain copyable value.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct EndReason {
    len: u8,
    bytes: [u8; EndReason::MAX],
}

impl EndReason {
    /// The longest reason, in bytes.
    pub const MAX: usize = 64;

    /// The reason, or `None` when it is empty, too long or holds control characters.
    pub fn new(text: &str) -> Option<EndReason> {
        let text = text.trim();
        if text.is_empty() || text.len() > Self::MAX || text.chars().any(char::is_control) {
            return None;
        }
        let mut bytes = [0; Self::MAX];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Some(EndReason {
            len: text.len() as u8,
            bytes,
        })
    }

    /// The reason a show that sells its last seat ends with.
    pub fn sold_out() -> EndReason {
        EndReason::new(SOLD_OUT).expect("a valid reason")
    }

    /// The reason as the operator gave it, trimmed (what `"reason"` carries).
    pub fn as_str(&self) -> &str {
        // Built from a `&str` cut at its own length: always valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

/// The reason of a show that sold its last seat.
pub const SOLD_OUT: &str = "sold out";

impl std::fmt::Debug for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EndReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EndReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        EndReason::new(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "reason: 1 to {} bytes of printable text",
                EndReason::MAX
            ))
        })
    }
}

impl utoipa::PartialSchema for EndReason {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .max_length(Some(EndReason::MAX))
            .into()
    }
}

impl utoipa::ToSchema for EndReason {}
