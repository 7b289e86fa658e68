//! Every tool name the platform itself refers to, defined once: the §5.1
//! catalog (core tools, admin messaging, the dashboard admin config tools)
//! and the integration-declared names the Appendix A.7 guidance builders
//! look for. Handlers, the catalog, gating, the guidance builders and the
//! agent's hooks all use these constants (a tidy test keeps the string
//! literals here). At the bottom of the module graph so the prompt and
//! agent layers can name tools without importing the tool layer.

/// `search_knowledge_base` (§5.1).
pub const SEARCH_KNOWLEDGE_BASE: &str = "search_knowledge_base";
/// `get_knowledge_page_link` (§5.1).
pub const GET_KNOWLEDGE_PAGE_LINK: &str = "get_knowledge_page_link";
/// `save_knowledge_entry` (§5.1).
pub const SAVE_KNOWLEDGE_ENTRY: &str = "save_knowledge_entry";
/// `search_slack_messages` (§5.1).
pub const SEARCH_SLACK_MESSAGES: &str = "search_slack_messages";
/// `who_knows` (§5.1).
pub const WHO_KNOWS: &str = "who_knows";
/// `search_current_events` (§5.1).
pub const SEARCH_CURRENT_EVENTS: &str = "search_current_events";
/// `find_channel_for_community_post` (§5.1).
pub const FIND_CHANNEL_FOR_COMMUNITY_POST: &str = "find_channel_for_community_post";
/// `start_community_conversation` (§5.1).
pub const START_COMMUNITY_CONVERSATION: &str = "start_community_conversation";
/// `list_my_slack_contributions` (§5.1).
pub const LIST_MY_SLACK_CONTRIBUTIONS: &str = "list_my_slack_contributions";
/// `add_my_slack_contribution` (§5.1).
pub const ADD_MY_SLACK_CONTRIBUTION: &str = "add_my_slack_contribution";
/// `refresh_my_slack_contribution` (§5.1).
pub const REFRESH_MY_SLACK_CONTRIBUTION: &str = "refresh_my_slack_contribution";
/// `remove_my_slack_contribution` (§5.1).
pub const REMOVE_MY_SLACK_CONTRIBUTION: &str = "remove_my_slack_contribution";
/// `list_my_extracted_knowledge` (§5.1).
pub const LIST_MY_EXTRACTED_KNOWLEDGE: &str = "list_my_extracted_knowledge";
/// `update_my_extracted_knowledge_entry` (§5.1).
pub const UPDATE_MY_EXTRACTED_KNOWLEDGE_ENTRY: &str = "update_my_extracted_knowledge_entry";
/// `delete_my_extracted_knowledge_entry` (§5.1).
pub const DELETE_MY_EXTRACTED_KNOWLEDGE_ENTRY: &str = "delete_my_extracted_knowledge_entry";
/// `remember_user_preference` (§5.1).
pub const REMEMBER_USER_PREFERENCE: &str = "remember_user_preference";
/// `list_user_preferences` (§5.1).
pub const LIST_USER_PREFERENCES: &str = "list_user_preferences";
/// `forget_user_preference` (§5.1).
pub const FORGET_USER_PREFERENCE: &str = "forget_user_preference";
/// `set_dm_reply_style` (§5.1).
pub const SET_DM_REPLY_STYLE: &str = "set_dm_reply_style";
/// `set_auto_reply_preference` (§5.1).
pub const SET_AUTO_REPLY_PREFERENCE: &str = "set_auto_reply_preference";
/// `create_follow_up` (§5.1).
pub const CREATE_FOLLOW_UP: &str = "create_follow_up";
/// `list_follow_ups` (§5.1).
pub const LIST_FOLLOW_UPS: &str = "list_follow_ups";
/// `update_follow_up` (§5.1).
pub const UPDATE_FOLLOW_UP: &str = "update_follow_up";
/// `pause_follow_up` (§5.1).
pub const PAUSE_FOLLOW_UP: &str = "pause_follow_up";
/// `resume_follow_up` (§5.1).
pub const RESUME_FOLLOW_UP: &str = "resume_follow_up";
/// `cancel_follow_up` (§5.1).
pub const CANCEL_FOLLOW_UP: &str = "cancel_follow_up";
/// `create_action_alert` (§5.1).
pub const CREATE_ACTION_ALERT: &str = "create_action_alert";
/// `list_action_alerts` (§5.1).
pub const LIST_ACTION_ALERTS: &str = "list_action_alerts";
/// `cancel_action_alert` (§5.1).
pub const CANCEL_ACTION_ALERT: &str = "cancel_action_alert";
/// `escalate_to_admin` (§5.1).
pub const ESCALATE_TO_ADMIN: &str = "escalate_to_admin";
/// `request_human_intervention` (§5.1).
pub const REQUEST_HUMAN_INTERVENTION: &str = "request_human_intervention";
/// `list_my_human_interventions` (§5.1).
pub const LIST_MY_HUMAN_INTERVENTIONS: &str = "list_my_human_interventions";
/// `cancel_human_intervention` (§5.1).
pub const CANCEL_HUMAN_INTERVENTION: &str = "cancel_human_intervention";
/// `report_root_mistake` (§5.1).
pub const REPORT_ROOT_MISTAKE: &str = "report_root_mistake";
/// `send_slack_dm_admin` (§5.1).
pub const SEND_SLACK_DM_ADMIN: &str = "send_slack_dm_admin";
/// `send_slack_channel_message_admin` (§5.1).
pub const SEND_SLACK_CHANNEL_MESSAGE_ADMIN: &str = "send_slack_channel_message_admin";
/// `list_knowledge_pages` (§5.1 dashboard admin config).
pub const LIST_KNOWLEDGE_PAGES: &str = "list_knowledge_pages";
/// `get_knowledge_page` (§5.1 dashboard admin config).
pub const GET_KNOWLEDGE_PAGE: &str = "get_knowledge_page";
/// `upsert_knowledge_page` (§5.1 dashboard admin config).
pub const UPSERT_KNOWLEDGE_PAGE: &str = "upsert_knowledge_page";
/// `delete_knowledge_page` (§5.1 dashboard admin config).
pub const DELETE_KNOWLEDGE_PAGE: &str = "delete_knowledge_page";
/// `list_knowledge_sources` (§5.1 dashboard admin config).
pub const LIST_KNOWLEDGE_SOURCES: &str = "list_knowledge_sources";
/// `create_knowledge_source` (§5.1 dashboard admin config).
pub const CREATE_KNOWLEDGE_SOURCE: &str = "create_knowledge_source";
/// `update_knowledge_source` (§5.1 dashboard admin config).
pub const UPDATE_KNOWLEDGE_SOURCE: &str = "update_knowledge_source";
/// `delete_knowledge_source` (§5.1 dashboard admin config).
pub const DELETE_KNOWLEDGE_SOURCE: &str = "delete_knowledge_source";
/// `sync_knowledge_source` (§5.1 dashboard admin config).
pub const SYNC_KNOWLEDGE_SOURCE: &str = "sync_knowledge_source";
/// `list_prompts` (§5.1 dashboard admin config).
pub const LIST_PROMPTS: &str = "list_prompts";
/// `get_prompt` (§5.1 dashboard admin config).
pub const GET_PROMPT: &str = "get_prompt";
/// `update_prompt` (§5.1 dashboard admin config).
pub const UPDATE_PROMPT: &str = "update_prompt";
/// `reset_prompt` (§5.1 dashboard admin config).
pub const RESET_PROMPT: &str = "reset_prompt";
/// `list_interventions` (§5.1 dashboard admin config).
pub const LIST_INTERVENTIONS: &str = "list_interventions";
/// `update_intervention_status` (§5.1 dashboard admin config).
pub const UPDATE_INTERVENTION_STATUS: &str = "update_intervention_status";
/// `list_integrations` (§5.1 dashboard admin config).
pub const LIST_INTEGRATIONS: &str = "list_integrations";
/// `list_dashboard_users` (§5.1 dashboard admin config).
pub const LIST_DASHBOARD_USERS: &str = "list_dashboard_users";
/// `invite_dashboard_user` (§5.1 dashboard admin config).
pub const INVITE_DASHBOARD_USER: &str = "invite_dashboard_user";
/// `set_dashboard_user_role` (§5.1 dashboard admin config).
pub const SET_DASHBOARD_USER_ROLE: &str = "set_dashboard_user_role";
/// `remove_dashboard_user` (§5.1 dashboard admin config).
pub const REMOVE_DASHBOARD_USER: &str = "remove_dashboard_user";
/// `get_access_policy` (§5.1 dashboard admin config).
pub const GET_ACCESS_POLICY: &str = "get_access_policy";
/// `update_access_policy` (§5.1 dashboard admin config).
pub const UPDATE_ACCESS_POLICY: &str = "update_access_policy";
/// Integration-declared member directory (the A.7 builders look for it).
pub const SEARCH_MEMBERS: &str = "search_members";
/// Integration-declared company directory (the A.7 builders look for it).
pub const SEARCH_COMPANIES: &str = "search_companies";
/// Legacy create fallback of the request queue (integration-declared).
pub const CREATE_FULFILLMENT_REQUEST: &str = "create_fulfillment_request";
/// Legacy list fallback of the request queue (integration-declared).
pub const LIST_MY_FULFILLMENT_REQUESTS: &str = "list_my_fulfillment_requests";
/// Legacy cancel fallback of the request queue (integration-declared).
pub const DELETE_MY_FULFILLMENT_REQUEST: &str = "delete_my_fulfillment_request";
