//! Proactive replies (§8.2, A.6): a top-level channel message that does not
//! mention Root gets an answer only when the tenant turned auto-replies on
//! (`settings.runtime.slack_auto_reply`) and the author did not turn them
//! off (`set_auto_reply_preference`). The drafted answer then passes the
//! confidence evaluator (`slack.confidence_eval.system`): nothing is posted
//! unless it is `is_safe_for_proactive_reply` with a score at or above the
//! author's threshold, and the concrete entities it calls unsupported are
//! cut from the text before posting. Nobody sees a "working…" line for a
//! draft that may never be posted.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::ExecutedToolCall;
use crate::ai::chat::{ChatClient, ChatOptions, JsonSchema};
use crate::prompts::render::PromptVars;
use crate::prompts::{Prompts, keys};

/// `settings.runtime.slack_auto_reply`: the tenant's switch (off by default).
pub const SETTING_AUTO_REPLY: &str = "slack_auto_reply";
/// The `llm:<purpose>` of the evaluator.
pub const CONFIDENCE_EVAL_PURPOSE: &str = "slack_confidence_eval";
/// Characters of one tool result shown to the evaluator.
pub const EVIDENCE_RESULT_CHARS: usize = 2000;

/// A member's `set_auto_reply_preference` (§5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoReplyMode {
    /// Never proactively.
    Off,
    /// The community's default bar.
    Default,
    /// Reply often (a lower bar).
    High,
    /// Reply sometimes.
    Medium,
    /// Only when very sure.
    Low,
}

impl AutoReplyMode {
    /// From `principals.preferences.auto_reply` (unset or unknown = default).
    pub fn from_preference(v: Option<&str>) -> AutoReplyMode {
        match v {
            Some("off") => AutoReplyMode::Off,
            Some("high") => AutoReplyMode::High,
            Some("medium") => AutoReplyMode::Medium,
            Some("low") => AutoReplyMode::Low,
            _ => AutoReplyMode::Default,
        }
    }

    /// The evaluator score a draft needs to be posted (`None`: never).
    pub fn threshold(self) -> Option<f64> {
        match self {
            AutoReplyMode::Off => None,
            AutoReplyMode::High => Some(0.6),
            AutoReplyMode::Default | AutoReplyMode::Medium => Some(0.75),
            AutoReplyMode::Low => Some(0.9),
        }
    }
}

/// The evaluator's verdict on a draft.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Confidence {
    /// 0–1: did the member get what they asked for?
    pub score: f64,
    /// Safe to post unsolicited in a public channel.
    pub is_safe_for_proactive_reply: bool,
    /// Ungrounded entities, verbatim substrings of the draft.
    #[serde(default)]
    pub unsupported_claims: Vec<String>,
}

fn schema() -> JsonSchema {
    JsonSchema::new(
        "reply_confidence",
        json!({
            "type": "object",
            "properties": {
                "score": {"type": "number"},
                "is_safe_for_proactive_reply": {"type": "boolean"},
                "unsupported_claims": {"type": "array", "items": {"type": "string"}},
                "reasoning": {"type": "string"},
            },
            "required": ["score", "is_safe_for_proactive_reply", "unsupported_claims", "reasoning"],
            "additionalProperties": false,
        }),
    )
}

/// The evaluation input: the message, the draft, the tool evidence.
pub fn evaluation_input(message: &str, draft: &str, calls: &[ExecutedToolCall]) -> String {
    let mut evidence = String::new();
    for c in calls {
        let mut result = c.result.model_view().to_string();
        if result.chars().count() > EVIDENCE_RESULT_CHARS {
            result = result
                .chars()
                .take(EVIDENCE_RESULT_CHARS)
                .collect::<String>()
                + "…";
        }
        evidence.push_str(&format!("- {}({}) → {}\n", c.name, c.args, result));
    }
    if evidence.is_empty() {
        evidence.push_str("(no tool was called)\n");
    }
    format!(
        "User's message:\n{message}\n\nDraft reply:\n{draft}\n\nSupporting tool results:\n\
         {evidence}\nSystem-provided context:\n(none)"
    )
}

/// Score `draft`; `None` when the evaluator fails (nothing is posted then).
pub async fn evaluate(
    llm: &ChatClient,
    prompts: &Prompts,
    message: &str,
    draft: &str,
    calls: &[ExecutedToolCall],
) -> Option<Confidence> {
    let system = prompts
        .render(keys::SLACK_CONFIDENCE_EVAL_SYSTEM, &PromptVars::new())
        .await
        .ok()?;
    let user = evaluation_input(message, draft, calls);
    match llm
        .chat_json::<Confidence>(
            CONFIDENCE_EVAL_PURPOSE,
            &system,
            &user,
            &schema(),
            &ChatOptions::default(),
        )
        .await
    {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(error = %e, "confidence evaluator failed; proactive reply withheld");
            None
        }
    }
}

/// The text to post proactively, if any: safe, at or above `threshold`,
/// with every unsupported claim cut out (and nothing left ⇒ nothing).
pub fn proactive_text(draft: &str, verdict: &Confidence, threshold: f64) -> Option<String> {
    if !verdict.is_safe_for_proactive_reply || verdict.score < threshold {
        return None;
    }
    remove_claims(draft, &verdict.unsupported_claims)
}

/// `text` with every claim (a verbatim substring) cut out and the spaces
/// the cuts leave tidied; `None` when nothing is left.
pub fn remove_claims(text: &str, claims: &[String]) -> Option<String> {
    let mut text = text.to_string();
    for claim in claims.iter().map(|c| c.trim()).filter(|c| !c.is_empty()) {
        text = text.replace(claim, "");
    }
    // Cuts leave doubled spaces and spaces before punctuation behind.
    let mut tidy = String::with_capacity(text.len());
    for c in text.chars() {
        if c == ' ' && tidy.ends_with(' ') {
            continue;
        }
        if matches!(c, '.' | ',' | ';' | ':' | '!' | '?') && tidy.ends_with(' ') {
            tidy.pop();
        }
        tidy.push(c);
    }
    let text = tidy.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The tenant's auto-reply switch from its settings.
pub fn tenant_allows(settings: &Value) -> bool {
    settings["runtime"][SETTING_AUTO_REPLY].as_bool() == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(score: f64, safe: bool, claims: &[&str]) -> Confidence {
        Confidence {
            score,
            is_safe_for_proactive_reply: safe,
            unsupported_claims: claims.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn only_safe_drafts_over_the_members_bar_are_posted() {
        let draft = "There is street parking on Elm St.";
        let bar = AutoReplyMode::Default.threshold().unwrap();
        assert_eq!(
            proactive_text(draft, &verdict(0.9, true, &[]), bar).as_deref(),
            Some(draft)
        );
        assert_eq!(proactive_text(draft, &verdict(0.9, false, &[]), bar), None);
        assert_eq!(proactive_text(draft, &verdict(0.7, true, &[]), bar), None);
        assert!(proactive_text(draft, &verdict(0.7, true, &[]), 0.6).is_some());
        assert_eq!(AutoReplyMode::Off.threshold(), None);
    }

    #[test]
    fn unsupported_claims_are_cut_verbatim() {
        let draft = "Ask Jane Roe (jane@example.org) about parking.";
        let v = verdict(0.9, true, &["Jane Roe", "(jane@example.org) "]);
        assert_eq!(
            proactive_text(draft, &v, 0.6).as_deref(),
            Some("Ask about parking.")
        );
        let all = verdict(0.9, true, &[draft]);
        assert_eq!(proactive_text(draft, &all, 0.6), None);
    }

    #[test]
    fn preferences_and_the_tenant_switch_parse() {
        assert_eq!(
            AutoReplyMode::from_preference(Some("off")),
            AutoReplyMode::Off
        );
        assert_eq!(
            AutoReplyMode::from_preference(Some("low")),
            AutoReplyMode::Low
        );
        assert_eq!(AutoReplyMode::from_preference(None), AutoReplyMode::Default);
        assert!(tenant_allows(
            &json!({"runtime": {"slack_auto_reply": true}})
        ));
        assert!(!tenant_allows(
            &json!({"runtime": {"slack_auto_reply": "yes"}})
        ));
        assert!(!tenant_allows(&json!({})));
    }
}
