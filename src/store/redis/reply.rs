//! How every script's answer is read: each script answers one JSON object, decoded by name
//! into one type per reply (an enum tagged by `outcome` where a script has several outcomes),
//! never read by position; each reply type sits with its concern, beside its script
//! (`queue/reply.rs`, `shows/reply.rs`, …), and this file holds what they all share. A
//! per-show script that will not serve its show answers `{"refused": …}` instead, alike from
//! every script ([`decode`] turns it into the error).
//!
//! Two things of Lua's `cjson` shape the types: an empty table is written `{}` (so a list may
//! come as an empty object: [`list`]), and numbers are written with 14 significant digits (so
//! epochs, up to 13 digits today, travel as text all the same, as they do in the scripts'
//! arguments).

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};

use crate::model::ShowId;
use crate::store::{Result, StoreError};

/// Decodes `text`, the reply of the script `script` for `show`: the show's refusal as its
/// error, else the reply as `T`; anything else is a [`StoreError::Protocol`] naming the script.
pub(in crate::store) fn decode<T: DeserializeOwned>(
    show: &ShowId,
    script: &str,
    text: &str,
) -> Result<T> {
    let bad = |e: serde_json::Error| StoreError::Protocol(format!("{script}: {e}: {text}"));
    let value: serde_json::Value = serde_json::from_str(text).map_err(bad)?;
    if let Some(refused) = value.get("refused") {
        if let Ok(rule) = RuleRefusal::deserialize(refused) {
            return Err(not_now(rule.why, rule.retry_after_ms));
        }
        return Err(ShowRefusal::deserialize(refused).map_err(bad)?.error(show));
    }
    T::deserialize(&value).map_err(bad)
}

/// Decodes the reply of a script that serves no show (`lease.lua`, `limit.lua`, …).
pub(in crate::store) fn decode_plain<T: DeserializeOwned>(script: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Protocol(format!("{script}: {e}: {text}")))
}

/// Why a script would not serve a show (`live_show()` in `prelude.lua`, and `join.lua` once
/// the on-sale ended).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ShowRefusal {
    /// Nobody made it (or it was deleted).
    NoSuchShow,
    /// Its state was lost: it is refused until an operator opens it again.
    Lost,
    /// Its on-sale ended (joins).
    Ended,
}

/// A rule of the show that refused the call for now (`unavailable()` in `prelude.lua`).
#[derive(Debug, Deserialize)]
struct RuleRefusal {
    why: String,
    retry_after_ms: u64,
}

impl ShowRefusal {
    fn error(self, show: &ShowId) -> StoreError {
        match self {
            ShowRefusal::NoSuchShow => StoreError::NoSuchShow(show.clone()),
            ShowRefusal::Lost => StoreError::ShowLost(show.clone()),
            ShowRefusal::Ended => StoreError::Ended(show.clone()),
        }
    }
}

/// A rule's refusal for now, as the store says it.
pub(in crate::store) fn not_now(why: String, retry_after_ms: u64) -> StoreError {
    StoreError::NotNow {
        why,
        retry_after: std::time::Duration::from_millis(retry_after_ms.max(1000)),
    }
}

/// An epoch, as text (see the module's note on numbers).
pub(in crate::store) fn epoch<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    text.parse()
        .map_err(|_| D::Error::custom(format!("epoch {text:?} is not a number")))
}

/// A list, which `cjson` writes `{}` when it is empty.
pub(in crate::store) fn list<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Object(m) if m.is_empty() => Ok(Vec::new()),
        v => Vec::<T>::deserialize(v).map_err(D::Error::custom),
    }
}
