//! KB page HTML sanitising (§11.2 step 5): every `content_html` is cleaned
//! on ingest, before it is stored or chunked, so whatever later renders a
//! page (the public KB pages, the dashboard) starts from markup without
//! scripts, event handlers or `javascript:` URLs. Rendering sanitises
//! again (defence in depth); this pass makes the stored copy safe too.
//!
//! ammonia's default allowlist keeps everything the chunker reads
//! (headings, paragraphs, lists, tables, `pre`, `blockquote`, `figure`,
//! links) and drops `script`/`style` with their content.

use index::chunker::{MAX_HTML_NESTING, flatten_markup, nesting_exceeds};

/// The sanitised form of a page's `content_html`. Text without a `<` has
/// no markup to clean and is kept as it is (escaping it would turn plain
/// text such as `AT&T` into `AT&amp;T` for the chunker). Markup nested
/// deeper than [`MAX_HTML_NESTING`] levels is never handed to the parser
/// (html5ever is quadratic in depth: 100 000 levels take minutes); it
/// becomes its flattened text in escaped paragraphs, as the chunker reads it.
pub fn sanitize_page_html(html: &str) -> String {
    if !html.contains('<') {
        return html.to_string();
    }
    if nesting_exceeds(html, MAX_HTML_NESTING) {
        return flatten_markup(html)
            .split("\n\n")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| format!("<p>{}</p>", escape_text(p)))
            .collect();
    }
    ammonia::clean(html)
}

/// Flattened markup text safe as HTML element content: no `<`/`>` can open
/// a tag. `&` is kept, so the source's entities (`&amp;`) stay entities
/// instead of being escaped twice.
fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_handlers_and_javascript_urls_are_removed() {
        let dirty = r#"<h2 onclick="steal()">Rules</h2><script>alert(1)</script><p>Book <a href="javascript:alert(2)">here</a> or <a href="https://example.org/b">there</a>.</p><img src=x onerror="alert(3)"><style>p{}</style>"#;
        let clean = sanitize_page_html(dirty);
        for gone in [
            "script",
            "alert",
            "onclick",
            "onerror",
            "javascript:",
            "style",
        ] {
            assert!(!clean.contains(gone), "{gone} in {clean}");
        }
        assert!(clean.contains("<h2>Rules</h2>"), "{clean}");
        assert!(
            clean
                .contains(r#"<a href="https://example.org/b" rel="noopener noreferrer">there</a>"#),
            "{clean}"
        );
    }

    #[test]
    fn the_structure_the_chunker_reads_survives() {
        let html = "<h1>A</h1><p>x</p><ul><li>i</li></ul><ol><li>j</li></ol><table><tbody><tr><td>c</td></tr></tbody></table><pre>code</pre><blockquote>q</blockquote><dl><dt>t</dt><dd>d</dd></dl><figure>f</figure>";
        assert_eq!(sanitize_page_html(html), html);
    }

    #[test]
    fn plain_text_is_kept_as_it_is() {
        assert_eq!(
            sanitize_page_html("AT&T rules\n\nline two"),
            "AT&T rules\n\nline two"
        );
        assert_eq!(sanitize_page_html(""), "");
    }

    #[test]
    fn deep_nesting_is_flattened_without_reaching_the_parser() {
        let deep = format!(
            "{}Quiet <b>hours</b> &amp; rules{}<p>next</p><script>x()</script>",
            "<div>".repeat(100_000),
            "</div>".repeat(100_000)
        );
        let clean = sanitize_page_html(&deep);
        assert!(
            !clean.contains("<div>") && !clean.contains("script"),
            "{clean}"
        );
        assert!(
            clean.starts_with("<p>Quiet  hours  &amp; rules</p>"),
            "{clean}"
        );
        assert!(
            clean.starts_with("<p>") && clean.contains("<p>next</p>"),
            "{clean}"
        );
    }
}
