//! Which plural form a count takes: the CLDR rules of the shipped languages, for whole
//! numbers (the only counts a fan is told). The page's script asks the browser
//! (`Intl.PluralRules`), which follows the same CLDR rules; the browser tests read both.

/// The CLDR plural category of the whole number `n` in `lang` (`other` for a language
/// without rules here).
pub fn plural_category(lang: &str, n: u64) -> &'static str {
    let million = n != 0 && n.is_multiple_of(1_000_000);
    match lang {
        "en" if n == 1 => "one",
        "es" => match n {
            1 => "one",
            _ if million => "many",
            _ => "other",
        },
        "fr" => match n {
            0 | 1 => "one",
            _ if million => "many",
            _ => "other",
        },
        "ar" => match (n, n % 100) {
            (0, _) => "zero",
            (1, _) => "one",
            (2, _) => "two",
            (_, 3..=10) => "few",
            (_, 11..=99) => "many",
            _ => "other",
        },
        _ => "other",
    }
}

/// The categories a language's whole numbers fall in: what a plural message of it must
/// give (the catalog test holds every shipped catalog to it).
pub fn categories(lang: &str) -> &'static [&'static str] {
    match lang {
        "en" => &["one", "other"],
        "es" | "fr" => &["many", "one", "other"],
        "ar" => &["few", "many", "one", "other", "two", "zero"],
        _ => &["other"],
    }
}
