//! The guard's decisions: prefixes, purchase paths, `PROTECT` refused, and the table of
//! spellings a guarded path may be sent in.

use super::*;

fn gateway(protect: &str, case: ProtectCase) -> Gateway {
    Gateway::new(
        "http://127.0.0.1:9/shop/",
        protect,
        case,
        Duration::from_secs(1),
    )
    .unwrap()
}

/// The show guarding `path`, "400" when the path is refused, "-" when it goes on unguarded;
/// and what the origin would be sent.
fn judged(g: &Gateway, path: &str) -> (String, Option<String>) {
    match g.decide(path) {
        Decision::Forward { path, rule } => (
            rule.map_or("-".into(), |r| {
                format!("{}{}", r.show, if r.purchase { "+buy" } else { "" })
            }),
            Some(path.forward),
        ),
        Decision::Ambiguous | Decision::Bad(_) => ("400".into(), None),
    }
}

#[test]
fn prefixes_guard_whole_segments_the_longest_first() {
    let g = gateway(
        "/checkout=a, /checkout/vip/=b,/api/buy=a",
        ProtectCase::Insensitive,
    );
    let show = |p| judged(&g, p).0;
    assert_eq!(show("/checkout"), "a");
    assert_eq!(show("/checkout/pay"), "a");
    assert_eq!(show("/checkout/vip/x"), "b");
    assert_eq!(show("/checkouts"), "-");
    assert_eq!(show("/"), "-");
    assert_eq!(
        g.upstream_uri(g.target("/a", Some("b=c")).unwrap())
            .unwrap()
            .to_string(),
        "http://127.0.0.1:9/shop/a?b=c"
    );
}

/// The spellings a guarded path may be sent in (`tests/support/spellings.tsv`, which the
/// integration tests send to real origins): what the guard decides for each, what the
/// origin is sent, and that what it is sent is judged the same way again.
#[test]
fn every_spelling_of_a_guarded_path_is_guarded_or_refused() {
    let g = gateway(
        "/checkout=a,purchase=/checkout/pay,/checkout/vip=b",
        ProtectCase::Insensitive,
    );
    let table = include_str!("../../../tests/support/spellings.tsv");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').collect())
        .collect();
    assert!(rows.len() >= 20);
    for row in rows {
        let (raw, show, forward) = (row[0], row[1], row[2]);
        let forward = (!forward.is_empty()).then_some(forward);
        let (got, sent) = judged(&g, raw);
        assert_eq!((got.as_str(), sent.as_deref()), (show, forward), "{raw}");
        if let Some(sent) = sent {
            assert_eq!(judged(&g, &sent).0, show, "{raw} sent as {sent}");
        }
    }
    assert_eq!(judged(&g, "*").0, "400");
}

#[test]
fn letter_case_counts_only_when_asked() {
    let g = gateway("/checkout=a", ProtectCase::Sensitive);
    assert_eq!(judged(&g, "/checkout/x").0, "a");
    assert_eq!(judged(&g, "/%63heckout").0, "a");
    assert_eq!(judged(&g, "/CHECKOUT").0, "-");
    let g = gateway("/Checkout=a", ProtectCase::Insensitive);
    assert_eq!(judged(&g, "/checkout").0, "a");
}

#[test]
fn a_guard_over_the_whole_site() {
    let g = gateway("/=a,purchase=/pay", ProtectCase::Insensitive);
    assert_eq!(judged(&g, "/").0, "a");
    assert_eq!(judged(&g, "/anything").0, "a");
    assert_eq!(judged(&g, "/PAY/x").0, "a+buy");
    assert_eq!(g.shows().map(ShowId::as_str).collect::<Vec<_>>(), ["a"]);
}

#[test]
fn bad_settings_are_named() {
    let new = |upstream: &str, protect: &str| {
        Gateway::new(
            upstream,
            protect,
            ProtectCase::Insensitive,
            Duration::from_secs(1),
        )
    };
    for bad in [
        "https://shop",
        "shop:80",
        "http://",
        "ftp://x",
        "http://o?x=1",
    ] {
        assert!(
            matches!(new(bad, ""), Err(GatewayError::BadUpstream)),
            "{bad}"
        );
    }
    for (protect, n) in [
        ("/x", 1),
        ("/x=a,/y=b{", 2),
        ("x=a", 1),
        ("purchase=/pay,/x=a", 1),
        ("/x=a,purchase=pay", 2),
        ("/a/../x=a", 1),
        ("/a%2Fb=a", 1),
        ("/a;b=a", 1),
        ("/%61=a", 1),
        ("//a=a", 1),
    ] {
        match new("http://o", protect) {
            Err(GatewayError::BadProtect(i)) => assert_eq!(i, n, "{protect}"),
            other => panic!("{protect}: {other:?}"),
        }
    }
    for (protect, n) in [
        ("/x=a,/x/=b", 2),
        ("/x=a,/X=b", 2),
        ("/x=a,/x=a", 2),
        ("/x=a,purchase=/y,purchase=/y", 3),
    ] {
        match new("http://o", protect) {
            Err(GatewayError::Overlap(i, _)) => assert_eq!(i, n, "{protect}"),
            other => panic!("{protect}: {other:?}"),
        }
    }
    // With case counting, /x and /X are two prefixes.
    assert!(
        Gateway::new(
            "http://o",
            "/x=a,/X=b",
            ProtectCase::Sensitive,
            Duration::from_secs(1)
        )
        .is_ok()
    );
    // A purchase path that is its show's whole prefix: everything under it buys.
    let g = new("http://o", "/pay=a,purchase=/pay").unwrap();
    assert_eq!(judged(&g, "/pay/x").0, "a+buy");
}

#[test]
fn only_paths_of_this_site_are_returned_to() {
    for good in ["/", "/checkout?seat=1", "/a/b#c"] {
        assert!(same_site_path(good), "{good}");
    }
    for bad in [
        "",
        "https://evil.example",
        "//evil.example",
        "/\\evil.example",
        "checkout",
        "/a\nb",
        "/a\\b",
    ] {
        assert!(!same_site_path(bad), "{bad:?}");
    }
    assert_eq!(encode_component("/c?a=1&b=é"), "/c%3Fa%3D1%26b%3D%C3%A9");
}
