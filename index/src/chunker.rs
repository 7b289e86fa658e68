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

use std::ops::Range;
use std::sync::Arc;

use scraper::{Html, Node};
use serde_json::{Value, json};

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

/// Longest heading kept in a breadcrumb. Six capped levels leave at least
/// 883 chars of body in a chunk; the full text of a longer heading is kept
/// as the section's first block instead.
const HEADING_MAX_CHARS: usize = 100;

const BREADCRUMB_SEPARATOR: &str = " > ";

/// Separator between whole blocks inside a chunk.
const BLOCK_JOINER: &str = "\n\n";

/// Blocks never split unless they alone exceed the ceiling (spec §11.3).
const ATOMIC_TAGS: &[&str] = &[
    "p",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "table",
    "dl",
    "figure",
];

/// Subtrees that carry no readable page text.
const SKIPPED_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "head", "title", "iframe", "noembed", "noframes",
];

/// Block-level containers: they end the loose text before them and start a
/// new line inside an atomic block.
const BOUNDARY_TAGS: &[&str] = &[
    "html",
    "body",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "nav",
    "address",
    "details",
    "summary",
    "form",
    "fieldset",
    "legend",
    "hr",
    "center",
    "hgroup",
    "search",
    "dialog",
    "menu",
    "li",
    "dt",
    "dd",
    "tr",
    "td",
    "th",
    "caption",
    "thead",
    "tbody",
    "tfoot",
    "figcaption",
];

/// Tags whose presence marks the content as HTML rather than plain text.
/// One-letter inline tags (`a`, `b`, `i`…) are left out on purpose: `a<b`
/// in plain text must not be read as markup, and real HTML using them also
/// has closing tags, which are detected separately.
const HTML_MARKER_TAGS: &[&str] = &[
    "p",
    "br",
    "hr",
    "img",
    "div",
    "span",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "td",
    "th",
    "pre",
    "code",
    "blockquote",
    "figure",
    "em",
    "strong",
    "html",
    "body",
    "head",
    "section",
    "article",
];

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

/// Deepest element nesting handed to the HTML parser. html5ever's tree
/// builder checks element scopes by walking the stack of open elements, so
/// its cost grows with the square of the depth (20 000 nested `div`s take
/// tens of seconds); real pages nest a few dozen levels. Deeper markup is
/// flattened to text instead (see [`flatten_markup`]).
pub const MAX_HTML_NESTING: usize = 512;

/// Elements whose end tag is optional or that never have one: the parser
/// closes them implicitly, so they do not count toward nesting depth.
const UNCOUNTED_TAGS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot", "option",
    "optgroup", "rb", "rt", "rtc", "rp", "colgroup", "caption", "html", "head", "body",
];

/// One linear pass over the markup: does element nesting (start tags minus
/// end tags, ignoring void and optional-end elements, comments, doctype)
/// ever exceed `max`? Approximate on purpose — it may over-count odd markup,
/// which only means that page is read as flattened text.
pub fn nesting_exceeds(content: &str, max: usize) -> bool {
    let bytes = content.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(off) = memchr_lt(&bytes[i..]) {
        let at = i + off + 1;
        i = at;
        let closing = bytes.get(at) == Some(&b'/');
        let name_start = if closing { at + 1 } else { at };
        let name_len = bytes[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        if name_len == 0 {
            continue;
        }
        let name = content[name_start..name_start + name_len].to_ascii_lowercase();
        if UNCOUNTED_TAGS.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
            continue;
        }
        // The tag ends at the next `>` (or is cut short by the next `<`).
        let after = name_start + name_len;
        let self_closing = bytes[after..]
            .iter()
            .position(|b| *b == b'>' || *b == b'<')
            .is_some_and(|end| {
                bytes[after + end] == b'>' && end > 0 && bytes[after + end - 1] == b'/'
            });
        if !self_closing {
            depth += 1;
            if depth > max {
                return true;
            }
        }
    }
    false
}

fn memchr_lt(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'<')
}

/// Byte offset of the first `</name` (any case) in `text`.
fn find_end_tag(text: &str, name: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(off) = text[from..].find("</") {
        let at = from + off;
        let candidate = &bytes[at + 2..];
        if candidate.len() >= name.len()
            && candidate[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        {
            return Some(at);
        }
        from = at + 2;
    }
    None
}

/// Markup too deeply nested to parse, read as plain text: every tag is
/// dropped — block-level ones become paragraph breaks — and the contents of
/// script/style-like elements are skipped. Linear in the input; the result
/// goes through [`plain_outline`] (entities decoded, paragraphs kept).
pub fn flatten_markup(content: &str) -> String {
    let mut out = String::with_capacity(content.len() / 2);
    let mut rest = content;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let tag = &rest[lt + 1..];
        let Some(gt) = tag.find('>') else {
            // An unterminated tag: the rest is not text.
            return out;
        };
        let inner = &tag[..gt];
        let closing = inner.starts_with('/');
        let name: String = inner
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        rest = &tag[gt + 1..];
        if name.is_empty() {
            continue;
        }
        if !closing && SKIPPED_TAGS.contains(&name.as_str()) {
            match find_end_tag(rest, &name) {
                Some(at) => rest = &rest[at..],
                None => return out,
            }
            continue;
        }
        if breaks_line(&name) || name == "br" {
            out.push_str("\n\n");
        } else {
            out.push(' ');
        }
    }
    out.push_str(rest);
    out
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

/// A page read as sections of blocks.
struct Outline {
    sections: Vec<Section>,
    /// Chars of text in blocks and headings, for the empty-page rule.
    text_chars: usize,
}

struct Section {
    heading: Option<String>,
    blocks: Vec<Block>,
}

struct Block {
    text: String,
    chars: usize,
    /// PRE content: whitespace is significant, so cuts keep indentation.
    preformatted: bool,
}

impl Block {
    fn new(text: String, preformatted: bool) -> Self {
        Block {
            chars: char_len(&text),
            text,
            preformatted,
        }
    }
}

/// A slice of a block as packed into chunks, with the separator that stood
/// before it in the source (so split pieces rejoin as they were written).
struct Piece<'a> {
    text: &'a str,
    chars: usize,
    joiner: &'static str,
}

fn char_len(text: &str) -> usize {
    text.chars().count()
}

/// Whether the content is markup. Plain text (no recognisable tag) is read
/// paragraph by paragraph instead, so that `Vec<String>` or `a<b` survive.
fn looks_like_html(content: &str) -> bool {
    content.match_indices('<').any(|(at, _)| {
        let rest = &content[at + 1..];
        if rest.starts_with('!') {
            return true;
        }
        if let Some(closing) = rest.strip_prefix('/') {
            return closing.starts_with(|c: char| c.is_ascii_alphabetic());
        }
        let name_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_len);
        let name_ends_tag = after.is_empty()
            || after.starts_with(|c: char| c == '>' || c == '/' || c.is_whitespace());
        name_ends_tag
            && HTML_MARKER_TAGS
                .iter()
                .any(|tag| tag.eq_ignore_ascii_case(name))
    })
}

/// Plain text: one section, paragraphs separated by blank lines, line breaks
/// inside a paragraph kept, runs of spaces collapsed. Entities are decoded,
/// since sanitized text may arrive escaped.
fn plain_outline(content: &str) -> Outline {
    let decoded = if content.contains('&') {
        // Escaping `<` first makes the parser decode entities and nothing else.
        let fragment = Html::parse_fragment(&content.replace('<', "&lt;"));
        fragment.root_element().text().collect::<String>()
    } else {
        content.replace("\r\n", "\n").replace('\r', "\n")
    };
    let mut blocks = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for line in decoded.lines().chain(std::iter::once("")) {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            if !lines.is_empty() {
                blocks.push(Block::new(lines.join("\n"), false));
                lines.clear();
            }
        } else {
            lines.push(line);
        }
    }
    Outline {
        text_chars: blocks.iter().map(|block| block.chars).sum(),
        sections: vec![Section {
            heading: None,
            blocks,
        }],
    }
}

/// HTML: walks the parsed tree without recursion (deeply nested garbage must
/// not overflow the stack) and feeds open/text/close events to an
/// [`OutlineBuilder`].
fn html_outline(content: &str) -> Outline {
    let document = Html::parse_document(content);
    let mut builder = OutlineBuilder::new();
    let mut stack = vec![(document.tree.root(), false)];
    while let Some((node, leaving)) = stack.pop() {
        match node.value() {
            Node::Element(element) => {
                let name = element.name();
                if leaving {
                    builder.close(name);
                    continue;
                }
                if SKIPPED_TAGS.contains(&name) {
                    continue;
                }
                builder.open(name);
                stack.push((node, true));
            }
            Node::Text(text) => {
                builder.text(text);
                continue;
            }
            Node::Document | Node::Fragment => {}
            _ => continue,
        }
        stack.extend(node.children().rev().map(|child| (child, false)));
    }
    builder.finish()
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// Tags that start a new line inside an atomic block.
fn breaks_line(name: &str) -> bool {
    BOUNDARY_TAGS.contains(&name) || ATOMIC_TAGS.contains(&name) || heading_level(name).is_some()
}

/// Turns tree events into sections and blocks.
struct OutlineBuilder {
    sections: Vec<Section>,
    /// Current heading per level (H1 at index 0).
    headings: [Option<String>; 6],
    heading_chars: usize,
    /// Element nesting depth, to find where a capture ends.
    depth: usize,
    /// Text outside atomic blocks and headings.
    loose: TextSink,
    /// The atomic block or heading being read, if any.
    capture: Option<Capture>,
}

impl OutlineBuilder {
    fn new() -> Self {
        OutlineBuilder {
            sections: vec![Section {
                heading: None,
                blocks: Vec::new(),
            }],
            headings: Default::default(),
            heading_chars: 0,
            depth: 0,
            loose: TextSink::default(),
            capture: None,
        }
    }

    fn open(&mut self, name: &str) {
        self.depth += 1;
        if let Some(capture) = &mut self.capture {
            capture.open(name);
        } else if let Some(level) = heading_level(name) {
            self.flush_loose();
            self.capture = Some(Capture::new(CaptureKind::Heading(level), self.depth));
        } else if ATOMIC_TAGS.contains(&name) {
            self.flush_loose();
            let mut capture = Capture::new(
                CaptureKind::Block {
                    preformatted: name == "pre",
                },
                self.depth,
            );
            capture.open(name);
            self.capture = Some(capture);
        } else if name == "br" {
            self.loose.newline();
        } else if BOUNDARY_TAGS.contains(&name) {
            self.flush_loose();
        }
    }

    /// Closes the innermost open element; the walk guarantees one close per
    /// open, so the depth tells where a capture ends.
    fn close(&mut self, name: &str) {
        let depth = self.depth;
        self.depth = self.depth.saturating_sub(1);
        match self.capture.take() {
            Some(capture) if capture.depth == depth => self.end_capture(capture),
            Some(mut capture) => {
                capture.close(name);
                self.capture = Some(capture);
            }
            None if BOUNDARY_TAGS.contains(&name) => self.flush_loose(),
            None => {}
        }
    }

    fn text(&mut self, text: &str) {
        match &mut self.capture {
            Some(capture) => capture.text(text),
            None => self.loose.text(text, false),
        }
    }

    fn end_capture(&mut self, capture: Capture) {
        let text = capture.sink.finish();
        match capture.kind {
            CaptureKind::Block { preformatted } => self.push_block(text, preformatted),
            CaptureKind::Heading(level) => self.start_section(level, text),
        }
    }

    /// A heading replaces its level, drops deeper levels and opens a section.
    /// An empty heading changes nothing.
    fn start_section(&mut self, level: usize, text: String) {
        if text.is_empty() {
            return;
        }
        let chars = char_len(&text);
        // A capped heading keeps its full text as the section's first block.
        let (label, full_text) = if chars > HEADING_MAX_CHARS {
            let mut label: String = text.chars().take(HEADING_MAX_CHARS - 1).collect();
            label.push('…');
            (label, Some(text))
        } else {
            self.heading_chars += chars;
            (text, None)
        };
        let slot = level.clamp(1, 6) - 1;
        self.headings[slot] = Some(label);
        for deeper in &mut self.headings[slot + 1..] {
            *deeper = None;
        }
        let breadcrumb = self
            .headings
            .iter()
            .flatten()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(BREADCRUMB_SEPARATOR);
        self.sections.push(Section {
            heading: Some(breadcrumb),
            blocks: Vec::new(),
        });
        if let Some(text) = full_text {
            self.push_block(text, false);
        }
    }

    fn flush_loose(&mut self) {
        let text = std::mem::take(&mut self.loose).finish();
        self.push_block(text, false);
    }

    fn push_block(&mut self, text: String, preformatted: bool) {
        if text.trim().is_empty() {
            return;
        }
        if let Some(section) = self.sections.last_mut() {
            section.blocks.push(Block::new(text, preformatted));
        }
    }

    fn finish(mut self) -> Outline {
        if let Some(capture) = self.capture.take() {
            self.end_capture(capture);
        }
        self.flush_loose();
        let block_chars: usize = self
            .sections
            .iter()
            .flat_map(|section| &section.blocks)
            .map(|block| block.chars)
            .sum();
        Outline {
            text_chars: block_chars + self.heading_chars,
            sections: self.sections,
        }
    }
}

enum CaptureKind {
    Heading(usize),
    Block { preformatted: bool },
}

/// An atomic block or heading being read. Everything nested inside belongs
/// to it, including nested atomic blocks and headings.
struct Capture {
    kind: CaptureKind,
    depth: usize,
    sink: TextSink,
    pre_depth: usize,
    list_depth: usize,
    /// Cells seen so far in each open table row (nested tables stack).
    row_cells: Vec<usize>,
}

impl Capture {
    fn new(kind: CaptureKind, depth: usize) -> Self {
        Capture {
            kind,
            depth,
            sink: TextSink::default(),
            pre_depth: 0,
            list_depth: 0,
            row_cells: Vec::new(),
        }
    }

    fn open(&mut self, name: &str) {
        if matches!(self.kind, CaptureKind::Heading(_)) {
            // A heading is one line: structure inside it is just a space.
            if name == "br" || breaks_line(name) {
                self.sink.space();
            }
            return;
        }
        match name {
            "br" => self.sink.newline(),
            "pre" => {
                self.sink.newline();
                self.pre_depth += 1;
            }
            "ul" | "ol" | "menu" => {
                self.sink.newline();
                self.list_depth += 1;
            }
            "li" => {
                self.sink.newline();
                let indent = "  ".repeat(self.list_depth.saturating_sub(1));
                self.sink.prefix_next(format!("{indent}- "));
            }
            "dd" => {
                self.sink.newline();
                self.sink.prefix_next("  ".to_owned());
            }
            "tr" => {
                self.sink.newline();
                self.row_cells.push(0);
            }
            "td" | "th" => match self.row_cells.last_mut() {
                Some(cells) => {
                    if *cells > 0 {
                        self.sink.raw(" | ");
                    }
                    *cells += 1;
                }
                None => self.sink.space(),
            },
            other if breaks_line(other) => self.sink.newline(),
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        if matches!(self.kind, CaptureKind::Heading(_)) {
            if breaks_line(name) {
                self.sink.space();
            }
            return;
        }
        match name {
            "pre" => {
                self.pre_depth = self.pre_depth.saturating_sub(1);
                self.sink.newline();
            }
            "ul" | "ol" | "menu" => {
                self.list_depth = self.list_depth.saturating_sub(1);
                self.sink.newline();
            }
            "tr" => {
                self.row_cells.pop();
                self.sink.newline();
            }
            "td" | "th" => {}
            other if breaks_line(other) => self.sink.newline(),
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        let preformatted = self.pre_depth > 0 && matches!(self.kind, CaptureKind::Block { .. });
        self.sink.text(text, preformatted);
    }
}

/// Builds readable text: collapses whitespace (except preformatted text),
/// puts structure on its own lines, and never emits a blank line itself.
#[derive(Default)]
struct TextSink {
    out: String,
    pending_space: bool,
    /// Written before the next visible char (a list marker), so an empty
    /// item leaves nothing behind.
    pending_prefix: Option<String>,
}

impl TextSink {
    fn text(&mut self, text: &str, preformatted: bool) {
        if preformatted {
            if !text.is_empty() {
                self.flush_pending();
                self.out.extend(text.chars().filter(|&c| c != '\r'));
            }
            return;
        }
        for c in text.chars() {
            if c.is_whitespace() {
                self.pending_space = true;
            } else {
                self.flush_pending();
                self.out.push(c);
            }
        }
    }

    fn flush_pending(&mut self) {
        if let Some(prefix) = self.pending_prefix.take() {
            self.out.push_str(&prefix);
        } else if self.pending_space
            && !self.out.is_empty()
            && !self.out.ends_with(char::is_whitespace)
        {
            self.out.push(' ');
        }
        self.pending_space = false;
    }

    fn space(&mut self) {
        self.pending_space = true;
    }

    fn newline(&mut self) {
        self.pending_space = false;
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    fn prefix_next(&mut self, prefix: String) {
        self.pending_space = false;
        self.pending_prefix = Some(prefix);
    }

    fn raw(&mut self, text: &str) {
        self.pending_space = false;
        self.out.push_str(text);
    }

    /// The text with trailing spaces removed from every line and leading
    /// blank lines dropped (leading indentation of PRE is kept).
    fn finish(self) -> String {
        let lines: Vec<&str> = self.out.lines().map(str::trim_end).collect();
        lines
            .join("\n")
            .trim_start_matches('\n')
            .trim_end()
            .to_owned()
    }
}

/// Greedily packs a section's blocks into chunk bodies of about `target`
/// chars, never above `ceiling`, each starting with the tail (at most
/// `overlap_chars` chars) of the one before.
fn pack_section(
    blocks: &[Block],
    target: usize,
    ceiling: usize,
    overlap_chars: usize,
) -> Vec<String> {
    let mut pieces = Vec::new();
    for block in blocks {
        if block.chars > ceiling {
            split_block(block, target, ceiling, &mut pieces);
        } else {
            pieces.push(Piece {
                text: &block.text,
                chars: block.chars,
                joiner: BLOCK_JOINER,
            });
        }
    }

    let mut bodies = Vec::new();
    let mut current = String::new();
    let mut current_chars = 0;
    // Whether `current` holds more than the overlap carried from the last chunk.
    let mut has_new_text = false;
    for piece in pieces {
        let joined_chars = |current: &str, current_chars: usize| {
            let joiner = if current.is_empty() {
                0
            } else {
                char_len(piece.joiner)
            };
            current_chars + joiner + piece.chars
        };
        if has_new_text && joined_chars(&current, current_chars) > target {
            let overlap = overlap_tail(&current, overlap_chars).to_owned();
            current_chars = char_len(&overlap);
            bodies.push(std::mem::replace(&mut current, overlap));
            has_new_text = false;
        }
        if !has_new_text && joined_chars(&current, current_chars) > ceiling {
            // The overlap does not fit next to this piece: the piece wins.
            current.clear();
            current_chars = 0;
        }
        if !current.is_empty() {
            current.push_str(piece.joiner);
            current_chars += char_len(piece.joiner);
        }
        current.push_str(piece.text);
        current_chars += piece.chars;
        has_new_text = true;
    }
    if has_new_text {
        bodies.push(current);
    }
    bodies
}

/// Split granularities, coarsest first.
#[derive(Clone, Copy)]
enum Granularity {
    Lines,
    Sentences,
    Words,
    Chars,
}

impl Granularity {
    fn finer(self) -> Option<Self> {
        match self {
            Granularity::Lines => Some(Granularity::Sentences),
            Granularity::Sentences => Some(Granularity::Words),
            Granularity::Words => Some(Granularity::Chars),
            Granularity::Chars => None,
        }
    }
}

/// Cuts an oversized block into pieces of about `target` chars (at most
/// `ceiling`), trying lines (list items, table rows, PRE lines), then
/// sentences, then words, then fixed char windows.
fn split_block<'a>(block: &'a Block, target: usize, ceiling: usize, out: &mut Vec<Piece<'a>>) {
    let mut ranges = Vec::new();
    segment(
        &block.text,
        0,
        Granularity::Lines,
        target,
        ceiling,
        &mut ranges,
    );
    let mut previous_end: Option<usize> = None;
    for range in ranges {
        let (start, end) = trim_bounds(&block.text[range.clone()], block.preformatted);
        if start >= end {
            continue;
        }
        let (start, end) = (range.start + start, range.start + end);
        let joiner = match previous_end {
            None => BLOCK_JOINER,
            Some(previous_end) => {
                let gap = &block.text[previous_end..start];
                if gap.contains('\n') {
                    "\n"
                } else if gap.is_empty() {
                    ""
                } else {
                    " "
                }
            }
        };
        let text = &block.text[start..end];
        out.push(Piece {
            text,
            chars: char_len(text),
            joiner,
        });
        previous_end = Some(end);
    }
}

/// Byte bounds of `text` without surrounding whitespace. Preformatted text
/// keeps the indentation of its first line and only loses whole blank lines.
fn trim_bounds(text: &str, preformatted: bool) -> (usize, usize) {
    let end = text.trim_end().len();
    let leading = text.len() - text.trim_start().len();
    let start = if preformatted {
        text[..leading].rfind('\n').map_or(0, |newline| newline + 1)
    } else {
        leading
    };
    (start.min(end), end)
}

/// Appends to `out` byte ranges (offset by `offset`) that cover `text` in
/// order, each at most `ceiling` chars and packed up to `target` chars.
fn segment(
    text: &str,
    offset: usize,
    granularity: Granularity,
    target: usize,
    ceiling: usize,
    out: &mut Vec<Range<usize>>,
) {
    let mut run: Option<Range<usize>> = None;
    let mut run_chars = 0;
    for unit in units(text, granularity, target) {
        let chars = char_len(&text[unit.clone()]);
        let absolute = offset + unit.start..offset + unit.end;
        if chars > ceiling {
            if let Some(run) = run.take() {
                out.push(run);
            }
            run_chars = 0;
            match granularity.finer() {
                Some(finer) => segment(
                    &text[unit.clone()],
                    absolute.start,
                    finer,
                    target,
                    ceiling,
                    out,
                ),
                None => out.push(absolute),
            }
            continue;
        }
        if run.is_some() && run_chars + chars > target {
            if let Some(run) = run.take() {
                out.push(run);
            }
            run_chars = 0;
        }
        run = Some(match run {
            Some(run) => run.start..absolute.end,
            None => absolute,
        });
        run_chars += chars;
    }
    if let Some(run) = run {
        out.push(run);
    }
}

/// Byte ranges covering `text` exactly, one per unit; each unit keeps the
/// whitespace that follows it.
fn units(text: &str, granularity: Granularity, window: usize) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    match granularity {
        Granularity::Lines => {
            for line in text.split_inclusive('\n') {
                ranges.push(start..start + line.len());
                start += line.len();
            }
            return ranges;
        }
        Granularity::Sentences => {
            let mut chars = text.char_indices().peekable();
            while let Some((at, c)) = chars.next() {
                let ends_sentence = matches!(c, '.' | '!' | '?')
                    && chars.peek().is_some_and(|&(_, next)| next.is_whitespace());
                if ends_sentence {
                    let mut end = at + c.len_utf8();
                    while let Some(&(next_at, next)) = chars.peek() {
                        if !next.is_whitespace() {
                            break;
                        }
                        end = next_at + next.len_utf8();
                        chars.next();
                    }
                    ranges.push(start..end);
                    start = end;
                }
            }
        }
        Granularity::Words => {
            let mut chars = text.char_indices().peekable();
            while let Some((at, c)) = chars.next() {
                let ends_word = c.is_whitespace()
                    && chars.peek().is_some_and(|&(_, next)| !next.is_whitespace());
                if ends_word {
                    let end = at + c.len_utf8();
                    ranges.push(start..end);
                    start = end;
                }
            }
        }
        Granularity::Chars => {
            let window = window.max(1);
            for (count, (at, _)) in text.char_indices().enumerate() {
                if count > 0 && count % window == 0 {
                    ranges.push(start..at);
                    start = at;
                }
            }
        }
    }
    if start < text.len() {
        ranges.push(start..text.len());
    }
    ranges
}

/// The tail of a chunk body to repeat at the start of the next chunk: at most
/// `max_chars`, starting at a line or sentence start if that keeps at least
/// half of it, else at a word start, else (one unbroken run of text) at the
/// char limit. A line start keeps its indentation (PRE, nested lists). Always
/// a proper suffix, so a short chunk is never repeated whole.
fn overlap_tail(body: &str, max_chars: usize) -> &str {
    let total = char_len(body);
    let window_start = total.saturating_sub(max_chars);
    let mut word_start = None;
    let mut hard_start = None;
    // Byte and char index just after the last newline, while in its line's indentation.
    let mut line_start: Option<(usize, usize)> = None;
    let mut previous_whitespace = false;
    let mut after_sentence_end = false;
    let mut last_visible: Option<char> = None;
    for (index, (at, c)) in body.char_indices().enumerate() {
        if c == '\n' {
            line_start = Some((at + 1, index + 1));
        }
        if c.is_whitespace() {
            if !previous_whitespace {
                after_sentence_end = matches!(last_visible, Some('.' | '!' | '?'));
            }
            previous_whitespace = true;
            continue;
        }
        if let Some((line_at, line_index)) = line_start.take()
            && line_index >= window_start
            && total - line_index >= max_chars / 2
        {
            return &body[line_at..];
        }
        if index >= window_start && index > 0 {
            hard_start.get_or_insert(at);
            if previous_whitespace {
                if after_sentence_end && total - index >= max_chars / 2 {
                    return &body[at..];
                }
                word_start.get_or_insert(at);
            }
        }
        previous_whitespace = false;
        last_visible = Some(c);
    }
    word_start.or(hard_start).map_or("", |at| &body[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    // Root's §11.3 values (`root::retrieval::params::CHUNKER`), as test values.
    const CHUNK_TARGET_CHARS: usize = 1500;
    const CHUNK_OVERLAP_CHARS: usize = 200;
    const SENTENCE_SPLIT_ABOVE_CHARS: usize = CHUNK_TARGET_CHARS * 3 / 2;
    const PARAMS: ChunkerParams = ChunkerParams {
        target_chars: CHUNK_TARGET_CHARS,
        overlap_chars: CHUNK_OVERLAP_CHARS,
        split_above_chars: SENTENCE_SPLIT_ABOVE_CHARS,
        min_page_text_chars: 20,
    };

    fn chunk_page(page: &PageInput) -> Vec<Chunk> {
        super::chunk_page(page, &PARAMS)
    }

    fn page(content: &str) -> PageInput {
        PageInput {
            title: "Handbook".to_owned(),
            slug: "handbook".to_owned(),
            public_id: Some("pub123".to_owned()),
            source_type: "manual".to_owned(),
            author_name: None,
            content_html: content.to_owned(),
        }
    }

    /// The chunk text without its breadcrumb line.
    fn body(chunk: &Chunk) -> &str {
        chunk
            .section_heading
            .as_deref()
            .and_then(|heading| chunk.text.strip_prefix(heading))
            .and_then(|rest| rest.strip_prefix("\n\n"))
            .unwrap_or(&chunk.text)
    }

    /// Deterministic prose: `count` sentences of varied length.
    fn sentences(count: usize, topic: &str) -> String {
        (0..count)
            .map(|i| {
                let filler = [
                    "quickly",
                    "carefully",
                    "again and again",
                    "with a short note",
                ];
                format!(
                    "The {topic} step {i} runs {} before the next one starts.",
                    filler[i % filler.len()]
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Chars shared between the end of `previous` and the start of `next`.
    fn shared_overlap(previous: &str, next: &str) -> usize {
        next.char_indices()
            .map(|(at, _)| at)
            .chain([next.len()])
            .rev()
            .find(|&end| end > 0 && previous.ends_with(&next[..end]))
            .map_or(0, |end| char_len(&next[..end]))
    }

    #[test]
    fn hundred_thousand_deep_nesting_is_flattened_to_text_not_parsed() {
        let n = 100_000;
        let html = format!(
            "<h2>Deep</h2>{}<p>The nested answer is forty-two &amp; more.</p><script>x()</script>{}",
            "<div><span>".repeat(n),
            "</span></div>".repeat(n)
        );
        assert!(nesting_exceeds(&html, MAX_HTML_NESTING));
        let chunks = chunk_page(&page(&html));
        assert_eq!(chunks.len(), 1);
        assert!(
            chunks[0]
                .text
                .contains("The nested answer is forty-two & more."),
            "{:?}",
            &chunks[0].text[..200.min(chunks[0].text.len())]
        );
        assert!(!chunks[0].text.contains("x()"), "script text is skipped");
    }

    #[test]
    fn ordinary_pages_are_not_mistaken_for_deep_ones() {
        // 600 list items and paragraphs with optional end tags do not nest.
        let items: String = (0..600)
            .map(|i| format!("<li>item {i}<p>para {i}"))
            .collect();
        let html = format!("<div><ul>{items}</ul><br><img src=x><hr/></div>");
        assert!(!nesting_exceeds(&html, MAX_HTML_NESTING));
        let nested = format!("{}x{}", "<div>".repeat(513), "</div>".repeat(513));
        assert!(nesting_exceeds(&nested, MAX_HTML_NESTING));
        let balanced: String = (0..2_000).map(|_| "<div>a</div>").collect();
        assert!(!nesting_exceeds(&balanced, MAX_HTML_NESTING));
    }

    #[test]
    fn page_with_fewer_than_twenty_chars_of_text_produces_no_chunks() {
        assert!(chunk_page(&page("<p>Too short.</p>")).is_empty());
        assert!(
            chunk_page(&page(
                "<div>   </div><script>much code here, much code</script>"
            ))
            .is_empty()
        );
        assert!(chunk_page(&page("")).is_empty());
        // 19 chars: nothing; 20 chars: one chunk.
        assert!(chunk_page(&page("<p>abcdefghijklmnopqrs</p>")).is_empty());
        assert_eq!(chunk_page(&page("<p>abcdefghijklmnopqrst</p>")).len(), 1);
    }

    #[test]
    fn long_page_chunks_stay_under_the_ceiling_and_near_the_target() {
        let mut html = String::from("<h1>Guide</h1>");
        for section in ["Install", "Configure", "Operate"] {
            html.push_str(&format!("<h2>{section}</h2>"));
            for i in 0..14 {
                html.push_str(&format!("<p>{}</p>", sentences(2 + i % 6, section)));
            }
        }
        let chunks = chunk_page(&page(&html));
        assert!(chunks.len() >= 6, "got {} chunks", chunks.len());
        for chunk in &chunks {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        }
        // Every chunk but the last of its section is packed close to the target.
        for pair in chunks.windows(2) {
            if pair[0].section_heading == pair[1].section_heading {
                let chars = char_len(&pair[0].text);
                assert!(
                    (1000..=CHUNK_TARGET_CHARS).contains(&chars),
                    "chunk of {chars} chars"
                );
            }
        }
    }

    #[test]
    fn consecutive_chunks_of_a_section_overlap_by_about_two_hundred_chars() {
        let html: String = (0..12)
            .map(|i| format!("<p>{}</p>", sentences(7, &format!("part{i}"))))
            .collect();
        let html = format!("<h2>Install</h2>{html}");
        let chunks = chunk_page(&page(&html));
        assert!(chunks.len() >= 3);
        for pair in chunks.windows(2) {
            let overlap = shared_overlap(body(&pair[0]), body(&pair[1]));
            assert!(
                (CHUNK_OVERLAP_CHARS / 2..=CHUNK_OVERLAP_CHARS).contains(&overlap),
                "overlap of {overlap} chars"
            );
            // Snapped to a sentence start.
            assert!(body(&pair[1]).starts_with("The "));
        }
    }

    #[test]
    fn overlap_never_crosses_a_section_boundary() {
        let html = format!(
            "<h2>First</h2><p>{}</p><p>{}</p><h2>Second</h2><p>Second section opens here. {}</p>",
            sentences(14, "alpha"),
            sentences(14, "beta"),
            sentences(3, "gamma")
        );
        let chunks = chunk_page(&page(&html));
        let second = chunks
            .iter()
            .find(|chunk| chunk.section_heading.as_deref() == Some("Second"))
            .expect("a chunk for the second section");
        assert!(body(second).starts_with("Second section opens here."));
    }

    #[test]
    fn breadcrumbs_nest_by_level_and_a_new_h2_replaces_the_previous_one() {
        let para = "<p>Enough words in this paragraph to count as text.</p>";
        let html = format!(
            "<h1>Guide</h1>{para}<h2>Install</h2>{para}<h3>Linux</h3>{para}<h2>Usage</h2>{para}<h1>Other</h1>{para}"
        );
        let headings: Vec<_> = chunk_page(&page(&html))
            .into_iter()
            .map(|chunk| chunk.section_heading)
            .collect();
        assert_eq!(
            headings,
            [
                Some("Guide".to_owned()),
                Some("Guide > Install".to_owned()),
                Some("Guide > Install > Linux".to_owned()),
                Some("Guide > Usage".to_owned()),
                Some("Other".to_owned()),
            ]
        );
        let chunks = chunk_page(&page(&html));
        assert!(
            chunks[2]
                .text
                .starts_with("Guide > Install > Linux\n\nEnough words")
        );
    }

    #[test]
    fn text_before_the_first_heading_has_no_section_heading() {
        let chunks = chunk_page(&page(
            "<p>Introduction before any heading.</p><h2>Later</h2><p>Body of the later section.</p>",
        ));
        assert_eq!(chunks[0].section_heading, None);
        assert_eq!(chunks[0].text, "Introduction before any heading.");
        assert_eq!(chunks[1].section_heading.as_deref(), Some("Later"));
    }

    #[test]
    fn a_table_that_fits_is_never_split_and_reads_row_by_row() {
        let rows: String = (0..14)
            .map(|i| {
                format!("<tr><td>Setting {i}</td><td>value number {i}</td><td>default on</td></tr>")
            })
            .collect();
        let html = format!(
            "<p>{}</p><table><tr><th>Name</th><th>Value</th><th>Note</th></tr>{rows}</table>",
            sentences(22, "intro")
        );
        let table: String = std::iter::once("Name | Value | Note".to_owned())
            .chain((0..14).map(|i| format!("Setting {i} | value number {i} | default on")))
            .collect::<Vec<_>>()
            .join("\n");
        let chunks = chunk_page(&page(&html));
        assert!(chunks.len() >= 2, "the table must not fit with the intro");
        assert!(chunks.iter().any(|chunk| chunk.text.contains(&table)));
    }

    #[test]
    fn a_list_that_fits_is_never_split_and_items_get_dash_lines() {
        let items: String = (0..20)
            .map(|i| format!("<li>Checklist item {i} <b>must</b> be done</li>"))
            .collect();
        let html = format!(
            "<p>{}</p><ul>{items}<li>Nested<ul><li>inner item</li></ul></li></ul>",
            sentences(20, "intro")
        );
        let list: String = (0..20)
            .map(|i| format!("- Checklist item {i} must be done\n"))
            .collect::<String>()
            + "- Nested\n  - inner item";
        let chunks = chunk_page(&page(&html));
        assert!(chunks.len() >= 2);
        assert!(chunks.iter().any(|chunk| chunk.text.contains(&list)));
    }

    #[test]
    fn an_oversized_paragraph_is_sentence_split_into_pieces_under_the_ceiling() {
        let paragraph = sentences(90, "long");
        assert!(char_len(&paragraph) > 5000);
        let chunks = chunk_page(&page(&format!("<h2>Long</h2><p>{paragraph}</p>")));
        assert!(chunks.len() >= 3);
        for chunk in &chunks {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
            assert!(body(chunk).ends_with("starts."), "cut mid-sentence");
        }
        for i in 0..90 {
            let needle = format!("The long step {i} runs");
            assert!(chunks.iter().any(|chunk| chunk.text.contains(&needle)));
        }
    }

    #[test]
    fn text_without_sentence_breaks_falls_back_to_words_then_chars() {
        let words = "alpha beta gamma ".repeat(300);
        let chunks = chunk_page(&page(&format!("<p>{words}</p>")));
        assert!(chunks.len() >= 3);
        for chunk in &chunks {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
            assert!(
                chunk
                    .text
                    .split(' ')
                    .all(|word| ["alpha", "beta", "gamma"].contains(&word)),
                "a word was cut"
            );
        }

        // Counting digits never repeat a long substring, so positions are unambiguous.
        let run: String = (0..2000)
            .map(|i: u32| i.to_string())
            .collect::<String>()
            .chars()
            .take(5000)
            .collect();
        let chunks = chunk_page(&page(&format!("<p>{run}</p>")));
        assert!(chunks.len() >= 3);
        let mut covered = 0;
        for chunk in &chunks {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
            let start = run.find(&chunk.text).expect("chunk is a slice of the run");
            assert!(start <= covered, "gap before byte {start}");
            covered = start + chunk.text.len();
        }
        assert_eq!(covered, run.len());
    }

    #[test]
    fn an_oversized_pre_is_split_on_lines_and_keeps_indentation() {
        let code: String = (0..200)
            .map(|i| format!("fn step_{i}() {{\n    run({i});\n}}\n"))
            .collect();
        let chunks = chunk_page(&page(&format!("<pre>{code}</pre>")));
        assert!(chunks.len() >= 3);
        for chunk in &chunks {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
            assert!(chunk.text.contains("\n    run("));
            assert!(!chunk.text.lines().any(|line| line.starts_with("run(")));
        }
    }

    #[test]
    fn multi_byte_text_never_splits_inside_a_char_and_counts_chars() {
        let source = "日本語のテキスト🎉".repeat(600);
        let chunks = chunk_page(&page(&format!("<p>{source}</p>")));
        assert!(chunks.len() >= 3);
        assert!(
            chunks
                .iter()
                .any(|chunk| chunk.text.len() > SENTENCE_SPLIT_ABOVE_CHARS)
        );
        for chunk in &chunks {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
            assert!(source.contains(&chunk.text));
        }
        let emoji = "Ünïcödé 🎉 text with ❤️ and 中文 words. ".repeat(100);
        for chunk in chunk_page(&page(&format!("<h2>Émoji 🎉</h2><p>{emoji}</p>"))) {
            assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
        }
    }

    #[test]
    fn embed_input_is_title_blank_line_then_chunk_text() {
        let chunks = chunk_page(&page("<h2>Install</h2><p>Run the installer twice.</p>"));
        assert_eq!(
            chunks[0].embed_input(),
            "Handbook\n\nInstall\n\nRun the installer twice."
        );
    }

    #[test]
    fn metadata_has_exactly_the_six_keys_with_the_page_values() {
        let chunks = chunk_page(&page(
            "<h1>Guide</h1><h2>Install</h2><p>Run the installer twice.</p>",
        ));
        assert_eq!(
            chunks[0].metadata(),
            json!({
                "title": "Handbook",
                "slug": "handbook",
                "public_id": "pub123",
                "source_type": "manual",
                "author_name": null,
                "section_heading": "Guide > Install",
            })
        );
        let untitled = chunk_page(&page("<p>No heading on this page at all.</p>"));
        assert_eq!(untitled[0].metadata()["section_heading"], Value::Null);
        assert_eq!(untitled[0].metadata().as_object().map(|m| m.len()), Some(6));
    }

    #[test]
    fn chunk_indexes_are_contiguous_from_zero() {
        let html: String = ["A", "B", "C"]
            .iter()
            .map(|h| {
                format!(
                    "<h2>{h}</h2><p>{}</p><p>{}</p>",
                    sentences(20, h),
                    sentences(20, h)
                )
            })
            .collect();
        let chunks = chunk_page(&page(&html));
        assert!(chunks.len() > 3);
        let indexes: Vec<i32> = chunks.iter().map(|chunk| chunk.chunk_index).collect();
        assert_eq!(indexes, (0..chunks.len() as i32).collect::<Vec<_>>());
    }

    #[test]
    fn plain_text_paragraphs_become_blocks_and_angle_brackets_survive() {
        let text = "First paragraph returns Vec<String> when a < b.\nIts second line.\n\n\
                    Second paragraph &amp; more.\r\n\r\n   \n\nThird   paragraph.";
        let chunks = chunk_page(&page(text));
        assert_eq!(
            chunks[0].text,
            "First paragraph returns Vec<String> when a < b.\nIts second line.\n\n\
             Second paragraph & more.\n\nThird paragraph."
        );

        let crlf = chunk_page(&page("Windows line one\r\nline two\r\n\r\nNext paragraph."));
        assert_eq!(
            crlf[0].text,
            "Windows line one\nline two\n\nNext paragraph."
        );

        let long: String = (0..10)
            .map(|i| sentences(6, &format!("para{i}")) + "\n\n")
            .collect();
        let chunks = chunk_page(&page(&long));
        assert!(chunks.len() >= 2);
        for i in 0..10 {
            let paragraph = sentences(6, &format!("para{i}"));
            assert!(chunks.iter().any(|chunk| chunk.text.contains(&paragraph)));
        }
    }

    #[test]
    fn loose_text_outside_blocks_is_kept() {
        let chunks = chunk_page(&page(
            "<div>Bare intro in a div.</div>Loose text node.<span> Span text.</span><p>A paragraph.</p>",
        ));
        assert_eq!(
            chunks[0].text,
            "Bare intro in a div.\n\nLoose text node. Span text.\n\nA paragraph."
        );
    }

    #[test]
    fn whitespace_collapses_except_in_pre_and_br_is_a_newline() {
        let chunks = chunk_page(&page(
            "<p>  lots   of\n\n  space </p><pre>  keep\n    this</pre><p>line<br>break</p>",
        ));
        assert_eq!(
            chunks[0].text,
            "lots of space\n\n  keep\n    this\n\nline\nbreak"
        );
    }

    #[test]
    fn scripts_styles_and_templates_are_skipped() {
        let chunks = chunk_page(&page(
            "<script>var secret = 1;</script><style>p { color: red }</style>\
             <noscript>enable javascript</noscript><template><p>template text</p></template>\
             <p>Visible paragraph text here.</p>",
        ));
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].text, "Visible paragraph text here.");
    }

    #[test]
    fn an_overlong_heading_is_capped_in_the_breadcrumb_but_kept_as_text() {
        let heading = "word ".repeat(60).trim_end().to_owned();
        let chunks = chunk_page(&page(&format!("<h2>{heading}</h2><p>Short body.</p>")));
        let breadcrumb = chunks[0].section_heading.clone().unwrap_or_default();
        assert_eq!(char_len(&breadcrumb), HEADING_MAX_CHARS);
        assert!(breadcrumb.ends_with('…'));
        assert!(body(&chunks[0]).starts_with(&heading));
    }

    #[test]
    fn empty_and_garbage_html_never_panics() {
        // html5ever's scope checks make parsing quadratic in nesting depth, so
        // 2,000 levels keeps the test fast while exercising the iterative walk.
        let deep = format!(
            "{}Deeply nested text that still counts.",
            "<div>".repeat(2_000)
        );
        let inputs = [
            String::new(),
            "<".to_owned(),
            "<<<<>>>>".to_owned(),
            "</p></div></table>".to_owned(),
            "<p><table><li><h2>unclosed heading and cells".to_owned(),
            "<!-- an unclosed comment".to_owned(),
            "\u{0}\u{FFFD}<p>\u{0}</p>".to_owned(),
            format!("<h1>{}</h1>", "x".repeat(5000)),
            format!("<pre>{}</pre>", "\n".repeat(5000)),
            format!("<table>{}</table>", "<td>cell".repeat(3000)),
            deep.clone(),
        ];
        for input in &inputs {
            for chunk in chunk_page(&page(input)) {
                assert!(char_len(&chunk.text) <= SENTENCE_SPLIT_ABOVE_CHARS);
            }
        }
        let chunks = chunk_page(&page(&deep));
        assert_eq!(chunks[0].text, "Deeply nested text that still counts.");
    }

    #[test]
    fn output_is_deterministic() {
        let html = format!(
            "<h1>T</h1><p>{}</p><ul><li>a</li><li>b</li></ul><h2>U</h2><p>{}</p>",
            sentences(40, "x"),
            sentences(40, "y")
        );
        assert_eq!(chunk_page(&page(&html)), chunk_page(&page(&html)));
    }
}
