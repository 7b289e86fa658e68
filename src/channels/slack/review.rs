//! The review of a reply Root was asked for (a DM or an @-mention, §8.2,
//! A.6): such a reply is always posted, but first the confidence evaluator
//! (`slack.confidence_eval.system`) scores it; a LOW draft is rewritten
//! with `slack.low_confidence_repair.suffix` so it claims nothing the tool
//! results do not show, and the concrete entities the evaluator calls
//! unsupported are cut. Every step fails open: an evaluator or repair error
//! posts the draft as it was — the member asked and gets an answer.

use crate::agent::ExecutedToolCall;
use crate::ai::chat::{ChatClient, ChatOptions};
use crate::prompts::render::PromptVars;
use crate::prompts::{Prompts, keys};

use super::proactive::{Confidence, evaluate, evaluation_input, remove_claims};

/// Drafts scoring below this are repaired: the evaluator's LOW band is
/// 0.0–0.3 and MEDIUM starts at 0.4 (A.6 scoring).
pub const LOW_CONFIDENCE_BELOW: f64 = 0.4;

/// The `llm:<purpose>` of the repair.
pub const REPAIR_PURPOSE: &str = "slack_low_confidence_repair";

/// What the review did (for the log line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// The evaluator failed: the draft is posted as is.
    Unscored,
    /// Scored MEDIUM or HIGH; unsupported claims (if any) cut.
    Kept,
    /// Scored LOW and rewritten.
    Repaired,
    /// Scored LOW; the repair failed, so the draft (claims cut) is posted.
    RepairFailed,
}

/// The reply to post for `draft`, and what the review did.
pub async fn review_reply(
    llm: &ChatClient,
    prompts: &Prompts,
    message: &str,
    draft: &str,
    calls: &[ExecutedToolCall],
) -> (String, Review) {
    let Some(verdict) = evaluate(llm, prompts, message, draft, calls).await else {
        return (draft.to_string(), Review::Unscored);
    };
    if verdict.score >= LOW_CONFIDENCE_BELOW {
        return (cut_claims(draft, &verdict), Review::Kept);
    }
    match repair(llm, prompts, message, draft, calls).await {
        Some(fixed) => (cut_claims(&fixed, &verdict), Review::Repaired),
        None => (cut_claims(draft, &verdict), Review::RepairFailed),
    }
}

/// `text` without the evaluator's unsupported claims — unless cutting
/// would leave nothing, in which case the text stays (a member who asked
/// never gets an empty message).
fn cut_claims(text: &str, verdict: &Confidence) -> String {
    remove_claims(text, &verdict.unsupported_claims).unwrap_or_else(|| text.to_string())
}

/// Rewrite a LOW draft: the repair instructions as the system prompt, the
/// member's message, the draft and the tool evidence as the input. `None`
/// when the call fails or answers nothing.
async fn repair(
    llm: &ChatClient,
    prompts: &Prompts,
    message: &str,
    draft: &str,
    calls: &[ExecutedToolCall],
) -> Option<String> {
    let system = prompts
        .render(keys::SLACK_LOW_CONFIDENCE_REPAIR_SUFFIX, &PromptVars::new())
        .await
        .ok()?;
    let input = evaluation_input(message, draft, calls);
    match llm
        .chat_text(REPAIR_PURPOSE, &system, &input, &ChatOptions::default())
        .await
    {
        Ok(text) if !text.trim().is_empty() => Some(text.trim().to_string()),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "low-confidence repair failed; draft posted");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_every_word_keeps_the_text() {
        let v = Confidence {
            score: 0.2,
            is_safe_for_proactive_reply: false,
            unsupported_claims: vec!["Jane Roe".into()],
        };
        assert_eq!(cut_claims("Ask Jane Roe.", &v), "Ask.");
        assert_eq!(cut_claims("Jane Roe", &v), "Jane Roe");
        assert_eq!(LOW_CONFIDENCE_BELOW, 0.4);
    }
}
