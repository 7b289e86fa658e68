//! A tool's answer (§7.3): one JSON object, or an NDJSON stream of
//! `progress` lines ending in a `result` line — read under the per-line and
//! whole-stream caps, each line parsed once (large ones on the blocking
//! pool). Separate from the HTTP client so the parsing can be read,
//! tested and fuzzed on its own.

use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::sync::mpsc;

use super::client::{
    InvokeFailure, MAX_NDJSON_LINE_BYTES, MAX_NDJSON_STREAM_BYTES, MAX_PROGRESS_CHARS,
    NDJSON_CONTENT_TYPE,
};
use crate::outbound::body;
use crate::outbound::{LineSplitter, error_chain};
use crate::platform::tool_result::{ToolImage, ToolResult};

pub(super) fn is_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(NDJSON_CONTENT_TYPE))
        })
}

/// `{success, data?, error?, images?}` (a `type` field is ignored).
pub(super) fn parse_tool_result(value: Value) -> Result<ToolResult, InvokeFailure> {
    let Value::Object(mut obj) = value else {
        return Err(InvokeFailure::BadResponse("expected a JSON object".into()));
    };
    let Some(success) = obj.get("success").and_then(Value::as_bool) else {
        return Err(InvokeFailure::BadResponse(
            "missing boolean \"success\"".into(),
        ));
    };
    let data = obj.remove("data").filter(|d| !d.is_null());
    let error = match obj.remove("error") {
        None | Some(Value::Null) => None,
        // A blank error says nothing: a failure then gets the fallback text.
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    };
    let images = match obj.remove("images") {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|i| match serde_json::from_value::<ToolImage>(i) {
                Ok(img) => Some(img),
                Err(e) => {
                    tracing::warn!(error = %e, "tool image skipped");
                    None
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(ToolResult {
        success,
        data,
        error: if success {
            error
        } else {
            Some(error.unwrap_or_else(|| "The tool reported a failure without details.".into()))
        },
        error_detail: None,
        images,
    })
}

/// Read an NDJSON answer until its `result` line, under the per-line and
/// whole-stream caps.
pub(super) async fn read_ndjson(
    mut resp: reqwest::Response,
    progress: Option<&mpsc::Sender<String>>,
) -> Result<ToolResult, InvokeFailure> {
    let mut lines = LineSplitter::new(MAX_NDJSON_LINE_BYTES, MAX_NDJSON_STREAM_BYTES);
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let complete = lines
                    .push(&chunk)
                    .map_err(|e| InvokeFailure::BadResponse(format!("stream refused: {e}")))?;
                for line in complete {
                    if let Some(result) = ndjson_line_sized(line, progress).await? {
                        return Ok(result);
                    }
                }
            }
            Ok(None) => {
                if let Some(line) = lines.finish()
                    && let Some(result) = ndjson_line_sized(line, progress).await?
                {
                    return Ok(result);
                }
                return Err(InvokeFailure::BadResponse(
                    "stream ended without a result line".into(),
                ));
            }
            Err(e) => {
                return Err(InvokeFailure::BadResponse(format!(
                    "stream broke before a result line: {}",
                    error_chain(&e)
                )));
            }
        }
    }
}

/// [`ndjson_line`], on the blocking pool for lines over
/// [`body::BLOCKING_PARSE_BYTES`].
async fn ndjson_line_sized(
    line: Vec<u8>,
    progress: Option<&mpsc::Sender<String>>,
) -> Result<Option<ToolResult>, InvokeFailure> {
    let tx = progress.cloned();
    body::parse_sized(line.len(), move || ndjson_line(&line, tx.as_ref()))
        .await
        .map_err(|e| InvokeFailure::BadResponse(format!("stream line parsing aborted: {e}")))?
}

/// One NDJSON line of a streaming tool answer: progress is forwarded, the
/// result returned, anything else (blank, not JSON, unknown type) ignored.
/// Public as the unit the fuzz harness (`fuzz/`) feeds arbitrary lines to.
pub fn ndjson_line(
    line: &[u8],
    progress: Option<&mpsc::Sender<String>>,
) -> Result<Option<ToolResult>, InvokeFailure> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else {
        tracing::debug!("stray non-JSON line in a tool stream ignored");
        return Ok(None);
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("progress") => {
            let message: String = obj
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .chars()
                .take(MAX_PROGRESS_CHARS)
                .collect();
            if !message.is_empty()
                && let Some(tx) = progress
                && let Err(e) = tx.try_send(message)
            {
                tracing::debug!(error = %e, "progress message dropped");
            }
            Ok(None)
        }
        Some("result") => parse_tool_result(Value::Object(obj)).map(Some),
        _ => Ok(None),
    }
}
