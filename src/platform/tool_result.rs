//! The §5 result contract every tool source returns — core handlers,
//! root-int/1 integrations, community builds — and the kernel consumes:
//! `{success, data?, error?, error_detail?, images?}`. At the bottom of the
//! module graph so `integrations` (which turns backend answers into it)
//! need not import the agent kernel.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// An image a tool produced for the channel (root-int/1 `images[]`): never
/// shown to the model, forwarded as an attachment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
