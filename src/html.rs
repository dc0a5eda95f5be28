//! HTML text escaping: the one escape every page uses (the fans' pages, the console's
//! previews, the report).

/// `text` safe in HTML text and in quoted attributes, single or double.
pub fn escape(text: &str) -> String {
    escape_as(text, true)
}

/// `text` safe in HTML text and double-quoted attributes, its apostrophes left as written
/// (for a message's own words, where every attribute is double-quoted).
pub fn escape_keeping_apostrophes(text: &str) -> String {
    escape_as(text, false)
}

fn escape_as(text: &str, apostrophes: bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' if apostrophes => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_are_escaped_apostrophes_as_asked() {
        let hostile = r#"<a href="x" onclick='y'>&"#;
        assert_eq!(
            escape(hostile),
            "&lt;a href=&quot;x&quot; onclick=&#x27;y&#x27;&gt;&amp;"
        );
        assert_eq!(
            escape_keeping_apostrophes(hostile),
            "&lt;a href=&quot;x&quot; onclick='y'&gt;&amp;"
        );
    }
}
