//! The DM intent gate (§8.2, Appendix A.6 `slack.thread_intent.system`):
//! before the agent loop runs for a direct message, one structured call
//! classifies it as `follow_up_request`, `conversational_nicety` or
//! `new_request`. A nicety ("thanks", "nope, all good") is answered with the
//! model's one-line reply verbatim and no tool runs; anything else — and any
//! failure of the gate itself — goes to the normal loop (fail open: the
//! member always gets a real answer).

use serde::Deserialize;
use serde_json::json;

use crate::ai::chat::{ChatClient, ChatMessage, ChatOptions, ContentPart, JsonSchema, UserContent};
use crate::prompts::render::PromptVars;
use crate::prompts::{Prompts, keys};

/// The `llm:<purpose>` of the gate's call.
pub const INTENT_GATE_PURPOSE: &str = "slack_thread_intent";
/// Conversation messages shown to the gate before the new one.
pub const INTENT_GATE_HISTORY: usize = 6;
/// A nicety reply longer than this is not "one short line": run the loop.
pub const MAX_NICETY_REPLY_CHARS: usize = 280;

/// The `{{examples}}` of the template: how each intent looks in a DM.
pub const INTENT_EXAMPLES: &str = "\
- Assistant: \"Anything else I can help with?\" / User: \"nope, all good\" → conversational_nicety, \
nicety_reply: \"Sounds good — have a great day!\"
- User: \"thanks so much!\" → conversational_nicety, nicety_reply: \"You're welcome! 🙌\"
- Assistant: \"Do you want the Tuesday or the Thursday session?\" / User: \"thursday\" → \
follow_up_request, nicety_reply: null
- Assistant: (answered a parking question) / User: \"and for bikes?\" → follow_up_request, \
nicety_reply: null
- Assistant: (answered a parking question) / User: \"who runs the design meetup?\" → new_request, \
nicety_reply: null";

/// What the gate decided.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    /// Continues the active task.
    FollowUpRequest,
    /// Thanks / acknowledgement / closure.
    ConversationalNicety,
    /// A different ask.
    NewRequest,
}

/// The gate's structured answer.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct IntentVerdict {
    /// The class.
    pub intent: Intent,
    /// The verbatim reply for a nicety.
    #[serde(default)]
    pub nicety_reply: Option<String>,
}

impl IntentVerdict {
    /// The reply to send instead of running the loop, if any.
    pub fn nicety(&self) -> Option<&str> {
        match (&self.intent, self.nicety_reply.as_deref().map(str::trim)) {
            (Intent::ConversationalNicety, Some(r))
                if !r.is_empty() && r.chars().count() <= MAX_NICETY_REPLY_CHARS =>
            {
                Some(r)
            }
            _ => None,
        }
    }
}

fn schema() -> JsonSchema {
    JsonSchema::new(
        "thread_intent",
        json!({
            "type": "object",
            "properties": {
                "intent": {"type": "string",
                    "enum": ["follow_up_request", "conversational_nicety", "new_request"]},
                "nicety_reply": {"type": ["string", "null"]},
            },
            "required": ["intent", "nicety_reply"],
            "additionalProperties": false,
        }),
    )
}

/// `{{assistantQuestionNote}}`: the assistant's last message when it
/// asked something (that decides whether "yes" is a follow-up).
pub fn assistant_question_note(history: &[ChatMessage]) -> String {
    let last = history.iter().rev().find_map(|m| match m {
        ChatMessage::Assistant { content, .. } => content.clone(),
        _ => None,
    });
    match last {
        Some(text) if text.trim_end().ends_with('?') => {
            let tail: String = text
                .trim()
                .chars()
                .rev()
                .take(300)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("\n\nThe assistant's last message ended with a question: \"{tail}\"")
        }
        _ => String::new(),
    }
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(t) => t.clone(),
        UserContent::Parts(parts) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Run the gate over the DM's recent history and the new `message`.
/// `None` when the gate could not decide (the loop runs).
pub async fn classify(
    llm: &ChatClient,
    prompts: &Prompts,
    user_name: &str,
    history: &[ChatMessage],
    message: &str,
) -> Option<IntentVerdict> {
    if !llm.is_configured() {
        return None;
    }
    let system = prompts
        .render(
            keys::SLACK_THREAD_INTENT_SYSTEM,
            &PromptVars::new()
                .with("userName", user_name)
                .with("examples", INTENT_EXAMPLES)
                .with("assistantQuestionNote", assistant_question_note(history)),
        )
        .await
        .ok()?;
    let from = history.len().saturating_sub(INTENT_GATE_HISTORY);
    let mut transcript = String::new();
    for m in &history[from..] {
        let (who, text) = match m {
            ChatMessage::User { content } => ("User", user_text(content)),
            ChatMessage::Assistant { content, .. } => {
                ("Assistant", content.clone().unwrap_or_default())
            }
            _ => continue,
        };
        transcript.push_str(&format!("{who}: {text}\n"));
    }
    let user = format!("Conversation so far:\n{transcript}\nNew message from the user:\n{message}");
    match llm
        .chat_json::<IntentVerdict>(
            INTENT_GATE_PURPOSE,
            &system,
            &user,
            &schema(),
            &ChatOptions::default(),
        )
        .await
    {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(error = %e, "slack intent gate failed; running the agent loop");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_short_nicety_reply_skips_the_loop() {
        let v = |intent, reply: Option<&str>| IntentVerdict {
            intent,
            nicety_reply: reply.map(str::to_string),
        };
        assert_eq!(
            v(Intent::ConversationalNicety, Some(" You're welcome! ")).nicety(),
            Some("You're welcome!")
        );
        assert_eq!(v(Intent::ConversationalNicety, None).nicety(), None);
        assert_eq!(v(Intent::ConversationalNicety, Some("  ")).nicety(), None);
        let long = "x".repeat(MAX_NICETY_REPLY_CHARS + 1);
        assert_eq!(v(Intent::ConversationalNicety, Some(&long)).nicety(), None);
        assert_eq!(v(Intent::NewRequest, Some("hi")).nicety(), None);
        assert_eq!(v(Intent::FollowUpRequest, Some("ok")).nicety(), None);
    }

    #[test]
    fn the_question_note_quotes_a_trailing_question_only() {
        let asked = vec![
            ChatMessage::user("book me in"),
            ChatMessage::assistant("Tuesday or Thursday?"),
        ];
        assert!(assistant_question_note(&asked).contains("\"Tuesday or Thursday?\""));
        let closed = vec![ChatMessage::assistant("Done. Enjoy the session.")];
        assert_eq!(assistant_question_note(&closed), "");
        assert_eq!(assistant_question_note(&[]), "");
    }

    #[test]
    fn verdicts_parse_from_the_schema_shape() {
        let v: IntentVerdict = serde_json::from_value(
            json!({"intent": "conversational_nicety", "nicety_reply": "Anytime!"}),
        )
        .unwrap();
        assert_eq!(v.nicety(), Some("Anytime!"));
        let v: IntentVerdict =
            serde_json::from_value(json!({"intent": "new_request", "nicety_reply": null})).unwrap();
        assert_eq!(v.intent, Intent::NewRequest);
    }
}
