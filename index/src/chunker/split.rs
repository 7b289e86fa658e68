//! Packing a section's blocks into chunks: greedy packing up to the target
//! with the overlap carried from one chunk to the next, and the cuts of a
//! block too long for one chunk (on line, then sentence, then word
//! boundaries, and as a last resort at a char count). Pure string work: no
//! HTML here.

use std::ops::Range;

use super::section::Block;
use super::{BLOCK_JOINER, char_len};

/// A slice of a block as packed into chunks, with the separator that stood
/// before it in the source (so split pieces rejoin as they were written).
pub(super) struct Piece<'a> {
    text: &'a str,
    chars: usize,
    joiner: &'static str,
}

/// Greedily packs a section's blocks into chunk bodies of about `target`
/// chars, never above `ceiling`, each starting with the tail (at most
/// `overlap_chars` chars) of the one before.
pub(super) fn pack_section(
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
pub(super) enum Granularity {
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
pub(super) fn split_block<'a>(
    block: &'a Block,
    target: usize,
    ceiling: usize,
    out: &mut Vec<Piece<'a>>,
) {
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
pub(super) fn trim_bounds(text: &str, preformatted: bool) -> (usize, usize) {
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
pub(super) fn segment(
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
pub(super) fn units(text: &str, granularity: Granularity, window: usize) -> Vec<Range<usize>> {
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
pub(super) fn overlap_tail(body: &str, max_chars: usize) -> &str {
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
