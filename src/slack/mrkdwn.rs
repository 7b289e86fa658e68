//! Markdown → Slack `mrkdwn` conversion and Block Kit chunking (spec §8.2).
//!
//! The model writes CommonMark/GFM, but Slack renders its own `mrkdwn` dialect: `*bold*`,
//! `_italic_`, `<url|text>` links, no headings, lists or tables, and `&`, `<`, `>` are control
//! characters. [`to_mrkdwn`] walks pulldown-cmark events (never regexes) so nesting, code and
//! escaping are handled structurally, while Slack tokens the model already wrote (`<@U…>`,
//! `<#C…>`, `<https://…|text>`, …) survive byte for byte. Broadcast mentions (`<!here>`,
//! `<!channel>`, `<!everyone>`, `@here`, …) never do: a prompt-injected reply must not ping a
//! whole channel (security review L-9). [`to_messages`] then splits the result
//! into `section` blocks that respect Slack's 3000-character and 50-block limits.

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::HashSet;

/// Slack rejects a `section` block whose `text` is longer than this many characters.
pub const MAX_SECTION_CHARS: usize = 3000;
/// Slack rejects a message carrying more than this many blocks.
pub const MAX_BLOCKS_PER_MESSAGE: usize = 50;

/// One `chat.postMessage` body: `blocks` to render, `text` as the notification fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackMessage {
    /// Plain fallback (the sections' texts joined by blank lines); send with `mrkdwn: true`.
    pub text: String,
    /// Block Kit `section` blocks, each `{"type":"section","text":{"type":"mrkdwn","text":…}}`.
    pub blocks: Vec<Value>,
}

/// Converts model-written Markdown into Slack `mrkdwn`, so replies render as intended.
pub fn to_mrkdwn(markdown: &str) -> String {
    let normalized = markdown.replace("\r\n", "\n");
    let protected = Protected::new(&normalized);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut writer = Writer::default();
    for event in Parser::new_ext(&protected.text, options) {
        writer.event(event);
    }
    protected.restore(writer.out.trim_end())
}

/// Splits `mrkdwn` into Block Kit messages: ≤ 3000-char sections, ≤ 50 blocks per message.
/// Empty or whitespace-only input yields no message (the caller decides what to send).
pub fn to_messages(mrkdwn: &str) -> Vec<SlackMessage> {
    let section = |t: &String| json!({"type": "section", "text": {"type": "mrkdwn", "text": t}});
    split_sections(mrkdwn)
        .chunks(MAX_BLOCKS_PER_MESSAGE)
        .map(|chunk| SlackMessage {
            text: chunk.join("\n\n"),
            blocks: chunk.iter().map(section).collect(),
        })
        .collect()
}

/// Source text with Slack tokens swapped for private-use placeholders, so Markdown parsing
/// (HTML blocks, autolinks, table pipes, emphasis) can never alter them. A broadcast mention
/// is swapped the same way but restored escaped (`&lt;!channel&gt;`), so it shows as text
/// instead of vanishing as raw HTML.
struct Protected<'a> {
    text: String,
    tokens: Vec<Cow<'a, str>>,
    sentinel: Option<char>,
}

impl<'a> Protected<'a> {
    fn new(src: &'a str) -> Self {
        // The sentinel is a private-use char absent from the input, so it cannot be forged.
        let pua = '\u{E000}'..='\u{F8FF}';
        let used: HashSet<char> = src.chars().filter(|c| pua.contains(c)).collect();
        let sentinel = pua.clone().find(|c| !used.contains(c));
        let (mut text, mut tokens, mut copied) = (String::with_capacity(src.len()), vec![], 0);
        for (i, _) in src.match_indices('<') {
            let escaped = i > 0 && src.as_bytes()[i - 1] == b'\\';
            let Some(s) = sentinel.filter(|_| !escaped) else {
                continue;
            };
            // Linear: the scan stops at the next '<', where the following iteration starts.
            let Some(j) = src[i + 1..].find(['<', '>', '\n']).map(|p| p + i + 1) else {
                break;
            };
            let inner = &src[i + 1..j];
            let broadcast = is_broadcast(inner);
            if src[j..].starts_with('>') && (broadcast || is_slack_token(inner)) {
                text.push_str(&src[copied..i]);
                text.push_str(&format!("{s}{}{s}", tokens.len()));
                tokens.push(if broadcast {
                    Cow::Owned(encode(&src[i..=j], false))
                } else {
                    Cow::Borrowed(&src[i..=j])
                });
                copied = j + 1;
            }
        }
        text.push_str(&src[copied..]);
        Self {
            text,
            tokens,
            sentinel,
        }
    }

    fn restore(&self, rendered: &str) -> String {
        let Some(sentinel) = self.sentinel else {
            return rendered.to_string();
        };
        let mut parts = rendered.split(sentinel);
        let mut out = parts.next().unwrap_or_default().to_string();
        while let Some(index) = parts.next() {
            if let Some(token) = index.parse::<usize>().ok().and_then(|n| self.tokens.get(n)) {
                out.push_str(token);
            }
            out.push_str(parts.next().unwrap_or_default());
        }
        out
    }
}

/// Whether `<inner>` is a broadcast mention (`<!here>`, `<!channel>`, `<!everyone>`, with or
/// without a label): the agent must never ping a whole channel (security review L-9).
fn is_broadcast(inner: &str) -> bool {
    let head = inner.split_once('|').map_or(inner, |(h, _)| h);
    head.strip_prefix('!')
        .is_some_and(|cmd| MASS_MENTIONS.contains(&cmd))
}

/// Whether `<inner>` is a Slack control sequence the model may legitimately write.
fn is_slack_token(inner: &str) -> bool {
    let head = inner.split_once('|').map_or(inner, |(h, _)| h);
    let id = |s: &str, first: &[char]| {
        s.starts_with(first) && s.len() > 1 && s.chars().all(|c| c.is_ascii_alphanumeric())
    };
    if let Some(user) = head.strip_prefix('@') {
        return id(user, &['U', 'W']);
    }
    if let Some(channel) = head.strip_prefix('#') {
        return id(channel, &['C']);
    }
    // `<!here>`, `<!channel>` and `<!everyone>` are deliberately not tokens (see `is_broadcast`).
    if let Some(cmd) = head.strip_prefix('!') {
        let team = cmd.strip_prefix("subteam^").is_some_and(|s| id(s, &['S']));
        return team || cmd.starts_with("date^");
    }
    ["http://", "https://", "mailto:"].iter().any(|scheme| {
        let has_scheme = head
            .get(..scheme.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(scheme));
        has_scheme && head.len() > scheme.len() && !head.contains(char::is_whitespace)
    })
}

/// Plain text made safe for mrkdwn: `&`, `<`, `>` escaped (status lines,
/// admin notices — text that must not turn into mentions or links).
pub fn escape(text: &str) -> String {
    encode(text, false)
}

/// Broadcast words Slack may turn into a mass mention when written as plain `@word`.
const MASS_MENTIONS: [&str; 3] = ["here", "channel", "everyone"];

/// Plain `@here`, `@channel` and `@everyone` with a word joiner (U+2060) after the `@`: it
/// reads the same but Slack no longer sees a mention (security review L-9).
fn defuse_mass_mentions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('@') {
        let (before, after) = rest.split_at(at + 1);
        out.push_str(before);
        let word = |w: &str| {
            after
                .get(..w.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(w))
        };
        if MASS_MENTIONS.iter().any(|w| word(w)) {
            out.push('\u{2060}');
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Slack's escaping of its control characters; in a URL, also encodes what would split `<url|…>`.
fn encode(s: &str, url: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match (c, url) {
            ('&', _) => out.push_str("&amp;"),
            ('<', false) => out.push_str("&lt;"),
            ('>', false) => out.push_str("&gt;"),
            ('<', true) => out.push_str("%3C"),
            ('>', true) => out.push_str("%3E"),
            ('|', true) => out.push_str("%7C"),
            (c, true) if c.is_whitespace() => out.push_str("%20"),
            (c, _) => out.push(c),
        }
    }
    out
}

/// Drops HTML tags, keeping only the text between them (raw HTML is never emitted as markup).
fn strip_tags(html: &str) -> String {
    let mut in_tag = false;
    let keep = |&c: &char| {
        let keep = !in_tag && c != '<';
        in_tag = (in_tag || c == '<') && c != '>';
        keep
    };
    html.chars().filter(keep).collect()
}

fn is_br(html: &str) -> bool {
    let t: String = html.chars().filter(|c| !c.is_whitespace()).collect();
    t.eq_ignore_ascii_case("<br>") || t.eq_ignore_ascii_case("<br/>")
}

/// What was last written in the current container: decides the separator before a new block.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
enum Last {
    #[default]
    Nothing,
    Inline,
    BlockEnd,
}

/// Open containers: a quote, a list (next number, depth), an item (pending marker, is bullet).
enum Frame {
    Quote,
    List(Option<u64>, usize),
    Item(Option<String>, bool),
}

/// Inline markers for strong, emphasis and strikethrough.
const MARKS: [&str; 3] = ["*", "_", "~"];

/// Streaming renderer. Everything structural is written lazily, at the first real content:
/// block separators, line prefixes (quotes, list markers) and a heading's opening `*`. Empty
/// blocks (a dropped HTML comment, an empty heading) therefore leave no trace.
#[derive(Default)]
struct Writer {
    out: String,
    frames: Vec<Frame>,
    last: Last,
    line_started: bool,
    /// Pending separator: newlines to emit, and the frame depth whose prefix blank lines carry.
    sep: (usize, usize),
    opener: &'static str,
    in_code: bool,
    in_heading: bool,
    in_table: bool,
    in_head_row: bool,
    marks: [usize; 3],
    /// Open links/images: label start in `out`, url, link type (`None` for an image).
    links: Vec<(usize, String, Option<LinkType>)>,
    html: Option<String>,
    rows: usize,
    cells: usize,
    cell_start: usize,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => match self.html.as_mut() {
                Some(buf) => buf.push_str(&t),
                None if self.in_code => self.write(&t),
                None => self.write(&defuse_mass_mentions(&encode(&t, false))),
            },
            Event::Code(code) => self.write(&format!("`{code}`")),
            Event::Html(h) | Event::InlineHtml(h) => match self.html.as_mut() {
                Some(buf) => buf.push_str(&h),
                None if is_br(&h) => self.line_break(),
                None => {}
            },
            Event::SoftBreak | Event::HardBreak => self.line_break(),
            Event::Rule => {
                self.block_start(false);
                self.write("———");
                self.last = Last::BlockEnd;
            }
            Event::TaskListMarker(done) => {
                let check = if done { "☑ " } else { "☐ " };
                match self.frames.last_mut() {
                    Some(Frame::Item(marker @ Some(_), true)) => *marker = Some(check.into()),
                    _ => self.write(check),
                }
            }
            _ => {} // math and footnotes are not enabled
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_start(false),
            Tag::Heading { .. } => {
                self.block_start(false);
                (self.opener, self.in_heading) = ("*", true);
            }
            Tag::HtmlBlock => {
                self.block_start(false);
                self.html = Some(String::new());
            }
            Tag::CodeBlock(_) => {
                self.block_start(false);
                self.write("```\n");
                self.in_code = true;
            }
            Tag::BlockQuote(_) => {
                self.block_start(false);
                self.frames.push(Frame::Quote);
            }
            Tag::List(next) => {
                self.block_start(matches!(self.frames.last(), Some(Frame::Item(..))));
                let lists = self.frames.iter().filter(|f| matches!(f, Frame::List(..)));
                let depth = 1 + lists.count();
                self.frames.push(Frame::List(next, depth));
            }
            Tag::Item => {
                self.block_start(true);
                let (marker, bullet) = match self.frames.last_mut() {
                    Some(Frame::List(Some(n), _)) => {
                        let marker = format!("{n}. ");
                        *n = n.saturating_add(1);
                        (marker, false)
                    }
                    Some(Frame::List(None, depth)) if *depth > 1 => ("◦ ".to_string(), true),
                    _ => ("• ".to_string(), true),
                };
                self.frames.push(Frame::Item(Some(marker), bullet));
            }
            Tag::Table(_) => {
                self.block_start(false);
                (self.in_table, self.rows) = (true, 0);
            }
            Tag::TableHead | Tag::TableRow => {
                if self.rows > 0 {
                    self.newline();
                }
                (self.rows, self.cells) = (self.rows + 1, 0);
                self.in_head_row = matches!(tag, Tag::TableHead);
            }
            Tag::TableCell => {
                self.write(if self.cells > 0 { " | " } else { "" });
                self.write(if self.in_head_row { "*" } else { "" });
                (self.cells, self.cell_start) = (self.cells + 1, self.out.len());
            }
            Tag::Strong => self.toggle(0, true),
            Tag::Emphasis => self.toggle(1, true),
            Tag::Strikethrough => self.toggle(2, true),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => self.open_link(&dest_url, Some(link_type)),
            // An image inside a link (a badge) contributes only its alt text: an empty url.
            Tag::Image { dest_url, .. } if self.links.is_empty() => self.open_link(&dest_url, None),
            Tag::Image { .. } => self.open_link("", None),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) if self.opener.is_empty() => {
                self.in_heading = false;
                self.write("*");
                self.end_block();
            }
            TagEnd::Heading(_) => (self.opener, self.in_heading) = ("", false),
            TagEnd::HtmlBlock => {
                let text = strip_tags(&self.html.take().unwrap_or_default());
                let lines: Vec<_> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                self.write(&defuse_mass_mentions(&encode(&lines.join("\n"), false)));
                self.end_block();
            }
            TagEnd::CodeBlock => {
                self.in_code = false;
                if self.line_started {
                    self.newline();
                }
                self.write("```");
                self.end_block();
            }
            TagEnd::Item | TagEnd::BlockQuote(_) | TagEnd::List(_) => {
                if matches!(self.frames.last(), Some(Frame::Item(Some(_), _))) {
                    self.write(" "); // an empty item still shows its marker
                }
                self.frames.pop();
                self.end_block();
            }
            TagEnd::Table => (self.in_table, self.last) = (false, Last::BlockEnd),
            TagEnd::TableHead => self.in_head_row = false,
            TagEnd::TableCell if self.in_head_row && self.out.len() == self.cell_start => {
                self.out.pop(); // no "**" for an empty header cell
            }
            TagEnd::TableCell if self.in_head_row => self.write("*"),
            TagEnd::Strong => self.toggle(0, false),
            TagEnd::Emphasis => self.toggle(1, false),
            TagEnd::Strikethrough => self.toggle(2, false),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            TagEnd::Paragraph => self.end_block(),
            _ => {}
        }
    }

    /// Emits a marker only at the outermost level (Slack cannot nest the same marker); bold is
    /// skipped inside headings and header cells, which are bold already.
    fn toggle(&mut self, kind: usize, open: bool) {
        let depth = self.marks[kind];
        let outer = depth == usize::from(!open);
        self.marks[kind] = if open {
            depth + 1
        } else {
            depth.saturating_sub(1)
        };
        if outer && !(kind == 0 && (self.in_heading || self.in_head_row)) {
            self.write(MARKS[kind]);
        }
    }

    fn open_link(&mut self, url: &str, kind: Option<LinkType>) {
        self.ensure_line();
        self.links.push((self.out.len(), url.to_string(), kind));
    }

    fn close_link(&mut self) {
        let Some((start, url, kind)) = self.links.pop() else {
            return;
        };
        let label = self.out.split_off(start.min(self.out.len()));
        let (label, url) = (label.trim(), encode(&url, true));
        let rendered = match kind {
            _ if url.is_empty() => label.to_string(),
            Some(LinkType::Email) => format!("<mailto:{url}|{label}>"),
            Some(LinkType::Autolink) => format!("<{url}>"),
            _ if label.is_empty() || label == url => format!("<{url}>"),
            _ => format!("<{url}|{label}>"),
        };
        self.write(&rendered);
    }

    /// Breaks become spaces where a newline would break the construct (heading, link, table row).
    fn line_break(&mut self) {
        if self.in_heading || self.in_table || !self.links.is_empty() {
            self.write(" ");
        } else if self.last != Last::Nothing {
            self.newline();
        }
    }

    /// Requests the separator before a new block: a blank line, or one newline in lists.
    fn block_start(&mut self, tight: bool) {
        let n = match self.last {
            Last::Nothing => 0,
            Last::BlockEnd if !tight => 2,
            _ => 1,
        };
        if n > 0 {
            self.sep = (n, self.frames.len());
        }
        self.last = Last::Nothing;
    }

    fn end_block(&mut self) {
        if self.last != Last::Nothing {
            self.last = Last::BlockEnd;
        }
    }

    fn prefix(&mut self, consume: bool, depth: usize) -> String {
        let mut prefix = String::new();
        for frame in self.frames.iter_mut().take(depth) {
            let piece = match frame {
                Frame::Quote => Some("> ".to_string()),
                Frame::Item(marker, _) if consume => Some(marker.take().unwrap_or("    ".into())),
                Frame::Item(..) => Some("    ".to_string()),
                Frame::List(..) => None,
            };
            // Cap pathological nesting so output stays linear in the input size.
            if let Some(piece) = piece.filter(|_| prefix.len() < 64) {
                prefix.push_str(&piece);
            }
        }
        prefix
    }

    /// Flushes the pending separator, then starts the line with its prefix (and opener).
    fn ensure_line(&mut self) {
        let (n, depth) = std::mem::take(&mut self.sep);
        for _ in usize::from(!self.line_started)..n {
            self.newline_at(depth);
        }
        if !self.line_started {
            let prefix = self.prefix(true, self.frames.len());
            self.out.push_str(&prefix);
            self.out.push_str(std::mem::take(&mut self.opener));
            self.line_started = true;
        }
    }

    fn newline(&mut self) {
        self.newline_at(self.frames.len());
    }

    /// Ends the line (trimming trailing blanks outside code) or writes a blank line whose
    /// prefix comes from the first `depth` frames.
    fn newline_at(&mut self, depth: usize) {
        if !self.line_started {
            let prefix = self.prefix(false, depth);
            self.out.push_str(prefix.trim_end());
        } else if !self.in_code {
            let trimmed = self.out.trim_end_matches([' ', '\t']).len();
            self.out.truncate(trimmed);
        }
        self.out.push('\n');
        self.line_started = false;
    }

    fn write(&mut self, s: &str) {
        for (i, segment) in s.split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            if !segment.is_empty() {
                self.ensure_line();
                self.out.push_str(segment);
                self.last = Last::Inline;
            }
        }
    }
}

const FENCE: &str = "```";

fn split_sections(text: &str) -> Vec<String> {
    let (mut sections, mut rest, mut in_fence) = (Vec::new(), text, false);
    loop {
        // Inside code, leading spaces are indentation; elsewhere they are dropped.
        rest = rest.trim_start_matches(|c: char| c == '\n' || (!in_fence && c.is_whitespace()));
        if rest.trim().is_empty() {
            return sections;
        }
        let open = if in_fence { "```\n" } else { "" };
        let budget = MAX_SECTION_CHARS - open.len();
        let Some(limit) = char_offset(rest, budget) else {
            sections.push(format!("{open}{}", rest.trim_end()));
            return sections;
        };
        let (mut cut, mut next) = find_cut(rest, limit);
        let mut fenced = fence_open_after(&rest[..cut], in_fence);
        // Leave room for the closing "\n```" that keeps the code block balanced.
        if let Some(limit) = char_offset(rest, budget - FENCE.len() - 1).filter(|_| fenced) {
            (cut, next) = find_cut(rest, limit);
            fenced = fence_open_after(&rest[..cut], in_fence);
        }
        let close = if fenced { "\n```" } else { "" };
        let section = format!("{open}{}{close}", rest[..cut].trim_end());
        if !section.trim().is_empty() {
            sections.push(section);
        }
        (in_fence, rest) = (fenced, &rest[next..]);
    }
}

/// Byte offset of the `n`th char, or `None` when `s` has at most `n` chars (it fits).
fn char_offset(s: &str, n: usize) -> Option<usize> {
    s.char_indices().nth(n).map(|(i, _)| i)
}

/// Whether a code fence is still open after `text`, given whether one was open before it.
fn fence_open_after(text: &str, mut open: bool) -> bool {
    for line in text.split('\n') {
        let line = line.trim_start_matches(|c: char| c == '>' || c.is_whitespace());
        if line.starts_with(FENCE) && line.matches(FENCE).count() % 2 == 1 {
            open = !open;
        }
    }
    open
}

/// Sorted spans `(start, end)` of `<…>` tokens and `&…;` entities near the window: never cut.
fn protected_spans(rest: &str, limit: usize) -> Vec<(usize, usize)> {
    let bytes = rest.as_bytes();
    let end = bytes.len().min(limit + 4 * MAX_SECTION_CHARS);
    let (mut spans, mut i) = (Vec::new(), 0);
    while i < end {
        let (close, max) = match bytes[i] {
            b'<' => (b'>', 4 * MAX_SECTION_CHARS),
            b'&' => (b';', 10),
            _ => {
                i += 1;
                continue;
            }
        };
        let scan = &bytes[i + 1..end.min(i + 1 + max)];
        let entity = bytes[i] == b'&';
        let stop = |b: &u8| match entity {
            true => !(b.is_ascii_alphanumeric() || *b == b'#'),
            false => b"<>\n".contains(b),
        };
        match scan.iter().position(stop) {
            Some(p) if scan[p] == close => {
                spans.push((i, i + p + 2));
                i += p + 2;
            }
            Some(p) => i += p + 1,
            None => i += scan.len().max(1),
        }
    }
    spans
}

/// Chooses where to end a section: the last paragraph, else line, else word boundary at or
/// before `limit`; else a hard cut that backs off to the start of a token it would split.
/// Returns (end of this section, start of the remainder); the end is always > 0.
fn find_cut(rest: &str, limit: usize) -> (usize, usize) {
    // Separators are ASCII, so byte positions holding them are char boundaries.
    let bytes = &rest.as_bytes()[..rest.len().min(limit + 2)];
    let spans = protected_spans(rest, limit);
    let enclosing = |p: usize| {
        let i = spans.partition_point(|&(s, _)| s < p);
        let span = spans.get(i.wrapping_sub(1)).filter(|&&(_, e)| e > p);
        span.map(|&(s, _)| s)
    };
    for sep in ["\n\n", "\n", " "] {
        let fits = |p: &usize| bytes[*p..].starts_with(sep.as_bytes());
        if let Some(p) = (1..=limit)
            .rev()
            .find(|p| fits(p) && enclosing(*p).is_none())
        {
            return (p, p + sep.len());
        }
    }
    let cut = enclosing(limit).filter(|&s| s > 0).unwrap_or(limit);
    (cut, cut)
}

#[cfg(test)]
#[path = "mrkdwn_test.rs"]
mod tests;
