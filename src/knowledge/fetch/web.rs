//! The `web_page` kind (§11.1): GET the page, follow redirects by hand,
//! and extract one article with Readability (`dom_smoothie`).
//!
//! Redirects are followed here, not by the client, because every hop must
//! pass the outbound policy again: a public page that redirects to
//! `http://169.254.169.254/` must not turn Root into a metadata-service
//! proxy. [`next_hop`] is that decision, pure so it is tested on its own.
//!
//! HTML is bounded before any parser sees it: the body cap keeps it under
//! [`MAX_WEB_PAGE_BYTES`](super::MAX_WEB_PAGE_BYTES), markup nested deeper
//! than [`MAX_HTML_NESTING`] (html5ever is quadratic in depth) is read as
//! flattened text, and Readability gives up past
//! [`MAX_ELEMENTS_TO_PARSE`] elements (the page's `<body>` is kept instead).

use dom_smoothie::{Config, Readability, TextMode};
use index::chunker::{MAX_HTML_NESTING, flatten_markup, nesting_exceeds};
use reqwest::Url;
use reqwest::header::{ACCEPT, LOCATION};
use storage::KnowledgeSource;

use super::{
    FetchError, Fetched, Fetcher, MAX_WEB_PAGE_BYTES, RawDocument, media_type, on_blocking_pool,
    read_body, refused_url, send, source_url, status_error,
};
use crate::outbound::OutboundPolicy;

/// Redirects a web page may take before the fetch gives up (a longer chain
/// is a loop or a misconfiguration; the admin should register the target).
pub const MAX_REDIRECTS: usize = 5;
/// Elements Readability scores at most; a bigger page keeps its `<body>`
/// unscored (scoring cost grows with the element count).
pub const MAX_ELEMENTS_TO_PARSE: usize = 30_000;
/// What a web page fetch asks for.
const ACCEPT_PAGE: &str = "text/html, application/xhtml+xml;q=0.9, text/plain;q=0.8, */*;q=0.1";
/// Longest Content-Type echoed in an error.
const MAX_SHOWN_MEDIA_TYPE: usize = 100;

/// Whether `status` is a redirect with a `Location` to follow.
pub(super) fn is_followable_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The hop decision after an answer with `status` from `current`, having
/// already followed `followed` redirects: `Ok(None)` when the answer is not
/// a redirect (it is the page, or an error status), `Ok(Some(next))` to
/// request `next` (a relative `Location` resolved against `current`), or
/// an error when the redirect has no target, the chain is too long, or the
/// policy refuses the target.
pub(super) fn next_hop(
    policy: OutboundPolicy,
    current: &Url,
    status: u16,
    location: Option<&str>,
    followed: usize,
) -> Result<Option<Url>, FetchError> {
    if !is_followable_redirect(status) {
        return Ok(None);
    }
    let Some(location) = location.map(str::trim).filter(|l| !l.is_empty()) else {
        return Err(FetchError::new(format!(
            "the page answered HTTP {status} without a Location to follow"
        ))
        .with_status(status));
    };
    if followed >= MAX_REDIRECTS {
        return Err(FetchError::new(format!(
            "the page redirected more than {MAX_REDIRECTS} times; register the final URL instead"
        ))
        .with_status(status));
    }
    let next = current.join(location).map_err(|e| {
        FetchError::new(format!(
            "the page answered HTTP {status} redirecting to an invalid URL ({e})"
        ))
        .with_status(status)
    })?;
    policy.check_url(&next).map_err(|e| {
        FetchError::new(format!(
            "the page redirected to a refused destination: {}",
            refused_url(next.as_str(), &e).message
        ))
        .with_status(status)
    })?;
    Ok(Some(next))
}

/// How a page's body is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageKind {
    Html,
    Text,
    /// No Content-Type: markup if the body starts with `<`.
    Sniff,
}

fn page_kind(media_type: Option<&str>) -> Result<PageKind, FetchError> {
    match media_type {
        Some("text/html" | "application/xhtml+xml") => Ok(PageKind::Html),
        Some("text/plain") => Ok(PageKind::Text),
        None => Ok(PageKind::Sniff),
        Some(other) => {
            let shown: String = other.chars().take(MAX_SHOWN_MEDIA_TYPE).collect();
            Err(FetchError::new(format!(
                "the page is {shown}; web_page sources read HTML or plain text (use api_pull for other formats)"
            )))
        }
    }
}

/// Fetch a `web_page` source: one document.
pub(super) async fn fetch(f: &Fetcher, source: &KnowledgeSource) -> Result<Fetched, FetchError> {
    let registered = source_url(source)?.to_string();
    let policy = f.http.policy();
    let mut url = policy
        .parse_url(&registered)
        .map_err(|e| refused_url(&registered, &e))?;
    let deadline = f.deadline();
    let mut followed = 0;
    let resp = loop {
        let req = f
            .request(reqwest::Method::GET, url.as_str())?
            .header(ACCEPT, ACCEPT_PAGE);
        let resp = f.within(deadline, send(req)).await?;
        let location = resp.headers().get(LOCATION).and_then(|v| v.to_str().ok());
        match next_hop(policy, &url, resp.status().as_u16(), location, followed)? {
            Some(next) => {
                url = next;
                followed += 1;
            }
            None => break resp,
        }
    };
    if !resp.status().is_success() {
        return Err(status_error(&resp));
    }
    let status = resp.status().as_u16();
    let kind = page_kind(media_type(&resp).as_deref()).map_err(|e| e.with_status(status))?;
    let body = f
        .within(deadline, read_body(resp, MAX_WEB_PAGE_BYTES))
        .await
        .map_err(|e| e.with_status(status))?;
    let final_url = url.to_string();
    let text = decode_text(&body);
    let is_html = match kind {
        PageKind::Html => true,
        PageKind::Text => false,
        PageKind::Sniff => text.trim_start().starts_with('<'),
    };
    let page = if is_html {
        let page_url = final_url.clone();
        on_blocking_pool(move || extract_article(&text, &page_url))
            .await
            .map_err(|e| e.with_status(status))?
    } else {
        Page {
            content_text: Some(text),
            ..Page::default()
        }
    };
    let document = RawDocument {
        external_id: Some(registered),
        slug: None,
        title: Some(page.title.unwrap_or_else(|| final_url.clone())),
        content_html: page.content_html,
        content_text: page.content_text,
        source_url: Some(final_url),
        author_name: page.byline,
        knowledge_date: page.published,
    };
    Ok(Fetched::capped(vec![document], Some(status)))
}

/// A body as text: UTF-8, with invalid sequences replaced (a page in a
/// legacy charset loses its non-ASCII letters, never the whole page) and a
/// byte-order mark dropped.
pub(super) fn decode_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.strip_prefix('\u{feff}').unwrap_or(&text).to_string()
}

/// What was read out of a page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Page {
    pub title: Option<String>,
    pub content_html: Option<String>,
    pub content_text: Option<String>,
    pub byline: Option<String>,
    pub published: Option<String>,
}

/// The article of `html` (found at `page_url`, which resolves its relative
/// links): Readability's title, content, text, byline and published time;
/// the `<body>` when Readability finds no article; flattened text when the
/// markup is too deep to parse. Blocking: run on the blocking pool.
pub(super) fn extract_article(html: &str, page_url: &str) -> Page {
    if nesting_exceeds(html, MAX_HTML_NESTING) {
        return flattened(html);
    }
    let config = Config {
        max_elements_to_parse: MAX_ELEMENTS_TO_PARSE,
        text_mode: TextMode::Formatted,
        ..Config::default()
    };
    let readability = Readability::new(html, Some(page_url), Some(config.clone()))
        .or_else(|_| Readability::new(html, None, Some(config)));
    if let Ok(mut readability) = readability
        && let Ok(article) = readability.parse()
        && !article.text_content.trim().is_empty()
    {
        let fallback = || scan_title(html);
        return Page {
            title: non_empty(&article.title).or_else(fallback),
            content_html: Some(article.content.to_string()),
            content_text: Some(article.text_content.trim().to_string()),
            byline: article.byline.as_deref().and_then(non_empty),
            published: article.published_time.as_deref().and_then(non_empty),
        };
    }
    body_page(html, true)
}

/// `html` read as one document without Readability: the `<title>` and the
/// `<body>` markup (the api_pull `html` mode). Blocking.
pub(super) fn html_document(html: &str) -> Page {
    if nesting_exceeds(html, MAX_HTML_NESTING) {
        return flattened(html);
    }
    body_page(html, false)
}

/// The `<title>`, the `<body>` markup and, when `with_text`, its text —
/// scripts and styles removed first (their content is not page text).
fn body_page(html: &str, with_text: bool) -> Page {
    let readability = Readability::from(html);
    let doc = &readability.doc;
    if let Some(code) = doc.try_select("script, style") {
        code.remove();
    }
    let title = doc
        .try_select("title")
        .and_then(|t| non_empty(&t.first().text()));
    let body = doc.try_select("body").map(|b| b.first());
    Page {
        title,
        content_html: body.as_ref().map(|b| b.inner_html().trim().to_string()),
        content_text: body
            .as_ref()
            .filter(|_| with_text)
            .map(|b| b.text().trim().to_string()),
        byline: None,
        published: None,
    }
}

/// Markup too deep to parse: its text (tags dropped, entities decoded) and
/// a `<title>` found by scanning.
fn flattened(html: &str) -> Page {
    Page {
        title: scan_title(html).map(|t| decode_entities(&t)),
        content_html: None,
        content_text: Some(decode_entities(&flatten_markup(html)).trim().to_string()),
        byline: None,
        published: None,
    }
}

/// The `<title>` element's text, found without parsing (linear).
fn scan_title(html: &str) -> Option<String> {
    // ASCII lower-casing keeps every byte offset, so positions found in
    // `lower` slice `html` on the same (ASCII) boundaries.
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title")?;
    non_empty(&html[open_end..end])
}

/// `text` (no tags) with its HTML entities decoded: escaping `<` first
/// makes the parser decode entities and nothing else; the input is flat,
/// so parsing it is linear.
fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let escaped = format!("<body>{}</body>", text.replace('<', "&lt;"));
    let readability = Readability::from(escaped.as_str());
    readability
        .doc
        .try_select("body")
        .map(|b| b.text().to_string())
        .unwrap_or_else(|| text.to_string())
}

/// `s` with runs of whitespace collapsed, if anything is left.
fn non_empty(s: &str) -> Option<String> {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    (!collapsed.is_empty()).then_some(collapsed)
}

#[cfg(test)]
#[path = "web_test.rs"]
mod tests;
