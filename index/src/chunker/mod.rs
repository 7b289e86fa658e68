//! HTML-aware chunker for knowledge pages (spec §11.3).
//!
//! A page is read as an outline: sections start at H1–H6 and carry a
//! breadcrumb of their enclosing headings ("Guide > Install"); each section is
//! a run of blocks. P, PRE, BLOCKQUOTE, UL, OL, TABLE, DL and FIGURE are atomic
//! blocks, and text between them (bare text, divs, spans) becomes blocks too,
//! so no content is lost. Blocks are packed greedily into chunks of about
//! [`ChunkerParams::target_chars`], and consecutive chunks of one section
//! share about [`ChunkerParams::overlap_chars`] so a fact cut at a boundary
//! keeps its context. A block is cut only when it alone would push a chunk
//! past [`ChunkerParams::split_above_chars`]: on line, then sentence, then
//! word boundaries, and as a last resort at a char count.
//!
//! Lengths are counted in chars (Unicode scalar values), never bytes, so
//! multi-byte text is budgeted like ASCII and no cut lands inside a char.
//! The output is a pure function of the input: no clock, no randomness, no
//! hash-map iteration.
//!
//! The module is split along its seams: `walk` reads the content (the
//! HTML-or-text test, the linear nesting pre-scan, flattening of over-deep
//! markup, the parse and the non-recursive tree walk), `section` turns tree
//! events into sections of blocks (headings, breadcrumbs, atomic blocks), and
//! `split` packs blocks into chunks (line / sentence / word / char cuts and
//! the overlap). This file holds the public surface: [`chunk_page`],
//! [`Chunk`], [`PageInput`] and [`ChunkerParams`].

mod section;
mod split;
#[cfg(test)]
mod tests;
mod walk;

use std::sync::Arc;

use serde_json::{Value, json};

use split::pack_section;
pub use walk::{MAX_HTML_NESTING, flatten_markup, nesting_exceeds};
use walk::{html_outline, looks_like_html, plain_outline};

/// The lengths a page is chunked to (spec §11.3), chosen by the caller (Root's
/// are `root::retrieval::params::CHUNKER`). All counts are chars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkerParams {
    /// Target length of a chunk's text, breadcrumb included.
    pub target_chars: usize,
    /// Text shared by consecutive chunks of one section.
    pub overlap_chars: usize,
    /// Hard ceiling on a chunk's text: a block that would push a chunk past
    /// it is force-split (line, sentence, word, char boundaries).
    pub split_above_chars: usize,
    /// Pages with fewer chars of text than this produce no chunks: a
    /// near-empty page only adds noise to retrieval.
    pub min_page_text_chars: usize,
}

/// Separator between whole blocks inside a chunk.
const BLOCK_JOINER: &str = "\n\n";

/// The page fields the chunker reads: the text to cut and the metadata each
/// chunk carries (spec §2.5 `knowledge_pages`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageInput {
    /// Page title; prefixed to every embedding input.
    pub title: String,
    /// Page slug, unique per tenant.
    pub slug: String,
    /// Short id used in public URLs, when the page has one.
    pub public_id: Option<String>,
    /// `manual`, `url`, `api`, `webhook`, `api_push` or a Slack extraction type.
    pub source_type: String,
    /// Display name of the author, when known.
    pub author_name: Option<String>,
    /// Sanitized page body; plain text (no tags) is accepted too.
    pub content_html: String,
}

/// One chunk of a page, ready to embed and store as a `knowledge_chunks` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Position in the page, 0-based and contiguous; `i32` like the
    /// `knowledge_chunks.chunk_index` column.
    pub chunk_index: i32,
    /// The chunk text (`chunk_text`): the section breadcrumb, a blank line,
    /// then the body; the body alone when the section has no heading.
    pub text: String,
    /// Breadcrumb of the enclosing headings, e.g. `"Guide > Install"`.
    pub section_heading: Option<String>,
    page: Arc<PageMeta>,
}

/// Page fields shared by every chunk of one page.
#[derive(Debug, PartialEq, Eq)]
struct PageMeta {
    title: String,
    slug: String,
    public_id: Option<String>,
    source_type: String,
    author_name: Option<String>,
}

impl Chunk {
    /// The text sent to the embedding model: `"{title}\n\n{chunk_text}"`
    /// (spec §11.3), so a chunk far from the page top still matches the
    /// page's subject.
    pub fn embed_input(&self) -> String {
        format!("{}\n\n{}", self.page.title, self.text)
    }

    /// The `knowledge_chunks.metadata` object of spec §2.5: exactly
    /// `{title, slug, public_id, source_type, author_name, section_heading}`,
    /// absent values as `null`.
    pub fn metadata(&self) -> Value {
        json!({
            "title": self.page.title,
            "slug": self.page.slug,
            "public_id": self.page.public_id,
            "source_type": self.page.source_type,
            "author_name": self.page.author_name,
            "section_heading": self.section_heading,
        })
    }
}

/// Cuts a page into chunks (spec §11.3) with the lengths of `params`.
/// Returns no chunks when the page has fewer than
/// [`ChunkerParams::min_page_text_chars`] chars of text. Never panics, whatever
/// the markup; markup nested deeper than [`MAX_HTML_NESTING`] is read as
/// flattened text (linear time) instead of parsed.
pub fn chunk_page(page: &PageInput, params: &ChunkerParams) -> Vec<Chunk> {
    let outline = if !looks_like_html(&page.content_html) {
        plain_outline(&page.content_html)
    } else if nesting_exceeds(&page.content_html, MAX_HTML_NESTING) {
        plain_outline(&flatten_markup(&page.content_html))
    } else {
        html_outline(&page.content_html)
    };
    if outline.text_chars < params.min_page_text_chars {
        return Vec::new();
    }
    let meta = Arc::new(PageMeta {
        title: page.title.clone(),
        slug: page.slug.clone(),
        public_id: page.public_id.clone(),
        source_type: page.source_type.clone(),
        author_name: page.author_name.clone(),
    });
    let mut chunks: Vec<Chunk> = Vec::new();
    for section in &outline.sections {
        let prefix = section
            .heading
            .as_ref()
            .map(|heading| format!("{heading}{BLOCK_JOINER}"))
            .unwrap_or_default();
        let prefix_chars = char_len(&prefix);
        // The breadcrumb is part of the chunk text, so it eats into both limits.
        let target = params.target_chars.saturating_sub(prefix_chars).max(1);
        let ceiling = params
            .split_above_chars
            .saturating_sub(prefix_chars)
            .max(target);
        for body in pack_section(&section.blocks, target, ceiling, params.overlap_chars) {
            chunks.push(Chunk {
                chunk_index: i32::try_from(chunks.len()).unwrap_or(i32::MAX),
                text: format!("{prefix}{body}"),
                section_heading: section.heading.clone(),
                page: Arc::clone(&meta),
            });
        }
    }
    chunks
}

fn char_len(text: &str) -> usize {
    text.chars().count()
}
