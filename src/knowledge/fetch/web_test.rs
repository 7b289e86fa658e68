use super::*;

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn lan() -> OutboundPolicy {
    OutboundPolicy {
        allow_private: true,
        require_https: false,
    }
}

#[test]
fn a_redirect_is_resolved_against_the_current_url_and_followed() {
    let current = url("https://docs.example.org/guide/start");
    let next = next_hop(
        OutboundPolicy::strict(),
        &current,
        301,
        Some("../faq?x=1"),
        0,
    )
    .unwrap();
    assert_eq!(
        next.map(String::from).as_deref(),
        Some("https://docs.example.org/faq?x=1")
    );
    let next = next_hop(
        OutboundPolicy::strict(),
        &current,
        308,
        Some("https://www.example.org/"),
        4,
    )
    .unwrap();
    assert_eq!(
        next.map(String::from).as_deref(),
        Some("https://www.example.org/")
    );
}

#[test]
fn answers_that_are_not_redirects_end_the_chain() {
    let current = url("https://example.org/");
    for status in [200, 204, 300, 304, 404, 500] {
        assert_eq!(
            next_hop(OutboundPolicy::strict(), &current, status, Some("/x"), 0),
            Ok(None),
            "{status}"
        );
    }
}

#[test]
fn redirects_to_private_addresses_are_refused_unless_private_fetches_are_allowed() {
    let current = url("https://example.org/page");
    for target in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://127.0.0.1:8080/admin",
        "http://[::1]/",
    ] {
        let e = next_hop(OutboundPolicy::strict(), &current, 302, Some(target), 0).unwrap_err();
        assert!(
            e.message
                .starts_with("the page redirected to a refused destination: ")
                && e.message.contains("is not a public address"),
            "{target}: {}",
            e.message
        );
        assert_eq!(e.http_status, Some(302));
        assert_eq!(
            next_hop(lan(), &current, 302, Some(target), 0)
                .unwrap()
                .map(String::from)
                .as_deref(),
            Some(url(target).as_str()),
            "{target}"
        );
    }
}

#[test]
fn a_sixth_redirect_is_refused() {
    let current = url("https://example.org/5");
    assert!(
        next_hop(lan(), &current, 302, Some("/6"), MAX_REDIRECTS - 1)
            .unwrap()
            .is_some()
    );
    let e = next_hop(lan(), &current, 302, Some("/6"), MAX_REDIRECTS).unwrap_err();
    assert_eq!(
        e.message,
        "the page redirected more than 5 times; register the final URL instead"
    );
}

#[test]
fn non_http_targets_and_missing_locations_are_refused() {
    let current = url("https://example.org/");
    for target in [
        "ftp://example.org/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
    ] {
        let e = next_hop(lan(), &current, 301, Some(target), 0).unwrap_err();
        assert!(
            e.message
                .contains("URLs are not allowed (http or https only)"),
            "{target}: {}",
            e.message
        );
    }
    let e = next_hop(lan(), &current, 307, None, 0).unwrap_err();
    assert_eq!(
        e.message,
        "the page answered HTTP 307 without a Location to follow"
    );
    // https → http is refused where https is required (production).
    let prod = OutboundPolicy {
        allow_private: false,
        require_https: true,
    };
    assert!(
        next_hop(prod, &current, 301, Some("http://example.org/"), 0)
            .unwrap_err()
            .message
            .contains("must use https://")
    );
}

#[test]
fn content_types_pick_the_reader() {
    assert_eq!(page_kind(Some("text/html")), Ok(PageKind::Html));
    assert_eq!(page_kind(Some("application/xhtml+xml")), Ok(PageKind::Html));
    assert_eq!(page_kind(Some("text/plain")), Ok(PageKind::Text));
    assert_eq!(page_kind(None), Ok(PageKind::Sniff));
    let e = page_kind(Some("application/pdf")).unwrap_err();
    assert!(
        e.message.starts_with("the page is application/pdf;"),
        "{}",
        e.message
    );
}

const ARTICLE: &str = r#"<!doctype html>
<html><head><title>Mentor office hours | Example Community</title>
<meta name="author" content="Ada Lovelace">
<meta property="article:published_time" content="2024-05-02T09:00:00Z">
</head><body>
<nav><a href="/">Home</a> <a href="/events">Events</a></nav>
<article>
<h1>Mentor office hours</h1>
<p>Every Tuesday at 17:00 UTC mentors hold open office hours in the community call room.
Bring a question about your project, your career or the curriculum and a mentor will pair with you.</p>
<p>Sessions are first come, first served. If the queue is long, add your name to the pinned
thread in the help channel and a mentor will reach out after the call.</p>
<p>Office hours are recorded only with everyone's consent; recordings go to the
<a href="/archive">archive</a> within a day.</p>
</article>
<footer>© Example Community</footer>
<script>var tracking = "do not extract me";</script>
</body></html>"#;

#[test]
fn readability_extracts_the_article_and_its_metadata() {
    let page = extract_article(ARTICLE, "https://example.org/events/office-hours");
    assert!(
        page.title
            .as_deref()
            .is_some_and(|t| t.starts_with("Mentor office hours")),
        "{:?}",
        page.title
    );
    let text = page.content_text.unwrap();
    assert!(text.contains("Every Tuesday at 17:00 UTC"), "{text}");
    assert!(!text.contains("do not extract me"), "{text}");
    assert!(!text.contains("Events"), "{text}");
    let html = page.content_html.unwrap();
    assert!(
        html.contains("https://example.org/archive"),
        "relative links are resolved: {html}"
    );
    assert_eq!(page.byline.as_deref(), Some("Ada Lovelace"));
    assert_eq!(page.published.as_deref(), Some("2024-05-02T09:00:00Z"));
}

#[test]
fn a_page_without_an_article_keeps_its_body() {
    let html = "<html><head><title>Tiny</title></head><body><div>Hi <b>there</b></div><script>x()</script></body></html>";
    let page = extract_article(html, "https://example.org/");
    assert_eq!(page.title.as_deref(), Some("Tiny"));
    assert!(
        page.content_html
            .as_deref()
            .is_some_and(|h| h.contains("<b>there</b>")),
        "{page:?}"
    );
    assert!(
        page.content_text
            .as_deref()
            .is_some_and(|t| t.contains("Hi there") && !t.contains("x()")),
        "{page:?}"
    );
}

#[test]
fn markup_nested_too_deep_is_read_as_text_without_the_parser() {
    let depth = MAX_HTML_NESTING + 100;
    let html = format!(
        "<html><head><title>Deep &amp; dark</title></head><body>{}Bottom &amp; text{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let started = std::time::Instant::now();
    let page = extract_article(&html, "https://example.org/");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(page.title.as_deref(), Some("Deep & dark"));
    assert_eq!(page.content_html, None);
    assert_eq!(page.content_text.as_deref(), Some("Bottom & text"));
    assert_eq!(
        html_document(&html).content_text.as_deref(),
        Some("Bottom & text")
    );
}

#[test]
fn an_html_document_is_its_title_and_body() {
    let page = html_document(
        "<html><head><title> Release notes </title></head><body><h2>v2</h2><p>Faster.</p></body></html>",
    );
    assert_eq!(page.title.as_deref(), Some("Release notes"));
    assert_eq!(
        page.content_html.as_deref(),
        Some("<h2>v2</h2><p>Faster.</p>")
    );
    assert_eq!(page.content_text, None);
    assert_eq!(html_document("<p>untitled</p>").title, None);
}

#[test]
fn bodies_decode_lossily_without_a_byte_order_mark() {
    assert_eq!(decode_text(b"\xef\xbb\xbfhello"), "hello");
    assert_eq!(decode_text(b"caf\xe9"), "caf\u{fffd}");
}
