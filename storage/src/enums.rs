//! CHECK constraints of spec §2 as Rust enums. Each stores and serialises as
//! the spec's exact string; parsing an unknown string is a clear error that
//! names the column and the allowed values.

use crate::error::StorageError;

macro_rules! check_enum {
    ($(#[$meta:meta])* $name:ident ($column:literal) { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* #[doc = concat!("`", $text, "`")] $variant),+ }

        impl $name {
            /// Every allowed value, in the spec's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The column this CHECK constrains.
            pub const COLUMN: &'static str = $column;
            /// The stored string.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = StorageError;
            fn from_str(s: &str) -> Result<Self, StorageError> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(StorageError::Check {
                        column: $column,
                        message: format!(
                            "{other:?} is not one of {}",
                            [$($text),+].join("|")
                        ),
                    }),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        /// In JSON APIs: one of the column's strings.
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": [$($text),+]})
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

check_enum!(
    /// `tenants.status`.
    TenantStatus("tenants.status") { Active = "active", Suspended = "suspended", Provisioning = "provisioning" }
);
check_enum!(
    /// `tenants.environment`, `integrations.environment`, `tenant_api_keys.environment`.
    Environment("environment") { Dev = "dev", Live = "live" }
);
check_enum!(
    /// `integrations.status`.
    IntegrationStatus("integrations.status") { Active = "active", Disabled = "disabled", Pending = "pending" }
);
check_enum!(
    /// `conversation_logs.channel`, `human_interventions.channel`.
    Channel("channel") { Slack = "slack", Email = "email", Api = "api", Web = "web" }
);
check_enum!(
    /// `conversation_logs.direction`.
    Direction("direction") { Inbound = "inbound", Outbound = "outbound" }
);
check_enum!(
    /// `agent_trace_spans.kind` (Opik's span `type`; not a spec table).
    TraceSpanKind("agent_trace_spans.kind") { General = "general", Llm = "llm", Tool = "tool" }
);
check_enum!(
    /// `tenant_users.role`.
    TenantRole("tenant_users.role") { Owner = "owner", Admin = "admin", Viewer = "viewer", Member = "member" }
);
check_enum!(
    /// `tenant_channels.type`.
    ChannelType("tenant_channels.type") { Slack = "slack", Email = "email", Web = "web" }
);
check_enum!(
    /// `tenant_channels.status`.
    ChannelStatus("tenant_channels.status") { Active = "active", Disabled = "disabled" }
);
check_enum!(
    /// `member_preferences.preference_type`.
    PreferenceType("member_preferences.preference_type") {
        NicknameAlias = "nickname_alias", Formatting = "formatting", Tone = "tone",
        Workflow = "workflow", Naming = "naming", Custom = "custom"
    }
);
check_enum!(
    /// `member_preferences.channel_scope`.
    ChannelScope("member_preferences.channel_scope") { All = "all", Slack = "slack", Email = "email" }
);
check_enum!(
    /// `follow_ups.schedule_type`.
    ScheduleType("follow_ups.schedule_type") { Once = "once", Recurring = "recurring" }
);
check_enum!(
    /// `follow_ups.status`.
    FollowUpStatus("follow_ups.status") {
        Active = "active", Processing = "processing", Paused = "paused",
        Cancelled = "cancelled", Completed = "completed", Failed = "failed"
    }
);
check_enum!(
    /// `follow_up_runs.status`.
    FollowUpRunStatus("follow_up_runs.status") {
        Processing = "processing", Sent = "sent", Failed = "failed", Cancelled = "cancelled", Skipped = "skipped"
    }
);
check_enum!(
    /// `human_interventions.category`.
    InterventionCategory("human_interventions.category") {
        Request = "request", Escalation = "escalation", MissingTool = "missing_tool",
        SystemFailure = "system_failure", MistakeReport = "mistake_report"
    }
);
check_enum!(
    /// `human_interventions.status`.
    InterventionStatus("human_interventions.status") {
        Open = "open", InProgress = "in_progress", Resolved = "resolved", Dismissed = "dismissed", Cancelled = "cancelled"
    }
);
check_enum!(
    /// `reply_mentions.matched_via`.
    MatchedVia("reply_mentions.matched_via") { SlackId = "slack_id", Name = "name" }
);
check_enum!(
    /// `reply_source_usage.source_type`.
    SourceUsageType("reply_source_usage.source_type") { SlackMessage = "slack_message", KnowledgePage = "knowledge_page" }
);
check_enum!(
    /// `knowledge_sources.source_kind`.
    SourceKind("knowledge_sources.source_kind") { WebPage = "web_page", ApiPull = "api_pull", Webhook = "webhook", ApiPush = "api_push" }
);
check_enum!(
    /// `knowledge_sources.status`.
    SourceStatus("knowledge_sources.status") { Active = "active", Paused = "paused", Error = "error" }
);
check_enum!(
    /// `knowledge_sources.http_method`.
    HttpMethod("knowledge_sources.http_method") { Get = "GET", Post = "POST" }
);
check_enum!(
    /// `knowledge_sources.auth_type`.
    AuthType("knowledge_sources.auth_type") { None = "none", Bearer = "bearer", Basic = "basic", ApiKey = "api_key" }
);
check_enum!(
    /// `knowledge_sources.response_mode`.
    ResponseMode("knowledge_sources.response_mode") { Auto = "auto", Html = "html", Text = "text", Json = "json" }
);
check_enum!(
    /// `knowledge_sync_runs.trigger_type`.
    SyncTrigger("knowledge_sync_runs.trigger_type") { Manual = "manual", Schedule = "schedule", Api = "api", Webhook = "webhook" }
);
check_enum!(
    /// `knowledge_sync_runs.status`.
    SyncRunStatus("knowledge_sync_runs.status") {
        Queued = "queued", Running = "running", Succeeded = "succeeded", Triggered = "triggered", Failed = "failed"
    }
);
check_enum!(
    /// `slack_thread_artifacts.kind`.
    ArtifactKind("slack_thread_artifacts.kind") { Thread = "thread", Burst = "burst" }
);
check_enum!(
    /// `slack_knowledge_extractions.status`.
    ExtractionStatus("slack_knowledge_extractions.status") {
        Pending = "pending", Approved = "approved", Rejected = "rejected", Merged = "merged", Duplicate = "duplicate"
    }
);
check_enum!(
    /// `api_request_usage.surface`.
    ApiSurface("api_request_usage.surface") {
        RestAgentTurn = "rest_agent_turn", RestToolExecute = "rest_tool_execute",
        McpAskAgent = "mcp_ask_agent", McpCallTool = "mcp_call_tool"
    }
);
check_enum!(
    /// `queue_job_events.status`.
    JobEventStatus("queue_job_events.status") { Completed = "completed", Failed = "failed" }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_parse_the_spec_strings_and_reject_others() {
        assert_eq!(
            "api_push".parse::<SourceKind>().unwrap(),
            SourceKind::ApiPush
        );
        assert_eq!(HttpMethod::Post.as_str(), "POST");
        let err = "paused".parse::<TenantStatus>().unwrap_err().to_string();
        assert!(
            err.contains("tenants.status") && err.contains("active|suspended|provisioning"),
            "{err}"
        );
        for c in Channel::ALL {
            assert_eq!(c.as_str().parse::<Channel>().unwrap(), *c);
        }
    }

    #[test]
    fn enums_serialise_as_their_strings() {
        assert_eq!(
            serde_json::to_string(&InterventionCategory::MissingTool).unwrap(),
            "\"missing_tool\""
        );
        assert!(serde_json::from_str::<Environment>("\"prod\"").is_err());
    }
}

macro_rules! enum_default {
    ($($name:ident :: $variant:ident),* $(,)?) => {$(
        impl Default for $name {
            /// The spec's column DEFAULT (or the first allowed value when none is given).
            fn default() -> Self { $name::$variant }
        }
    )*};
}
enum_default!(
    TenantStatus::Active,
    Environment::Live,
    IntegrationStatus::Active,
    Channel::Api,
    Direction::Inbound,
    TenantRole::Member,
    ChannelType::Web,
    ChannelStatus::Active,
    PreferenceType::Custom,
    ChannelScope::All,
    ScheduleType::Once,
    FollowUpStatus::Active,
    FollowUpRunStatus::Processing,
    InterventionCategory::Request,
    InterventionStatus::Open,
    MatchedVia::SlackId,
    SourceUsageType::KnowledgePage,
    SourceKind::ApiPush,
    SourceStatus::Active,
    HttpMethod::Get,
    AuthType::None,
    ResponseMode::Auto,
    SyncTrigger::Manual,
    SyncRunStatus::Queued,
    ArtifactKind::Thread,
    ExtractionStatus::Pending,
    ApiSurface::RestAgentTurn,
    JobEventStatus::Completed,
    TraceSpanKind::General,
);
