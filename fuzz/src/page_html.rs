//! Target `page_html`: a KB page's `content_html` as a tenant or a sync
//! source sends it, through the ingest sanitiser
//! [`sanitize_page_html`]
//! (§11.2 step 5) — the markup every stored page and later every rendered
//! page is made of.
//!
//! Invariants checked: the output never carries an element or attribute
//! that can run script (`<script`, `<iframe`, `<style`, `on…=` handlers,
//! `javascript:` URLs), whatever the input; and sanitising the output
//! again keeps it free of them (what is stored stays safe when re-read).

use root::retrieval::sanitize::sanitize_page_html;

/// Parse what the fuzzer gave as (lossy) UTF-8 and sanitise it.
pub fn run(data: &[u8]) {
    let html = String::from_utf8_lossy(data);
    let clean = sanitize_page_html(&html);
    assert_safe(&html, &clean);
    assert_safe(&clean, &sanitize_page_html(&clean));
}

fn assert_safe(input: &str, clean: &str) {
    if !input.contains('<') {
        // Text without markup is kept as it is (nothing to run).
        assert_eq!(input, clean);
        return;
    }
    // Read the output the way a browser would and look at what it built.
    let doc = scraper::Html::parse_fragment(clean);
    for node in doc.tree.nodes() {
        let Some(el) = node.value().as_element() else {
            continue;
        };
        let name = el.name().to_ascii_lowercase();
        assert!(
            !["script", "iframe", "style", "object", "embed", "frame"].contains(&name.as_str()),
            "<{name}> survived: {clean}"
        );
        for (attr, value) in el.attrs() {
            let attr = attr.to_ascii_lowercase();
            assert!(!attr.starts_with("on"), "handler {attr} survived: {clean}");
            // What a browser's URL parser sees (WHATWG URL): leading and
            // trailing C0 controls and spaces trimmed, tab/LF/CR removed
            // anywhere; any other control char makes the scheme invalid.
            let v: String = value
                .trim_matches(|c: char| c <= ' ')
                .chars()
                .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                .collect::<String>()
                .to_ascii_lowercase();
            assert!(
                !v.starts_with("javascript:")
                    && !v.starts_with("vbscript:")
                    && !v.starts_with("data:"),
                "a script URL in {attr} survived: {clean}"
            );
        }
    }
}
