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
    tool(names::SEARCH_KNOWLEDGE_BASE, ToolGroup::Knowledge, ALL),
    tool(names::GET_KNOWLEDGE_PAGE_LINK, ToolGroup::Knowledge, ALL),
    tool(
        names::SAVE_KNOWLEDGE_ENTRY,
        ToolGroup::Knowledge,
        SLACK_ONLY,
    ),
    tool(names::SEARCH_SLACK_MESSAGES, ToolGroup::Knowledge, ALL),
    tool(names::WHO_KNOWS, ToolGroup::Knowledge, ALL),
    tool(names::SEARCH_CURRENT_EVENTS, ToolGroup::Knowledge, ALL),
    // Community conversation (Slack DM only)
    tool(
        names::FIND_CHANNEL_FOR_COMMUNITY_POST,
        ToolGroup::CommunityConversation,
        SLACK_ONLY,
    ),
    tool(
        names::START_COMMUNITY_CONVERSATION,
        ToolGroup::CommunityConversation,
        SLACK_ONLY,
    ),
    // Contributions & extracted knowledge
    tool(
        names::LIST_MY_SLACK_CONTRIBUTIONS,
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        names::ADD_MY_SLACK_CONTRIBUTION,
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        names::REFRESH_MY_SLACK_CONTRIBUTION,
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        names::REMOVE_MY_SLACK_CONTRIBUTION,
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        names::LIST_MY_EXTRACTED_KNOWLEDGE,
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        names::UPDATE_MY_EXTRACTED_KNOWLEDGE_ENTRY,
        ToolGroup::Contributions,
        ALL,
    ),
    tool(
        names::DELETE_MY_EXTRACTED_KNOWLEDGE_ENTRY,
        ToolGroup::Contributions,
        ALL,
    ),
    // Preferences
    tool(names::REMEMBER_USER_PREFERENCE, ToolGroup::Preferences, ALL),
    tool(names::LIST_USER_PREFERENCES, ToolGroup::Preferences, ALL),
    tool(names::FORGET_USER_PREFERENCE, ToolGroup::Preferences, ALL),
    tool(
        names::SET_DM_REPLY_STYLE,
        ToolGroup::Preferences,
        SLACK_ONLY,
    ),
    tool(
        names::SET_AUTO_REPLY_PREFERENCE,
        ToolGroup::Preferences,
        SLACK_ONLY,
    ),
    // Follow-ups & alerts
    tool(names::CREATE_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    tool(names::LIST_FOLLOW_UPS, ToolGroup::FollowUpsAndAlerts, ALL),
    tool(names::UPDATE_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    tool(names::PAUSE_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    tool(names::RESUME_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    tool(names::CANCEL_FOLLOW_UP, ToolGroup::FollowUpsAndAlerts, ALL),
    tool(
        names::CREATE_ACTION_ALERT,
        ToolGroup::FollowUpsAndAlerts,
        ALL,
    ),
    tool(
        names::LIST_ACTION_ALERTS,
        ToolGroup::FollowUpsAndAlerts,
        ALL,
    ),
    tool(
        names::CANCEL_ACTION_ALERT,
        ToolGroup::FollowUpsAndAlerts,
        ALL,
    ),
    // Human handoff & feedback
    tool(names::ESCALATE_TO_ADMIN, ToolGroup::Handoff, ALL),
    tool(names::REQUEST_HUMAN_INTERVENTION, ToolGroup::Handoff, ALL),
    tool(names::LIST_MY_HUMAN_INTERVENTIONS, ToolGroup::Handoff, ALL),
    tool(names::CANCEL_HUMAN_INTERVENTION, ToolGroup::Handoff, ALL),
    tool(names::REPORT_ROOT_MISTAKE, ToolGroup::Handoff, ALL),
    // Admin messaging (separate group)
    tool(
        names::SEND_SLACK_DM_ADMIN,
        ToolGroup::AdminMessaging,
        SLACK_ONLY,
    ),
    tool(
        names::SEND_SLACK_CHANNEL_MESSAGE_ADMIN,
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
