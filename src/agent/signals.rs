//! Text and result heuristics of the kernel (§4.1, §4.3, §4.4): the
//! non-answer classifier, the plan-shape detector, `toolCallSignalsEmpty`
//! and the repeated-empty burst tracker. All pure functions.

use serde::Serialize;
use serde_json::Value;

use super::constants::{
    EMPTY_SIGNAL_ARRAY_KEYS, MIN_RESPONSE_LENGTH_AFTER_TOOLS, PLAN_MAX_BULLET_CHARS,
    PLAN_MAX_TOTAL_CHARS, PLAN_MAX_TRAILING_PROSE_CHARS, PLAN_MIN_BULLETS,
    REPEATED_EMPTY_BURST_THRESHOLD,
};

/// Why a model text is not an answer (§4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NonAnswer {
    /// Nothing but whitespace.
    Empty,
    /// Only a sources footer (or only links).
    SourcesOnly,
    /// Only emoji (and punctuation).
    EmojiOnly,
    /// Fewer than [`MIN_RESPONSE_LENGTH_AFTER_TOOLS`] characters after tools ran.
    TriviallyShortAfterTools,
}

impl NonAnswer {
    /// The reason as the spec spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            NonAnswer::Empty => "empty",
            NonAnswer::SourcesOnly => "sources_only",
            NonAnswer::EmojiOnly => "emoji_only",
            NonAnswer::TriviallyShortAfterTools => "trivially_short_after_tools",
        }
    }
}

/// Classify a model text: `None` means it is an answer.
pub fn classify_non_answer(text: &str, tools_ran: bool) -> Option<NonAnswer> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Some(NonAnswer::Empty);
    }
    if is_sources_only(trimmed) {
        return Some(NonAnswer::SourcesOnly);
    }
    if is_emoji_only(trimmed) {
        return Some(NonAnswer::EmojiOnly);
    }
    if tools_ran && trimmed.chars().count() < MIN_RESPONSE_LENGTH_AFTER_TOOLS {
        return Some(NonAnswer::TriviallyShortAfterTools);
    }
    None
}

/// A line that opens a sources footer: `Sources`, `*Sources:*`,
/// `## References`, `Sources: <url>` …
fn is_sources_heading(line: &str) -> bool {
    let core = line
        .trim()
        .trim_start_matches(['#', '*', '_', '>', ' '])
        .to_lowercase();
    ["sources", "source", "references", "citations"]
        .iter()
        .any(|w| {
            core.strip_prefix(w).is_some_and(|rest| {
                let rest = rest.trim_start_matches(['*', '_', ' ']);
                rest.is_empty() || rest.starts_with(':') || rest.starts_with('：')
            })
        })
}

/// A line that is only a link (optionally bulleted): `• <https://…|title>`,
/// `- [title](https://…)`, `https://…`.
fn is_link_line(line: &str) -> bool {
    let l = strip_bullet(line.trim()).unwrap_or(line.trim());
    let l = l.trim();
    (l.starts_with("<http") && l.ends_with('>'))
        || (l.starts_with('[') && l.contains("](http") && l.ends_with(')'))
        || ((l.starts_with("http://") || l.starts_with("https://")) && !l.contains(' '))
}

fn is_sources_only(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(pos) = lines.iter().position(|l| is_sources_heading(l)) {
        return pos == 0;
    }
    !lines.is_empty() && lines.iter().all(|l| is_link_line(l))
}

fn is_emoji_char(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF      // pictographs, emoticons, symbols, flags, skin tones
        | 0x2600..=0x27BF      // misc symbols, dingbats
        | 0x2300..=0x23FF      // misc technical (⌚ ⏰ …)
        | 0x2B00..=0x2BFF      // arrows, stars (⭐ ⬆)
        | 0x2190..=0x21FF      // arrows
        | 0xFE0E | 0xFE0F      // variation selectors
        | 0x200D               // zero-width joiner
        | 0x20E3               // keycap
        | 0xE0020..=0xE007F    // tag sequences
        | 0x3030 | 0x303D | 0x3297 | 0x3299
        | 0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139)
}

/// Emoji (Unicode or Slack `:shortcode:`) with at most punctuation around.
fn is_emoji_only(text: &str) -> bool {
    let mut saw_emoji = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == ':' {
            // A Slack shortcode such as :thumbsup: or :+1:
            if let Some(end) = rest[1..].find(':') {
                let code = &rest[1..1 + end];
                if !code.is_empty()
                    && code
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_+-'".contains(c))
                {
                    saw_emoji = true;
                    rest = &rest[end + 2..];
                    continue;
                }
            }
            return false;
        }
        if is_emoji_char(c) {
            saw_emoji = true;
        } else if !(c.is_whitespace() || c.is_ascii_punctuation()) {
            return false;
        }
        rest = &rest[c.len_utf8()..];
    }
    saw_emoji
}

/// The content of a bullet line (`-`, `*`, `•`, `–`, `1.`, `2)`), or `None`.
fn strip_bullet(line: &str) -> Option<&str> {
    let l = line.trim_start();
    for b in ["- ", "* ", "• ", "‣ ", "◦ ", "▪ ", "– ", "— "] {
        if let Some(rest) = l.strip_prefix(b) {
            return Some(rest);
        }
    }
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    if (1..=2).contains(&digits) {
        let rest = &l[digits..];
        for sep in [". ", ") "] {
            if let Some(rest) = rest.strip_prefix(sep) {
                return Some(rest);
            }
        }
    }
    None
}

/// The planning-round plan-shape detector (§4.1, §4.2): at least 3 bullets,
/// every bullet ≤ 60 characters, the whole text ≤ 700 characters, and at
/// most 80 characters of prose after the last bullet.
pub fn is_plan_shaped(text: &str) -> bool {
    let text = text.trim();
    if text.chars().count() > PLAN_MAX_TOTAL_CHARS {
        return false;
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let bullet_positions: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| strip_bullet(l).map(|_| i))
        .collect();
    if bullet_positions.len() < PLAN_MIN_BULLETS {
        return false;
    }
    let bullets_short = bullet_positions.iter().all(|&i| {
        strip_bullet(lines[i]).is_some_and(|b| b.trim().chars().count() <= PLAN_MAX_BULLET_CHARS)
    });
    let last = *bullet_positions.last().expect("≥ 3 bullets");
    let trailing: usize = lines[last + 1..]
        .iter()
        .map(|l| l.trim().chars().count())
        .sum();
    bullets_short && trailing <= PLAN_MAX_TRAILING_PROSE_CHARS
}

/// `toolCallSignalsEmpty` (§4.3): `isEmpty`/`empty` true, or
/// `totalCount`/`totalFound`/`count` = 0, or every present key among the
/// list keys is an empty array. Checked on the result and on its `data`.
pub fn tool_call_signals_empty(result: &Value) -> bool {
    signals_empty(result) || result.get("data").is_some_and(signals_empty)
}

fn signals_empty(v: &Value) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    if ["isEmpty", "empty"]
        .iter()
        .any(|k| obj.get(*k) == Some(&Value::Bool(true)))
    {
        return true;
    }
    if ["totalCount", "totalFound", "count"]
        .iter()
        .any(|k| obj.get(*k).and_then(Value::as_f64) == Some(0.0))
    {
        return true;
    }
    let present: Vec<&Value> = EMPTY_SIGNAL_ARRAY_KEYS
        .iter()
        .filter_map(|k| obj.get(*k))
        .collect();
    !present.is_empty()
        && present
            .iter()
            .all(|v| v.as_array().is_some_and(Vec::is_empty))
}

/// Counts consecutive empty successes of the same tool, in execution order
/// across batches (§4.2 "repeated no-result burst").
#[derive(Clone, Debug, Default)]
pub struct EmptyBurst {
    tool: Option<String>,
    count: usize,
    reached: bool,
}

impl EmptyBurst {
    /// Record one executed call.
    pub fn record(&mut self, tool: &str, success: bool, empty: bool) {
        if success && empty {
            if self.tool.as_deref() == Some(tool) {
                self.count += 1;
            } else {
                self.tool = Some(tool.to_string());
                self.count = 1;
            }
            if self.count >= REPEATED_EMPTY_BURST_THRESHOLD {
                self.reached = true;
            }
        } else {
            self.tool = None;
            self.count = 0;
        }
    }

    /// Has a burst of [`REPEATED_EMPTY_BURST_THRESHOLD`] happened in this run?
    pub fn reached(&self) -> bool {
        self.reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_answer_reasons() {
        assert_eq!(classify_non_answer("  \n", false), Some(NonAnswer::Empty));
        assert_eq!(
            classify_non_answer("Sources:\n• <https://a.example/x|Doc>", true),
            Some(NonAnswer::SourcesOnly)
        );
        assert_eq!(
            classify_non_answer("*Sources*\n- [KB](https://a.example/kb/1)", false),
            Some(NonAnswer::SourcesOnly)
        );
        assert_eq!(
            classify_non_answer("https://a.example/kb/1", false),
            Some(NonAnswer::SourcesOnly)
        );
        assert_eq!(classify_non_answer("👍", false), Some(NonAnswer::EmojiOnly));
        assert_eq!(
            classify_non_answer(":thumbsup: :tada:!", false),
            Some(NonAnswer::EmojiOnly)
        );
        assert_eq!(
            classify_non_answer("👨‍👩‍👧 ❤️", false),
            Some(NonAnswer::EmojiOnly)
        );
        // 19 characters after tools: trivially short; without tools it is fine.
        let short = "Done, see above ok.";
        assert_eq!(short.chars().count(), 19);
        assert_eq!(
            classify_non_answer(short, true),
            Some(NonAnswer::TriviallyShortAfterTools)
        );
        assert_eq!(classify_non_answer(short, false), None);
        // Exactly 20 characters is long enough.
        assert_eq!(classify_non_answer("Done, see above, ok.", true), None);
        // An answer followed by a sources footer is an answer.
        assert_eq!(
            classify_non_answer(
                "The office opens at 9am on weekdays.\n\nSources:\n• <https://x|Hours>",
                true
            ),
            None
        );
        assert_eq!(classify_non_answer("Hi! 👋 How can I help?", false), None);
        assert_eq!(classify_non_answer("Time: 10:30 works", false), None);
    }

    #[test]
    fn plan_shape_detector_thresholds() {
        let plan = "Checking a few places for you.\n• Searching the KB\n• Scanning Slack\n• Asking who knows\n• Checking events\n• Brewing coffee";
        assert!(is_plan_shaped(plan));
        // Two bullets are not a plan.
        assert!(!is_plan_shaped("Looking.\n- one\n- two"));
        // Exactly 3 bullets is.
        assert!(is_plan_shaped("Looking.\n- one\n- two\n1. three"));
        // A bullet of 61 characters breaks the shape; 60 is fine.
        let b60 = "x".repeat(60);
        let b61 = "x".repeat(61);
        assert!(is_plan_shaped(&format!("- {b60}\n- a\n- b")));
        assert!(!is_plan_shaped(&format!("- {b61}\n- a\n- b")));
        // Trailing prose ≤ 80 ok, 81 not.
        let p80 = "y".repeat(80);
        let p81 = "y".repeat(81);
        assert!(is_plan_shaped(&format!("- a\n- b\n- c\n{p80}")));
        assert!(!is_plan_shaped(&format!("- a\n- b\n- c\n{p81}")));
        // Total over 700 characters is prose, not a plan.
        let lead = "z".repeat(690);
        assert!(!is_plan_shaped(&format!("{lead}\n- a\n- b\n- c")));
    }

    #[test]
    fn empty_signals_exactly_as_spec() {
        assert!(tool_call_signals_empty(&json!({"isEmpty": true})));
        assert!(tool_call_signals_empty(&json!({"empty": true})));
        assert!(tool_call_signals_empty(&json!({"totalCount": 0, "x": [1]})));
        assert!(tool_call_signals_empty(&json!({"totalFound": 0})));
        assert!(tool_call_signals_empty(&json!({"count": 0})));
        assert!(tool_call_signals_empty(
            &json!({"success": true, "data": {"results": [], "matches": []}})
        ));
        assert!(tool_call_signals_empty(&json!({"officeHours": []})));
        // One non-empty list key ⇒ not empty.
        assert!(!tool_call_signals_empty(
            &json!({"results": [], "items": [1]})
        ));
        // No list key present ⇒ not empty.
        assert!(!tool_call_signals_empty(&json!({"foo": []})));
        assert!(!tool_call_signals_empty(&json!({"count": 2})));
        assert!(!tool_call_signals_empty(&json!({"empty": false})));
        assert!(!tool_call_signals_empty(&json!("text")));
    }

    #[test]
    fn burst_needs_three_consecutive_same_tool_empty_successes() {
        let mut b = EmptyBurst::default();
        b.record("lookup", true, true);
        b.record("lookup", true, true);
        b.record("other", true, true);
        b.record("lookup", true, true);
        assert!(!b.reached());
        b.record("lookup", true, true);
        b.record("lookup", false, false);
        assert!(!b.reached(), "a failure breaks the streak");
        b.record("lookup", true, true);
        b.record("lookup", true, true);
        b.record("lookup", true, true);
        assert!(b.reached());
    }
}
