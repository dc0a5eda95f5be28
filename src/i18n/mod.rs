//! The fans' languages: one message catalog a language (`locales/<lang>.json`, compiled in),
//! the language a request is answered in, and numbers, clocks and waits worded for it.
//!
//! A catalog maps a key to a text, or to one text a CLDR plural category (`one`, `other`,
//! …) where a count is said. Texts hold `{name}` placeholders. Keys starting with `@` say how
//! the language writes: its name, its direction (`ltr`, `rtl`), its ten digits, its thousands
//! separator and from how many digits it groups. The waiting page's script words pushed
//! updates from the same catalog, handed to it whole (`static/wait.js`), with the same rules.
//!
//! - `plural.rs`: which plural form a count takes in each shipped language;
//! - `words.rs`: waits and clocks in words, the one wording the page and its script share.

mod plural;
mod words;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Deserialize;

pub use self::plural::{categories, plural_category};
pub use self::words::Args;

/// The shipped languages, by code, the default first.
pub const SHIPPED: [&str; 4] = ["en", "fr", "es", "ar"];

/// A message: one text, or one a plural form.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Message {
    /// The same text whatever the count.
    Text(String),
    /// A text a CLDR plural category (`zero`, `one`, `two`, `few`, `many`, `other`).
    Plural(BTreeMap<String, String>),
}

impl Message {
    /// The text for `count` in `lang` (`other` when the catalog lacks the count's form).
    pub fn text(&self, lang: &str, count: Option<u64>) -> &str {
        match self {
            Message::Text(text) => text,
            Message::Plural(forms) => {
                let category = plural_category(lang, count.unwrap_or(0));
                forms
                    .get(category)
                    .or_else(|| forms.get("other"))
                    .map(String::as_str)
                    .unwrap_or("")
            }
        }
    }

    /// The placeholders its texts use, each once, sorted.
    pub fn placeholders(&self) -> Vec<String> {
        let texts: Vec<&str> = match self {
            Message::Text(text) => vec![text],
            Message::Plural(forms) => forms.values().map(String::as_str).collect(),
        };
        let mut names: Vec<String> = texts
            .iter()
            .flat_map(|text| pieces(text))
            .filter_map(|piece| match piece {
                Piece::Slot(name) => Some(name.to_owned()),
                Piece::Literal(_) => None,
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// A piece of a message's text.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Said as written.
    Literal(&'a str),
    /// `{name}`: filled in.
    Slot(&'a str),
}

/// A text cut at its `{name}` placeholders (a brace not closing a name is literal).
pub fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            out.push(Piece::Literal(&rest[..open + 1]));
            rest = after;
            continue;
        }
        if open > 0 {
            out.push(Piece::Literal(&rest[..open]));
        }
        out.push(Piece::Slot(name));
        rest = &after[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest));
    }
    out
}

/// One language's catalog.
#[derive(Debug)]
pub struct Catalog {
    /// Its code (`en`, `ar`).
    pub code: &'static str,
    /// Its name in itself (`Français`).
    pub name: String,
    /// `ltr` or `rtl`.
    pub dir: String,
    /// Its ten digits, 0 to 9.
    pub digits: [char; 10],
    /// The thousands separator.
    pub group: String,
    /// Grouping applies from `3 + group_min` digits (Spanish: 2, so 1234 stays whole).
    pub group_min: usize,
    /// Every message, by key.
    pub messages: BTreeMap<String, Message>,
}

/// A catalog file as written.
#[derive(Deserialize)]
struct CatalogFile {
    #[serde(rename = "@language")]
    name: String,
    #[serde(rename = "@dir")]
    dir: String,
    #[serde(rename = "@digits")]
    digits: String,
    #[serde(rename = "@group")]
    group: String,
    #[serde(rename = "@groupMin", default = "one")]
    group_min: usize,
    #[serde(flatten)]
    messages: BTreeMap<String, Message>,
}

fn one() -> usize {
    1
}

impl Catalog {
    /// Reads a catalog's text; a shipped catalog that does not read is a build defect, caught
    /// by the unit tests.
    pub fn parse(code: &'static str, text: &str) -> Result<Catalog, String> {
        let file: CatalogFile = serde_json::from_str(text).map_err(|e| format!("{code}: {e}"))?;
        let digits: Vec<char> = file.digits.chars().collect();
        let digits: [char; 10] = digits
            .try_into()
            .map_err(|_| format!("{code}: @digits must be ten characters"))?;
        if file.dir != "ltr" && file.dir != "rtl" {
            return Err(format!("{code}: @dir must be ltr or rtl"));
        }
        Ok(Catalog {
            code,
            name: file.name,
            dir: file.dir,
            digits,
            group: file.group,
            group_min: file.group_min.max(1),
            messages: file.messages,
        })
    }

    /// `n` written with this language's digits and grouping.
    pub fn number(&self, n: u64) -> String {
        let plain = n.to_string();
        let grouped = plain.len() >= 3 + self.group_min;
        let mut out = String::with_capacity(plain.len() * 2);
        for (i, c) in plain.chars().enumerate() {
            if grouped && i > 0 && (plain.len() - i).is_multiple_of(3) {
                out.push_str(&self.group);
            }
            out.push(self.digit(c));
        }
        out
    }

    /// `text` with its ASCII digits written in this language's (a clock: `4:05`).
    pub fn digits_of(&self, text: &str) -> String {
        text.chars().map(|c| self.digit(c)).collect()
    }

    fn digit(&self, c: char) -> char {
        match c.to_digit(10) {
            Some(d) if c.is_ascii_digit() => self.digits[d as usize],
            _ => c,
        }
    }

    /// Whether the language is written right to left.
    pub fn rtl(&self) -> bool {
        self.dir == "rtl"
    }
}

static CATALOGS: LazyLock<Vec<Catalog>> = LazyLock::new(|| {
    let texts = [
        ("en", include_str!("../../locales/en.json")),
        ("fr", include_str!("../../locales/fr.json")),
        ("es", include_str!("../../locales/es.json")),
        ("ar", include_str!("../../locales/ar.json")),
    ];
    texts
        .into_iter()
        .filter_map(|(code, text)| match Catalog::parse(code, text) {
            Ok(catalog) => Some(catalog),
            Err(e) => {
                tracing::error!(error = %e, "a shipped catalog does not read; it is left out");
                None
            }
        })
        .collect()
});

/// The shipped catalogs, English first.
pub fn catalogs() -> &'static [Catalog] {
    &CATALOGS
}

/// The catalog of `code` (`fr`, `fr-CA` → `fr`), when shipped.
pub fn catalog(code: &str) -> Option<&'static Catalog> {
    let primary = code.split(['-', '_']).next()?.trim().to_ascii_lowercase();
    CATALOGS.iter().find(|c| c.code == primary)
}

/// English, the default and the fallback of a missing message.
pub fn english() -> &'static Catalog {
    catalog("en").expect("the English catalog is compiled in")
}

/// The language to answer in: `?lang=`, else the fan's earlier choice (cookie), else the
/// best of `Accept-Language` we ship, else the show's default, else English.
pub fn negotiate(
    asked: Option<&str>,
    chosen: Option<&str>,
    accept_language: Option<&str>,
    show_default: Option<&str>,
) -> &'static Catalog {
    asked
        .and_then(catalog)
        .or_else(|| chosen.and_then(catalog))
        .or_else(|| accept_language.and_then(best_accepted))
        .or_else(|| show_default.and_then(catalog))
        .unwrap_or_else(english)
}

/// The shipped language `Accept-Language` ranks highest (`fr-CH, fr;q=0.9, en;q=0.8`); a
/// quality of 0 refuses. At most 32 entries are read.
fn best_accepted(header: &str) -> Option<&'static Catalog> {
    let mut best: Option<(u32, &'static Catalog)> = None;
    for (tag, q) in weighted(header) {
        let Some(found) = catalog(tag) else { continue };
        // The higher quality wins; on a tie, the one listed first.
        if best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, found));
        }
    }
    best.map(|(_, c)| c)
}

/// The entries of an `Accept`-style header (`Accept`, `Accept-Language`) in their order, each
/// with its quality in thousandths (`q=0.8` is 800; none is 1000); an entry refused (`q=0`)
/// or of a quality that does not read is left out. At most 32 entries are read.
pub fn weighted(header: &str) -> impl Iterator<Item = (&str, u32)> {
    header.split(',').take(32).filter_map(|entry| {
        let mut parts = entry.split(';');
        let tag = parts.next().unwrap_or("").trim();
        let quality = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .next()
            .map_or(Some(1.0), |q| q.trim().parse::<f32>().ok())?;
        (quality > 0.0 && quality <= 1.0).then_some((tag, (quality * 1000.0) as u32))
    })
}

#[cfg(test)]
mod tests;
