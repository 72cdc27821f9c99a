//! Text into HTML: every string from a run (host names, command lines,
//! thread names, kernel function names) goes through [`escape`] before it
//! reaches the page.

/// `s` with the five characters that mean something in HTML text and
/// attribute values replaced by entities.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_characters_become_entities() {
        assert_eq!(
            escape(r#"<script>alert("x&y")</script> it's"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt; it&#39;s"
        );
        assert_eq!(escape("µs · plain"), "µs · plain");
    }
}
