//! The Appendix A registry: every `root_prompts` key with its built-in
//! default text and the dashboard metadata the appendix gives it, plus the
//! internal prompts of platform jobs the appendix does not spell out
//! (`conversation.*`).
//!
//! The texts are data, not code: each lives verbatim in
//! `templates/prompts/<key>.txt` (no trailing newline, so `include_str!`
//! yields exactly the appendix text) and is compiled in. Editing one of those
//! files changes the product's behaviour and must follow the spec.

use super::PromptError;

/// The prompt keys of Appendix A, spelled as the spec spells them, then the
/// platform's own.
pub mod keys {
    /// `shared.system.base`
    pub const SHARED_SYSTEM_BASE: &str = "shared.system.base";
    /// `slack.identity_addendum`
    pub const SLACK_IDENTITY_ADDENDUM: &str = "slack.identity_addendum";
    /// `slack.bot_mention_line`
    pub const SLACK_BOT_MENTION_LINE: &str = "slack.bot_mention_line";
    /// `slack.tool_usage_addendum`
    pub const SLACK_TOOL_USAGE_ADDENDUM: &str = "slack.tool_usage_addendum";
    /// `slack.formatting_section`
    pub const SLACK_FORMATTING_SECTION: &str = "slack.formatting_section";
    /// `slack.response_guideline_addendum`
    pub const SLACK_RESPONSE_GUIDELINE_ADDENDUM: &str = "slack.response_guideline_addendum";
    /// `slack.channel_context_block`
    pub const SLACK_CHANNEL_CONTEXT_BLOCK: &str = "slack.channel_context_block";
    /// `slack.dm_context_block`
    pub const SLACK_DM_CONTEXT_BLOCK: &str = "slack.dm_context_block";
    /// `slack.policies_addendum`
    pub const SLACK_POLICIES_ADDENDUM: &str = "slack.policies_addendum";
    /// `slack.footer`
    pub const SLACK_FOOTER: &str = "slack.footer";
    /// `slack.unresolved_guidance`
    pub const SLACK_UNRESOLVED_GUIDANCE: &str = "slack.unresolved_guidance";
    /// `shared.public_tier_guidance`
    pub const SHARED_PUBLIC_TIER_GUIDANCE: &str = "shared.public_tier_guidance";
    /// `shared.limited_tier_guidance`
    pub const SHARED_LIMITED_TIER_GUIDANCE: &str = "shared.limited_tier_guidance";
    /// `slack.root_link_guidance_available`
    pub const SLACK_ROOT_LINK_GUIDANCE_AVAILABLE: &str = "slack.root_link_guidance_available";
    /// `slack.root_link_guidance_issuance_failed`
    pub const SLACK_ROOT_LINK_GUIDANCE_ISSUANCE_FAILED: &str =
        "slack.root_link_guidance_issuance_failed";
    /// `slack.root_link_guidance_public_channel`
    pub const SLACK_ROOT_LINK_GUIDANCE_PUBLIC_CHANNEL: &str =
        "slack.root_link_guidance_public_channel";
    /// `email.root_portal_guidance_available`
    pub const EMAIL_ROOT_PORTAL_GUIDANCE_AVAILABLE: &str = "email.root_portal_guidance_available";
    /// `email.root_portal_guidance_issuance_failed`
    pub const EMAIL_ROOT_PORTAL_GUIDANCE_ISSUANCE_FAILED: &str =
        "email.root_portal_guidance_issuance_failed";
    /// `email.root_portal_guidance_unresolved_member`
    pub const EMAIL_ROOT_PORTAL_GUIDANCE_UNRESOLVED_MEMBER: &str =
        "email.root_portal_guidance_unresolved_member";
    /// `email.identity_addendum`
    pub const EMAIL_IDENTITY_ADDENDUM: &str = "email.identity_addendum";
    /// `email.context_block`
    pub const EMAIL_CONTEXT_BLOCK: &str = "email.context_block";
    /// `email.non_member_mentor_addendum`
    pub const EMAIL_NON_MEMBER_MENTOR_ADDENDUM: &str = "email.non_member_mentor_addendum";
    /// `email.tool_usage_addendum`
    pub const EMAIL_TOOL_USAGE_ADDENDUM: &str = "email.tool_usage_addendum";
    /// `email.formatting_section`
    pub const EMAIL_FORMATTING_SECTION: &str = "email.formatting_section";
    /// `email.response_guideline_addendum`
    pub const EMAIL_RESPONSE_GUIDELINE_ADDENDUM: &str = "email.response_guideline_addendum";
    /// `slack.thread_intent.system`
    pub const SLACK_THREAD_INTENT_SYSTEM: &str = "slack.thread_intent.system";
    /// `slack.confidence_eval.system`
    pub const SLACK_CONFIDENCE_EVAL_SYSTEM: &str = "slack.confidence_eval.system";
    /// `slack.low_confidence_repair.suffix`
    pub const SLACK_LOW_CONFIDENCE_REPAIR_SUFFIX: &str = "slack.low_confidence_repair.suffix";
    /// `email.mentor_intent_classifier_system`
    pub const EMAIL_MENTOR_INTENT_CLASSIFIER_SYSTEM: &str = "email.mentor_intent_classifier_system";
    /// `email.authorization_gate_system`
    pub const EMAIL_AUTHORIZATION_GATE_SYSTEM: &str = "email.authorization_gate_system";
    /// `conversation.memory.system` (not in Appendix A: `docs/decisions.md`)
    pub const CONVERSATION_MEMORY_SYSTEM: &str = "conversation.memory.system";
    /// `conversation.work_saved.system` (not in Appendix A: `docs/decisions.md`)
    pub const CONVERSATION_WORK_SAVED_SYSTEM: &str = "conversation.work_saved.system";
}

use keys::*;

/// Dashboard grouping of a prompt key (Appendix A: core, chat, email,
/// audience, links, internal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PromptGroup {
    /// The master template (A.1).
    Core,
    /// Slack & web chat templates (A.2).
    Chat,
    /// Email templates (A.5).
    Email,
    /// Audience-boundary templates (A.3).
    Audience,
    /// Secure-link templates (A.4).
    Links,
    /// Internal pipeline prompts: classifiers, evaluators, gates (A.6).
    Internal,
}

impl PromptGroup {
    /// The group's name as the dashboard shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            PromptGroup::Core => "core",
            PromptGroup::Chat => "chat",
            PromptGroup::Email => "email",
            PromptGroup::Audience => "audience",
            PromptGroup::Links => "links",
            PromptGroup::Internal => "internal",
        }
    }
}

/// Which conversations a template is used in, as the appendix states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PromptChannel {
    /// Every channel.
    All,
    /// Slack and web chat.
    Chat,
    /// Slack only.
    Slack,
    /// Email only.
    Email,
}

/// One Appendix A template.
#[derive(Clone, Copy, Debug)]
pub struct PromptTemplate {
    /// The `root_prompts.key`.
    pub key: &'static str,
    /// Dashboard group.
    pub group: PromptGroup,
    /// Channels the template serves.
    pub channel: PromptChannel,
    /// The appendix's note on when the template is used (may be empty).
    pub description: &'static str,
    /// The verbatim built-in default.
    pub default_text: &'static str,
}

/// Every Appendix A template, in appendix order, then the platform's own
/// internal prompts.
pub static TEMPLATES: &[PromptTemplate] = &[
    PromptTemplate {
        key: SHARED_SYSTEM_BASE,
        group: PromptGroup::Core,
        channel: PromptChannel::All,
        description: "master system prompt",
        default_text: include_str!("../../templates/prompts/shared.system.base.txt"),
    },
    PromptTemplate {
        key: SLACK_IDENTITY_ADDENDUM,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "chat tone & voice (replaced by a custom character when one is set; tenant addition still appended)",
        default_text: include_str!("../../templates/prompts/slack.identity_addendum.txt"),
    },
    PromptTemplate {
        key: SLACK_BOT_MENTION_LINE,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "included only when the bot user id is known",
        default_text: include_str!("../../templates/prompts/slack.bot_mention_line.txt"),
    },
    PromptTemplate {
        key: SLACK_TOOL_USAGE_ADDENDUM,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "",
        default_text: include_str!("../../templates/prompts/slack.tool_usage_addendum.txt"),
    },
    PromptTemplate {
        key: SLACK_FORMATTING_SECTION,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "",
        default_text: include_str!("../../templates/prompts/slack.formatting_section.txt"),
    },
    PromptTemplate {
        key: SLACK_RESPONSE_GUIDELINE_ADDENDUM,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "",
        default_text: include_str!("../../templates/prompts/slack.response_guideline_addendum.txt"),
    },
    PromptTemplate {
        key: SLACK_CHANNEL_CONTEXT_BLOCK,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "channel/thread conversations",
        default_text: include_str!("../../templates/prompts/slack.channel_context_block.txt"),
    },
    PromptTemplate {
        key: SLACK_DM_CONTEXT_BLOCK,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "included only in private DMs",
        default_text: include_str!("../../templates/prompts/slack.dm_context_block.txt"),
    },
    PromptTemplate {
        key: SLACK_POLICIES_ADDENDUM,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "empty by default (community policies belong to the tenant, via workspace additions or integration prompt_sections)",
        default_text: include_str!("../../templates/prompts/slack.policies_addendum.txt"),
    },
    PromptTemplate {
        key: SLACK_FOOTER,
        group: PromptGroup::Chat,
        channel: PromptChannel::Chat,
        description: "",
        default_text: include_str!("../../templates/prompts/slack.footer.txt"),
    },
    PromptTemplate {
        key: SLACK_UNRESOLVED_GUIDANCE,
        group: PromptGroup::Audience,
        channel: PromptChannel::Slack,
        description: "unrecognized Slack account",
        default_text: include_str!("../../templates/prompts/slack.unresolved_guidance.txt"),
    },
    PromptTemplate {
        key: SHARED_PUBLIC_TIER_GUIDANCE,
        group: PromptGroup::Audience,
        channel: PromptChannel::All,
        description: "public tier, any channel",
        default_text: include_str!("../../templates/prompts/shared.public_tier_guidance.txt"),
    },
    PromptTemplate {
        key: SHARED_LIMITED_TIER_GUIDANCE,
        group: PromptGroup::Audience,
        channel: PromptChannel::All,
        description: "any integration-defined non-default tier",
        default_text: include_str!("../../templates/prompts/shared.limited_tier_guidance.txt"),
    },
    PromptTemplate {
        key: SLACK_ROOT_LINK_GUIDANCE_AVAILABLE,
        group: PromptGroup::Links,
        channel: PromptChannel::Slack,
        description: "",
        default_text: include_str!(
            "../../templates/prompts/slack.root_link_guidance_available.txt"
        ),
    },
    PromptTemplate {
        key: SLACK_ROOT_LINK_GUIDANCE_ISSUANCE_FAILED,
        group: PromptGroup::Links,
        channel: PromptChannel::Slack,
        description: "",
        default_text: include_str!(
            "../../templates/prompts/slack.root_link_guidance_issuance_failed.txt"
        ),
    },
    PromptTemplate {
        key: SLACK_ROOT_LINK_GUIDANCE_PUBLIC_CHANNEL,
        group: PromptGroup::Links,
        channel: PromptChannel::Slack,
        description: "",
        default_text: include_str!(
            "../../templates/prompts/slack.root_link_guidance_public_channel.txt"
        ),
    },
    PromptTemplate {
        key: EMAIL_ROOT_PORTAL_GUIDANCE_AVAILABLE,
        group: PromptGroup::Links,
        channel: PromptChannel::Email,
        description: "",
        default_text: include_str!(
            "../../templates/prompts/email.root_portal_guidance_available.txt"
        ),
    },
    PromptTemplate {
        key: EMAIL_ROOT_PORTAL_GUIDANCE_ISSUANCE_FAILED,
        group: PromptGroup::Links,
        channel: PromptChannel::Email,
        description: "",
        default_text: include_str!(
            "../../templates/prompts/email.root_portal_guidance_issuance_failed.txt"
        ),
    },
    PromptTemplate {
        key: EMAIL_ROOT_PORTAL_GUIDANCE_UNRESOLVED_MEMBER,
        group: PromptGroup::Links,
        channel: PromptChannel::Email,
        description: "",
        default_text: include_str!(
            "../../templates/prompts/email.root_portal_guidance_unresolved_member.txt"
        ),
    },
    PromptTemplate {
        key: EMAIL_IDENTITY_ADDENDUM,
        group: PromptGroup::Email,
        channel: PromptChannel::Email,
        description: "replaced by a custom character when set; addition still appended",
        default_text: include_str!("../../templates/prompts/email.identity_addendum.txt"),
    },
    PromptTemplate {
        key: EMAIL_CONTEXT_BLOCK,
        group: PromptGroup::Email,
        channel: PromptChannel::Email,
        description: "the sender/delegation CONTEXT block",
        default_text: include_str!("../../templates/prompts/email.context_block.txt"),
    },
    PromptTemplate {
        key: EMAIL_NON_MEMBER_MENTOR_ADDENDUM,
        group: PromptGroup::Email,
        channel: PromptChannel::Email,
        description: "injected only when the resolved account is NOT a member",
        default_text: include_str!("../../templates/prompts/email.non_member_mentor_addendum.txt"),
    },
    PromptTemplate {
        key: EMAIL_TOOL_USAGE_ADDENDUM,
        group: PromptGroup::Email,
        channel: PromptChannel::Email,
        description: "",
        default_text: include_str!("../../templates/prompts/email.tool_usage_addendum.txt"),
    },
    PromptTemplate {
        key: EMAIL_FORMATTING_SECTION,
        group: PromptGroup::Email,
        channel: PromptChannel::Email,
        description: "",
        default_text: include_str!("../../templates/prompts/email.formatting_section.txt"),
    },
    PromptTemplate {
        key: EMAIL_RESPONSE_GUIDELINE_ADDENDUM,
        group: PromptGroup::Email,
        channel: PromptChannel::Email,
        description: "",
        default_text: include_str!("../../templates/prompts/email.response_guideline_addendum.txt"),
    },
    PromptTemplate {
        key: SLACK_THREAD_INTENT_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::Slack,
        description: "pre-loop DM intent gate (returns intent + optional verbatim nicety reply so niceties never run tools)",
        default_text: include_str!("../../templates/prompts/slack.thread_intent.system.txt"),
    },
    PromptTemplate {
        key: SLACK_CONFIDENCE_EVAL_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::Slack,
        description: "reply confidence evaluator (scores the drafted reply, returns a 0–1 score, is_safe_for_proactive_reply, and unsupported_claims)",
        default_text: include_str!("../../templates/prompts/slack.confidence_eval.system.txt"),
    },
    PromptTemplate {
        key: SLACK_LOW_CONFIDENCE_REPAIR_SUFFIX,
        group: PromptGroup::Internal,
        channel: PromptChannel::Slack,
        description: "appended when rewriting a low-confidence reply",
        default_text: include_str!(
            "../../templates/prompts/slack.low_confidence_repair.suffix.txt"
        ),
    },
    PromptTemplate {
        key: EMAIL_MENTOR_INTENT_CLASSIFIER_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::Email,
        description: "run once per email when the sender IS the resolved account owner; verdict decides whether the authorization gate runs during the turn",
        default_text: include_str!(
            "../../templates/prompts/email.mentor_intent_classifier_system.txt"
        ),
    },
    PromptTemplate {
        key: EMAIL_AUTHORIZATION_GATE_SYSTEM,
        group: PromptGroup::Internal,
        channel: PromptChannel::Email,
        description: "the per-tool email authorization gate (returns { verdict: proceed | refuse | clarify, reasoning, refusal_message? })",
        default_text: include_str!("../../templates/prompts/email.authorization_gate_system.txt"),
    },
    // Platform prompts Appendix A does not give verbatim (written for Root,
    // editable like the rest; `docs/decisions.md`).
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
];

/// The template registered under `key`; an unknown key is an error (§4.5:
/// "unknown prompt keys throw"), never an empty prompt.
pub fn template(key: &str) -> Result<&'static PromptTemplate, PromptError> {
    TEMPLATES
        .iter()
        .find(|t| t.key == key)
        .ok_or_else(|| PromptError::UnknownKey(key.to_string()))
}
