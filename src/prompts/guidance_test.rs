//! One test per A.7 condition branch.

use super::*;

fn tools(names: &[&str]) -> ToolSet {
    names.iter().copied().collect()
}

fn lines(s: &str) -> Vec<&str> {
    if s.is_empty() {
        Vec::new()
    } else {
        s.split('\n').collect()
    }
}

#[test]
fn knowledge_routing_always_has_the_follow_up_line_with_the_label() {
    let out = knowledge_routing_guidance(&tools(&[]), "", "current Slack thread context");
    assert_eq!(lines(&out).len(), 1);
    assert!(
        out.starts_with("- For short follow-up questions that clearly continue the current topic,")
    );
    assert!(
        out.contains("first use the current Slack thread context to infer the topic and entity.")
    );
}

#[test]
fn knowledge_routing_with_kb_slack_and_current_events() {
    let out = knowledge_routing_guidance(
        &tools(&[
            SEARCH_KNOWLEDGE_BASE,
            SEARCH_SLACK_MESSAGES,
            SEARCH_CURRENT_EVENTS,
        ]),
        "",
        "label",
    );
    let l = lines(&out);
    assert_eq!(l.len(), 6);
    assert_eq!(l[1], KR_KB);
    assert_eq!(l[2], KR_CURRENT_EVENTS_WITH_KB);
    assert_eq!(l[3], KR_PREFER_KB_OVER_SLACK);
    assert_eq!(l[4], KR_SLACK_IS_DISCUSSION);
    assert_eq!(l[5], KR_CURRENT_EVENTS_LAYERED_ON_KB);
    assert!(!out.contains(KR_CURRENT_EVENTS_WITHOUT_KB));
    assert!(!out.contains(KR_CURRENT_EVENTS_LIVE_CONTEXT));
}

#[test]
fn knowledge_routing_current_events_without_kb() {
    let out = knowledge_routing_guidance(
        &tools(&[SEARCH_CURRENT_EVENTS, SEARCH_SLACK_MESSAGES]),
        "",
        "l",
    );
    let l = lines(&out);
    assert_eq!(
        l[1..],
        [KR_CURRENT_EVENTS_WITHOUT_KB, KR_CURRENT_EVENTS_LIVE_CONTEXT]
    );
    assert!(
        KR_CURRENT_EVENTS_WITHOUT_KB.ends_with("fast-moving topics, use search_current_events.")
    );
}

#[test]
fn knowledge_routing_directory_phrase_is_members_only_without_companies() {
    let out = knowledge_routing_guidance(&tools(&[SEARCH_MEMBERS]), "", "l");
    let l = lines(&out);
    assert_eq!(
        l.len(),
        3,
        "org contact + name lists; no thin-results line without KB/Slack"
    );
    assert!(l[1].contains("ALWAYS include search_members in the same parallel tool batch"));
    assert!(l[2].starts_with("- When the user gives you a LIST of names"));
    assert!(!out.contains("{DIRECTORY}"));
}

#[test]
fn knowledge_routing_directory_phrase_names_companies_when_present() {
    let out = knowledge_routing_guidance(
        &tools(&[SEARCH_MEMBERS, SEARCH_COMPANIES, SEARCH_SLACK_MESSAGES]),
        "",
        "l",
    );
    let phrase =
        "search_members (and search_companies when the company itself might be in the community)";
    assert!(out.contains(&format!(
        "ALWAYS include {phrase} in the same parallel tool batch"
    )));
    assert!(out.contains(&format!("try {phrase} first. In a community, the answer to a question is often a person, not a document.")));
}

#[test]
fn knowledge_routing_companies_alone_adds_nothing() {
    let out = knowledge_routing_guidance(&tools(&[SEARCH_COMPANIES]), "", "l");
    assert_eq!(lines(&out).len(), 1);
}

#[test]
fn knowledge_routing_guide_url_line_only_when_non_empty() {
    let none = knowledge_routing_guidance(&tools(&[]), "  ", "l");
    assert_eq!(lines(&none).len(), 1);
    let out = knowledge_routing_guidance(&tools(&[]), "https://guide.example/root", "l");
    assert!(out.ends_with(
        "point them to https://guide.example/root. You can still answer directly, but include the guide when it would help them learn more."
    ));
}

#[test]
fn request_guidance_empty_without_request_tools() {
    assert_eq!(
        request_tool_guidance(&tools(&[SEARCH_KNOWLEDGE_BASE]), true),
        ""
    );
}

#[test]
fn request_guidance_uses_canonical_names() {
    let out = request_tool_guidance(
        &tools(&[
            REQUEST_HUMAN_INTERVENTION,
            LIST_MY_HUMAN_INTERVENTIONS,
            CANCEL_HUMAN_INTERVENTION,
        ]),
        false,
    );
    let l = lines(&out);
    assert_eq!(l.len(), 8);
    assert!(l[0].ends_with("physical/offline task, use request_human_intervention."));
    assert!(out.contains("use list_my_human_interventions."));
    assert!(out.contains("use cancel_human_intervention. If the specific request is unclear"));
    assert!(!out.contains("Both request_human_intervention and create_fulfillment_request"));
    assert!(
        !out.contains("{create}") && !out.contains("After request_human_intervention succeeds")
    );
}

#[test]
fn request_guidance_falls_back_to_legacy_names() {
    let out = request_tool_guidance(
        &tools(&[
            CREATE_FULFILLMENT_REQUEST,
            LIST_MY_FULFILLMENT_REQUESTS,
            DELETE_MY_FULFILLMENT_REQUEST,
        ]),
        false,
    );
    assert!(out.contains("use create_fulfillment_request."));
    assert!(out.contains("use list_my_fulfillment_requests."));
    assert!(out.contains("use delete_my_fulfillment_request."));
}

#[test]
fn request_guidance_prefers_canonical_when_both_create_tools_exist() {
    let out = request_tool_guidance(
        &tools(&[REQUEST_HUMAN_INTERVENTION, CREATE_FULFILLMENT_REQUEST]),
        false,
    );
    let l = lines(&out);
    assert_eq!(l[1], RQ_PREFER_CANONICAL);
    assert!(l[0].ends_with("use request_human_intervention."));
    assert_eq!(l.len(), 7);
}

#[test]
fn request_guidance_list_only_gets_list_and_naming_lines() {
    let out = request_tool_guidance(&tools(&[LIST_MY_HUMAN_INTERVENTIONS]), true);
    let l = lines(&out);
    assert_eq!(l.len(), 2);
    assert!(l[0].ends_with("use list_my_human_interventions."));
    assert_eq!(l[1], RQ_CALL_THEM_REQUESTS);
}

#[test]
fn request_guidance_success_confirmation_only_when_opted_in() {
    let out = request_tool_guidance(&tools(&[REQUEST_HUMAN_INTERVENTION]), true);
    assert!(out.ends_with(
        "- After request_human_intervention succeeds, confirm that you've logged their request and notified the team. Prefer wording like \"I've logged your request\" or \"I've put in that request for you.\""
    ));
}

#[test]
fn preference_guidance_per_tool() {
    assert_eq!(preference_tool_guidance(&tools(&[])), "");
    assert_eq!(
        lines(&preference_tool_guidance(&tools(&[
            REMEMBER_USER_PREFERENCE
        ])))
        .len(),
        2
    );
    assert_eq!(
        lines(&preference_tool_guidance(&tools(&[LIST_USER_PREFERENCES]))).len(),
        2
    );
    assert_eq!(
        preference_tool_guidance(&tools(&[FORGET_USER_PREFERENCE])),
        PF_FORGET
    );
    assert_eq!(
        preference_tool_guidance(&tools(&[SET_DM_REPLY_STYLE])),
        PF_DM_REPLY_STYLE
    );
    assert_eq!(
        preference_tool_guidance(&tools(&[SET_AUTO_REPLY_PREFERENCE])),
        PF_AUTO_REPLY
    );
    let all = preference_tool_guidance(&tools(&[
        SET_AUTO_REPLY_PREFERENCE,
        REMEMBER_USER_PREFERENCE,
        LIST_USER_PREFERENCES,
        FORGET_USER_PREFERENCE,
        SET_DM_REPLY_STYLE,
    ]));
    assert_eq!(
        lines(&all),
        vec![
            PF_REMEMBER,
            PF_REMEMBER_ONLY_EXPLICIT,
            PF_LIST,
            PF_LIST_ANSWER,
            PF_FORGET,
            PF_DM_REPLY_STYLE,
            PF_AUTO_REPLY
        ]
    );
}

#[test]
fn messaging_restriction_is_empty_for_admins() {
    assert_eq!(
        messaging_restriction_guidance(&tools(&[START_COMMUNITY_CONVERSATION]), true),
        ""
    );
}

#[test]
fn messaging_restriction_without_community_tools() {
    let out = messaging_restriction_guidance(&tools(&[ESCALATE_TO_ADMIN]), false);
    let l = lines(&out);
    assert_eq!(
        l,
        vec![
            MR_RESTRICTION,
            MR_OFFER_DRAFT,
            MR_EXCEPTION_TEAM,
            MR_NO_REQUEST_WORKAROUND,
            MR_NEVER_CLAIM_SENT
        ]
    );
    assert!(!out.contains("start_community_conversation"));
}

#[test]
fn messaging_restriction_with_community_tools_adds_the_exception_and_extends_the_last_line() {
    let out = messaging_restriction_guidance(
        &tools(&[
            START_COMMUNITY_CONVERSATION,
            FIND_CHANNEL_FOR_COMMUNITY_POST,
        ]),
        false,
    );
    let l = lines(&out);
    assert_eq!(l.len(), 6);
    assert_eq!(l[3], MR_EXCEPTION_COMMUNITY);
    assert!(l[5].ends_with(
        "and after start_community_conversation succeeds you may say the conversation was posted)."
    ));
    // One of the two tools is not enough.
    let half = messaging_restriction_guidance(&tools(&[START_COMMUNITY_CONVERSATION]), false);
    assert_eq!(lines(&half).len(), 5);
}

#[test]
fn community_conversation_guidance_needs_a_dm_and_both_tools() {
    let both = tools(&[
        START_COMMUNITY_CONVERSATION,
        FIND_CHANNEL_FOR_COMMUNITY_POST,
    ]);
    assert_eq!(community_conversation_guidance(&both, false), "");
    assert_eq!(
        community_conversation_guidance(&tools(&[START_COMMUNITY_CONVERSATION]), true),
        ""
    );
    let out = community_conversation_guidance(&both, true);
    let l = lines(&out);
    assert_eq!(l.len(), 5);
    assert!(l[0].starts_with("- TAKING A DM TOPIC TO THE COMMUNITY:"));
    assert!(l[4].ends_with(
        "ONLY ids that a tool result in this conversation attached to those exact people."
    ));
}

#[test]
fn request_tools_resolve_canonical_first() {
    let r = RequestTools::resolve(&tools(&[
        CREATE_FULFILLMENT_REQUEST,
        REQUEST_HUMAN_INTERVENTION,
    ]));
    assert_eq!(r.create, Some(REQUEST_HUMAN_INTERVENTION));
    assert_eq!(r.list, None);
}
