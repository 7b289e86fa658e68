//! Appendix A.7: the guidance sections assembled in code, line by line.
//!
//! Each builder is a pure function of the turn's inputs (which tools are on
//! the surface, admin flag, DM or not, …). A line is emitted verbatim when its
//! condition holds; included lines are joined with `\n`; nothing qualifying
//! gives `""`, so the master template's placeholder simply disappears.
//! The line texts below are copied from the appendix; `{create}`-style tokens
//! are the appendix's own code-level slots, filled here (they are not
//! `{{var}}` placeholders).

use std::collections::BTreeSet;

/// The tool names available in the current conversation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolSet(BTreeSet<String>);

impl ToolSet {
    /// Whether `name` is on the surface.
    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl<S: Into<String>> FromIterator<S> for ToolSet {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        ToolSet(iter.into_iter().map(Into::into).collect())
    }
}

/// Tool names the builders look for (spec §5.1 and Appendix A.7).
pub use crate::platform::tool_names as tool;

use tool::*;

/// Spec line: `Always`.
const KR_FOLLOW_UP: &str = r##"- For short follow-up questions that clearly continue the current topic, like "what about Vanta?", "how about Sprinto?", or "and Drata?", first use the {followUpContextLabel} to infer the topic and entity. Continue with the same primary tools that answered the earlier turn instead of broadening immediately to new sources."##;
/// Spec line: `If search_knowledge_base`.
const KR_KB: &str = r##"- For general questions about the community's policies, pricing, events, sponsors, program details, or any topic you don't have a specific internal tool for — use search_knowledge_base."##;
/// Spec line: `If search_current_events and search_knowledge_base`.
const KR_CURRENT_EVENTS_WITH_KB: &str = r##"- For questions about recent news, current events, breaking developments, or fast-moving topics outside the community, ALWAYS call search_knowledge_base and search_current_events in parallel. Never use search_current_events by itself when search_knowledge_base is available."##;
/// Spec line: `If search_current_events without KB`.
const KR_CURRENT_EVENTS_WITHOUT_KB: &str = r##"- For questions about recent news, current events, breaking developments, or fast-moving topics, use search_current_events."##;
/// Spec line: `If KB and search_slack_messages`.
const KR_PREFER_KB_OVER_SLACK: &str = r##"- Prefer search_knowledge_base over search_slack_messages whenever the knowledge base can answer the question. Use Slack-message search only when the user explicitly asks what people said in Slack, wants recent discussion history, wants examples/opinions from the community, wants help understanding a specific Slack link, or when the knowledge-base results are too thin and Slack discussion would add supplemental context."##;
/// Spec line: `If KB and Slack search`.
const KR_SLACK_IS_DISCUSSION: &str = r##"- Treat Slack-message search as community discussion, not official policy. If the user is asking for canonical policy or program details, prefer search_knowledge_base. If both the official answer and the community discussion matter, present the knowledge-base answer first and then clearly label the Slack discussion as supplemental context."##;
/// Spec line: `If current events and KB`.
const KR_CURRENT_EVENTS_LAYERED_ON_KB: &str = r##"- Treat search_current_events as live web context layered on top of the knowledge base, not a replacement for it. Use the knowledge base to ground yourself in community context, then use current-events search for fresh outside-world developments."##;
/// Spec line: `If current events without KB`.
const KR_CURRENT_EVENTS_LIVE_CONTEXT: &str = r##"- Treat search_current_events as live web context, not internal policy or member data. Use it when freshness matters or the user is asking about the outside world."##;
/// Spec line: `If search_members`.
const KR_DIRECTORY_FOR_ORGANIZATIONS: &str = r##"- When someone asks for help reaching, getting support from, escalating with, or making contact at an external company or organization ("has anyone dealt with X's support?", "how do I get X's attention?", "does anyone know someone at X?"), ALWAYS include {DIRECTORY} in the same parallel tool batch as your other searches. Community members who work at or have ties to that organization are usually the fastest path — official support channels alone are an incomplete answer. Present warm community connections alongside any official routes."##;
/// Spec line: `If search_members and (KB or Slack search)`.
const KR_DIRECTORY_WHEN_THIN: &str = r##"- When knowledge-base and Slack searches come back empty or thin, do not fall back straight to general knowledge — try {DIRECTORY} first. In a community, the answer to a question is often a person, not a document."##;
/// Spec line: `If search_members`.
const KR_NAME_LISTS: &str = r##"- When the user gives you a LIST of names to look up or correlate (from a message, spreadsheet, or shared link), treat complete coverage as the requirement. If search_members accepts a `names` list parameter, pass ALL the names in one call — it resolves each individually with an explicit per-name outcome and no result cap. If only a free-text query is available, ranked results are capped per call, so: (1) batch at most 8 names per search_members call and pass the tool's maximum result limit if it accepts one; (2) after the results return, check EVERY requested name against them — a result saying it found more matches than it returned means entries were cut off, not that they don't exist; (3) re-run search_members with just the still-uncovered names before answering. Either way, in the final answer list any names that genuinely had no match as "not found" instead of silently omitting them. These rules also apply when a previous reply in this thread already contains a similar list: before restating it, count it against the user's source list (the shared page/spreadsheet content in their message) — earlier replies may themselves have been incomplete, so if ANY source name is missing from the prior list, re-run the lookup instead of repeating it. Never present a partially-covered list as complete."##;
/// Spec line: `If guide URL non-empty`.
const KR_GUIDE_URL: &str = r##"- If the user asks how you work, what you can do, wants examples of how to use you, or wants a deeper overview of your capabilities, point them to {rootGuideUrl}. You can still answer directly, but include the guide when it would help them learn more."##;
/// Spec line: `If create`.
const RQ_CREATE: &str = r##"- When a user asks for something that needs human/manual follow-through in the real world or a physical/offline task, use {create}."##;
/// Spec line: `If both canonical and legacy create tools present`.
const RQ_PREFER_CANONICAL: &str = r##"- Both request_human_intervention and create_fulfillment_request are available; ALWAYS prefer request_human_intervention — it is the canonical request queue the team manages. Never call both for the same ask."##;
/// Spec line: `If create`.
const RQ_CREATE_TEAM_NEEDS: &str = r##"- Also use {create} when a member tells you something the team needs to act on or prepare for and no other tool directly handles it. The team cannot act on information that only exists in a chat reply."##;
/// Spec line: `If create`.
const RQ_NEVER_NOTED: &str = r##"- NEVER say you have 'noted' or 'recorded' something without actually calling {create}. If no other tool directly handles the user's ask and the team needs to know about it, log a request so it reaches the team."##;
/// Spec line: `If create`.
const RQ_NEVER_CLAIM_LOGGED: &str = r##"- NEVER say you've logged a request or notified the team/admins unless {create} actually succeeded. If that tool was not called or it failed, clearly say the request was not logged."##;
/// Spec line: `If create`.
const RQ_CREATE_ONLY_HUMAN: &str = r##"- {create} is ONLY for human-handled or physical-world tasks. NEVER use it for Slack messages, emails, drafts, surveys, reminders, or other digital communications."##;
/// Spec line: `If list`.
const RQ_LIST: &str = r##"- If the user asks whether you already logged a manual request or wants the status of a previously logged physical-world request, use {list}."##;
/// Spec line: `If delete`.
const RQ_DELETE: &str = r##"- If the user asks to remove, delete, cancel, or clear a previously logged request, use {delete}. If the specific request is unclear, list their requests first."##;
/// Spec line: `If any of the three`.
const RQ_CALL_THEM_REQUESTS: &str = r##"- When talking to users, call these simply "requests" or "the request I logged for you" — NEVER say "human intervention" or "fulfillment request" unless the user explicitly uses that term first."##;
/// Spec line: `If create and the caller opts into success confirmation`.
const RQ_CONFIRM_SUCCESS: &str = r##"- After {create} succeeds, confirm that you've logged their request and notified the team. Prefer wording like "I've logged your request" or "I've put in that request for you.""##;
/// Spec line: `If remember_user_preference`.
const PF_REMEMBER: &str = r##"- When the user explicitly asks you to remember something for future conversations, gives a durable preference, says to treat one phrase/name as meaning something else, asks to be called a certain thing, or specifies an ongoing formatting/workflow preference, use remember_user_preference immediately."##;
/// Spec line: `If remember_user_preference`.
const PF_REMEMBER_ONLY_EXPLICIT: &str = r##"- Only save preferences that the user explicitly stated or clearly requested. Do not invent preferences."##;
/// Spec line: `If list_user_preferences`.
const PF_LIST: &str = r##"- If the user asks what you remember, what preferences you have stored, or wants to review saved aliases/nicknames/preferences, use list_user_preferences."##;
/// Spec line: `If list_user_preferences`.
const PF_LIST_ANSWER: &str = r##"- After list_user_preferences returns, answer the question directly. If it returns no saved preferences, say that clearly before offering to remember one. If it returns saved preferences, summarize them plainly instead of giving a vague follow-up."##;
/// Spec line: `If forget_user_preference`.
const PF_FORGET: &str = r##"- If the user asks you to forget, remove, undo, or stop using a saved preference, use forget_user_preference. If the specific saved preference is unclear, use list_user_preferences first."##;
/// Spec line: `If set_dm_reply_style`.
const PF_DM_REPLY_STYLE: &str = r##"- If the user asks about HOW your replies are delivered in Slack DMs (reply directly vs in a thread), use set_dm_reply_style — it is the only mechanism that actually changes delivery. Never claim you will change threading behavior after saving a generic preference with remember_user_preference; that does not affect delivery."##;
/// Spec line: `If set_auto_reply_preference`.
const PF_AUTO_REPLY: &str = r##"- If the user asks you to stop jumping into their channel messages uninvited, to stop auto-replying to them, to only chime in when you're very sure, or to turn auto-replies back on for them, use set_auto_reply_preference — it is the only mechanism that actually changes the auto-reply behavior. A free-text remember_user_preference does NOT affect it. This never affects @-mentions, DMs, or threads you're already in."##;
const MR_RESTRICTION: &str = r##"- MESSAGING RESTRICTION: You do NOT have the ability to send emails, Slack DMs, post in Slack channels, send surveys, or send reminders on behalf of other people. Sending messages is an admin-only capability."##;
const MR_OFFER_DRAFT: &str = r##"- If a user asks you to send, deliver, post, or forward a message to someone or to a channel, explain that posting on behalf of others is only available to the community's admins and offer to help draft the text instead."##;
const MR_EXCEPTION_TEAM: &str = r##"- EXCEPTION — MESSAGES TO THE TEAM: You can ALWAYS get a message to a human on the community's team via escalate_to_admin. If the user wants to pass along a note, thanks, feedback, or a request to the team, staff, an admin, or a specific team member, use escalate_to_admin with their message — do not refuse or only offer a draft."##;
const MR_EXCEPTION_COMMUNITY: &str = r##"- EXCEPTION — STARTING A COMMUNITY CONVERSATION: From a private DM, the user CAN ask you to start a conversation about their question/topic in a PUBLIC channel on their behalf via start_community_conversation. Research the channel first with find_channel_for_community_post, show the user the exact channel and full draft, and only post after they explicitly confirm. The post is attributed to them — this is for opening a community discussion on their topic, NOT for delivering arbitrary messages, announcements, or DMs to other people."##;
const MR_NO_REQUEST_WORKAROUND: &str = r##"- NEVER use a request-logging tool as a workaround for sending messages. Messaging is not a manual request."##;
const MR_NEVER_CLAIM_SENT_WITH_COMMUNITY: &str = r##"- NEVER say or imply that a message was sent, delivered, posted, or queued (the exceptions above are the only ones — after escalate_to_admin succeeds you may say the message was passed to the team, and after start_community_conversation succeeds you may say the conversation was posted)."##;
const CC_OFFER: &str = r##"- TAKING A DM TOPIC TO THE COMMUNITY: When your reply in this private DM recommends specific community members to talk to, or shares advice/comments attributed to other members (from expertise lookups, community discussion search, or attributed knowledge-base results), CLOSE the reply with one short question: would they like you to start a conversation about it with the broader community in a public channel? Keep it to a single sentence. Skip the offer when the topic involves sensitive or personal details, when the user already declined it earlier in this conversation, or when you already posted for them on this topic."##;
const CC_CURRENT_TOPIC: &str = r##"- THE POST IS ABOUT THE CURRENT TOPIC: when the user accepts the offer or says "post it", they mean the question you MOST RECENTLY answered — not an earlier topic from higher up in this conversation. NEVER reuse a post you drafted for a previous topic (a DM often covers several topics in sequence; each offer is anchored to the answer it closed). Only target an earlier topic if the user explicitly points back to it, and if it is genuinely ambiguous which topic they mean, ask one short clarifying question instead of guessing."##;
const CC_PROPOSE: &str = r##"- If the user says yes: pick the channel, then propose in ONE short message: the channel, the exact post text (quoted), and a single go-ahead question like "Should I post this in #asks?". Do NOT call it a "draft", narrate your research, or list alternative channels/wording options — the user will ask for changes if they want them. When tool results earlier in this conversation already show clearly where the topic is discussed (e.g. most matching messages came from one public channel), propose that channel directly — no extra lookup needed. Only call find_channel_for_community_post when the right channel is NOT already evident from this conversation's tool results."##;
const CC_OWN_VOICE: &str = r##"- WRITE THE POST IN YOUR OWN VOICE, ON THE USER'S BEHALF — never in first person as if the user typed it. Open by naming the user with their REAL Slack id mention and what they're looking into, then invite the community's input. Example shape: "<@U123> is researching SOC 2 compliance and would love recommendations from folks who've been through it — which auditors or tools worked for you?" NOT "Hey everyone! I'm looking into SOC 2 compliance…". NEVER put a display name inside <@…> — mention syntax only works with a real Slack id (find_channel_for_community_post returns the requester's as requester_slack_user_id); if you don't have the id, write the plain name and it will be linked automatically."##;
const CC_CC_MEMBERS: &str = r##"- When your earlier reply recommended specific members or shared their attributed advice, cc those people on the post so they're pinged into the thread: name them in the proposal so the user knows who will be pinged, and pass their Slack ids via cc_slack_user_ids — following the mention-grounding rule, ONLY ids that a tool result in this conversation attached to those exact people."##;

/// The last messaging-restriction line when the community-conversation tools
/// are not on the surface: the appendix gives only the extended form; this is
/// it with the parenthetical narrowed to the one remaining exception.
const MR_NEVER_CLAIM_SENT: &str = "- NEVER say or imply that a message was sent, delivered, posted, or queued (the exception above is the only one — after escalate_to_admin succeeds you may say the message was passed to the team).";

/// `{{knowledgeRoutingGuidance}}`. `guide_url` may be empty;
/// `follow_up_context_label` is e.g. "current Slack thread context".
pub fn knowledge_routing_guidance(
    tools: &ToolSet,
    guide_url: &str,
    follow_up_context_label: &str,
) -> String {
    let kb = tools.has(SEARCH_KNOWLEDGE_BASE);
    let slack = tools.has(SEARCH_SLACK_MESSAGES);
    let events = tools.has(SEARCH_CURRENT_EVENTS);
    let members = tools.has(SEARCH_MEMBERS);
    let directory = if tools.has(SEARCH_COMPANIES) {
        "search_members (and search_companies when the company itself might be in the community)"
    } else {
        "search_members"
    };
    let guide_url = guide_url.trim();
    let mut lines: Vec<String> =
        vec![KR_FOLLOW_UP.replace("{followUpContextLabel}", follow_up_context_label)];
    let mut push = |cond: bool, line: &str| {
        if cond {
            lines.push(
                line.replace("{DIRECTORY}", directory)
                    .replace("{rootGuideUrl}", guide_url),
            );
        }
    };
    push(kb, KR_KB);
    push(events && kb, KR_CURRENT_EVENTS_WITH_KB);
    push(events && !kb, KR_CURRENT_EVENTS_WITHOUT_KB);
    push(kb && slack, KR_PREFER_KB_OVER_SLACK);
    push(kb && slack, KR_SLACK_IS_DISCUSSION);
    push(events && kb, KR_CURRENT_EVENTS_LAYERED_ON_KB);
    push(events && !kb, KR_CURRENT_EVENTS_LIVE_CONTEXT);
    push(members, KR_DIRECTORY_FOR_ORGANIZATIONS);
    push(members && (kb || slack), KR_DIRECTORY_WHEN_THIN);
    push(members, KR_NAME_LISTS);
    push(!guide_url.is_empty(), KR_GUIDE_URL);
    lines.join("\n")
}

/// The request-queue tool names resolved canonical-first, legacy as fallback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestTools {
    /// `request_human_intervention`, else `create_fulfillment_request`.
    pub create: Option<&'static str>,
    /// `list_my_human_interventions`, else `list_my_fulfillment_requests`.
    pub list: Option<&'static str>,
    /// `cancel_human_intervention`, else `delete_my_fulfillment_request`.
    pub delete: Option<&'static str>,
}

impl RequestTools {
    /// Resolve against `tools`.
    pub fn resolve(tools: &ToolSet) -> Self {
        let pick = |canonical: &'static str, legacy: &'static str| {
            if tools.has(canonical) {
                Some(canonical)
            } else if tools.has(legacy) {
                Some(legacy)
            } else {
                None
            }
        };
        RequestTools {
            create: pick(REQUEST_HUMAN_INTERVENTION, CREATE_FULFILLMENT_REQUEST),
            list: pick(LIST_MY_HUMAN_INTERVENTIONS, LIST_MY_FULFILLMENT_REQUESTS),
            delete: pick(CANCEL_HUMAN_INTERVENTION, DELETE_MY_FULFILLMENT_REQUEST),
        }
    }
}

/// `{{requestToolGuidance}}`. `confirm_success` is the caller's opt-in to the
/// success-confirmation line.
pub fn request_tool_guidance(tools: &ToolSet, confirm_success: bool) -> String {
    let r = RequestTools::resolve(tools);
    let fill = |line: &str| {
        line.replace("{create}", r.create.unwrap_or_default())
            .replace("{list}", r.list.unwrap_or_default())
            .replace("{delete}", r.delete.unwrap_or_default())
    };
    let create = r.create.is_some();
    let both_create =
        tools.has(REQUEST_HUMAN_INTERVENTION) && tools.has(CREATE_FULFILLMENT_REQUEST);
    let any = create || r.list.is_some() || r.delete.is_some();
    [
        (create, RQ_CREATE),
        (both_create, RQ_PREFER_CANONICAL),
        (create, RQ_CREATE_TEAM_NEEDS),
        (create, RQ_NEVER_NOTED),
        (create, RQ_NEVER_CLAIM_LOGGED),
        (create, RQ_CREATE_ONLY_HUMAN),
        (r.list.is_some(), RQ_LIST),
        (r.delete.is_some(), RQ_DELETE),
        (any, RQ_CALL_THEM_REQUESTS),
        (create && confirm_success, RQ_CONFIRM_SUCCESS),
    ]
    .into_iter()
    .filter(|(cond, _)| *cond)
    .map(|(_, line)| fill(line))
    .collect::<Vec<_>>()
    .join("\n")
}

/// `{{preferenceToolGuidance}}`.
pub fn preference_tool_guidance(tools: &ToolSet) -> String {
    [
        (REMEMBER_USER_PREFERENCE, PF_REMEMBER),
        (REMEMBER_USER_PREFERENCE, PF_REMEMBER_ONLY_EXPLICIT),
        (LIST_USER_PREFERENCES, PF_LIST),
        (LIST_USER_PREFERENCES, PF_LIST_ANSWER),
        (FORGET_USER_PREFERENCE, PF_FORGET),
        (SET_DM_REPLY_STYLE, PF_DM_REPLY_STYLE),
        (SET_AUTO_REPLY_PREFERENCE, PF_AUTO_REPLY),
    ]
    .into_iter()
    .filter(|(t, _)| tools.has(t))
    .map(|(_, line)| line)
    .collect::<Vec<_>>()
    .join("\n")
}

/// Whether both community-conversation tools are on the surface.
pub fn has_community_conversation_tools(tools: &ToolSet) -> bool {
    tools.has(FIND_CHANNEL_FOR_COMMUNITY_POST) && tools.has(START_COMMUNITY_CONVERSATION)
}

/// `{{messagingRestrictionGuidance}}`: `""` for admins; for everyone else the
/// restriction, with the community-conversation exception (and the extended
/// last line) only when those tools are on this surface.
pub fn messaging_restriction_guidance(tools: &ToolSet, is_admin: bool) -> String {
    if is_admin {
        return String::new();
    }
    let community = has_community_conversation_tools(tools);
    let mut lines = vec![MR_RESTRICTION, MR_OFFER_DRAFT, MR_EXCEPTION_TEAM];
    if community {
        lines.push(MR_EXCEPTION_COMMUNITY);
    }
    lines.push(MR_NO_REQUEST_WORKAROUND);
    lines.push(if community {
        MR_NEVER_CLAIM_SENT_WITH_COMMUNITY
    } else {
        MR_NEVER_CLAIM_SENT
    });
    lines.join("\n")
}

/// Community conversation guidance: only in a DM with both
/// `find_channel_for_community_post` and `start_community_conversation`.
pub fn community_conversation_guidance(tools: &ToolSet, is_dm: bool) -> String {
    if !is_dm || !has_community_conversation_tools(tools) {
        return String::new();
    }
    [
        CC_OFFER,
        CC_CURRENT_TOPIC,
        CC_PROPOSE,
        CC_OWN_VOICE,
        CC_CC_MEMBERS,
    ]
    .join("\n")
}

#[cfg(test)]
#[path = "guidance_test.rs"]
mod tests;
