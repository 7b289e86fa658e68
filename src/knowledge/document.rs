//! §11.2 steps 2, 4 and 6 as pure functions: a fetched or pushed
//! [`RawDocument`] becomes a [`Normalized`] document (slug, external id,
//! title, the HTML to clean), and the two hashes decide how much work a
//! document costs: a `raw_content_hash` hit skips the AI step and
//! everything after it; a `content_hash` hit skips the re-embed.

use sha2::{Digest, Sha256};

use super::fetch::RawDocument;
use crate::retrieval::ingest::{MAX_PAGE_HTML_BYTES, slugify};

/// Slugs are at most this long (§11.2 step 2).
pub const SLUG_MAX_CHARS: usize = 100;
/// Titles are cut here (a page title, not a document).
pub const TITLE_MAX_CHARS: usize = 300;
/// External ids are cut here.
pub const EXTERNAL_ID_MAX_CHARS: usize = 500;
/// Version tag of the web page distillation (§11.1).
pub const WEB_DISTILL_VERSION: &str = "web-distill-v2";
/// Version tag of the fact-preserving cleanup (§11.2 step 3).
pub const KNOWLEDGE_CLEANUP_VERSION: &str = "knowledge-cleanup-v1";
/// What the raw hash carries when no AI step runs (§11.2 step 4).
pub const NO_AI_CLEANUP: &str = "no-ai-cleanup";

/// The AI step a document gets (§11.2 step 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AiStep {
    /// Web pages: always distilled.
    Distill,
    /// Other kinds with `ai_cleanup`: fact-preserving cleanup, with the
    /// tenant's instructions.
    Cleanup {
        /// `ai_cleanup_instructions` (run options may override).
        instructions: Option<String>,
    },
    /// No AI step.
    None,
}

impl AiStep {
    /// What the raw hash includes for this step: the version tag and, for
    /// a cleanup, the instructions (changing them re-cleans every page).
    pub fn hash_tag(&self) -> String {
        match self {
            AiStep::Distill => WEB_DISTILL_VERSION.to_string(),
            AiStep::Cleanup { instructions } => format!(
                "{KNOWLEDGE_CLEANUP_VERSION}\n{}",
                instructions.as_deref().unwrap_or("").trim()
            ),
            AiStep::None => NO_AI_CLEANUP.to_string(),
        }
    }
}

/// A document after step 2, ready for the AI step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// The source's id for it (the slug when the source gave none).
    pub external_id: String,
    /// Did the source give the external id (replace_missing needs it)?
    pub external_id_given: bool,
    /// URL-safe, ≤ 100 chars.
    pub slug: String,
    /// Page title.
    pub title: String,
    /// The content as HTML (text documents become paragraphs), capped.
    pub content_html: String,
    /// Optional page fields.
    pub source_url: Option<String>,
    /// Author.
    pub author_name: Option<String>,
    /// Knowledge date (free text).
    pub knowledge_date: Option<String>,
    /// §11.2 step 4.
    pub raw_content_hash: String,
}

fn clean(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn cut_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// `s` cut to at most `max` bytes at a character boundary.
pub fn cut_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// HTML-escape text.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Plain text as HTML paragraphs (blank-line separated; single line
/// breaks kept as `<br>`).
pub fn text_to_html(text: &str) -> String {
    let normalized = text.replace("\r\n", "\n");
    normalized
        .split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| format!("<p>{}</p>", escape(p).replace('\n', "<br>")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn sha256_hex(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        // Length-prefixed, so ("ab","c") and ("a","bc") differ.
        h.update((p.len() as u64).to_be_bytes());
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

/// §11.2 step 4: SHA-256 of the raw document's fields and the AI step.
pub fn raw_content_hash(doc: &RawDocument, ai: &AiStep) -> String {
    let f = |v: &Option<String>| v.clone().unwrap_or_default();
    sha256_hex(&[
        &f(&doc.external_id),
        &f(&doc.slug),
        &f(&doc.title),
        &f(&doc.content_html),
        &f(&doc.content_text),
        &f(&doc.source_url),
        &f(&doc.author_name),
        &f(&doc.knowledge_date),
        &ai.hash_tag(),
    ])
}

/// The final document whose hash decides "unchanged" (§11.2 step 6).
#[derive(Clone, Copy, Debug)]
pub struct FinalDocument<'a> {
    /// Slug.
    pub slug: &'a str,
    /// Title.
    pub title: &'a str,
    /// Sanitized HTML.
    pub content_html: &'a str,
    /// Source URL.
    pub source_url: Option<&'a str>,
    /// Author.
    pub author_name: Option<&'a str>,
    /// Knowledge date.
    pub knowledge_date: Option<&'a str>,
}

/// §11.2 step 6: SHA-256 of the normalized final document.
pub fn content_hash(d: FinalDocument<'_>) -> String {
    sha256_hex(&[
        d.slug,
        d.title,
        d.content_html,
        d.source_url.unwrap_or(""),
        d.author_name.unwrap_or(""),
        d.knowledge_date.unwrap_or(""),
    ])
}

/// §11.2 step 2 for one document: title, slug (≤ 100), external id and
/// the content as HTML, capped at the page size limit. `Err` says why the
/// document cannot become a page (recorded on the run, the rest go on).
pub fn normalize(doc: &RawDocument, ai: &AiStep) -> Result<Normalized, String> {
    let html = clean(&doc.content_html);
    let text = clean(&doc.content_text);
    let content_html = match (&html, &text) {
        (Some(h), _) => h.clone(),
        (None, Some(t)) => text_to_html(t),
        (None, None) => return Err("the document has no content_html or content_text".into()),
    };
    let content_html = cut_bytes(&content_html, MAX_PAGE_HTML_BYTES).to_string();
    let given_external = clean(&doc.external_id).map(|e| cut_chars(&e, EXTERNAL_ID_MAX_CHARS));
    let title = clean(&doc.title)
        .or_else(|| clean(&doc.slug))
        .or_else(|| given_external.clone())
        .ok_or_else(|| "the document has no title, slug or external_id".to_string())?;
    let title = cut_chars(&title, TITLE_MAX_CHARS);
    let mut slug = clean(&doc.slug)
        .map(|s| slugify(&s, SLUG_MAX_CHARS))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| slugify(&title, SLUG_MAX_CHARS));
    if slug.is_empty() {
        slug = given_external
            .as_deref()
            .map(|e| slugify(e, SLUG_MAX_CHARS))
            .unwrap_or_default();
    }
    if slug.is_empty() {
        // Nothing sluggable (e.g. a title in another script): a stable
        // name from the document's identity.
        let seed = given_external.as_deref().unwrap_or(&title);
        slug = format!("doc-{}", &sha256_hex(&[seed])[..12]);
    }
    Ok(Normalized {
        external_id_given: given_external.is_some(),
        external_id: given_external.unwrap_or_else(|| slug.clone()),
        slug,
        title,
        content_html,
        source_url: clean(&doc.source_url),
        author_name: clean(&doc.author_name).map(|a| cut_chars(&a, TITLE_MAX_CHARS)),
        knowledge_date: clean(&doc.knowledge_date).map(|d| cut_chars(&d, 100)),
        raw_content_hash: raw_content_hash(doc, ai),
    })
}

/// A slug free of `taken` ones: `slug` itself, else `slug` cut to leave
/// room for `-<6 hex of the document identity>`.
pub fn unique_slug(slug: &str, identity: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(slug) {
        return slug.to_string();
    }
    let digest = sha256_hex(&[identity]);
    for n in 0..4 {
        let tag = &digest[n * 6..n * 6 + 6];
        let base: String = slug.chars().take(SLUG_MAX_CHARS - 7).collect();
        let candidate = format!("{}-{tag}", base.trim_end_matches('-'));
        if !taken(&candidate) {
            return candidate;
        }
    }
    format!("doc-{}", &digest[..24])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(title: &str, html: &str) -> RawDocument {
        RawDocument {
            title: Some(title.into()),
            content_html: Some(html.into()),
            ..RawDocument::default()
        }
    }

    #[test]
    fn section_11_2_constants() {
        assert_eq!(SLUG_MAX_CHARS, 100);
        assert_eq!(WEB_DISTILL_VERSION, "web-distill-v2");
        assert_eq!(KNOWLEDGE_CLEANUP_VERSION, "knowledge-cleanup-v1");
        assert_eq!(NO_AI_CLEANUP, "no-ai-cleanup");
    }

    #[test]
    fn slugs_come_from_the_slug_then_the_title_and_stay_within_100_chars() {
        let n = normalize(&doc("Parking & Bikes — 2026!", "<p>x</p>"), &AiStep::None).unwrap();
        assert_eq!(n.slug, "parking-bikes-2026");
        assert_eq!(n.external_id, "parking-bikes-2026");
        assert!(!n.external_id_given);
        let mut d = doc(&"Long title ".repeat(30), "<p>x</p>");
        let n = normalize(&d, &AiStep::None).unwrap();
        assert!(n.slug.chars().count() <= 100 && !n.slug.ends_with('-'));
        d.slug = Some("My Custom Slug".into());
        d.external_id = Some(" ext-1 ".into());
        let n = normalize(&d, &AiStep::None).unwrap();
        assert_eq!(
            (n.slug.as_str(), n.external_id.as_str()),
            ("my-custom-slug", "ext-1")
        );
        assert!(n.external_id_given);
        let n = normalize(&doc("日本語", "<p>x</p>"), &AiStep::None).unwrap();
        assert!(n.slug.starts_with("doc-") && n.slug.len() == 16);
    }

    #[test]
    fn text_documents_become_escaped_paragraphs_and_empty_ones_are_refused() {
        let d = RawDocument {
            title: Some("T".into()),
            content_text: Some("a < b\nc\n\nsecond".into()),
            ..RawDocument::default()
        };
        let n = normalize(&d, &AiStep::None).unwrap();
        assert_eq!(n.content_html, "<p>a &lt; b<br>c</p>\n<p>second</p>");
        assert!(normalize(&doc("T", "  "), &AiStep::None).is_err());
        let big = doc("T", &"é".repeat(MAX_PAGE_HTML_BYTES));
        let n = normalize(&big, &AiStep::None).unwrap();
        assert!(n.content_html.len() <= MAX_PAGE_HTML_BYTES);
    }

    #[test]
    fn the_raw_hash_covers_the_fields_and_the_ai_step() {
        let d = doc("T", "<p>x</p>");
        let none = raw_content_hash(&d, &AiStep::None);
        assert_eq!(none, raw_content_hash(&d.clone(), &AiStep::None));
        assert_ne!(none, raw_content_hash(&doc("T", "<p>y</p>"), &AiStep::None));
        assert_ne!(none, raw_content_hash(&d, &AiStep::Distill));
        let a = AiStep::Cleanup {
            instructions: Some("keep prices".into()),
        };
        let b = AiStep::Cleanup { instructions: None };
        assert_ne!(raw_content_hash(&d, &a), raw_content_hash(&d, &b));
        // Field boundaries matter.
        let x = RawDocument {
            title: Some("ab".into()),
            slug: Some("c".into()),
            ..RawDocument::default()
        };
        let y = RawDocument {
            title: Some("b".into()),
            slug: Some("ca".into()),
            ..RawDocument::default()
        };
        assert_ne!(
            raw_content_hash(&x, &AiStep::None),
            raw_content_hash(&y, &AiStep::None)
        );
    }

    #[test]
    fn taken_slugs_get_a_stable_suffix() {
        assert_eq!(unique_slug("faq", "e1", |_| false), "faq");
        let a = unique_slug("faq", "e1", |s| s == "faq");
        assert!(a.starts_with("faq-") && a.len() == 10);
        assert_eq!(a, unique_slug("faq", "e1", |s| s == "faq"));
        assert_ne!(a, unique_slug("faq", "e2", |s| s == "faq"));
        let long = "x".repeat(100);
        assert!(unique_slug(&long, "e", |s| s == long).chars().count() <= 100);
    }
}
