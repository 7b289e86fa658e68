//! Prompts the platform's own jobs and hooks need that Appendix A does not
//! give verbatim (the follow-up run's framing, the action-alert judge, …).
//! Written once here, editable per tenant like the appendix texts (group
//! `internal`), and kept apart from the appendix registry so that one
//! stays checkable byte for byte against the spec (docs/decisions.md).

use super::registry::{PromptChannel, PromptGroup, PromptTemplate};

/// The platform prompt keys.
pub mod keys {
    /// `follow_ups.scheduled_run` — frames a follow-up's stored instruction
    /// as the internal turn the 60 s sweep runs (§13).
    pub const FOLLOW_UPS_SCHEDULED_RUN: &str = "follow_ups.scheduled_run";
    /// `action_alerts.evaluate_system` — the judge of an action alert
    /// against a finished tool batch (§4.6, purpose `action-alerts.evaluate`).
    pub const ACTION_ALERTS_EVALUATE_SYSTEM: &str = "action_alerts.evaluate_system";
    /// `conversation.memory.system` — the `conversation-memory` job's
    /// rolling summary (§6).
    pub const CONVERSATION_MEMORY_SYSTEM: &str = "conversation.memory.system";
    /// `conversation.work_saved.system` — the `conversation-work-saved`
    /// job's estimate (§6).
    pub const CONVERSATION_WORK_SAVED_SYSTEM: &str = "conversation.work_saved.system";
    /// `agent.capability_gap_assessment_system` — the §4.6 classification
    /// after a turn with a gap signal.
    pub const CAPABILITY_GAP_ASSESSMENT_SYSTEM: &str = "agent.capability_gap_assessment_system";
    /// `slack.knowledge_extraction.system` — the hourly
    /// `slack-knowledge-extraction` proposal of knowledge entries (§13).
    pub const SLACK_KNOWLEDGE_EXTRACTION_SYSTEM: &str = "slack.knowledge_extraction.system";
}

use keys::*;

/// The platform's internal prompts.
pub static PLATFORM_TEMPLATES: &[PromptTemplate] = &[
    PromptTemplate {
        key: FOLLOW_UPS_SCHEDULED_RUN,
        group: PromptGroup::Internal,
        channel: PromptChannel::All,
        description: "the message a scheduled follow-up runs as ({{instruction}}, {{createdAt}}, {{schedule}}); the reply is DMed to the member who created it",
        default_text: include_str!("../../templates/prompts/follow_ups.scheduled_run.txt"),
    },
    PromptTemplate {
        key: ACTION_ALERTS_EVALUATE_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::All,
        description: "action-alert judge: does this tool batch match the alert's instruction? (returns { matches, reasoning, message })",
        default_text: include_str!("../../templates/prompts/action_alerts.evaluate_system.txt"),
    },
    PromptTemplate {
        key: CONVERSATION_MEMORY_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::All,
        description: "conversation-memory job: the member's current memory + new messages → the new rolling memory (returns { memory })",
        default_text: include_str!("../../templates/prompts/conversation.memory.system.txt"),
    },
    PromptTemplate {
        key: CONVERSATION_WORK_SAVED_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::All,
        description: "conversation-work-saved job: one exchange → human minutes saved (returns { estimated_minutes 0–480, confidence 0–1, rationale })",
        default_text: include_str!("../../templates/prompts/conversation.work_saved.system.txt"),
    },
    PromptTemplate {
        key: CAPABILITY_GAP_ASSESSMENT_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::All,
        description: "capability-gap assessment after a failed, escalated or tool-failing turn (returns { requires_new_tool, requested_capability_summary, reasoning, confidence, suggested_tool_name, implementation_notes })",
        default_text: include_str!(
            "../../templates/prompts/agent.capability_gap_assessment_system.txt"
        ),
    },
    PromptTemplate {
        key: SLACK_KNOWLEDGE_EXTRACTION_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::All,
        description: "slack-knowledge-extraction job: public Slack messages → durable knowledge entries (returns { entries: [{ title, content, source_refs, confidence }] })",
        default_text: include_str!("../../templates/prompts/slack.knowledge_extraction.system.txt"),
    },
];
