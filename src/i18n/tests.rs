use std::collections::BTreeSet;

use super::plural::categories;
use super::*;

#[test]
fn every_shipped_catalog_reads() {
    let codes: Vec<&str> = catalogs().iter().map(|c| c.code).collect();
    assert_eq!(codes, SHIPPED);
    assert!(catalog("ar").unwrap().rtl());
    assert!(!english().rtl());
}

/// Every catalog says every message English says, no other, with the same placeholders, and
/// each count's form its language needs.
#[test]
fn every_shipped_catalog_is_complete() {
    let en = english();
    let keys: BTreeSet<&String> = en.messages.keys().collect();
    for catalog in catalogs() {
        let theirs: BTreeSet<&String> = catalog.messages.keys().collect();
        let missing: Vec<_> = keys.difference(&theirs).collect();
        let extra: Vec<_> = theirs.difference(&keys).collect();
        assert!(missing.is_empty(), "{} lacks {missing:?}", catalog.code);
        assert!(
            extra.is_empty(),
            "{} has keys English lacks: {extra:?}",
            catalog.code
        );
        for (key, message) in &catalog.messages {
            let english = &en.messages[key];
            assert_eq!(
                message.placeholders(),
                english.placeholders(),
                "{}: {key} names other placeholders than English",
                catalog.code
            );
            match (english, message) {
                (Message::Plural(_), Message::Plural(forms)) => {
                    let given: Vec<&str> = forms.keys().map(String::as_str).collect();
                    assert_eq!(
                        given,
                        categories(catalog.code),
                        "{}: {key} must give exactly its language's plural forms",
                        catalog.code
                    );
                }
                (Message::Text(_), Message::Text(text)) => {
                    assert!(!text.trim().is_empty(), "{}: {key} is empty", catalog.code);
                }
                _ => panic!("{}: {key} is plural in one catalog only", catalog.code),
            }
        }
    }
}

/// Every message is said somewhere: in the pages' templates, their script, or the server.
#[test]
fn every_message_is_used() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    for dir in ["templates", "static", "src"] {
        read_all(&root.join(dir), &mut text);
    }
    let unused: Vec<&String> = english()
        .messages
        .keys()
        .filter(|key| !text.contains(&format!("\"{key}\"")) && !text.contains(&format!("'{key}'")))
        .collect();
    assert!(unused.is_empty(), "messages nothing says: {unused:?}");
}

fn read_all(dir: &std::path::Path, into: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            read_all(&path, into);
        } else if path
            .extension()
            .is_some_and(|e| ["rs", "html", "js"].contains(&e.to_str().unwrap_or("")))
        {
            into.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
}

#[test]
fn numbers_are_written_in_each_language() {
    let n = 1_234_567;
    assert_eq!(english().number(n), "1,234,567");
    assert_eq!(english().number(999), "999");
    let es = catalog("es").unwrap();
    assert_eq!(es.number(1234), "1234", "Spanish groups from five digits");
    assert_eq!(es.number(12_345), "12.345");
    let ar = catalog("ar").unwrap();
    assert_eq!(ar.number(1234), "١٬٢٣٤");
    assert_eq!(ar.digits_of("4:05"), "٤:٠٥");
    let fr = catalog("fr").unwrap();
    assert_eq!(fr.number(1234), "1\u{202f}234");
}

#[test]
fn plural_forms_follow_cldr() {
    assert_eq!(plural_category("en", 1), "one");
    assert_eq!(plural_category("en", 0), "other");
    assert_eq!(plural_category("fr", 0), "one");
    assert_eq!(plural_category("fr", 2), "other");
    assert_eq!(plural_category("fr", 2_000_000), "many");
    assert_eq!(plural_category("es", 1_000_000), "many");
    for (n, form) in [
        (0, "zero"),
        (1, "one"),
        (2, "two"),
        (3, "few"),
        (100, "other"),
        (102, "other"),
        (110, "few"),
        (111, "many"),
        (1003, "few"),
    ] {
        assert_eq!(plural_category("ar", n), form, "{n}");
    }
}

#[test]
fn the_language_is_asked_then_chosen_then_accepted_then_the_shows() {
    assert_eq!(
        negotiate(Some("fr"), Some("es"), Some("ar"), None).code,
        "fr"
    );
    assert_eq!(
        negotiate(Some("xx"), Some("es"), Some("ar"), None).code,
        "es"
    );
    assert_eq!(
        negotiate(None, None, Some("de-CH, es;q=0.8, ar;q=0.9"), None).code,
        "ar"
    );
    assert_eq!(negotiate(None, None, Some("fr-CA"), None).code, "fr");
    assert_eq!(
        negotiate(None, None, Some("de, fr;q=0"), Some("es")).code,
        "es"
    );
    assert_eq!(
        negotiate(None, None, Some("es;q=0.5, fr;q=0.5"), None).code,
        "es"
    );
    assert_eq!(negotiate(None, None, Some(";;,,q=x"), None).code, "en");
    // A quality that does not read is no quality: the entry is passed over, as `q=0` is.
    assert_eq!(
        negotiate(None, None, Some("fr;q=x, es;q=0.5"), None).code,
        "es"
    );
    assert_eq!(negotiate(None, None, Some("fr;q=1.5, ar"), None).code, "ar");
    assert_eq!(negotiate(None, None, None, None).code, "en");
}

#[test]
fn placeholders_are_found_and_stray_braces_kept() {
    assert_eq!(
        pieces("a {n} b {show}"),
        vec![
            Piece::Literal("a "),
            Piece::Slot("n"),
            Piece::Literal(" b "),
            Piece::Slot("show")
        ]
    );
    assert_eq!(
        pieces("{ x } {"),
        vec![Piece::Literal("{"), Piece::Literal(" x } {")]
    );
    let en = Args::of(english());
    assert_eq!(
        en.say("wait.waiting.ahead", Some(1233), &[]),
        "1,233 fans are ahead of you."
    );
    assert_eq!(
        en.say("wait.waiting.ahead", Some(1), &[]),
        "1 fan is ahead of you."
    );
}
