//! The LLM chat client (§3.1): one wrapper over an OpenAI-compatible
//! `POST {base}/chat/completions` (OpenRouter by default), used by the agent
//! loop (§4), the reranker (§10.1) and every helper that asks a model.
//!
//! * [`ChatClient::chat`] sends one [`ChatRequest`] and returns the whole
//!   [`ChatResponse`]: text, tool calls with their raw argument strings (the
//!   loop parses them and maps malformed ones to `{}`, §4.3), finish reason,
//!   the reasoning to echo on the next turn, and usage.
//! * [`ChatClient::chat_stream`] sends the same request with `stream: true`,
//!   forwards text deltas to a caller's channel as they arrive (the web
//!   channel) and assembles the same [`ChatResponse`], tool calls included.
//! * Helpers: [`ChatClient::chat_text`], [`ChatClient::chat_json`]
//!   (structured output with repair retries), [`ChatClient::chat_vision`].
//!
//! Every call is metered through [`UsageRecorder::record`] under the
//! caller's `purpose`. The client does not retry provider failures: it
//! classifies them ([`AiError::is_retryable`]) and the caller owns the
//! policy (the agent loop's `LLM_CALL_RETRY_DELAYS_MS`, §4.2; a queue job's
//! attempts). Without `OPENROUTER_API_KEY` every call fails at once with
//! [`AiError::NotConfigured`] and nothing is sent.
//!
//! The agent kernel depends on the [`LlmClient`] trait, so its tests can
//! drive it with a scripted model (GUIDE §5).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::http::{self, AiError, AiHttp, DEFAULT_CONNECT_TIMEOUT, Endpoint, Timeouts};
use super::usage::{Usage, UsageRecorder};
use crate::config::{LlmConfig, ModelRoles};
use crate::outbound::LineSplitter;
use crate::trace::{self, SpanKind};

/// Bound of one non-streaming call, body included: long answers with
/// reasoning take a minute on slow models; two minutes is the ceiling
/// before the loop's retry is the better bet.
pub const CHAT_TIMEOUT: Duration = Duration::from_secs(120);
/// A stream with no bytes for this long is dead. OpenRouter sends
/// `: OPENROUTER PROCESSING` comments while the model thinks, so silence
/// means a stuck connection, not a slow model.
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound of a whole streamed answer (streams exist for long answers).
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(300);
/// Largest non-streamed chat completion body (the longest answer the
/// token ceilings allow is well under 1 MiB).
pub const MAX_CHAT_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// Longest Server-Sent Events line (and event data) of a streamed answer.
pub const MAX_SSE_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Largest streamed answer, every event's envelope included.
pub const MAX_STREAM_BYTES: u64 = 64 * 1024 * 1024;
/// Agent loop temperature when `LLM_TEMPERATURE` is unset (spec `?? 0`).
pub const AGENT_DEFAULT_TEMPERATURE: f64 = 0.0;
/// Agent loop `max_tokens` when `LLM_MAX_TOKENS` is unset (spec `|| 16000`);
/// also the helpers' base budget.
pub const AGENT_DEFAULT_MAX_TOKENS: u32 = 16_000;
/// Reasoning effort of the helpers when the caller sets none (§3.1).
pub const HELPER_REASONING_EFFORT: ReasoningEffort = ReasoningEffort::Low;
/// `chat_json`: repair retries after the first attempt (§3.1 "up to 3").
pub const CHAT_JSON_MAX_REPAIRS: usize = 3;
/// `chat_json`: ceiling of the escalated budget, `min(base*2, 96000)`.
pub const CHAT_JSON_MAX_TOKENS_CEILING: u32 = 96_000;
/// At most this much of an invalid structured reply is echoed back in the
/// repair request: enough to show the mistake without re-sending a runaway.
const REPAIR_ECHO_CHARS: usize = 16_000;

/// A model role of §3.1; each maps to an `LLM_MODEL_*` setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ModelRole {
    /// `LLM_MODEL_DEFAULT`
    #[default]
    Default,
    /// `LLM_MODEL_PLANNER`: the agent loop and recovery composers.
    Planner,
    /// `LLM_MODEL_SEARCH`: rerank and search-side helpers.
    Search,
    /// `LLM_MODEL_WRITING`
    Writing,
    /// `LLM_MODEL_REASONING`
    Reasoning,
    /// `LLM_MODEL_VISION`
    Vision,
    /// `LLM_MODEL_IMAGE_GENERATION` (unset ⇒ no model)
    ImageGeneration,
    /// `LLM_MODEL_WEB_RESEARCH`
    WebResearch,
    /// `LLM_MODEL_WORK_SAVED`
    WorkSaved,
}

impl ModelRole {
    /// The configured model of this role; `None` only for image generation
    /// when `LLM_MODEL_IMAGE_GENERATION` is unset.
    pub fn model(self, roles: &ModelRoles) -> Option<&str> {
        Some(match self {
            ModelRole::Default => &roles.default,
            ModelRole::Planner => &roles.planner,
            ModelRole::Search => &roles.search,
            ModelRole::Writing => &roles.writing,
            ModelRole::Reasoning => &roles.reasoning,
            ModelRole::Vision => &roles.vision,
            ModelRole::ImageGeneration => return roles.image_generation.as_deref(),
            ModelRole::WebResearch => &roles.web_research,
            ModelRole::WorkSaved => &roles.work_saved,
        })
    }
}

/// `reasoning: { effort }`; [`ReasoningEffort::None`] omits the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReasoningEffort {
    /// No `reasoning` field (the provider's default behaviour).
    None,
    /// `minimal`
    Minimal,
    /// `low`
    Low,
    /// `medium`
    Medium,
    /// `high`
    High,
}

impl ReasoningEffort {
    /// Read a setting: `none` and the empty string disable (§3.1); an
    /// unknown word is `None` (the config layer rejects those at start).
    pub fn parse(s: &str) -> Option<ReasoningEffort> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "none" => Some(ReasoningEffort::None),
            "minimal" => Some(ReasoningEffort::Minimal),
            "low" => Some(ReasoningEffort::Low),
            "medium" => Some(ReasoningEffort::Medium),
            "high" => Some(ReasoningEffort::High),
            _ => None,
        }
    }

    /// The wire word, `None` when the field is omitted.
    pub fn as_wire(self) -> Option<&'static str> {
        match self {
            ReasoningEffort::None => None,
            ReasoningEffort::Minimal => Some("minimal"),
            ReasoningEffort::Low => Some("low"),
            ReasoningEffort::Medium => Some("medium"),
            ReasoningEffort::High => Some("high"),
        }
    }
}

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

/// A piece of a streamed answer, in arrival order.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatDelta {
    /// Answer text.
    Text(String),
    /// Reasoning text (channels usually do not show it).
    Reasoning(String),
}

/// What the agent kernel needs from a model; [`ChatClient`] is the real one.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// One call; see [`ChatClient::chat`].
    async fn chat(&self, purpose: &str, request: &ChatRequest) -> Result<ChatResponse, AiError>;

    /// One streamed call; see [`ChatClient::chat_stream`].
    async fn chat_stream(
        &self,
        purpose: &str,
        request: &ChatRequest,
        sink: &mpsc::Sender<ChatDelta>,
    ) -> Result<ChatResponse, AiError>;
}

/// Options of the helpers; unset fields take the configured defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatOptions {
    /// Model role (default: [`ModelRole::Default`]; vision: [`ModelRole::Vision`]).
    pub role: Option<ModelRole>,
    /// An explicit model id; wins over `role`.
    pub model: Option<String>,
    /// Default: `LLM_TEMPERATURE` (omitted when unset).
    pub temperature: Option<f64>,
    /// Default: `LLM_MAX_TOKENS`, else [`AGENT_DEFAULT_MAX_TOKENS`].
    pub max_tokens: Option<u32>,
    /// Default: [`HELPER_REASONING_EFFORT`] (low).
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// The chat-completions client. Cheap to clone (shared connection pool).
#[derive(Clone)]
pub struct ChatClient {
    http: AiHttp,
    usage: UsageRecorder,
    models: ModelRoles,
    provider: Option<Value>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    agent_reasoning_effort: Option<ReasoningEffort>,
    timeout: Duration,
    stream_idle_timeout: Duration,
    stream_timeout: Duration,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("http", &self.http)
            .field("models", &self.models)
            .finish_non_exhaustive()
    }
}

/// The request body as sent.
#[derive(Serialize)]
struct WireRequest<'a> {
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
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    finish_reason: Option<String>,
    /// `message` in an answer, `delta` in a stream chunk.
    #[serde(default, alias = "delta")]
    message: Option<WireMessage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    reasoning_details: Option<Vec<Value>>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCallPart>>,
}

/// A tool call, or a fragment of one in a stream.
#[derive(Deserialize)]
struct WireCallPart {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionPart>,
}

#[derive(Deserialize)]
struct WireFunctionPart {
    #[serde(default)]
    name: Option<String>,
    /// A string per the API; some providers send an object, kept as JSON text.
    #[serde(default)]
    arguments: Option<Value>,
}

/// A stream chunk (`object: "chat.completion.chunk"`).
#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<Value>,
}

impl ChatClient {
    /// A client over `http` with the given settings and default timeouts.
    pub fn new(http: AiHttp, usage: UsageRecorder, llm: &LlmConfig) -> Self {
        ChatClient {
            http,
            usage,
            models: llm.models.clone(),
            provider: llm.provider_preferences.clone(),
            temperature: llm.temperature,
            max_tokens: llm.max_tokens,
            agent_reasoning_effort: llm
                .agent_reasoning_effort
                .as_deref()
                .and_then(ReasoningEffort::parse)
                .filter(|e| *e != ReasoningEffort::None),
            timeout: CHAT_TIMEOUT,
            stream_idle_timeout: STREAM_IDLE_TIMEOUT,
            stream_timeout: STREAM_TIMEOUT,
        }
    }

    /// The OpenRouter client of `OPENROUTER_*` / `LLM_*`.
    pub fn from_config(llm: &LlmConfig, usage: UsageRecorder) -> Result<Self, AiError> {
        let timeouts = Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            total: CHAT_TIMEOUT,
        };
        let http = AiHttp::new(Endpoint::openrouter(llm), timeouts)?;
        Ok(Self::new(http, usage, llm))
    }

    /// Override the call timeout, the stream idle timeout and the whole
    /// stream bound (tests use short ones).
    pub fn with_timeouts(
        mut self,
        call: Duration,
        stream_idle: Duration,
        stream: Duration,
    ) -> Self {
        self.timeout = call;
        self.stream_idle_timeout = stream_idle;
        self.stream_timeout = stream;
        self
    }

    /// Override only the non-streaming call timeout (the reranker bounds
    /// its call tighter than an agent round, search must stay fast).
    pub fn with_call_timeout(mut self, call: Duration) -> Self {
        self.timeout = call;
        self
    }

    /// Whether a provider key is configured (otherwise every call is
    /// [`AiError::NotConfigured`]).
    pub fn is_configured(&self) -> bool {
        let e = self.http.endpoint();
        e.api_key.is_some() || e.key_optional
    }

    /// The configured model of `role` (`None`: image generation unset).
    pub fn model(&self, role: ModelRole) -> Option<&str> {
        role.model(&self.models)
    }

    /// `LLM_TEMPERATURE` as configured (`None` when unset).
    pub fn temperature(&self) -> Option<f64> {
        self.temperature
    }

    /// `LLM_MAX_TOKENS` as configured (`None` when unset).
    pub fn max_tokens(&self) -> Option<u32> {
        self.max_tokens
    }

    /// The agent loop's temperature: `LLM_TEMPERATURE ?? 0` (§3.1).
    pub fn agent_temperature(&self) -> f64 {
        self.temperature.unwrap_or(AGENT_DEFAULT_TEMPERATURE)
    }

    /// The agent loop's `max_tokens`: `LLM_MAX_TOKENS || 16000` (§3.1).
    pub fn agent_max_tokens(&self) -> u32 {
        self.max_tokens
            .filter(|n| *n > 0)
            .unwrap_or(AGENT_DEFAULT_MAX_TOKENS)
    }

    /// `LLM_AGENT_REASONING_EFFORT` (default medium; `None` when disabled).
    pub fn agent_reasoning_effort(&self) -> Option<ReasoningEffort> {
        self.agent_reasoning_effort
    }

    fn wire<'a>(&'a self, req: &'a ChatRequest, stream: bool) -> WireRequest<'a> {
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

    /// One non-streamed call, metered as `purpose`. Fails with
    /// [`AiError::NotConfigured`] without a key, a classified [`AiError`]
    /// on provider/transport failure, [`AiError::InvalidResponse`] on an
    /// answer without choices.
    pub async fn chat(
        &self,
        purpose: &str,
        request: &ChatRequest,
    ) -> Result<ChatResponse, AiError> {
        if !trace::active() {
            return self.chat_once(purpose, request).await;
        }
        let call = self.chat_once(purpose, request);
        traced_call(purpose, request, false, call).await
    }

    async fn chat_once(
        &self,
        purpose: &str,
        request: &ChatRequest,
    ) -> Result<ChatResponse, AiError> {
        let started = Instant::now();
        let body = self.wire(request, false);
        let wire: WireResponse = self
            .http
            .post_json(
                "chat/completions",
                &body,
                Some(self.timeout),
                MAX_CHAT_RESPONSE_BYTES,
            )
            .await?;
        // Metered before validation: an unusable answer was still billed.
        let usage = wire
            .usage
            .as_ref()
            .map(Usage::from_json)
            .unwrap_or_default();
        self.usage.record(purpose, &request.model, &usage).await;
        trace::record_llm_usage(&request.model, &usage);
        let response = response_from_wire(wire, usage)?;
        log_call(purpose, request, &response, started, false);
        Ok(response)
    }

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
        trace::record_llm_usage(&request.model, &usage);
        let response = asm.finish(usage);
        log_call(purpose, request, &response, started, true);
        Ok(response)
    }

    fn helper_model(&self, opts: &ChatOptions, default_role: ModelRole) -> Result<String, AiError> {
        if let Some(m) = &opts.model {
            return Ok(m.clone());
        }
        let role = opts.role.unwrap_or(default_role);
        self.model(role).map(str::to_string).ok_or_else(|| {
            AiError::InvalidRequest(format!("no model configured for the {role:?} role"))
        })
    }

    fn helper_request(
        &self,
        opts: &ChatOptions,
        default_role: ModelRole,
        messages: Vec<ChatMessage>,
    ) -> Result<ChatRequest, AiError> {
        Ok(ChatRequest {
            model: self.helper_model(opts, default_role)?,
            messages,
            temperature: opts.temperature.or(self.temperature),
            max_tokens: Some(self.helper_max_tokens(opts)),
            reasoning_effort: Some(opts.reasoning_effort.unwrap_or(HELPER_REASONING_EFFORT)),
            ..ChatRequest::default()
        })
    }

    fn helper_max_tokens(&self, opts: &ChatOptions) -> u32 {
        opts.max_tokens
            .filter(|n| *n > 0)
            .unwrap_or_else(|| self.agent_max_tokens())
    }

    /// `chatText`: a system prompt (omitted when empty) and one user
    /// message; returns the answer text as sent (possibly empty).
    pub async fn chat_text(
        &self,
        purpose: &str,
        system: &str,
        user: &str,
        opts: &ChatOptions,
    ) -> Result<String, AiError> {
        let request = self.helper_request(opts, ModelRole::Default, prompt(system, user))?;
        Ok(self.chat(purpose, &request).await?.text)
    }

    /// `chatVision`: `prompt` plus images (`https://` URLs or
    /// `data:image/…;base64,…` URIs) to the vision model role.
    pub async fn chat_vision(
        &self,
        purpose: &str,
        prompt: &str,
        images: &[String],
        opts: &ChatOptions,
    ) -> Result<String, AiError> {
        if let Some(bad) = images.iter().find(|i| !is_image_ref(i)) {
            let shown: String = bad.chars().take(40).collect();
            return Err(AiError::InvalidRequest(format!(
                "image must be an http(s) URL or a data:image URI, got {shown:?}"
            )));
        }
        let messages = vec![ChatMessage::user_with_images(prompt, images)];
        let request = self.helper_request(opts, ModelRole::Vision, messages)?;
        Ok(self.chat(purpose, &request).await?.text)
    }

    /// `chatJson`: structured output parsed into `T`.
    ///
    /// Sends `response_format: json_schema` and parses the reply (tolerating
    /// a Markdown code fence). When the reply does not parse into `T`, the
    /// bad reply and the error are sent back as a repair request, up to
    /// [`CHAT_JSON_MAX_REPAIRS`] times, so at most 4 requests in all.
    /// Budgets (§3.1 `[base, min(base*2, 96000)]`): the first attempt uses
    /// `base` (`opts.max_tokens`, else `LLM_MAX_TOKENS`, else 16000); every
    /// repair uses `min(base*2, 96000)` (never below `base`), since a reply
    /// cut off at the budget is the commonest cause of invalid JSON.
    /// Exhausted ⇒ [`AiError::StructuredOutput`]; a failed call returns its
    /// own error at once (retrying is the caller's choice).
    pub async fn chat_json<T: DeserializeOwned>(
        &self,
        purpose: &str,
        system: &str,
        user: &str,
        schema: &JsonSchema,
        opts: &ChatOptions,
    ) -> Result<T, AiError> {
        let mut request = self.helper_request(opts, ModelRole::Default, prompt(system, user))?;
        request.response_format = Some(schema.clone());
        let budgets = chat_json_budgets(self.helper_max_tokens(opts));
        let mut last_error = String::new();
        for attempt in 0..=CHAT_JSON_MAX_REPAIRS {
            request.max_tokens = Some(budgets[attempt.min(budgets.len() - 1)]);
            let response = self.chat(purpose, &request).await?;
            match parse_json_reply::<T>(&response.text) {
                Ok(value) => return Ok(value),
                Err(error) => {
                    tracing::warn!(
                        purpose,
                        attempt,
                        finish_reason = response.finish_reason.as_deref().unwrap_or(""),
                        error = %error,
                        "structured output did not parse; asking for a repair"
                    );
                    let cut_off = response.finish_reason.as_deref() == Some("length");
                    if !response.text.trim().is_empty() {
                        let echoed: String =
                            response.text.chars().take(REPAIR_ECHO_CHARS).collect();
                        request.messages.push(ChatMessage::assistant(echoed));
                    }
                    request
                        .messages
                        .push(ChatMessage::user(repair_prompt(&error, cut_off)));
                    last_error = error;
                }
            }
        }
        Err(AiError::StructuredOutput {
            attempts: CHAT_JSON_MAX_REPAIRS + 1,
            message: last_error,
        })
    }
}

#[async_trait]
impl LlmClient for ChatClient {
    async fn chat(&self, purpose: &str, request: &ChatRequest) -> Result<ChatResponse, AiError> {
        ChatClient::chat(self, purpose, request).await
    }

    async fn chat_stream(
        &self,
        purpose: &str,
        request: &ChatRequest,
        sink: &mpsc::Sender<ChatDelta>,
    ) -> Result<ChatResponse, AiError> {
        ChatClient::chat_stream(self, purpose, request, sink).await
    }
}

/// `max_tokens` per `chat_json` attempt: index 0 for the first attempt,
/// the last entry for every repair.
pub fn chat_json_budgets(base: u32) -> [u32; 2] {
    let escalated = base
        .saturating_mul(2)
        .min(CHAT_JSON_MAX_TOKENS_CEILING)
        .max(base);
    [base, escalated]
}

fn prompt(system: &str, user: &str) -> Vec<ChatMessage> {
    let mut messages = Vec::with_capacity(2);
    if !system.trim().is_empty() {
        messages.push(ChatMessage::system(system));
    }
    messages.push(ChatMessage::user(user));
    messages
}

fn is_image_ref(s: &str) -> bool {
    s.starts_with("https://") || s.starts_with("http://") || s.starts_with("data:image/")
}

fn repair_prompt(error: &str, cut_off: bool) -> String {
    let cause = if cut_off {
        "Your previous reply was cut off before the JSON was complete."
    } else {
        "Your previous reply was not valid JSON for the required schema."
    };
    format!(
        "{cause} Error: {error}\nReply again with only the complete, corrected JSON \
         object that matches the schema: no prose, no code fences."
    )
}

/// Parse a structured reply into `T`, tolerating surrounding whitespace and
/// a Markdown code fence (some models add one despite `response_format`).
pub fn parse_json_reply<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the reply was empty".into());
    }
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed);
    serde_json::from_str(unfenced).map_err(|e| e.to_string())
}

/// Run one provider call as an `llm:<purpose>` span (§3.3): the transcript
/// and offered tools as input; text, tool calls and finish reason as output;
/// model and usage recorded by the call itself.
async fn traced_call(
    purpose: &str,
    request: &ChatRequest,
    stream: bool,
    call: impl std::future::Future<Output = Result<ChatResponse, AiError>>,
) -> Result<ChatResponse, AiError> {
    let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    let input = json!({
        "model": request.model,
        "messages": request.messages,
        "tools": tools,
        "stream": stream,
    });
    trace::span(&format!("llm:{purpose}"), SpanKind::Llm, input, async {
        let result = call.await;
        match &result {
            Ok(r) => trace::set_span_output(json!({
                "text": r.text,
                "tool_calls": r.tool_calls,
                "finish_reason": r.finish_reason,
                "model": r.model,
            })),
            Err(e) => trace::set_span_error(&e.to_string()),
        }
        result
    })
    .await
}

fn log_call(purpose: &str, req: &ChatRequest, resp: &ChatResponse, started: Instant, stream: bool) {
    tracing::debug!(
        purpose,
        model = %req.model,
        stream,
        tools_offered = req.tools.len(),
        tool_calls = resp.tool_calls.len(),
        finish_reason = resp.finish_reason.as_deref().unwrap_or(""),
        prompt_tokens = resp.usage.prompt_tokens,
        completion_tokens = resp.usage.completion_tokens,
        cost_usd = resp.usage.cost_usd.unwrap_or(0.0),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "LLM call"
    );
}

/// Text of a `content`/`reasoning` value: a string, or the `text` of each
/// part of an array (some providers send parts), or nothing.
fn text_of(v: &Value) -> Option<String> {
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

fn arguments_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn response_from_wire(wire: WireResponse, usage: Usage) -> Result<ChatResponse, AiError> {
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
fn synthetic_call_id(index: u64) -> String {
    format!("call_{index}")
}

/// `choices[0].error` (OpenRouter reports some upstream failures there).
fn choice_error(error: &Value) -> Option<AiError> {
    http::error_in_json(&json!({"error": error}))
}

/// Feed one SSE `data` payload to the assembler; `true` on `[DONE]`.
async fn apply_event(
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
    usage: Option<Value>,
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

    fn finish(self, usage: Usage) -> ChatResponse {
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
fn merge_reasoning_detail(details: &mut Vec<Value>, detail: Value) {
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

#[cfg(test)]
#[path = "chat_tests.rs"]
mod tests;
