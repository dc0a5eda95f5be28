//! The document's component schemas: the contract's types, derived, and the few shapes no
//! type names; and the small schemas the rest of the document is made of.

use utoipa::ToSchema;
use utoipa::openapi::schema::{
    AllOf, Array, KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr, Schema};

use crate::http::operator::{EndRequest, ShowConfig};
use crate::model::{
    AuditPage, DrawView, Order, OrderRequest, RESERVED_SHOW_IDS, Redemption, ShowStats,
    TicketStatus,
};
use crate::protocol::{Challenge, ErrorBody, EventName, Frame, TicketView};

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

/// Every component schema: the contract's types, and the few shapes no type names.
pub(super) fn schemas() -> Vec<(String, RefOr<Schema>)> {
    fn add<T: ToSchema>(all: &mut Vec<(String, RefOr<Schema>)>) {
        all.push((T::name().into_owned(), T::schema()));
        T::schemas(all);
    }
    let mut all = Vec::new();
    add::<TicketView>(&mut all);
    add::<TicketStatus>(&mut all);
    add::<EventName>(&mut all);
    add::<Frame>(&mut all);
    add::<ErrorBody>(&mut all);
    add::<ShowStats>(&mut all);
    add::<ShowConfig>(&mut all);
    add::<EndRequest>(&mut all);
    add::<OrderRequest>(&mut all);
    add::<Order>(&mut all);
    add::<Redemption>(&mut all);
    add::<DrawView>(&mut all);
    add::<AuditPage>(&mut all);
    add::<Challenge>(&mut all);
    let show_id = string(None)
        .pattern(Some(format!("^{}$", show_id_chars())))
        .description(Some("A show id: 1 to 64 of A-Z, a-z, 0-9, `.`, `_`, `-`"));
    let unknown = serde_json::to_value(TicketStatus::Unknown).expect("a status serialises");
    let unknown_ticket = object()
        .description(Some(
            "A ticket nobody holds: its id as it was sent, and `UNKNOWN`",
        ))
        .property("ticketId", string(None))
        .property("status", string(None).enum_values(Some([unknown])))
        .required("ticketId")
        .required("status");
    let nullable = SchemaType::from_iter([Type::Integer, Type::Null]);
    let per_show = object()
        .property(
            "connectedFans",
            integer(0).description(Some("Fans following its tickets on this instance")),
        )
        .property(
            "admittedSinceLast",
            (integer(0).schema_type(nullable))
                .description(Some("Admitted since the last sample; null while unknown")),
        )
        .required("connectedFans");
    let shows = AllOf::builder()
        .item(reference(&ShowStats::name()))
        .item(per_show);
    let sample = object()
        .description(Some("One sample of the operator's stream (event `stats`)"))
        .property(
            "at",
            integer(0).description(Some("The server's clock, ms since the epoch")),
        )
        .property("shows", Array::new(shows))
        .required("at")
        .required("shows");
    all.push(("ShowId".into(), show_id.into()));
    all.push(("UnknownTicket".into(), unknown_ticket.into()));
    all.push(("StatsSample".into(), sample.into()));
    super::bounds::narrow(&mut all);
    all
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
