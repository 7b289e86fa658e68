//! What a run takes and gives back: the model settings of the loop, the
//! input and options of one `runAgent` call, and the `AgentRun` it returns
//! (text, success, outcome, executed calls, images, recoveries). Separate
//! from the loop itself (`kernel.rs`) so channels and tests read the
//! contract without the mechanics.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::constants::*;
use super::tool::{ExecutedToolCall, ToolCaller, ToolImage};
use crate::ai::chat::{ChatClient, ChatDelta, ChatMessage, ModelRole, ReasoningEffort};

/// Model and sampling settings of the loop (§3.1 agent defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSettings {
    /// Model of the planning and answer rounds (`LLM_MODEL_PLANNER`).
    pub model: String,
    /// Model of the recovery composers B and C (the planner role).
    pub planner_model: String,
    /// `LLM_TEMPERATURE ?? 0`.
    pub temperature: f64,
    /// `LLM_MAX_TOKENS || 16000`.
    pub max_tokens: u32,
    /// `LLM_AGENT_REASONING_EFFORT` (default medium; `None` disables).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Waits before the 2nd and 3rd attempt of a round
    /// ([`LLM_CALL_RETRY_DELAYS_MS`]; tests shorten them).
    pub retry_delays: Vec<Duration>,
}

impl AgentSettings {
    /// The configured agent defaults of `client`.
    pub fn from_client(client: &ChatClient) -> AgentSettings {
        let planner = client
            .model(ModelRole::Planner)
            .unwrap_or_default()
            .to_string();
        AgentSettings {
            model: planner.clone(),
            planner_model: planner,
            temperature: client.agent_temperature(),
            max_tokens: client.agent_max_tokens(),
            reasoning_effort: client.agent_reasoning_effort(),
            retry_delays: LLM_CALL_RETRY_DELAYS_MS
                .iter()
                .map(|ms| Duration::from_millis(*ms))
                .collect(),
        }
    }
}

/// What one run is about.
#[derive(Clone, Debug)]
pub struct AgentInput {
    /// The assembled system prompt (§4.5).
    pub system_prompt: String,
    /// Earlier turns of the conversation, oldest first.
    pub history: Vec<ChatMessage>,
    /// The member's message for this turn.
    pub user_message: ChatMessage,
    /// Who asks, where (handed to every tool call and hook).
    pub caller: ToolCaller,
}

/// Options of one run (`runAgent(context, options)`).
#[derive(Clone, Debug, Default)]
pub struct AgentOptions {
    /// Planning rounds (`max(1, max_iterations ?? 2)`); the follow-up
    /// executor passes 6.
    pub max_iterations: Option<u32>,
    /// Replay mode: post-batch hooks are skipped.
    pub replay: bool,
    /// Receives the answer round's text deltas (web chat streaming).
    pub stream: Option<mpsc::Sender<ChatDelta>>,
}

/// A recovery path that fired (§4.4), in the order it fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Recovery {
    /// A — tool-stall retry.
    ToolStallRetry,
    /// B — exhausted-tools composition.
    ExhaustedToolsComposition,
    /// C — best-effort composition.
    BestEffortComposition,
    /// D — missing-tool-call retry.
    MissingToolCallRetry,
    /// E — fail-closed.
    FailClosed,
    /// F — generic empty retry.
    GenericEmptyRetry,
    /// G — unexecuted-plan retry.
    UnexecutedPlanRetry,
    /// H — the tool-derived fallback message (after B and C).
    ToolDerivedFallback,
    /// I — unresolved tool failures in the last batch.
    UnresolvedToolFailures,
}

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentOutcome {
    /// The model produced the reply (possibly after retries).
    Answered,
    /// A recovery composer or the fallback produced the reply.
    Recovered,
    /// Path E: canned "please try again".
    FailClosed,
    /// Every LLM attempt failed: canned retryable failure, admins notified.
    LlmUnavailable,
    /// No LLM provider configured.
    NotConfigured,
}

/// The result of `runAgent`.
#[derive(Clone, Debug, Serialize)]
pub struct AgentRun {
    /// Per-run UUID (hooks key their rows by it).
    pub run_id: Uuid,
    /// The trace of this run, when tracing is on.
    pub trace_id: Option<Uuid>,
    /// The reply for the member.
    pub text: String,
    /// `false` on E, on LLM failure, and when the last batch left
    /// unresolved tool failures (I).
    pub success: bool,
    /// How the reply came about.
    pub outcome: AgentOutcome,
    /// Every executed tool call, in order.
    pub tool_calls: Vec<ExecutedToolCall>,
    /// Tool images for the channel (never shown to the model).
    pub images: Vec<ToolImage>,
    /// Recovery paths that fired, in order.
    pub recoveries: Vec<Recovery>,
    /// Planning-round texts that came with tool calls (progress messages).
    pub plan_messages: Vec<String>,
    /// LLM requests made by the loop (composers included).
    pub llm_calls: u32,
}
