//! The platform's tool catalog (§5.1) as data: every core tool's name, its
//! group and the channels it may appear on, plus the separate admin
//! messaging group. Gating (§5.2) and the dispatch gate read this table;
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
}

impl CatalogTool {
    /// Is this tool part of the core set (everything but admin messaging)?
    pub fn is_core(&self) -> bool {
        self.group != ToolGroup::AdminMessaging
    }

    /// May it be offered on `channel`?
    pub fn on(&self, channel: ToolChannel) -> bool {
        self.channels.contains(&channel)
    }
}

use ToolChannel::{Api, Email, Slack, Web};

const ALL: &[ToolChannel] = &[Slack, Email, Api, Web];
const SLACK_ONLY: &[ToolChannel] = &[Slack];

const fn tool(
    name: &'static str,
    group: ToolGroup,
    channels: &'static [ToolChannel],
) -> CatalogTool {
    CatalogTool {
        name,
        group,
        channels,
    }
}

/// `escalate_to_admin`: always available on every tier (§5.1).
pub const ESCALATE_TO_ADMIN: &str = "escalate_to_admin";
/// `search_knowledge_base`: the one core tool a public tier can be granted.
pub const SEARCH_KNOWLEDGE_BASE: &str = "search_knowledge_base";

/// The reserved `unresolved` tier's surface (§5.2 rule 3), in offer order.
pub const UNRESOLVED_CORE_TOOLS: [&str; 5] = [
    "search_knowledge_base",
    "search_slack_messages",
    "who_knows",
    "search_current_events",
    "escalate_to_admin",
];

/// Every §5.1 tool, in the order tools are offered.
pub const CATALOG: &[CatalogTool] = &[
    // Knowledge & search
    tool("search_knowledge_base", ToolGroup::Knowledge, ALL),
    tool("get_knowledge_page_link", ToolGroup::Knowledge, ALL),
    tool("save_knowledge_entry", ToolGroup::Knowledge, SLACK_ONLY),
    tool("search_slack_messages", ToolGroup::Knowledge, ALL),
    tool("who_knows", ToolGroup::Knowledge, ALL),
    tool("search_current_events", ToolGroup::Knowledge, ALL),
    // Community conversation (Slack DM only)
    tool(
        "find_channel_for_community_post",
        ToolGroup::CommunityConversation,
        SLACK_ONLY,
    ),
    tool(
        "start_community_conversation",
        ToolGroup::CommunityConversation,
        SLACK_ONLY,
    ),
    // Contributions & extracted knowledge
    tool("list_my_slack_contributions", ToolGroup::Contributions, ALL),
    tool("add_my_slack_contribution", ToolGroup::Contributions, ALL),
    tool(
        "refresh_my_slack_contribution",
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        "remove_my_slack_contribution",
        ToolGroup::Contributions,
        ALL,
    ),
    tool("list_my_extracted_knowledge", ToolGroup::Contributions, ALL),
    tool(
        "update_my_extracted_knowledge_entry",
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        "delete_my_extracted_knowledge_entry",
        ToolGroup::Contributions,
        ALL,
    ),
    // Preferences
    tool("remember_user_preference", ToolGroup::Preferences, ALL),
    tool("list_user_preferences", ToolGroup::Preferences, ALL),
    tool("forget_user_preference", ToolGroup::Preferences, ALL),
    tool("set_dm_reply_style", ToolGroup::Preferences, SLACK_ONLY),
    tool(
        "set_auto_reply_preference",
        ToolGroup::Preferences,
        SLACK_ONLY,
    ),
    // Follow-ups & alerts
    tool("create_follow_up", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("list_follow_ups", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("update_follow_up", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("pause_follow_up", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("resume_follow_up", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("cancel_follow_up", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("create_action_alert", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("list_action_alerts", ToolGroup::FollowUpsAndAlerts, ALL),
    tool("cancel_action_alert", ToolGroup::FollowUpsAndAlerts, ALL),
    // Human handoff & feedback
    tool("escalate_to_admin", ToolGroup::Handoff, ALL),
    tool("request_human_intervention", ToolGroup::Handoff, ALL),
    tool("list_my_human_interventions", ToolGroup::Handoff, ALL),
    tool("cancel_human_intervention", ToolGroup::Handoff, ALL),
    tool("report_root_mistake", ToolGroup::Handoff, ALL),
    // Admin messaging (separate group)
    tool("send_slack_dm_admin", ToolGroup::AdminMessaging, SLACK_ONLY),
    tool(
        "send_slack_channel_message_admin",
        ToolGroup::AdminMessaging,
        SLACK_ONLY,
    ),
];

/// The catalog entry named `name`.
pub fn catalog_tool(name: &str) -> Option<&'static CatalogTool> {
    CATALOG.iter().find(|t| t.name == name)
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
}
