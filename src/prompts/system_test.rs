//! The assembled system prompt per channel: sections present, in §4.5 order.

use std::collections::HashMap;

use super::*;
use crate::prompts::guidance::tool::*;
use crate::prompts::keys;

/// 2026-03-17T21:05:00Z (a Tuesday; 2:05 PM PDT in Los Angeles).
fn now() -> Ts {
    Ts::from_secs(1_773_781_500)
}

fn tool(name: &str) -> (String, String) {
    (
        name.to_string(),
        format!("Does {name}.\nSecond line is not shown."),
    )
}

fn slack_input() -> SystemPromptInput {
    let mut i = SystemPromptInput::new(Channel::Slack, "Ada Lovelace", now());
    i.community_context = Some("Foundry is a founder community in Oakland.".into());
    i.prompt_sections =
        vec!["INTEGRATION NOTES:\n- Office hours are booked via book_office_hours.".into()];
    i.tools = vec![
        tool(SEARCH_KNOWLEDGE_BASE),
        tool(SEARCH_SLACK_MESSAGES),
        tool(REQUEST_HUMAN_INTERVENTION),
        tool(REMEMBER_USER_PREFERENCE),
    ];
    i.bot_user_id = Some("UBOT1".into());
    i.link_state = LinkState::Available;
    i.link_destinations = vec![LinkDestination {
        title: "Profile".into(),
        path: "/me/profile".into(),
        prompt_summary: "edit your member profile".into(),
    }];
    i
}

/// Asserts each needle occurs, each after the previous one.
fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for n in needles {
        match haystack[from..].find(n) {
            Some(i) => from += i + n.len(),
            None => panic!("{n:?} missing or out of order in:\n{haystack}"),
        }
    }
}

#[test]
fn slack_prompt_has_every_section_in_order() {
    let out = assemble_system_prompt(&PromptSet::defaults(), &slack_input()).expect("assemble");
    assert_in_order(
        &out,
        &[
            "You are an AI assistant for this community.\n\nIDENTITY:\n",
            "- Personalize responses using the user's name.\n- Your Slack user ID is <@UBOT1>.",
            "\n\nCOMMUNITY CONTEXT:\nFoundry is a founder community in Oakland.",
            "\n\nINTEGRATION NOTES:\n- Office hours are booked via book_office_hours.",
            "\n\nCAPABILITIES:\n- search_knowledge_base: Does search_knowledge_base.\n",
            "- remember_user_preference: Does remember_user_preference.\n\nTOOL USAGE GUIDANCE:\n",
            "- For short follow-up questions",
            "first use the current Slack thread context to infer",
            "- Prefer search_knowledge_base over search_slack_messages",
            "use request_human_intervention.",
            "use remember_user_preference immediately.",
            "- DO NOT GUESS IDs FOR SEARCH QUERIES",
            "- You work entirely through conversation (DMs, @mentions, threads)",
            "- MESSAGING RESTRICTION:",
            "SECURE WEB PAGES (personal, for this user):\n- Profile: /me/profile — edit your member profile\n",
            "SLACK UX:",
            "SLACK FORMATTING:",
            "RESPONSE GUIDELINES:",
            "unless the current message overrides them.",
            "2. the current Slack thread context, 3.",
            "- SPEAKER IDENTITY IN MULTI-PERSON THREADS:",
            "CHANNEL CONTEXT:",
            "Current date and time: Tuesday, March 17, 2026, 2:05 PM PDT (America/Los_Angeles)\n",
            "You are responding to: Ada Lovelace (member)",
        ],
    );
    assert!(!out.contains("Second line is not shown."));
    assert!(!out.contains("{{"), "every placeholder resolved");
    assert!(!out.contains("CONVERSATION SETTING:"), "not a DM");
    assert!(
        !out.contains("IDENTITY LIMIT"),
        "members get no audience guidance"
    );
    assert!(out.ends_with("You are responding to: Ada Lovelace (member)"));
}

#[test]
fn slack_dm_gets_the_dm_block_and_community_conversation_guidance() {
    let mut i = slack_input();
    i.is_dm = true;
    i.tools.push(tool(FIND_CHANNEL_FOR_COMMUNITY_POST));
    i.tools.push(tool(START_COMMUNITY_CONVERSATION));
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert_in_order(
        &out,
        &[
            "there are no Slack app tabs or hidden sections.",
            "- TAKING A DM TOPIC TO THE COMMUNITY:",
            "- MESSAGING RESTRICTION:",
            "- EXCEPTION — STARTING A COMMUNITY CONVERSATION:",
            "CONVERSATION SETTING:",
        ],
    );
    assert!(!out.contains("CHANNEL CONTEXT:"));
}

#[test]
fn slack_without_bot_id_tools_or_context_leaves_those_sections_out() {
    let i = SystemPromptInput::new(Channel::Slack, "Ada", now());
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert!(!out.contains("Your Slack user ID"));
    assert!(!out.contains("CAPABILITIES:"));
    assert!(!out.contains("COMMUNITY CONTEXT:"));
    assert!(!out.contains("SECURE WEB PAGES"));
    // The master's own line breaks stay where the template has them.
    assert!(out.contains("using the user's name.\n\n\n\nTOOL USAGE GUIDANCE:"));
}

#[test]
fn admins_get_no_messaging_restriction() {
    let mut i = slack_input();
    i.is_admin = true;
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert!(!out.contains("MESSAGING RESTRICTION"));
    assert!(out.ends_with("You are responding to: Ada Lovelace (member, admin)"));
}

#[test]
fn email_prompt_has_every_section_in_order() {
    let mut i = SystemPromptInput::new(Channel::Email, "Grace Hopper", now());
    i.agent_name = "Juniper".into();
    i.tier = "mentor".into();
    i.community_context = Some("Foundry community.".into());
    i.tools = vec![tool(SEARCH_KNOWLEDGE_BASE)];
    i.email = Some(EmailContext {
        sender_name: "Sam Assistant".into(),
        sender_email: "sam@example.com".into(),
        delegation_reason: Some("historical_cc".into()),
        thread_participants: vec!["Lee <lee@example.com>".into()],
        resolved_account_name: "Grace Hopper".into(),
        resolved_account_email: "grace@example.com".into(),
        resolved_account_role: "mentor".into(),
        resolved_account_profile: None,
        resolved_account_is_member: false,
    });
    i.link_state = LinkState::IssuanceFailed;
    i.link_destinations = vec![LinkDestination {
        title: "Bookings".into(),
        path: "https://app.example/bookings".into(),
        prompt_summary: String::new(),
    }];
    i.public_guide_url = Some("https://guide.example".into());
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert_in_order(
        &out,
        &[
            "You are an AI assistant for this community.",
            "- Always sign off with \"Cheers, Juniper\".",
            "COMMUNITY CONTEXT:\nFoundry community.",
            "CONTEXT:\n- Email sender: Sam Assistant (sam@example.com)\n- The sender is a delegate of the resolved account (reason: historical_cc).",
            "\n- Other thread participants: Lee <lee@example.com>\n- Resolved account identity (the person your account-bound tools will act for): Grace Hopper (grace@example.com)\n- Their role: mentor\n\n\nEMAIL CONVERSATION ETIQUETTE:",
            "OUTSIDE COLLABORATOR CONTEXT",
            "CAPABILITIES:",
            "first use the current email thread context",
            "IMPORTANT CONTEXT FOR EMAIL:\n- All times are in America/Los_Angeles (PDT).",
            "- IDENTITY: The person you are talking to is on a limited access tier (\"mentor\")",
            "WEB LINKS UNAVAILABLE:",
            "ask them to email back in a moment so a fresh link can be issued. For general information in the meantime, they can read the public guide at https://guide.example. Do NOT call get_knowledge_page_link here.",
            "RESPONSE FORMAT:\n- Your response will be sent as an email.",
            "unless the current email overrides them.",
            "2. the current email thread, 3.",
            "- If a tool fails, do NOT imply the action succeeded.",
            "Current date and time: Tuesday, March 17, 2026",
            "You are responding to: Grace Hopper (mentor)",
        ],
    );
    assert!(!out.contains("SLACK"));
    assert!(!out.contains("{{"));
}

#[test]
fn api_prompt_uses_markdown_and_no_slack_only_sections() {
    let mut i = SystemPromptInput::new(Channel::Api, "API caller", now());
    i.tools = vec![tool(SEARCH_KNOWLEDGE_BASE)];
    i.link_state = LinkState::Available;
    i.link_destinations = slack_input().link_destinations;
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert_in_order(
        &out,
        &[
            "IDENTITY:",
            "- Be conversational, friendly, and helpful.",
            "CAPABILITIES:",
            "first use the current conversation context",
            MARKDOWN_FORMATTING_SECTION,
            "RESPONSE GUIDELINES:",
            "2. the current conversation history, 3.",
            "You are responding to: API caller (member)",
        ],
    );
    for slack_only in [
        "SLACK UX",
        "CHANNEL CONTEXT:",
        "SPEAKER IDENTITY",
        "Slack app tabs",
        "SECURE WEB PAGES",
        "Your Slack user ID",
    ] {
        assert!(!out.contains(slack_only), "{slack_only}");
    }
}

#[test]
fn persona_from_tenant_settings_replaces_the_default_identity() {
    let mut tenant = storage::Tenant::new("acme", "Acme");
    tenant.settings = storage::Json(serde_json::json!({
        "persona": "You are Juniper, the concierge of Acme House.",
        "agent_character": "- Speak like a 1920s radio host."
    }));
    tenant.timezone = "Europe/Paris".into();
    let voice = TenantVoice::of(&tenant);
    assert_eq!(
        voice.custom_character.as_deref(),
        Some("- Speak like a 1920s radio host.")
    );
    let i = SystemPromptInput::new(Channel::Slack, "Ada", now()).with_tenant(&tenant);
    let set = PromptSet::defaults().with_custom_character(voice.custom_character);
    let out = assemble_system_prompt(&set, &i).expect("assemble");
    assert!(out.starts_with("You are Juniper, the concierge of Acme House.\n\nIDENTITY:"));
    assert!(out.contains("\n- Speak like a 1920s radio host.\n"));
    assert!(!out.contains("Use emojis naturally"));
    assert!(
        out.contains("Current date and time: Tuesday, March 17, 2026, 10:05 PM CET (Europe/Paris)")
    );
}

#[test]
fn non_string_persona_settings_count_as_unset() {
    let mut tenant = storage::Tenant::new("acme", "Acme");
    tenant.settings =
        storage::Json(serde_json::json!({"persona": {"x": 1}, "agent_character": "  "}));
    let v = TenantVoice::of(&tenant);
    assert_eq!((v.persona, v.custom_character), (None, None));
}

#[test]
fn unknown_timezone_falls_back_to_utc() {
    let mut i = SystemPromptInput::new(Channel::Api, "Ada", now());
    i.timezone = "Mars/Olympus".into();
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert!(
        out.contains("Current date and time: Tuesday, March 17, 2026, 9:05 PM UTC (UTC)"),
        "{out}"
    );
}

#[test]
fn audience_guidance_by_tier() {
    let render_tier = |channel: Channel, tier: &str| {
        let mut i = SystemPromptInput::new(channel, "X", now());
        i.tier = tier.into();
        assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble")
    };
    assert!(
        render_tier(Channel::Slack, "unresolved")
            .contains("- IDENTITY LIMIT: We could not match this Slack account")
    );
    assert!(
        render_tier(Channel::Email, "public_email").contains("they are on the PUBLIC access tier")
    );
    assert!(render_tier(Channel::Web, "unresolved").contains("they are on the PUBLIC access tier"));
    assert!(render_tier(Channel::Slack, "public").contains("they are on the PUBLIC access tier"));
    assert!(render_tier(Channel::Slack, "guest").contains("on a limited access tier (\"guest\")"));
    let member = render_tier(Channel::Slack, "member");
    assert!(!member.contains("IDENTITY LIMIT") && !member.contains("access tier"));
}

#[test]
fn limited_tier_guidance_skips_the_tenant_default_tier() {
    let mut i = SystemPromptInput::new(Channel::Slack, "X", now());
    i.tier = "resident".into();
    i.default_tier = "resident".into();
    let out = assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble");
    assert!(!out.contains("limited access tier"));
}

#[test]
fn link_guidance_per_channel_and_state() {
    let with = |channel: Channel, state: LinkState| {
        let mut i = slack_input();
        i.channel = channel;
        i.link_state = state;
        assemble_system_prompt(&PromptSet::defaults(), &i).expect("assemble")
    };
    assert!(with(Channel::Slack, LinkState::Available).contains("WEB LINK SHARING: When you want to send the user to one of the pages above, write the page's bare path"));
    assert!(
        with(Channel::Slack, LinkState::IssuanceFailed)
            .contains("ask them to send their request again in a moment")
    );
    assert!(
        with(Channel::Slack, LinkState::PublicChannel)
            .contains("ask them to DM you directly to receive a working secure link.")
    );
    assert!(
        with(Channel::Email, LinkState::UnresolvedMember)
            .contains("ask them to reach out from the email address tied to their account.")
    );
    assert!(
        with(Channel::Email, LinkState::Available)
            .contains("or a markdown link like [open the page](URL)")
    );
    assert!(!with(Channel::Email, LinkState::PublicChannel).contains("SECURE WEB PAGES"));
    assert!(!with(Channel::Slack, LinkState::None).contains("SECURE WEB PAGES"));
}

#[test]
fn tenant_additions_reach_the_assembled_prompt() {
    let additions: HashMap<String, String> = [
        (
            keys::SLACK_POLICIES_ADDENDUM.to_string(),
            "- COMMUNITY POLICY: no recruiting in DMs.".to_string(),
        ),
        (
            keys::SLACK_FORMATTING_SECTION.to_string(),
            "- Keep replies under 200 words.".to_string(),
        ),
        (
            keys::SHARED_SYSTEM_BASE.to_string(),
            "WORKSPACE NOTE: {{footer}}".to_string(),
        ),
    ]
    .into_iter()
    .collect();
    let out =
        assemble_system_prompt(&PromptSet::new(additions, None), &slack_input()).expect("assemble");
    assert_in_order(
        &out,
        &[
            "- NEVER mention tool names, function calls, or system internals in your responses.\n\n- Keep replies under 200 words.",
            "CHANNEL CONTEXT:",
            "- COMMUNITY POLICY: no recruiting in DMs.\n\nCurrent date and time:",
            "You are responding to: Ada Lovelace (member)\n\nWORKSPACE NOTE: You are responding to: Ada Lovelace (member)",
        ],
    );
}

#[test]
fn capabilities_lists_each_tool_once_with_its_first_line() {
    let s = capabilities_section(&[("a".into(), "Alpha.\nmore".into()), ("b".into(), "".into())]);
    assert_eq!(s, "CAPABILITIES:\n- a: Alpha.\n- b");
    assert_eq!(capabilities_section(&[]), "");
}

#[test]
fn the_member_memory_closes_the_context_block_only_when_it_has_text() {
    let mut input = slack_input();
    let without = assemble_system_prompt(&PromptSet::defaults(), &input).expect("assemble");
    assert!(!without.contains("WHAT YOU REMEMBER"));
    input.member_memory = Some("  \n ".into());
    assert_eq!(
        assemble_system_prompt(&PromptSet::defaults(), &input).expect("assemble"),
        without,
        "a blank memory adds nothing"
    );
    input.member_memory = Some("- Runs the Oakland meetup\n- Prefers short answers\n".into());
    let with = assemble_system_prompt(&PromptSet::defaults(), &input).expect("assemble");
    assert_in_order(
        &with,
        &[
            "COMMUNITY CONTEXT:\nFoundry is a founder community in Oakland.",
            "INTEGRATION NOTES:",
            &format!(
                "{MEMBER_MEMORY_HEADING}\n- Runs the Oakland meetup\n- Prefers short answers\n"
            ),
            "CAPABILITIES:",
        ],
    );
    assert_eq!(
        with.replacen(
            &format!(
                "\n\n{MEMBER_MEMORY_HEADING}\n- Runs the Oakland meetup\n- Prefers short answers"
            ),
            "",
            1
        ),
        without,
        "the memory is the only difference"
    );
}
