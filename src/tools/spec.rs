//! The tool model (§5): a core tool is a name, a description, parameters
//! as JSON Schema generated from its Rust argument type, and an executor.
//! Arguments are deserialized into that type before the handler runs, so a
//! handler only ever sees valid input and the model gets a clear failed
//! result for anything else — never a panic.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;
use storage::RedbStore;
use uuid::Uuid;

use super::gating::Surface;
use crate::agent::ToolResult;
use crate::ai::chat::{ChatClient, ToolDefinition};
use crate::platform::clock::Clock;
use crate::platform::notify::{InterventionFanOut, NotificationSink};
use crate::platform::tiers::Tier;
use crate::retrieval::Retrieval;
use crate::slack::Workspaces;

/// The platform services handlers use.
#[derive(Clone)]
pub struct ToolServices {
    /// Rows.
    pub store: RedbStore,
    /// Search.
    pub retrieval: Retrieval,
    /// LLM (web research).
    pub llm: ChatClient,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Admin notices (persisted first, then best-effort).
    pub sinks: Arc<dyn NotificationSink>,
    /// Intervention sinks (§15.2: the escalations webhook, …), best-effort
    /// in the background after the row is stored.
    pub interventions: InterventionFanOut,
    /// `PLATFORM_BASE_URL`, for links members open.
    pub platform_base_url: String,
    /// The tenants' Slack workspaces (Slack-only tools, admin messaging).
    pub slack: Workspaces,
    /// The durable queues (admin DM broadcasts).
    pub queues: crate::queue::Queues,
}

/// Who the turn is for and where it runs (handlers' data-scope checks).
#[derive(Clone, Debug, Default)]
pub struct TurnPrincipal {
    /// `principals.id`, when the principal has a row.
    pub id: Option<Uuid>,
    /// Stable ref (`U…`, `email:<addr>`, integration ref).
    pub principal_ref: String,
    /// Display name.
    pub display_name: Option<String>,
    /// The member's tier (an access level; gating maps it to the
    /// manifest tier).
    pub tier: Tier,
    /// Admin principal.
    pub is_admin: bool,
    /// Slack user id.
    pub slack_user_id: Option<String>,
    /// Email.
    pub email: Option<String>,
}

/// Everything a handler may look at besides its arguments.
#[derive(Clone)]
pub struct TurnContext {
    /// The tenant (handlers also run inside its task-local scope).
    pub tenant_id: Uuid,
    /// Who asks.
    pub principal: TurnPrincipal,
    /// The builder the surface came from.
    pub surface: Surface,
    /// Conversation id (a Slack channel id: `D…` for DMs).
    pub channel_id: Option<String>,
    /// The member's current message.
    pub user_message: String,
    /// Source types `search_knowledge_base` is scoped to (§5.2).
    pub knowledge_source_types: Option<Vec<String>>,
    /// Names on this turn's surface (filled by `TurnTools::new`); member
    /// action alerts may only watch these.
    pub surface_tools: Vec<String>,
    /// Services.
    pub services: ToolServices,
    /// Where the answer goes (thread, progress line).
    pub delivery: Delivery,
    /// Email turns: who wrote and for whom (§7.3 `email_delegation`, sent
    /// with every integration invocation; `None` on other channels).
    pub email_delegation: Option<crate::integrations::EmailDelegation>,
}

/// Where a turn's answer is delivered, for tools that report progress
/// (root-int/1 NDJSON `progress` lines, §7.3) or need the Slack thread.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    /// The Slack thread the reply goes to (`thread_ts` of §7.3).
    pub thread_ts: Option<String>,
    /// Progress messages for the member's "working…" line.
    pub progress: Option<tokio::sync::mpsc::Sender<String>>,
    /// Tool starts and ends, for clients that show the turn live (the web
    /// chat's NDJSON stream). Sent without waiting: a slow reader loses
    /// events, never delays a tool.
    pub events: Option<tokio::sync::mpsc::Sender<ToolEvent>>,
}

/// A tool call starting or ending (see [`Delivery::events`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolEvent {
    /// The call passed the gates and its handler starts.
    Started {
        /// Tool name.
        name: String,
    },
    /// The handler (or a gate) answered.
    Finished {
        /// Tool name.
        name: String,
        /// Did it succeed?
        success: bool,
    },
}

/// A platform-implemented tool.
#[async_trait]
pub trait CoreTool: Send + Sync {
    /// The §5.1 name.
    fn name(&self) -> &'static str;
    /// What the model reads.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments.
    fn parameters(&self) -> Value;
    /// Run with raw arguments (validated by [`parse_args`] inside).
    async fn execute(&self, args: Value, ctx: &TurnContext) -> ToolResult;
    /// Validate raw arguments exactly as [`CoreTool::execute`] does first,
    /// without running the handler (no storage, no services): `Err` is the
    /// failed result the model would get.
    fn validate_args(&self, args: Value) -> Result<(), ToolResult>;

    /// The definition offered to the model.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().into(),
            description: self.description().into(),
            parameters: self.parameters(),
        }
    }
}

/// A core tool with typed arguments — how every §5.1 handler is written.
/// The JSON Schema comes from `Args` and the arguments are deserialized
/// into it before [`TypedTool::run`], so a handler only ever sees valid
/// input; the blanket [`CoreTool`] impl does both.
#[async_trait]
pub trait TypedTool: Send + Sync {
    /// The argument type (its doc comments become the schema's descriptions).
    type Args: DeserializeOwned + JsonSchema + Send;
    /// The §5.1 name.
    fn name(&self) -> &'static str;
    /// What the model reads.
    fn description(&self) -> &'static str;
    /// Run with validated arguments.
    async fn run(&self, args: Self::Args, ctx: &TurnContext) -> ToolResult;
}

#[async_trait]
impl<T: TypedTool> CoreTool for T {
    fn name(&self) -> &'static str {
        TypedTool::name(self)
    }
    fn description(&self) -> &'static str {
        TypedTool::description(self)
    }
    fn parameters(&self) -> Value {
        params_schema::<T::Args>()
    }
    async fn execute(&self, args: Value, ctx: &TurnContext) -> ToolResult {
        match parse_args::<T::Args>(TypedTool::name(self), args) {
            Ok(a) => self.run(a, ctx).await,
            Err(r) => r,
        }
    }
    fn validate_args(&self, args: Value) -> Result<(), ToolResult> {
        parse_args::<T::Args>(TypedTool::name(self), args).map(drop)
    }
}

/// JSON Schema (draft 7, sub-schemas inlined, no `$schema`/`title`) of
/// `T`, as chat-completions tool parameters expect it.
pub fn params_schema<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft07()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = serde_json::to_value(schema).unwrap_or(Value::Null);
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    value
}

/// A failed result for an internal error: `message` for the model, the
/// error as `error_detail` (logged and traced, never shown to the model).
pub fn internal_failure(tool: &str, message: &str, e: impl std::fmt::Display) -> ToolResult {
    tracing::error!(tool, error = %e, "tool failed");
    ToolResult {
        success: false,
        error: Some(message.into()),
        error_detail: Some(e.to_string()),
        ..ToolResult::default()
    }
}

/// Deserialize `args` into `T`, or a failed result that tells the model
/// what was wrong.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolResult> {
    serde_json::from_value(args).map_err(|e| {
        tracing::info!(tool, error = %e, "invalid tool arguments");
        ToolResult::failed(format!(
            "Invalid arguments for {tool}: {e}. Check the tool's parameters and call it again."
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Arguments of a test tool.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// What to look for.
        query: String,
        /// At most this many.
        limit: Option<u32>,
    }

    #[test]
    fn schema_is_a_plain_object_schema_with_docs() {
        let s = params_schema::<Args>();
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none());
        assert_eq!(s["properties"]["query"]["type"], "string");
        assert_eq!(s["properties"]["query"]["description"], "What to look for.");
        assert_eq!(s["required"], json!(["query"]));
    }

    #[test]
    fn invalid_arguments_become_a_clear_failed_result() {
        let err = parse_args::<Args>("search", json!({"limit": "ten"}))
            .err()
            .unwrap();
        assert!(!err.success);
        let msg = err.error.unwrap();
        assert!(msg.starts_with("Invalid arguments for search:"), "{msg}");
        assert!(parse_args::<Args>("search", json!({"query": "x", "bogus": 1})).is_err());
        let ok: Args = parse_args("search", json!({"query": "parking", "limit": 3})).unwrap();
        assert_eq!((ok.query.as_str(), ok.limit), ("parking", Some(3)));
    }

    struct Search;

    #[async_trait]
    impl TypedTool for Search {
        type Args = Args;
        fn name(&self) -> &'static str {
            "search"
        }
        fn description(&self) -> &'static str {
            "Search."
        }
        async fn run(&self, args: Args, _ctx: &TurnContext) -> ToolResult {
            ToolResult::ok(json!({ "query": args.query }))
        }
    }

    #[test]
    fn validate_args_checks_the_args_type_without_running_the_handler() {
        let tool: &dyn CoreTool = &Search;
        assert_eq!(tool.validate_args(json!({"query": "parking"})), Ok(()));
        let err = tool.validate_args(json!({"query": 7})).unwrap_err();
        assert!(!err.success);
        assert!(
            err.error
                .unwrap()
                .starts_with("Invalid arguments for search: invalid type: integer `7`"),
        );
        assert!(tool.validate_args(json!([])).is_err());
    }
}
