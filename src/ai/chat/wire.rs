//! The chat-completions wire format: the transcript ([`ChatMessage`] and
//! its parts), tools, [`ChatRequest`] / [`ChatResponse`], and the private
//! serde shapes of the request body, the answer and the stream chunk, with
//! the conversion of an answer into a [`ChatResponse`]. Kept apart from the
//! client so the format can be read (and replayed in tests) on its own.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ChatClient, ReasoningEffort};
use crate::ai::http::{self, AiError};
use crate::ai::usage::Usage;

/// One transcript message, serialized exactly as chat-completions expects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    /// Instructions.
    System {
        /// The text.
        content: String,
    },
    /// The member's turn; may carry images (vision).
    User {
        /// Text or text-and-image parts.
        content: UserContent,
    },
    /// A model turn, echoed back on the next round.
    Assistant {
        /// The text (absent on a pure tool-call turn).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Tool calls the model made, echoed so the `tool` messages that
        /// follow can refer to them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The model's reasoning text, echoed as received.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// OpenRouter `reasoning_details`, echoed verbatim: Anthropic and
        /// Gemini reject a tool-result turn whose signed reasoning is missing.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning_details: Vec<Value>,
    },
    /// The result of one tool call.
    Tool {
        /// [`ToolCall::id`] this answers.
        tool_call_id: String,
        /// The serialized result.
        content: String,
    },
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::System {
            content: content.into(),
        }
    }

    /// A plain-text user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::User {
            content: UserContent::Text(content.into()),
        }
    }

    /// A user message with text and images (each an `https://` URL or a
    /// `data:image/…;base64,…` URI).
    pub fn user_with_images(text: impl Into<String>, images: &[String]) -> Self {
        let mut parts = vec![ContentPart::Text { text: text.into() }];
        parts.extend(images.iter().map(|url| ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: url.clone(),
                detail: None,
            },
        }));
        ChatMessage::User {
            content: UserContent::Parts(parts),
        }
    }

    /// A plain-text assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
            reasoning: None,
            reasoning_details: Vec::new(),
        }
    }

    /// A `role: "tool"` result for the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }
}

/// User content: a string, or parts for vision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// `"content": "…"`
    Text(String),
    /// `"content": [{type:"text"…}, {type:"image_url"…}]`
    Parts(Vec<ContentPart>),
}

/// One part of multi-part user content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image by URL or data URI.
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
}

/// `image_url` of a [`ContentPart::ImageUrl`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// `https://…` or `data:image/png;base64,…`
    pub url: String,
    /// `low` / `high` / `auto` (provider default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A tool call made by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "WireToolCall", from = "WireToolCall")]
pub struct ToolCall {
    /// Provider id; the `tool` message answering it carries it back.
    pub id: String,
    /// Tool name as the model wrote it (may be unknown: the loop checks).
    pub name: String,
    /// The raw JSON argument string, unparsed: the loop parses it and maps
    /// malformed arguments to `{}` (§4.3).
    pub arguments: String,
}

#[derive(Serialize, Deserialize)]
struct WireToolCall {
    id: String,
    #[serde(rename = "type", default = "function_type")]
    kind: String,
    function: WireFunction,
}

#[derive(Serialize, Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

fn function_type() -> String {
    "function".to_string()
}

impl From<ToolCall> for WireToolCall {
    fn from(c: ToolCall) -> Self {
        WireToolCall {
            id: c.id,
            kind: function_type(),
            function: WireFunction {
                name: c.name,
                arguments: c.arguments,
            },
        }
    }
}

impl From<WireToolCall> for ToolCall {
    fn from(w: WireToolCall) -> Self {
        ToolCall {
            id: w.id,
            name: w.function.name,
            arguments: w.function.arguments,
        }
    }
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "Value")]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// What it does and when to use it (the model reads this).
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl From<ToolDefinition> for Value {
    fn from(t: ToolDefinition) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            }
        })
    }
}

/// `tool_choice`; only sent when tools are offered.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool.
    Function(String),
}

impl Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Function(name) => {
                json!({"type": "function", "function": {"name": name}}).serialize(s)
            }
        }
    }
}

/// `response_format: {type: "json_schema", …}` for structured output.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonSchema {
    /// Schema name (letters, digits, `_`, `-`).
    pub name: String,
    /// The JSON Schema of the reply.
    pub schema: Value,
    /// `strict: true` asks the provider to enforce the schema (OpenAI rules:
    /// every property required, `additionalProperties: false`).
    pub strict: bool,
}

impl JsonSchema {
    /// A strict schema.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        JsonSchema {
            name: name.into(),
            schema,
            strict: true,
        }
    }

    /// The `response_format` value.
    pub fn response_format(&self) -> Value {
        json!({
            "type": "json_schema",
            "json_schema": {"name": self.name, "strict": self.strict, "schema": self.schema}
        })
    }
}

/// One chat-completions call. The client adds `provider` (from
/// `OPENROUTER_PROVIDER_PREFERENCES`), `usage: {include: true}` and the
/// streaming fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// Model id (see [`ChatClient::model`]).
    pub model: String,
    /// The transcript.
    pub messages: Vec<ChatMessage>,
    /// Tools offered. Empty ⇒ `tools` and `tool_choice` are omitted entirely
    /// (the answer round, §4.1).
    pub tools: Vec<ToolDefinition>,
    /// Sent only with tools; `None` ⇒ provider default (`auto`).
    pub tool_choice: Option<ToolChoice>,
    /// `None` ⇒ omitted (provider default).
    pub temperature: Option<f64>,
    /// `None` ⇒ omitted (provider default).
    pub max_tokens: Option<u32>,
    /// `None` or [`ReasoningEffort::None`] ⇒ no `reasoning` field.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Structured output.
    pub response_format: Option<JsonSchema>,
}

impl ChatRequest {
    /// A request with everything else at its default.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        ChatRequest {
            model: model.into(),
            messages,
            ..ChatRequest::default()
        }
    }
}

/// What the model answered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatResponse {
    /// Provider generation id (`gen-…` on OpenRouter).
    pub id: Option<String>,
    /// The model that actually answered, as the provider names it.
    pub model: Option<String>,
    /// The answer text (`""` when the model only called tools).
    pub text: String,
    /// Tool calls in the model's order (`index` order when streamed).
    pub tool_calls: Vec<ToolCall>,
    /// `stop`, `tool_calls`, `length`, … as sent.
    pub finish_reason: Option<String>,
    /// Reasoning text, when the provider returns it.
    pub reasoning: Option<String>,
    /// `reasoning_details` to echo on the next turn.
    pub reasoning_details: Vec<Value>,
    /// Tokens and cost as reported (zeros when the provider reported none).
    pub usage: Usage,
}

impl ChatResponse {
    /// The assistant message to append to the transcript before the tool
    /// results: text, tool calls and reasoning exactly as received.
    pub fn to_assistant_message(&self) -> ChatMessage {
        ChatMessage::Assistant {
            content: (!self.text.is_empty()).then(|| self.text.clone()),
            tool_calls: self.tool_calls.clone(),
            reasoning: self.reasoning.clone(),
            reasoning_details: self.reasoning_details.clone(),
        }
    }
}

/// The request body as sent.
#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [ToolDefinition],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a Value>,
    usage: Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
}

/// A non-streamed answer. `choices` is required so that an `{"error":…}`
/// body with status 200 is reported as the provider error it is.
#[derive(Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    choices: Vec<WireChoice>,
    #[serde(default)]
    pub(super) usage: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireChoice {
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
    /// `message` in an answer, `delta` in a stream chunk.
    #[serde(default, alias = "delta")]
    pub(super) message: Option<WireMessage>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireMessage {
    #[serde(default)]
    pub(super) content: Option<Value>,
    #[serde(default)]
    pub(super) reasoning: Option<Value>,
    #[serde(default)]
    pub(super) reasoning_details: Option<Vec<Value>>,
    #[serde(default)]
    pub(super) tool_calls: Option<Vec<WireCallPart>>,
}

/// A tool call, or a fragment of one in a stream.
#[derive(Deserialize)]
pub(super) struct WireCallPart {
    #[serde(default)]
    pub(super) index: Option<u64>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunctionPart>,
}

#[derive(Deserialize)]
pub(super) struct WireFunctionPart {
    #[serde(default)]
    pub(super) name: Option<String>,
    /// A string per the API; some providers send an object, kept as JSON text.
    #[serde(default)]
    pub(super) arguments: Option<Value>,
}

/// A stream chunk (`object: "chat.completion.chunk"`).
#[derive(Deserialize)]
pub(super) struct WireChunk {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) choices: Vec<WireChoice>,
    #[serde(default)]
    pub(super) usage: Option<Value>,
}

impl ChatClient {
    pub(super) fn wire<'a>(&'a self, req: &'a ChatRequest, stream: bool) -> WireRequest<'a> {
        let with_tools = !req.tools.is_empty();
        WireRequest {
            model: &req.model,
            messages: &req.messages,
            tools: &req.tools,
            tool_choice: req.tool_choice.as_ref().filter(|_| with_tools),
            temperature: req.temperature,
            max_tokens: req.max_tokens,
            reasoning: req
                .reasoning_effort
                .and_then(ReasoningEffort::as_wire)
                .map(|effort| json!({"effort": effort})),
            response_format: req
                .response_format
                .as_ref()
                .map(JsonSchema::response_format),
            provider: self.provider.as_ref(),
            usage: json!({"include": true}),
            stream,
            stream_options: stream.then(|| json!({"include_usage": true})),
        }
    }
}

/// Text of a `content`/`reasoning` value: a string, or the `text` of each
/// part of an array (some providers send parts), or nothing.
pub(super) fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let s: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!s.is_empty()).then_some(s)
        }
        _ => None,
    }
}

pub(super) fn arguments_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

pub(super) fn response_from_wire(
    wire: WireResponse,
    usage: Usage,
) -> Result<ChatResponse, AiError> {
    let Some(choice) = wire.choices.into_iter().next() else {
        return Err(AiError::InvalidResponse("an answer without choices".into()));
    };
    if let Some(err) = choice.error.as_ref().and_then(choice_error) {
        return Err(err);
    }
    let message = choice.message.unwrap_or_default();
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let index = c.index.unwrap_or(i as u64);
            let function = c.function.as_ref();
            ToolCall {
                id: c
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| synthetic_call_id(index)),
                name: function.and_then(|f| f.name.clone()).unwrap_or_default(),
                arguments: arguments_text(function.and_then(|f| f.arguments.as_ref())),
            }
        })
        .collect();
    Ok(ChatResponse {
        id: wire.id,
        model: wire.model,
        text: message
            .content
            .as_ref()
            .and_then(text_of)
            .unwrap_or_default(),
        tool_calls,
        finish_reason: choice.finish_reason,
        reasoning: message.reasoning.as_ref().and_then(text_of),
        reasoning_details: message.reasoning_details.unwrap_or_default(),
        usage,
    })
}

/// A tool call without a provider id still needs one for its `tool` reply.
pub(super) fn synthetic_call_id(index: u64) -> String {
    format!("call_{index}")
}

/// `choices[0].error` (OpenRouter reports some upstream failures there).
pub(super) fn choice_error(error: &Value) -> Option<AiError> {
    http::error_in_json(&json!({"error": error}))
}
