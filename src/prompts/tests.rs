//! Registry and `PromptSet` tests: verbatim texts, the key set, append-only
//! additions and the custom-character exception.

use std::collections::{BTreeSet, HashMap};

use super::*;

/// The keys Appendix A defines, in appendix order.
const APPENDIX_KEYS: [&str; 30] = [
    "shared.system.base",
    "slack.identity_addendum",
    "slack.bot_mention_line",
    "slack.tool_usage_addendum",
    "slack.formatting_section",
    "slack.response_guideline_addendum",
    "slack.channel_context_block",
    "slack.dm_context_block",
    "slack.policies_addendum",
    "slack.footer",
    "slack.unresolved_guidance",
    "shared.public_tier_guidance",
    "shared.limited_tier_guidance",
    "slack.root_link_guidance_available",
    "slack.root_link_guidance_issuance_failed",
    "slack.root_link_guidance_public_channel",
    "email.root_portal_guidance_available",
    "email.root_portal_guidance_issuance_failed",
    "email.root_portal_guidance_unresolved_member",
    "email.identity_addendum",
    "email.context_block",
    "email.non_member_mentor_addendum",
    "email.tool_usage_addendum",
    "email.formatting_section",
    "email.response_guideline_addendum",
    "slack.thread_intent.system",
    "slack.confidence_eval.system",
    "slack.low_confidence_repair.suffix",
    "email.mentor_intent_classifier_system",
    "email.authorization_gate_system",
];

fn default_text(key: &str) -> &'static str {
    template(key).expect("registered").default_text
}

fn first_line(key: &str) -> &'static str {
    default_text(key).lines().next().unwrap_or("")
}

fn last_line(key: &str) -> &'static str {
    default_text(key).lines().last().unwrap_or("")
}

/// The platform's internal prompts Appendix A does not give verbatim
/// (registered after the appendix's, group `internal`).
const PLATFORM_KEYS: [&str; 2] = [
    "conversation.memory.system",
    "conversation.work_saved.system",
];

fn all_keys() -> Vec<&'static str> {
    APPENDIX_KEYS
        .iter()
        .chain(&PLATFORM_KEYS)
        .copied()
        .collect()
}

#[test]
fn registry_keys_equal_the_appendix_keys_in_order() {
    let keys: Vec<&str> = TEMPLATES.iter().map(|t| t.key).collect();
    assert_eq!(keys, all_keys());
    let unique: BTreeSet<&str> = keys.iter().copied().collect();
    assert_eq!(unique.len(), keys.len(), "no key twice");
}

#[test]
fn every_template_file_is_registered() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/prompts");
    let files: BTreeSet<String> = std::fs::read_dir(dir)
        .expect("templates/prompts exists")
        .map(|e| {
            let name = e.expect("dir entry").file_name();
            name.to_string_lossy().trim_end_matches(".txt").to_string()
        })
        .collect();
    let keys: BTreeSet<String> = all_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(files, keys);
}

#[test]
fn templates_have_no_surrounding_whitespace_and_only_the_policies_addendum_is_empty() {
    for t in TEMPLATES {
        assert_eq!(t.default_text.trim(), t.default_text, "{}", t.key);
        assert!(!t.default_text.contains('\r'), "{}", t.key);
        assert_eq!(
            t.default_text.is_empty(),
            t.key == keys::SLACK_POLICIES_ADDENDUM,
            "{}",
            t.key
        );
    }
}

#[test]
fn groups_and_channels_follow_the_appendix_sections() {
    let group = |k: &str| template(k).expect("registered").group;
    assert_eq!(group("shared.system.base"), PromptGroup::Core);
    assert_eq!(group("slack.footer"), PromptGroup::Chat);
    assert_eq!(group("shared.public_tier_guidance"), PromptGroup::Audience);
    assert_eq!(
        group("email.root_portal_guidance_available"),
        PromptGroup::Links
    );
    assert_eq!(group("email.context_block"), PromptGroup::Email);
    assert_eq!(
        group("email.authorization_gate_system"),
        PromptGroup::Internal
    );
    for key in PLATFORM_KEYS {
        assert_eq!(group(key), PromptGroup::Internal, "{key}");
    }
    assert_eq!(
        template("shared.limited_tier_guidance")
            .map(|t| t.channel)
            .ok(),
        Some(PromptChannel::All)
    );
    assert_eq!(
        template("slack.unresolved_guidance")
            .map(|t| t.channel)
            .ok(),
        Some(PromptChannel::Slack)
    );
    assert_eq!(PromptGroup::Internal.as_str(), "internal");
}

#[test]
fn master_template_is_verbatim() {
    let t = default_text(keys::SHARED_SYSTEM_BASE);
    assert!(t.starts_with(
        "{{personaIdentity}}\n\nIDENTITY:\n- You are an AI assistant, NOT a member of the community. You do NOT have a bio, LinkedIn, or member profile."
    ));
    assert!(t.ends_with(
        "{{policiesAddendum}}\n\nCurrent date and time: {{currentDateTime}}\n{{footer}}"
    ));
    assert!(t.contains(
        "{{identityAddendum}}\n{{contextBlock}}\n{{capabilitiesSection}}\n\nTOOL USAGE GUIDANCE:\n"
    ));
    assert!(t.contains(
        "  • \"Who should I talk to about X?\" — issue search_knowledge_base, search_slack_messages, and any relevant directory-search tools all in the FIRST turn, not one per turn.\n"
    ));
    assert!(t.contains(
        "- Resolve conflicting context in this order: 1. current {{messageNoun}}, 2. {{immediateContextDescription}}, 3. explicit saved user preferences,"
    ));
    assert_eq!(t.lines().count(), 50);
    assert_eq!(
        render::placeholders(t),
        vec![
            "personaIdentity",
            "identityAddendum",
            "contextBlock",
            "capabilitiesSection",
            "knowledgeRoutingGuidance",
            "requestToolGuidance",
            "preferenceToolGuidance",
            "toolUsageAddendum",
            "messagingRestrictionGuidance",
            "unresolvedGuidance",
            "rootLinkGuidance",
            "formattingSection",
            "messageNoun",
            "immediateContextDescription",
            "responseGuidelineAddendum",
            "channelContextBlock",
            "policiesAddendum",
            "currentDateTime",
            "footer",
        ]
    );
}

#[test]
fn chat_email_and_link_templates_are_verbatim() {
    assert_eq!(
        default_text(keys::SLACK_IDENTITY_ADDENDUM),
        "- Always refer to yourself in first person (\"my\", \"I\", \"me\").\n- Be conversational, friendly, and helpful. Use emojis naturally (2-3 per message).\n- Personalize responses using the user's name.{{botMentionLine}}"
    );
    assert_eq!(
        default_text(keys::SLACK_FOOTER),
        "You are responding to: {{userName}}"
    );
    assert_eq!(
        default_text(keys::EMAIL_IDENTITY_ADDENDUM),
        "- Use a professional tone appropriate for email communication.\n- Always sign off with \"Cheers, {{aiAssistantName}}\"."
    );
    assert_eq!(first_line(keys::SLACK_FORMATTING_SECTION), "SLACK UX:");
    assert_eq!(
        last_line(keys::SLACK_FORMATTING_SECTION),
        "- NEVER mention tool names, function calls, or system internals in your responses."
    );
    assert!(
        default_text(keys::SLACK_FORMATTING_SECTION)
            .contains("actual Unicode emoji characters (📄, ✅)")
    );
    assert_eq!(first_line(keys::EMAIL_CONTEXT_BLOCK), "CONTEXT:");
    assert!(default_text(keys::EMAIL_CONTEXT_BLOCK).starts_with(
        "CONTEXT:\n{{senderLine}}{{delegationLines}}{{threadParticipantsLine}}\n- Resolved account identity"
    ));
    assert_eq!(
        last_line(keys::EMAIL_RESPONSE_GUIDELINE_ADDENDUM),
        "- If a tool fails, do NOT imply the action succeeded. Clearly explain the failure and what is still needed."
    );
    assert_eq!(
        default_text(keys::SLACK_ROOT_LINK_GUIDANCE_PUBLIC_CHANNEL)
            .lines()
            .take(3)
            .collect::<Vec<_>>(),
        vec![
            "SECURE WEB PAGES (personal, for this user):",
            "{{rootWebCapabilities}}",
            ""
        ]
    );
    assert_eq!(
        first_line(keys::SHARED_LIMITED_TIER_GUIDANCE),
        "- IDENTITY: The person you are talking to is on a limited access tier (\"{{tier}}\") — not a full community member."
    );
}

#[test]
fn internal_classifier_prompts_are_verbatim() {
    assert_eq!(
        first_line(keys::SLACK_THREAD_INTENT_SYSTEM),
        "You are the assistant's pre-loop intent gate for a direct-message conversation. Classify the user's new message into exactly one intent and, when it's conversational, write the reply yourself so the assistant never calls tools for niceties."
    );
    assert!(
        default_text(keys::SLACK_THREAD_INTENT_SYSTEM)
            .ends_with("Examples:\n{{examples}}{{assistantQuestionNote}}")
    );
    assert_eq!(
        first_line(keys::SLACK_CONFIDENCE_EVAL_SYSTEM),
        "You are deciding whether a user would walk away satisfied with the assistant's answer."
    );
    assert_eq!(
        last_line(keys::SLACK_CONFIDENCE_EVAL_SYSTEM),
        "- Only list entities that are genuinely UNSUPPORTED. Do NOT list entities that appear in the tool results, entities that appear in the system-provided context (secure page links/paths, the guide URL, community facts), names the user themselves provided, or generic non-entity prose. If the draft is fully grounded, return an empty array."
    );
    assert!(default_text(keys::SLACK_CONFIDENCE_EVAL_SYSTEM)
        .contains("\n  • The draft says the information isn't available, isn't in the database, or can't be found\n"));
    assert_eq!(
        last_line(keys::SLACK_LOW_CONFIDENCE_REPAIR_SUFFIX),
        "- Return only the repaired reply."
    );
    assert_eq!(
        last_line(keys::EMAIL_MENTOR_INTENT_CLASSIFIER_SYSTEM),
        "Return JSON: { intent, reasoning }. Do not mention authorization, gates, classifiers, or internal systems in the reasoning — keep it short, factual, and grounded in the body."
    );
    let gate = default_text(keys::EMAIL_AUTHORIZATION_GATE_SYSTEM);
    assert_eq!(
        first_line(keys::EMAIL_AUTHORIZATION_GATE_SYSTEM),
        "You are an authorization gate for the community's email assistant."
    );
    assert!(gate.contains(
        "\n6. Stay short (4–8 sentences). The planner may lightly tone-tweak it before sending.\n\n"
    ));
    assert!(gate.ends_with(
        "Return JSON only. Do not mention authorization, gates, policies, prompts, or any internal system in the refusal_message."
    ));
}

#[test]
fn unknown_key_is_a_typed_error() {
    let err = PromptSet::defaults()
        .render("slack.no_such_prompt", &PromptVars::new())
        .expect_err("unknown key");
    assert!(matches!(err, PromptError::UnknownKey(ref k) if k == "slack.no_such_prompt"));
    assert!(template("").is_err());
}

#[test]
fn defaults_render_with_missing_variables_collapsed() {
    let out = PromptSet::defaults()
        .render(keys::SLACK_FOOTER, &PromptVars::new())
        .expect("render");
    assert_eq!(out, "You are responding to: ");
}

fn set_with(additions: &[(&str, &str)], character: Option<&str>) -> PromptSet {
    let map: HashMap<String, String> = additions
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    PromptSet::new(map, character.map(str::to_string))
}

#[test]
fn tenant_addition_is_appended_after_the_default() {
    let set = set_with(
        &[(keys::SLACK_FOOTER, "  Be brief with {{userName}}.  ")],
        None,
    );
    let out = set
        .render(
            keys::SLACK_FOOTER,
            &PromptVars::new().with("userName", "Ada"),
        )
        .expect("render");
    assert_eq!(out, "You are responding to: Ada\n\nBe brief with Ada.");
}

#[test]
fn blank_addition_changes_nothing_and_empty_default_takes_the_addition_alone() {
    let set = set_with(
        &[
            (keys::SLACK_FOOTER, "  \n "),
            (keys::SLACK_POLICIES_ADDENDUM, "- No selling in #general."),
        ],
        None,
    );
    assert_eq!(
        set.template_text(keys::SLACK_FOOTER).expect("known"),
        default_text(keys::SLACK_FOOTER)
    );
    assert_eq!(
        set.template_text(keys::SLACK_POLICIES_ADDENDUM)
            .expect("known"),
        "- No selling in #general."
    );
}

#[test]
fn custom_character_replaces_the_tone_templates_and_the_addition_is_still_appended() {
    let set = set_with(
        &[
            (keys::SLACK_IDENTITY_ADDENDUM, "- Mention the lounge."),
            (keys::EMAIL_IDENTITY_ADDENDUM, "- Sign as the front desk."),
        ],
        Some("- You are Captain Root, a cheerful pirate."),
    );
    let slack = set
        .render(
            keys::SLACK_IDENTITY_ADDENDUM,
            &PromptVars::new().with("botMentionLine", "\n- BOT LINE"),
        )
        .expect("render");
    assert_eq!(
        slack,
        "- You are Captain Root, a cheerful pirate.\n- BOT LINE\n\n- Mention the lounge."
    );
    let email = set
        .render(
            keys::EMAIL_IDENTITY_ADDENDUM,
            &PromptVars::new().with("aiAssistantName", "Root"),
        )
        .expect("render");
    assert_eq!(
        email,
        "- You are Captain Root, a cheerful pirate.\n\n- Sign as the front desk."
    );
    assert!(!email.contains("Cheers"), "built-in tone is replaced");
}

#[test]
fn custom_character_does_not_touch_other_keys_and_blank_character_is_none() {
    let set = set_with(&[], Some("- Pirate voice."));
    assert_eq!(
        set.template_text(keys::SLACK_FORMATTING_SECTION)
            .expect("known"),
        default_text(keys::SLACK_FORMATTING_SECTION)
    );
    let blank = set_with(&[], Some("   "));
    assert_eq!(blank.custom_character(), None);
    assert_eq!(
        blank
            .template_text(keys::EMAIL_IDENTITY_ADDENDUM)
            .expect("known"),
        default_text(keys::EMAIL_IDENTITY_ADDENDUM)
    );
}

#[test]
fn values_from_additions_are_not_re_rendered() {
    let set = set_with(&[(keys::SLACK_FOOTER, "Tier note: {{tierNote}}")], None);
    let out = set
        .render(
            keys::SLACK_FOOTER,
            &PromptVars::new()
                .with("userName", "{{tierNote}}")
                .with("tierNote", "x"),
        )
        .expect("render");
    assert_eq!(out, "You are responding to: {{tierNote}}\n\nTier note: x");
}

/// The normative spec: `ROOT_SPEC_FILE`, else `shared/spec/…` next to the
/// project or one of its ancestors (`../shared`), else the team machines'
/// `/work/shared`.
fn spec_text() -> String {
    const NAME: &str = "shared/spec/000_5ff359c9eb2e30ed.txt";
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates = std::env::var_os("ROOT_SPEC_FILE")
        .map(std::path::PathBuf::from)
        .into_iter()
        .chain(manifest.ancestors().map(|a| a.join(NAME)))
        .chain(std::iter::once(std::path::Path::new("/work").join(NAME)));
    for path in candidates {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return text;
        }
    }
    panic!("the spec ({NAME}) is not next to the project nor in an ancestor; set ROOT_SPEC_FILE");
}

/// Golden test: every template is, byte for byte, the text under its key in
/// Appendix A of the spec — found between its own header and the next key's.
#[test]
fn every_template_is_verbatim_appendix_a_text() {
    let spec = spec_text();
    let appendix = spec
        .find("Appendix A — Verbatim prompt playbook")
        .expect("Appendix A in the spec");
    let a7 = spec[appendix..]
        .find("\nA.7 Code-built guidance builders")
        .map(|i| appendix + i)
        .expect("A.7 in the spec");
    // Where each key's header starts: a line beginning with the key and
    // then " — ", ":" or " (" (A.1 has its section number before the key).
    let header = |key: &str| -> usize {
        [" — ", ":", " ("]
            .iter()
            .flat_map(|sep| [format!("\n{key}{sep}"), format!("\nA.1 {key}{sep}")])
            .filter_map(|h| spec[appendix..a7].find(&h))
            .min()
            .map(|i| appendix + i + 1)
            .unwrap_or_else(|| panic!("no header for {key} in Appendix A"))
    };
    let starts: Vec<usize> = APPENDIX_KEYS.iter().map(|k| header(k)).collect();
    for (i, key) in APPENDIX_KEYS.iter().enumerate() {
        let from = starts[i];
        let until = starts.get(i + 1).copied().unwrap_or(a7);
        assert!(from < until, "{key}: headers out of appendix order");
        let section = &spec[from..until];
        let text = default_text(key);
        if text.is_empty() {
            assert!(
                section.contains("empty by default"),
                "{key} is empty but the appendix gives it text"
            );
            continue;
        }
        assert!(
            section.contains(text),
            "{key}: the template is not verbatim the appendix text under its header"
        );
        // Nothing substantive of the section is missing: after removing the
        // header line and the template, at most a short description or a
        // subsection title remains.
        let rest = section
            .replacen(text, "", 1)
            .lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>();
        assert!(
            rest.iter().all(|l| l.len() < 400),
            "{key}: appendix text left over outside the template: {rest:?}"
        );
    }
}
