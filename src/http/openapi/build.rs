//! The small schemas the rest of the document is made of: strings, integers, objects,
//! references, and the patterns of show ids and case-blind words.

use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{Ref, RefOr, Schema};

use crate::model::RESERVED_SHOW_IDS;

/// A show id as [`crate::model::ShowId`] checks it, as a regular expression without anchors:
/// 1 to 64 of its alphabet, but neither `.` nor `..`, nor a name the server keeps for itself
/// ([`RESERVED_SHOW_IDS`], in any case).
pub(super) fn show_id_chars() -> String {
    const ALPHABET: &str = "[A-Za-z0-9._-]";
    let mut refused = vec!["\\.{1,2}".to_owned()];
    refused.extend(RESERVED_SHOW_IDS.iter().map(|name| any_case(name)));
    // Lookaheads: what follows is not one of those, ending where the id ends.
    let refused: String = refused
        .iter()
        .map(|r| format!("(?!{r}(?!{ALPHABET}))"))
        .collect();
    format!("{refused}{ALPHABET}{{1,64}}")
}

/// A decimal number from 0 to `max`, leading zeros allowed (as Rust's `u64::from_str` takes
/// them), as a regular expression without anchors.
pub(super) fn at_most(max: u64) -> String {
    let digits: Vec<u32> = max
        .to_string()
        .chars()
        .map(|c| c.to_digit(10).expect("a digit"))
        .collect();
    let n = digits.len();
    let mut shapes = Vec::new();
    if n > 1 {
        shapes.push(format!("[0-9]{{1,{}}}", n - 1));
    }
    // As many digits as `max`: its first `i` digits, one less at `i`, anything after.
    for (i, &d) in digits.iter().enumerate() {
        if d > 0 {
            let same: String = digits[..i].iter().map(u32::to_string).collect();
            let rest = n - i - 1;
            let rest = if rest > 0 {
                format!("[0-9]{{{rest}}}")
            } else {
                String::new()
            };
            shapes.push(format!("{same}[0-{}]{rest}", d - 1));
        }
    }
    shapes.push(max.to_string());
    format!("0*(?:{})", shapes.join("|"))
}

/// `word` matched in any case, without flags (which ECMA-262 regular expressions lack).
pub(super) fn any_case(word: &str) -> String {
    word.chars()
        .map(|c| match (c.to_ascii_lowercase(), c.to_ascii_uppercase()) {
            (lower, upper) if lower != upper => format!("[{upper}{lower}]"),
            _ => regex_escaped(c),
        })
        .collect()
}

fn regex_escaped(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\{c}")
    }
}

pub(super) fn string(format: Option<KnownFormat>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(format.map(SchemaFormat::KnownFormat))
}

pub(super) fn integer(minimum: i64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(minimum))
}

pub(super) fn object() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Object)
}

pub(super) fn ref_path(schema: &str) -> String {
    format!("#/components/schemas/{schema}")
}

pub(super) fn reference(schema: &str) -> RefOr<Schema> {
    Ref::from_schema_name(schema).into()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn at_most_matches_the_numbers_up_to_its_bound_and_no_more() {
        for max in [0, 7, 10, 255, 1000, 90_019, u64::MAX] {
            let pattern = json!({"pattern": format!("^{}$", at_most(max))});
            let matches = |text: &str| jsonschema::is_valid(&pattern, &json!(text));
            for n in [0, max / 3, max / 2, max.saturating_sub(1), max] {
                assert!(matches(&n.to_string()), "{n} ≤ {max}");
                assert!(matches(&format!("00{n}")), "00{n} ≤ {max}");
            }
            for above in [
                u128::from(max) + 1,
                u128::from(max) * 10 + 10,
                u128::from(max) + 100,
            ] {
                assert!(!matches(&above.to_string()), "{above} > {max}");
            }
            for never in ["", "-1", "+1", "1a", " 1"] {
                assert!(!matches(never), "{never:?}");
            }
        }
    }

    #[test]
    fn any_case_matches_a_word_in_every_case_and_nothing_else() {
        let pattern = json!({"pattern": format!("^{}$", any_case("web-Socket.1"))});
        for word in ["web-socket.1", "WEB-SOCKET.1", "Web-SoCkEt.1"] {
            assert!(jsonschema::is_valid(&pattern, &json!(word)), "{word}");
        }
        for other in ["websocket.1", "web-socketx1", "web-socket.2"] {
            assert!(!jsonschema::is_valid(&pattern, &json!(other)), "{other}");
        }
    }
}
