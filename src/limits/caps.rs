//! Size caps (security finding M1): how much text one request may make the
//! platform read, embed, search or send to a model. A member's message over
//! the cap is refused (400 on the API, a refusal text on channels); history
//! and search queries are cut instead, because the member can do nothing
//! about an old long message and a long query still has a useful head.

use crate::ai::chat::{ChatMessage, ContentPart, UserContent};

/// Longest member message a turn accepts, in characters.
pub const MAX_MESSAGE_CHARS: usize = 16_000;
/// Longest single history entry (client-sent: 400 above it; logged: cut).
pub const MAX_HISTORY_ENTRY_CHARS: usize = 16_000;
/// Most history text a turn carries, in characters (client-sent: 400 above
/// it; logged: the oldest entries are dropped).
pub const MAX_HISTORY_TOTAL_CHARS: usize = 64_000;
/// Search queries are cut to this many characters before the lanes, the
/// query embedding and the rerank prompt see them.
pub const MAX_SEARCH_QUERY_CHARS: usize = 1_000;
/// Longest display name a caller may give (web chat `user_name`: 400 above
/// it; an email's `From` name: cut), since it goes into the system prompt.
pub const MAX_DISPLAY_NAME_CHARS: usize = 200;

/// `text` cut to at most `max` characters (never inside a character).
pub fn cut_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Characters of a history message's text.
pub fn message_chars(m: &ChatMessage) -> usize {
    match m {
        ChatMessage::System { content } | ChatMessage::Tool { content, .. } => {
            content.chars().count()
        }
        ChatMessage::User { content } => match content {
            UserContent::Text(t) => t.chars().count(),
            UserContent::Parts(parts) => parts
                .iter()
                .map(|p| match p {
                    ContentPart::Text { text } => text.chars().count(),
                    _ => 0,
                })
                .sum(),
        },
        ChatMessage::Assistant { content, .. } => {
            content.as_deref().map_or(0, |c| c.chars().count())
        }
    }
}

fn cut_message(m: &mut ChatMessage, max: usize) {
    let cut = |s: &mut String| {
        let keep = cut_chars(s, max).len();
        s.truncate(keep);
    };
    match m {
        ChatMessage::System { content } | ChatMessage::Tool { content, .. } => cut(content),
        ChatMessage::User { content } => match content {
            UserContent::Text(t) => cut(t),
            UserContent::Parts(parts) => {
                for p in parts {
                    if let ContentPart::Text { text } = p {
                        cut(text);
                    }
                }
            }
        },
        ChatMessage::Assistant { content, .. } => {
            if let Some(c) = content {
                cut(c)
            }
        }
    }
}

/// History bounded for a turn: every entry cut to
/// [`MAX_HISTORY_ENTRY_CHARS`], then the newest entries that fit
/// [`MAX_HISTORY_TOTAL_CHARS`] together, in their original order.
pub fn bound_history(mut history: Vec<ChatMessage>) -> Vec<ChatMessage> {
    for m in &mut history {
        if message_chars(m) > MAX_HISTORY_ENTRY_CHARS {
            cut_message(m, MAX_HISTORY_ENTRY_CHARS);
        }
    }
    let mut total = 0usize;
    let mut keep_from = history.len();
    for (i, m) in history.iter().enumerate().rev() {
        total += message_chars(m);
        if total > MAX_HISTORY_TOTAL_CHARS {
            break;
        }
        keep_from = i;
    }
    history.split_off(keep_from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_chars_counts_characters_and_respects_boundaries() {
        assert_eq!(cut_chars("héllo", 2), "hé");
        assert_eq!(cut_chars("héllo", 10), "héllo");
        let long = "é".repeat(5_000);
        assert_eq!(
            cut_chars(&long, MAX_SEARCH_QUERY_CHARS).chars().count(),
            1_000
        );
    }

    #[test]
    fn history_entries_are_cut_and_the_oldest_dropped_past_the_total() {
        let h = vec![
            ChatMessage::user("a".repeat(20_000)),
            ChatMessage::assistant("b".repeat(16_000)),
            ChatMessage::user("c".repeat(16_000)),
            ChatMessage::assistant("d".repeat(16_000)),
            ChatMessage::user("e".repeat(16_000)),
        ];
        let out = bound_history(h);
        assert_eq!(out.len(), 4, "the oldest entry no longer fits 64 000");
        assert!(out.iter().all(|m| message_chars(m) == 16_000));
        assert_eq!(
            out.iter().map(message_chars).sum::<usize>(),
            MAX_HISTORY_TOTAL_CHARS
        );
        let short = vec![ChatMessage::user("x".repeat(30_000))];
        assert_eq!(message_chars(&bound_history(short)[0]), 16_000);
    }
}
