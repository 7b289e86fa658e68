//! Sectioning: tree events (open, text, close) become sections that start at
//! H1–H6 and carry a breadcrumb of their enclosing headings, each a run of
//! blocks, with P, PRE, BLOCKQUOTE, UL, OL, TABLE, DL and FIGURE read as
//! atomic blocks. Separate from the walk (which only produces the events)
//! and from the splitting (which only sees finished blocks).

use super::char_len;

/// Longest heading kept in a breadcrumb. Six capped levels leave at least
/// 883 chars of body in a chunk; the full text of a longer heading is kept
/// as the section's first block instead.
pub(super) const HEADING_MAX_CHARS: usize = 100;

pub(super) const BREADCRUMB_SEPARATOR: &str = " > ";

/// Blocks never split unless they alone exceed the ceiling (spec §11.3).
pub(super) const ATOMIC_TAGS: &[&str] = &[
    "p",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "table",
    "dl",
    "figure",
];

/// Block-level containers: they end the loose text before them and start a
/// new line inside an atomic block.
pub(super) const BOUNDARY_TAGS: &[&str] = &[
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

/// A page read as sections of blocks.
pub(super) struct Outline {
    pub(super) sections: Vec<Section>,
    /// Chars of text in blocks and headings, for the empty-page rule.
    pub(super) text_chars: usize,
}

pub(super) struct Section {
    pub(super) heading: Option<String>,
    pub(super) blocks: Vec<Block>,
}

pub(super) struct Block {
    pub(super) text: String,
    pub(super) chars: usize,
    /// PRE content: whitespace is significant, so cuts keep indentation.
    pub(super) preformatted: bool,
}

impl Block {
    pub(super) fn new(text: String, preformatted: bool) -> Self {
        Block {
            chars: char_len(&text),
            text,
            preformatted,
        }
    }
}

pub(super) fn heading_level(name: &str) -> Option<usize> {
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
pub(super) fn breaks_line(name: &str) -> bool {
    BOUNDARY_TAGS.contains(&name) || ATOMIC_TAGS.contains(&name) || heading_level(name).is_some()
}

/// Turns tree events into sections and blocks.
pub(super) struct OutlineBuilder {
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
    pub(super) fn new() -> Self {
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

    pub(super) fn open(&mut self, name: &str) {
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
    pub(super) fn close(&mut self, name: &str) {
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

    pub(super) fn text(&mut self, text: &str) {
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

    pub(super) fn finish(mut self) -> Outline {
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

pub(super) enum CaptureKind {
    Heading(usize),
    Block { preformatted: bool },
}

/// An atomic block or heading being read. Everything nested inside belongs
/// to it, including nested atomic blocks and headings.
pub(super) struct Capture {
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
pub(super) struct TextSink {
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
