//! The platform's tool catalog (§5.1) as data: every core tool's name, its
//! group and the channels it may appear on, plus the two groups outside the
//! core set: admin messaging and the dashboard admin config tools. Gating (§5.2) and the dispatch gate read this table;
//! handlers are registered separately, so "which tools exist" and "which
//! tools run here" never drift apart silently.

/// A channel a tool can be offered on (a tool's `channels`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolChannel {
    /// Slack (DMs and channels).
    Slack,
    /// Email (trusted and public senders).
    Email,
    /// The platform API / MCP.
    Api,
    /// The web test chat.
    Web,
}

impl ToolChannel {
    /// The spec's spelling (`slack`, `email`, `api`, `web`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChannel::Slack => "slack",
            ToolChannel::Email => "email",
            ToolChannel::Api => "api",
            ToolChannel::Web => "web",
        }
    }

    /// Parse the spec's spelling.
    pub fn parse(s: &str) -> Option<ToolChannel> {
        Some(match s {
            "slack" => ToolChannel::Slack,
            "email" => ToolChannel::Email,
            "api" => ToolChannel::Api,
            "web" => ToolChannel::Web,
            _ => return None,
        })
    }
}

/// Where a catalog entry belongs in §5.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolGroup {
    /// Knowledge & search.
    Knowledge,
    /// Community conversation (Slack DM only).
    CommunityConversation,
    /// Contributions & extracted knowledge (author-scoped).
    Contributions,
    /// Preferences.
    Preferences,
    /// Follow-ups & alerts.
    FollowUpsAndAlerts,
    /// Human handoff & feedback.
    Handoff,
    /// Admin messaging: not in the core set; offered to admins on Slack.
    AdminMessaging,
    /// Dashboard admin config (knowledge pages and sources, prompts,
    /// interventions, integrations): not in the core set; offered only on
    /// the dashboard's `/chat`, whose handler already checked the signed-in
    /// owner's or admin's role and CSRF token.
    AdminConfig,
}

/// One catalog entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogTool {
    /// The tool name, verbatim from §5.1.
    pub name: &'static str,
    /// Its §5.1 group.
    pub group: ToolGroup,
    /// Channels it may be offered on.
    pub channels: &'static [ToolChannel],
    /// Does it change state (write rows, send messages, notify people)?
    /// Such "mutation tools" pass the email authorization gate first when
    /// the sender may be acting for someone else (§8.3, A.5).
    pub mutates: bool,
}

impl CatalogTool {
    /// Is this tool part of the core set (everything but admin messaging
    /// and admin config)? Only core tools reach a tier's surface through
    /// the §5.2 core-tool filter; the other two groups are added by
    /// audience (admins on Slack, the dashboard chat).
    pub fn is_core(&self) -> bool {
        !matches!(
            self.group,
            ToolGroup::AdminMessaging | ToolGroup::AdminConfig
        )
    }

    /// May it be offered on `channel`?
    pub fn on(&self, channel: ToolChannel) -> bool {
        self.channels.contains(&channel)
    }
}

use ToolChannel::{Api, Email, Slack, Web};

const ALL: &[ToolChannel] = &[Slack, Email, Api, Web];
const SLACK_ONLY: &[ToolChannel] = &[Slack];
/// The dashboard's `/chat` runs on the web channel.
const WEB_ONLY: &[ToolChannel] = &[Web];

const fn tool(
    name: &'static str,
    group: ToolGroup,
    channels: &'static [ToolChannel],
    mutates: bool,
) -> CatalogTool {
    CatalogTool {
        name,
        group,
        channels,
        mutates,
    }
}

/// A tool that only reads.
const fn read(name: &'static str, g: ToolGroup, ch: &'static [ToolChannel]) -> CatalogTool {
    tool(name, g, ch, false)
}

/// A tool that changes state (§8.3: gated for email delegates).
const fn write(name: &'static str, g: ToolGroup, ch: &'static [ToolChannel]) -> CatalogTool {
    tool(name, g, ch, true)
}

use crate::platform::tool_names as names;
/// `escalate_to_admin`: always available on every tier (§5.1);
/// `search_knowledge_base`: the one core tool a public tier can be granted.
pub use crate::platform::tool_names::{ESCALATE_TO_ADMIN, SEARCH_KNOWLEDGE_BASE};

/// The reserved `unresolved` tier's surface (§5.2 rule 3), in offer order.
pub const UNRESOLVED_CORE_TOOLS: [&str; 5] = [
    names::SEARCH_KNOWLEDGE_BASE,
    names::SEARCH_SLACK_MESSAGES,
    names::WHO_KNOWS,
    names::SEARCH_CURRENT_EVENTS,
    names::ESCALATE_TO_ADMIN,
];

/// Every §5.1 tool, in the order tools are offered.
pub const CATALOG: &[CatalogTool] = &[
    // Knowledge & search
    read(names::SEARCH_KNOWLEDGE_BASE, ToolGroup::Knowledge, ALL),
    read(names::GET_KNOWLEDGE_PAGE_LINK, ToolGroup::Knowledge, ALL),
    write(
        names::SAVE_KNOWLEDGE_ENTRY,
        ToolGroup::Knowledge,
        SLACK_ONLY,
    ),
    read(names::SEARCH_SLACK_MESSAGES, ToolGroup::Knowledge, ALL),
    read(names::WHO_KNOWS, ToolGroup::Knowledge, ALL),
    read(names::SEARCH_CURRENT_EVENTS, ToolGroup::Knowledge, ALL),
    // Community conversation (Slack DM only)
    read(
        names::FIND_CHANNEL_FOR_COMMUNITY_POST,
        ToolGroup::CommunityConversation,
        SLACK_ONLY,
    ),
    write(
        names::START_COMMUNITY_CONVERSATION,
        ToolGroup::CommunityConversation,
        SLACK_ONLY,
    ),
    // Contributions & extracted knowledge
    read(
        names::LIST_MY_SLACK_CONTRIBUTIONS,
        ToolGroup::Contributions,
        ALL,
    ),
    write(
        names::ADD_MY_SLACK_CONTRIBUTION,
        ToolGroup::Contributions,
        ALL,
    ),
    write(
        names::REFRESH_MY_SLACK_CONTRIBUTION,
        ToolGroup::Contributions,
        ALL,
    ),
    write(
        names::REMOVE_MY_SLACK_CONTRIBUTION,
        ToolGroup::Contributions,
        ALL,
    ),
    read(
        names::LIST_MY_EXTRACTED_KNOWLEDGE,
        ToolGroup::Contributions,
        ALL,
    ),
    write(
        names::UPDATE_MY_EXTRACTED_KNOWLEDGE_ENTRY,
        ToolGroup::Contributions,
        ALL,
    ),
    write(
        names::DELETE_MY_EXTRACTED_KNOWLEDGE_ENTRY,
        ToolGroup::Contributions,
        ALL,
    ),
    // Preferences
    write(names::REMEMBER_USER_PREFERENCE, ToolGroup::Preferences, ALL),
    read(names::LIST_USER_PREFERENCES, ToolGroup::Preferences, ALL),
    write(names::FORGET_USER_PREFERENCE, ToolGroup::Preferences, ALL),
    write(
        names::SET_DM_REPLY_STYLE,
        ToolGroup::Preferences,
        SLACK_ONLY,
    ),
    write(
        names::SET_AUTO_REPLY_PREFERENCE,
        ToolGroup::Preferences,
        SLACK_ONLY,
    ),
    // Follow-ups & alerts
    write(names::CREATE_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    read(names::LIST_FOLLOW_UPS, ToolGroup::FollowUpsAndAlerts, ALL),
    write(names::UPDATE_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    write(names::PAUSE_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    write(names::RESUME_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    write(names::CANCEL_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    write(
        names::CREATE_ACTION_ALERT,
        ToolGroup::FollowUpsAndAlerts,
        ALL,
    ),
    read(
        names::LIST_ACTION_ALERTS,
        ToolGroup::FollowUpsAndAlerts,
        ALL,
    ),
    write(
        names::CANCEL_ACTION_ALERT,
        ToolGroup::FollowUpsAndAlerts,
        ALL,
    ),
    // Human handoff & feedback
    write(names::ESCALATE_TO_ADMIN, ToolGroup::Handoff, ALL),
    write(names::REQUEST_HUMAN_INTERVENTION, ToolGroup::Handoff, ALL),
    read(names::LIST_MY_HUMAN_INTERVENTIONS, ToolGroup::Handoff, ALL),
    write(names::CANCEL_HUMAN_INTERVENTION, ToolGroup::Handoff, ALL),
    write(names::REPORT_ROOT_MISTAKE, ToolGroup::Handoff, ALL),
    // Admin messaging (separate group)
    write(
        names::SEND_SLACK_DM_ADMIN,
        ToolGroup::AdminMessaging,
        SLACK_ONLY,
    ),
    write(
        names::SEND_SLACK_CHANNEL_MESSAGE_ADMIN,
        ToolGroup::AdminMessaging,
        SLACK_ONLY,
    ),
    // Dashboard admin config (separate group: the dashboard /chat only)
    read(
        names::LIST_KNOWLEDGE_PAGES,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    read(names::GET_KNOWLEDGE_PAGE, ToolGroup::AdminConfig, WEB_ONLY),
    write(
        names::UPSERT_KNOWLEDGE_PAGE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::DELETE_KNOWLEDGE_PAGE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    read(
        names::LIST_KNOWLEDGE_SOURCES,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::CREATE_KNOWLEDGE_SOURCE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::UPDATE_KNOWLEDGE_SOURCE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::DELETE_KNOWLEDGE_SOURCE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::SYNC_KNOWLEDGE_SOURCE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    read(names::LIST_PROMPTS, ToolGroup::AdminConfig, WEB_ONLY),
    read(names::GET_PROMPT, ToolGroup::AdminConfig, WEB_ONLY),
    write(names::UPDATE_PROMPT, ToolGroup::AdminConfig, WEB_ONLY),
    write(names::RESET_PROMPT, ToolGroup::AdminConfig, WEB_ONLY),
    read(names::LIST_INTERVENTIONS, ToolGroup::AdminConfig, WEB_ONLY),
    write(
        names::UPDATE_INTERVENTION_STATUS,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    read(names::LIST_INTEGRATIONS, ToolGroup::AdminConfig, WEB_ONLY),
    read(
        names::LIST_DASHBOARD_USERS,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::INVITE_DASHBOARD_USER,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::SET_DASHBOARD_USER_ROLE,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    write(
        names::REMOVE_DASHBOARD_USER,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
    read(names::GET_ACCESS_POLICY, ToolGroup::AdminConfig, WEB_ONLY),
    write(
        names::UPDATE_ACCESS_POLICY,
        ToolGroup::AdminConfig,
        WEB_ONLY,
    ),
];

/// The catalog entry named `name`.
pub fn catalog_tool(name: &str) -> Option<&'static CatalogTool> {
    CATALOG.iter().find(|t| t.name == name)
}

/// Does the catalog tool `name` change state? (`false` for names not in
/// the catalog: integration tools say so in their manifest.)
pub fn is_mutation(name: &str) -> bool {
    catalog_tool(name).is_some_and(|t| t.mutates)
}

/// Is `name` a core tool?
pub fn is_core_tool(name: &str) -> bool {
    catalog_tool(name).is_some_and(CatalogTool::is_core)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn catalog_names_are_unique_and_cover_section_5_1() {
        let names: HashSet<&str> = CATALOG.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), CATALOG.len());
        assert_eq!(CATALOG.iter().filter(|t| t.is_core()).count(), 34);
        for n in UNRESOLVED_CORE_TOOLS {
            assert!(is_core_tool(n), "{n}");
        }
        assert!(!is_core_tool("send_slack_dm_admin"));
        let admin_config: Vec<&CatalogTool> = CATALOG
            .iter()
            .filter(|t| t.group == ToolGroup::AdminConfig)
            .collect();
        assert_eq!(admin_config.len(), 22);
        for t in admin_config {
            assert!(!t.is_core(), "{}", t.name);
            assert_eq!(t.channels, [ToolChannel::Web], "{}", t.name);
        }
        assert!(
            catalog_tool("save_knowledge_entry")
                .unwrap()
                .on(ToolChannel::Slack)
        );
        assert!(
            !catalog_tool("save_knowledge_entry")
                .unwrap()
                .on(ToolChannel::Email)
        );
    }

    #[test]
    fn only_lookups_are_read_only() {
        let reads: Vec<&str> = CATALOG
            .iter()
            .filter(|t| !t.mutates)
            .map(|t| t.name)
            .collect();
        assert_eq!(
            reads,
            [
                "search_knowledge_base",
                "get_knowledge_page_link",
                "search_slack_messages",
                "who_knows",
                "search_current_events",
                "find_channel_for_community_post",
                "list_my_slack_contributions",
                "list_my_extracted_knowledge",
                "list_user_preferences",
                "list_follow_ups",
                "list_action_alerts",
                "list_my_human_interventions",
                "list_knowledge_pages",
                "get_knowledge_page",
                "list_knowledge_sources",
                "list_prompts",
                "get_prompt",
                "list_interventions",
                "list_integrations",
                "list_dashboard_users",
                "get_access_policy",
            ]
        );
        assert!(is_mutation("sync_knowledge_source"));
        assert!(is_mutation("reset_prompt"));
        assert!(is_mutation("escalate_to_admin"));
        assert!(is_mutation("send_slack_dm_admin"));
        assert!(!is_mutation("book_room"));
    }
}
