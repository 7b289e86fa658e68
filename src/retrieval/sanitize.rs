//! KB page HTML sanitising (§11.2 step 5): every `content_html` is cleaned
//! on ingest, before it is stored or chunked, so whatever later renders a
//! page (the public KB pages, the dashboard) starts from markup without
//! scripts, event handlers or `javascript:` URLs. Rendering sanitises
//! again (defence in depth); this pass makes the stored copy safe too.
//!
//! ammonia's default allowlist keeps everything the chunker reads
//! (headings, paragraphs, lists, tables, `pre`, `blockquote`, `figure`,
//! links) and drops `script`/`style` with their content.

/// The sanitised form of a page's `content_html`. Text without a `<` has
/// no markup to clean and is kept as it is (escaping it would turn plain
/// text such as `AT&T` into `AT&amp;T` for the chunker).
pub fn sanitize_page_html(html: &str) -> String {
    if !html.contains('<') {
        return html.to_string();
    }
    ammonia::clean(html)
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
}
