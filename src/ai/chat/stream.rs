//! The streamed call ([`ChatClient::chat_stream`]): the Server-Sent Events
//! parser, the assembler that builds a [`ChatResponse`] from stream chunks
//! (tool calls from their fragments, reasoning details merged), and the
//! [`ChatDelta`]s forwarded to the caller as they arrive.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::mpsc;

use super::wire::{
    WireCallPart, WireChunk, arguments_text, choice_error, synthetic_call_id, text_of,
};
use super::{
    ChatClient, ChatRequest, ChatResponse, MAX_SSE_LINE_BYTES, MAX_STREAM_BYTES, ToolCall,
    log_call, traced_call,
};
use crate::ai::http::{self, AiError};
use crate::ai::usage::Usage;
use crate::outbound::LineSplitter;
use crate::trace;

/// A piece of a streamed answer, in arrival order.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatDelta {
    /// Answer text.
    Text(String),
    /// Reasoning text (channels usually do not show it).
    Reasoning(String),
}

impl ChatClient {
    /// One streamed call, metered as `purpose`: text and reasoning deltas
    /// go to `sink` in arrival order while the full [`ChatResponse`] is
    /// assembled (tool calls from their argument fragments, by `index`). A
    /// closed `sink` does not stop the call: the answer still belongs in
    /// the transcript. No bytes for the idle timeout ⇒ [`AiError::Timeout`];
    /// an `{"error":…}` event ⇒ [`AiError::Provider`]; the connection
    /// ending before a finish reason ⇒ [`AiError::Transport`] (retryable).
    pub async fn chat_stream(
        &self,
        purpose: &str,
        request: &ChatRequest,
        sink: &mpsc::Sender<ChatDelta>,
    ) -> Result<ChatResponse, AiError> {
        if !trace::active() {
            return self.chat_stream_once(purpose, request, sink).await;
        }
        let call = self.chat_stream_once(purpose, request, sink);
        traced_call(purpose, request, true, call).await
    }

    async fn chat_stream_once(
        &self,
        purpose: &str,
        request: &ChatRequest,
        sink: &mpsc::Sender<ChatDelta>,
    ) -> Result<ChatResponse, AiError> {
        let started = Instant::now();
        let body = self.wire(request, true);
        let mut resp = self
            .http
            .post_stream("chat/completions", &body, self.stream_timeout)
            .await?;
        let mut parser = SseParser::default();
        let mut asm = StreamAssembler::default();
        let mut done = false;
        while !done {
            let chunk = match tokio::time::timeout(self.stream_idle_timeout, resp.chunk()).await {
                Err(_) => return Err(AiError::Timeout(self.stream_idle_timeout)),
                Ok(Err(e)) => return Err(http::transport_error(e, self.stream_timeout)),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(bytes))) => bytes,
            };
            for data in parser.push(&chunk)? {
                if apply_event(&data, &mut asm, sink).await? {
                    done = true;
                    break;
                }
            }
        }
        if !done && let Some(data) = parser.finish()? {
            done = apply_event(&data, &mut asm, sink).await?;
        }
        if !done && asm.finish_reason.is_none() {
            return Err(AiError::Transport(
                "stream ended before the answer was complete".into(),
            ));
        }
        let usage = asm.usage.as_ref().map(Usage::from_json).unwrap_or_default();
        self.usage.record(purpose, &request.model, &usage).await;
        trace::record_llm_usage(&request.model, usage.for_trace());
        let response = asm.finish(usage);
        log_call(purpose, request, &response, started, true);
        Ok(response)
    }
}

/// Feed one SSE `data` payload to the assembler; `true` on `[DONE]`.
pub(super) async fn apply_event(
    data: &str,
    asm: &mut StreamAssembler,
    sink: &mpsc::Sender<ChatDelta>,
) -> Result<bool, AiError> {
    let data = data.trim();
    if data.is_empty() {
        return Ok(false);
    }
    if data == "[DONE]" {
        return Ok(true);
    }
    let value: Value = serde_json::from_str(data)
        .map_err(|e| AiError::InvalidResponse(format!("stream event is not JSON: {e}")))?;
    if let Some(err) = http::error_in_json(&value) {
        return Err(err);
    }
    let chunk: WireChunk = serde_json::from_value(value)
        .map_err(|e| AiError::InvalidResponse(format!("unexpected stream event: {e}")))?;
    for delta in asm.apply(chunk)? {
        // A closed receiver (client gone) does not abort the answer.
        let _ = sink.send(delta).await;
    }
    Ok(false)
}

/// Splits a Server-Sent Events byte stream into `data` payloads. Comment
/// lines (`: OPENROUTER PROCESSING`), other fields and blank keep-alive
/// lines are skipped; multi-line `data` is joined with `\n`. A line or an
/// event's data over [`MAX_SSE_LINE_BYTES`], or a stream over
/// [`MAX_STREAM_BYTES`], is [`AiError::InvalidResponse`].
pub(crate) struct SseParser {
    lines: LineSplitter,
    data: Option<String>,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser {
            lines: LineSplitter::new(MAX_SSE_LINE_BYTES, MAX_STREAM_BYTES),
            data: None,
        }
    }
}

impl SseParser {
    /// Feed bytes; returns the payloads of the events completed by them.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, AiError> {
        let lines = self
            .lines
            .push(bytes)
            .map_err(|e| AiError::InvalidResponse(format!("event stream refused: {e}")))?;
        let mut events = Vec::new();
        for line in lines {
            let line = String::from_utf8_lossy(&line);
            self.line(line.trim_end_matches('\r'), &mut events)?;
        }
        Ok(events)
    }

    /// The end of the stream: a last event without its blank line.
    pub(crate) fn finish(&mut self) -> Result<Option<String>, AiError> {
        let mut events = Vec::new();
        if let Some(rest) = self.lines.finish() {
            let line = String::from_utf8_lossy(&rest);
            self.line(line.trim_end_matches('\r'), &mut events)?;
        }
        events.extend(self.data.take());
        Ok(events.pop())
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) -> Result<(), AiError> {
        if line.is_empty() {
            events.extend(self.data.take());
        } else if let Some(rest) = line.strip_prefix("data:") {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            match &mut self.data {
                Some(d) => {
                    if d.len() + 1 + rest.len() > MAX_SSE_LINE_BYTES {
                        return Err(AiError::InvalidResponse(format!(
                            "event stream refused: an event's data is over {MAX_SSE_LINE_BYTES} bytes"
                        )));
                    }
                    d.push('\n');
                    d.push_str(rest);
                }
                None => self.data = Some(rest.to_string()),
            }
        }
        // ":" comments, "event:", "id:", "retry:" and stray lines: ignored.
        Ok(())
    }
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Builds a [`ChatResponse`] from stream chunks.
#[derive(Default)]
pub(crate) struct StreamAssembler {
    id: Option<String>,
    model: Option<String>,
    text: String,
    reasoning: Option<String>,
    reasoning_details: Vec<Value>,
    calls: BTreeMap<u64, PartialCall>,
    last_call: Option<u64>,
    finish_reason: Option<String>,
    pub(super) usage: Option<Value>,
}

impl StreamAssembler {
    fn apply(&mut self, chunk: WireChunk) -> Result<Vec<ChatDelta>, AiError> {
        if self.id.is_none() {
            self.id = chunk.id;
        }
        if self.model.is_none() {
            self.model = chunk.model;
        }
        if let Some(u) = chunk.usage.filter(|u| !u.is_null()) {
            self.usage = Some(u);
        }
        let mut deltas = Vec::new();
        // One answer is requested (`n` defaults to 1): choice 0.
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(deltas);
        };
        if let Some(err) = choice.error.as_ref().and_then(choice_error) {
            return Err(err);
        }
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason);
        }
        let Some(delta) = choice.message else {
            return Ok(deltas);
        };
        if let Some(text) = delta
            .content
            .as_ref()
            .and_then(text_of)
            .filter(|t| !t.is_empty())
        {
            self.text.push_str(&text);
            deltas.push(ChatDelta::Text(text));
        }
        if let Some(r) = delta
            .reasoning
            .as_ref()
            .and_then(text_of)
            .filter(|t| !t.is_empty())
        {
            self.reasoning.get_or_insert_with(String::new).push_str(&r);
            deltas.push(ChatDelta::Reasoning(r));
        }
        for detail in delta.reasoning_details.unwrap_or_default() {
            merge_reasoning_detail(&mut self.reasoning_details, detail);
        }
        for part in delta.tool_calls.unwrap_or_default() {
            let index = self.call_index(&part);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = part.id.filter(|id| !id.is_empty()) {
                call.id = Some(id);
            }
            if let Some(f) = part.function {
                if let Some(name) = f.name.filter(|n| !n.is_empty()) {
                    call.name = name;
                }
                call.arguments
                    .push_str(&arguments_text(f.arguments.as_ref()));
            }
            self.last_call = Some(index);
        }
        Ok(deltas)
    }

    /// The call a fragment belongs to: its `index`; without one, the call
    /// with its `id`, a new call for a new `id`, else the latest call.
    fn call_index(&self, part: &WireCallPart) -> u64 {
        if let Some(i) = part.index {
            return i;
        }
        if let Some(id) = part.id.as_deref().filter(|id| !id.is_empty()) {
            if let Some((i, _)) = self.calls.iter().find(|(_, c)| c.id.as_deref() == Some(id)) {
                return *i;
            }
            return self.calls.keys().next_back().map_or(0, |i| i + 1);
        }
        self.last_call.unwrap_or(0)
    }

    pub(super) fn finish(self, usage: Usage) -> ChatResponse {
        ChatResponse {
            id: self.id,
            model: self.model,
            text: self.text,
            tool_calls: self
                .calls
                .into_iter()
                .map(|(index, c)| ToolCall {
                    id: c.id.unwrap_or_else(|| synthetic_call_id(index)),
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
            finish_reason: self.finish_reason,
            reasoning: self.reasoning,
            reasoning_details: self.reasoning_details,
            usage,
        }
    }
}

/// Streamed `reasoning_details` arrive in fragments sharing an `index`:
/// text-like fields (`text`, `summary`, `data`) are concatenated, the rest
/// (`signature`, `format`, `id`, `type`) take the latest value, so the
/// echoed detail equals the non-streamed one.
pub(super) fn merge_reasoning_detail(details: &mut Vec<Value>, detail: Value) {
    let index = detail.get("index").cloned();
    let existing = index.as_ref().and_then(|i| {
        details
            .iter_mut()
            .find(|d| d.get("index") == Some(i) && d.get("type") == detail.get("type"))
    });
    let (Some(Value::Object(target)), Value::Object(fragment)) = (existing, &detail) else {
        details.push(detail);
        return;
    };
    for (key, value) in fragment {
        match (key.as_str(), target.get_mut(key), value) {
            ("text" | "summary" | "data", Some(Value::String(old)), Value::String(more)) => {
                old.push_str(more);
            }
            (_, _, Value::Null) => {}
            _ => {
                target.insert(key.clone(), value.clone());
            }
        }
    }
}
