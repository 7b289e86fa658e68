//! What the kernel needs from the tool surface: the definitions offered to
//! the model this turn and a way to execute a call. The tool catalog, tier
//! gating and the dispatch gate live behind [`AgentTools`]; the kernel only
//! guarantees that a name it did not offer is answered `Unknown tool: …`
//! without reaching any handler.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ai::chat::ToolDefinition;

/// An image a tool produced for the channel (root-int/1 `images[]`): never
/// shown to the model, forwarded as an attachment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolImage {
    /// Optional file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Base64 payload.
    pub base64: String,
    /// MIME type, e.g. `image/png`.
    #[serde(rename = "contentType")]
    pub content_type: String,
}

/// `execute → {success, data?, error?, error_detail?, images?}` (§5).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Did the action happen / the lookup work?
    pub success: bool,
    /// Payload for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Model-facing error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Operator-facing detail (HTTP status, body, …): logged and traced,
    /// stripped before the result enters the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_detail: Option<String>,
    /// Side-channel images for the channel; stripped from the transcript.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
}

impl ToolResult {
    /// What failed, for WARN logs: the `error_detail` prefix before `:`
    /// (`timeout`, `network`, `http 503 from POST /x`, `bad_response`, …)
    /// cut to 60 characters — never the rest, which may quote the
    /// arguments and so member text. `failed` without a detail.
    pub fn failure_kind(&self) -> String {
        match self.error_detail.as_deref() {
            None => "failed".into(),
            Some(d) => d
                .split(':')
                .next()
                .unwrap_or("")
                .trim()
                .chars()
                .take(60)
                .collect(),
        }
    }

    /// A successful result carrying `data`.
    pub fn ok(data: Value) -> ToolResult {
        ToolResult {
            success: true,
            data: Some(data),
            ..ToolResult::default()
        }
    }

    /// A failed result with a model-facing message.
    pub fn failed(error: impl Into<String>) -> ToolResult {
        ToolResult {
            success: false,
            error: Some(error.into()),
            ..ToolResult::default()
        }
    }

    /// The JSON the model sees: `success`, `data`, `error` — never
    /// `error_detail`, never `images`.
    pub fn model_view(&self) -> Value {
        let mut out = Map::new();
        out.insert("success".into(), Value::Bool(self.success));
        if let Some(data) = &self.data {
            out.insert("data".into(), data.clone());
        }
        if let Some(error) = &self.error {
            out.insert("error".into(), Value::String(error.clone()));
        }
        Value::Object(out)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// L5: the log kind of a failure never carries what follows the prefix.
    #[test]
    fn failure_kind_is_the_detail_prefix_only() {
        let mut r = ToolResult::failed("x");
        r.error_detail = Some("http 500 from POST /tools/lookup: my card is 4111".into());
        assert_eq!(r.failure_kind(), "http 500 from POST /tools/lookup");
        r.error_detail =
            Some("Invalid arguments for book_room: invalid type: string \"my secret\"".into());
        assert_eq!(r.failure_kind(), "Invalid arguments for book_room");
        r.error_detail = None;
        assert_eq!(r.failure_kind(), "failed");
    }

    #[test]
    fn model_view_strips_error_detail_and_images() {
        let result = ToolResult {
            success: false,
            data: None,
            error: Some("Lookup failed".into()),
            error_detail: Some("HTTP 500 from https://backend/secret".into()),
            images: vec![ToolImage {
                name: None,
                base64: "AAAA".into(),
                content_type: "image/png".into(),
            }],
        };
        assert_eq!(
            result.model_view(),
            json!({"success": false, "error": "Lookup failed"})
        );
    }
}
