//! What the kernel needs from the tool surface: the definitions offered to
//! the model this turn and a way to execute a call. The tool catalog, tier
//! gating and the dispatch gate live behind [`AgentTools`]; the kernel only
//! guarantees that a name it did not offer is answered `Unknown tool: …`
//! without reaching any handler.

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::ai::chat::ToolDefinition;
pub use crate::platform::tool_result::{ToolImage, ToolResult};

/// Who is asking and where: what handlers need for their data-scope checks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ToolCaller {
    /// The resolved principal's ref (`email:<addr>`, Slack user id, …).
    pub principal_ref: Option<String>,
    /// The principal's tier (`unresolved`, `public`, a manifest tier, …).
    pub tier: Option<String>,
    /// The channel (`slack`, `email`, `api`, `web`, …).
    pub channel: String,
    /// The channel's conversation id (a Slack channel id such as `D…`).
    pub channel_id: Option<String>,
    /// The member's current message (tools such as `search_current_events`
    /// default to it).
    pub user_message: String,
    /// Why the turn runs on a reserved tier (`identity.degraded`), kept in
    /// the run's trace so the dashboard can show who fell back and why.
    pub degraded: Option<String>,
}

/// The turn's tool surface.
#[async_trait]
pub trait AgentTools: Send + Sync {
    /// The definitions offered to the model in planning rounds. The kernel
    /// answers any other name `Unknown tool: <name>`.
    fn definitions(&self) -> &[ToolDefinition];

    /// Execute one offered call with parsed (possibly `{}`) arguments.
    async fn execute(&self, name: &str, args: Value, caller: &ToolCaller) -> ToolResult;
}

/// A turn with no tools (internal composers, tests).
#[derive(Clone, Debug, Default)]
pub struct NoTools;

#[async_trait]
impl AgentTools for NoTools {
    fn definitions(&self) -> &[ToolDefinition] {
        &[]
    }

    async fn execute(&self, name: &str, _args: Value, _caller: &ToolCaller) -> ToolResult {
        ToolResult::failed(format!("Unknown tool: {name}"))
    }
}

/// One executed call, as the run reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecutedToolCall {
    /// The model's call id.
    pub id: String,
    /// Tool name as the model called it.
    pub name: String,
    /// Parsed arguments (`{}` when malformed).
    pub args: Value,
    /// The full result (incl. `error_detail` and images).
    pub result: ToolResult,
    /// Planning round (1-based) that made the call.
    pub round: u32,
    /// Did `toolCallSignalsEmpty` fire on a successful result?
    pub empty: bool,
    /// Was the transcript copy deep-truncated?
    pub truncated: bool,
    /// Wall time of the handler in milliseconds.
    pub duration_ms: u64,
}
