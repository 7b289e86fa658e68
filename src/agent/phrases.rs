//! The kernel's own texts: phase instructions, recovery nudges, composer
//! instructions and canned replies. The spec describes them (§4.1, §4.3,
//! §4.4) without giving verbatim text, so they live here rather than among
//! the Appendix A templates.

use serde_json::Value;

use super::tool::ExecutedToolCall;
use crate::ai::chat::{ChatMessage, UserContent};

/// Planning-phase instruction for round `round` of `of` (§4.1).
pub fn planning_instruction(round: u32, of: u32) -> String {
    format!(
        "PLANNING PHASE (round {round} of {of}): emit your parallel tool batch now — every \
independent lookup in ONE turn, no synonym fan-out, never guessed IDs. Plan format for the text \
you send with the tool calls: one status sentence of at most 80 characters, then exactly 5 \
bullets of at most 40 characters each (pad with light banter when there are fewer real lookups). \
If no tool is needed, answer the member directly instead."
    )
}

/// Answer-phase instruction (§4.1).
pub const ANSWER_INSTRUCTION: &str = "ANSWER PHASE: tools are no longer available. Write the \
final reply to the member now, synthesizing only from the tool results above and the \
conversation. Make no new claims: nothing that the tool results do not support, no invented \
codes, IDs, counts or actions. If the results do not answer the question, say so plainly and \
suggest the next step.";

/// A — tools ran but the model returned a non-answer; tools stay enabled.
pub const TOOL_STALL_NUDGE: &str = "Your last reply was empty or not an answer. You have \
already run tools this turn: use their results to answer the member now, or call one more \
tool if something essential is missing. Do not reply with only sources, emoji or a few words.";

/// D — nothing (or only emoji) without calling any tool.
pub const MISSING_TOOL_CALL_NUDGE: &str = "Your last reply was empty and you called no tools. \
Either call the tools you need to answer the member's message, or answer it directly in words.";

/// F — any remaining non-answer.
pub const GENERIC_EMPTY_NUDGE: &str = "Your last reply was not a usable answer (empty, only \
sources, only emoji or too short). Write a complete reply to the member's message now.";

/// G — a plan without the tool batch.
pub const UNEXECUTED_PLAN_NUDGE: &str = "You described a plan but did not call any tools, so \
nothing was looked up. Do not describe the plan again: emit the tool calls now, all \
independent lookups in one batch.";

/// The system note after a batch with failures (§4.3).
pub fn failure_note(failed: &[String]) -> String {
    format!(
        "NOTE: these tool calls FAILED and their actions were NOT completed: {}. Never claim \
they succeeded or that those actions happened. Never mention HTTP status codes, error codes or \
other technical details to the member; say plainly what could not be done.",
        failed.join(", ")
    )
}

/// B — the exhausted-tools composer's instruction (strict grounding, §4.4).
pub const EXHAUSTED_TOOLS_SYSTEM: &str = "You are writing the final reply of a community \
assistant after its lookups repeatedly came back empty. STRICT GROUNDING: only the tool calls \
listed as successful below happened; an empty result means nothing was found. Do not fabricate \
counts, names, links, actions or promises, and do not say anything was done that is not a \
successful call below. Tell the member briefly what was checked and that nothing matched, then \
suggest one concrete next step (rephrasing, a different detail, or asking an admin). Keep it \
short and friendly.";

/// C — the best-effort composer's instruction (§4.4).
pub const BEST_EFFORT_SYSTEM: &str = "You are writing the final reply of a community assistant \
whose previous attempt produced no usable answer. From the latest messages of the conversation \
below (tool results included), write the most helpful reply you honestly can. Use only facts \
present in those messages; never invent codes, IDs, counts or actions, and never claim an \
action happened unless a tool result shows it succeeded. If the information is not there, say \
so and suggest a next step.";

/// E — fail-closed reply (`success: false`).
pub const FAIL_CLOSED_REPLY: &str = "Sorry — I wasn't able to work on that just now. Please try \
again in a moment.";

/// Every LLM attempt failed (retryable; admins were notified).
pub const LLM_UNAVAILABLE_REPLY: &str = "Sorry — I'm having trouble reaching my language model \
right now, so I couldn't answer. Please try again in a few minutes.";

/// No LLM provider configured.
pub const NOT_CONFIGURED_REPLY: &str = "I can't answer yet: this assistant has no language \
model configured. An administrator needs to set OPENROUTER_API_KEY.";

/// One line per call for the B composer: name, arguments, outcome, and the
/// start of a successful non-empty result.
pub fn tool_digest(calls: &[ExecutedToolCall]) -> String {
    calls
        .iter()
        .map(|c| {
            let outcome = if !c.result.success {
                "FAILED (did not happen)".to_string()
            } else if c.empty {
                "successful, no results".to_string()
            } else {
                let data = c
                    .result
                    .data
                    .as_ref()
                    .map(Value::to_string)
                    .unwrap_or_default();
                format!("successful: {}", head(&data, 1500))
            };
            format!(
                "- {}({}) → {outcome}",
                c.name,
                head(&c.args.to_string(), 300)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A transcript message as plain text for the C composer.
pub fn render_message(m: &ChatMessage) -> String {
    match m {
        ChatMessage::System { content } => format!("[system] {}", head(content, 2000)),
        ChatMessage::User { content } => {
            let text = match content {
                UserContent::Text(t) => t.clone(),
                UserContent::Parts(_) => serde_json::to_string(content).unwrap_or_default(),
            };
            format!("[member] {}", head(&text, 4000))
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let calls: Vec<&str> = tool_calls.iter().map(|c| c.name.as_str()).collect();
            let mut s = format!("[assistant] {}", content.as_deref().unwrap_or(""));
            if !calls.is_empty() {
                s.push_str(&format!(" (called: {})", calls.join(", ")));
            }
            s
        }
        ChatMessage::Tool { content, .. } => format!("[tool result] {}", head(content, 6000)),
    }
}

/// H's last resort: a reply built from what the tools did, claiming nothing
/// beyond it.
pub fn tool_derived_fallback(calls: &[ExecutedToolCall]) -> String {
    if calls.is_empty() {
        return "Sorry — I couldn't put together an answer to that. Could you rephrase or add \
a detail?"
            .into();
    }
    let mut found = Vec::new();
    let mut empty = Vec::new();
    let mut failed = Vec::new();
    for c in calls {
        let name = c.name.replace('_', " ");
        let bucket = if !c.result.success {
            &mut failed
        } else if c.empty {
            &mut empty
        } else {
            &mut found
        };
        if !bucket.contains(&name) {
            bucket.push(name);
        }
    }
    let mut out = String::from("Sorry — I couldn't write up a full answer this time.");
    if !found.is_empty() {
        out.push_str(&format!(" I did get results from: {}.", found.join(", ")));
    }
    if !empty.is_empty() {
        out.push_str(&format!(" Nothing matched in: {}.", empty.join(", ")));
    }
    if !failed.is_empty() {
        out.push_str(&format!(" These didn't work: {}.", failed.join(", ")));
    }
    out.push_str(" Please try asking again, perhaps with a bit more detail.");
    out
}

fn head(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tool::ToolResult;
    use serde_json::json;

    fn call(name: &str, success: bool, empty: bool) -> ExecutedToolCall {
        ExecutedToolCall {
            id: "1".into(),
            name: name.into(),
            args: json!({"q": "x"}),
            result: ToolResult {
                success,
                data: Some(json!({"results": []})),
                ..ToolResult::default()
            },
            round: 1,
            empty,
            truncated: false,
            duration_ms: 0,
        }
    }

    #[test]
    fn fallback_names_only_what_happened() {
        let text = tool_derived_fallback(&[
            call("search_knowledge_base", true, true),
            call("search_knowledge_base", true, true),
            call("lookup_member", false, false),
        ]);
        assert!(text.contains("Nothing matched in: search knowledge base."));
        assert!(text.contains("These didn't work: lookup member."));
        assert!(!text.contains("I did get results"));
    }

    #[test]
    fn failure_note_lists_names_and_forbids_claims() {
        let note = failure_note(&["book_room".into(), "send_invite".into()]);
        assert!(note.contains("book_room, send_invite"));
        assert!(note.contains("NOT completed"));
        assert!(note.contains("HTTP"));
    }
}
