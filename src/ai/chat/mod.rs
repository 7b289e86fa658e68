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
//!
//! Layout: this file holds the client itself (construction, settings, the
//! [`LlmClient`] trait and the `llm:<purpose>` span around every call);
//! `wire.rs` the transcript and request/response types with their
//! (de)serialization; `client.rs` the non-streamed call and its helpers;
//! `stream.rs` the streamed call, its SSE parser and its assembler.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::http::{AiError, AiHttp, DEFAULT_CONNECT_TIMEOUT, Endpoint, Timeouts};
use super::usage::UsageRecorder;
use crate::config::{LlmConfig, ModelRoles};
use crate::trace::{self, SpanKind};

mod client;
mod stream;
mod wire;

pub use client::{chat_json_budgets, parse_json_reply};
pub use stream::ChatDelta;
pub use wire::{
    ChatMessage, ChatRequest, ChatResponse, ContentPart, ImageUrl, JsonSchema, ToolCall,
    ToolChoice, ToolDefinition, UserContent,
};

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

#[cfg(test)]
mod tests;
