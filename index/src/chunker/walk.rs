//! Reading a page's content before it is sectioned: whether it is markup at
//! all, a linear nesting pre-scan that keeps over-deep markup away from the
//! HTML parser (it is flattened to text instead), and the parse itself with
//! a non-recursive walk of the tree. Separate because it is the only part
//! that touches the parser, and the sanitiser (`root::retrieval::sanitize`)
//! and the fuzz targets reuse its pre-scan and flattening.

use scraper::{Html, Node};

use super::section::{Block, Outline, OutlineBuilder, Section, breaks_line};

/// Subtrees that carry no readable page text.
pub(super) const SKIPPED_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "head", "title", "iframe", "noembed", "noframes",
];

/// Tags whose presence marks the content as HTML rather than plain text.
/// One-letter inline tags (`a`, `b`, `i`…) are left out on purpose: `a<b`
/// in plain text must not be read as markup, and real HTML using them also
/// has closing tags, which are detected separately.
pub(super) const HTML_MARKER_TAGS: &[&str] = &[
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

/// Deepest element nesting handed to the HTML parser. html5ever's tree
/// builder checks element scopes by walking the stack of open elements, so
/// its cost grows with the square of the depth (20 000 nested `div`s take
/// tens of seconds); real pages nest a few dozen levels. Deeper markup is
/// flattened to text instead (see [`flatten_markup`]).
pub const MAX_HTML_NESTING: usize = 512;

/// Elements whose end tag is optional or that never have one: the parser
/// closes them implicitly, so they do not count toward nesting depth.
pub(super) const UNCOUNTED_TAGS: &[&str] = &[
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

pub(super) fn memchr_lt(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'<')
}

/// Byte offset of the first `</name` (any case) in `text`.
pub(super) fn find_end_tag(text: &str, name: &str) -> Option<usize> {
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
/// goes through `plain_outline` (entities decoded, paragraphs kept).
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

/// Whether the content is markup. Plain text (no recognisable tag) is read
/// paragraph by paragraph instead, so that `Vec<String>` or `a<b` survive.
pub(super) fn looks_like_html(content: &str) -> bool {
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
pub(super) fn plain_outline(content: &str) -> Outline {
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
pub(super) fn html_outline(content: &str) -> Outline {
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
