//! Tracing of agent runs (§3.3): a trace per run with nested spans
//! (`planning_round_N`, `answer_phase`, `tool:<name>`, recovery composers,
//! LLM calls, embedding batches), token usage and cost on LLM spans, and
//! feedback scores.
//!
//! The current trace and span are tokio task-locals, like the tenant and the
//! usage collector: [`Tracer::run`] opens a trace around a future and
//! [`span`] nests a span inside whatever is current. Outside a trace every
//! function here is a cheap no-op, so code can be instrumented
//! unconditionally.
//!
//! INTERFACE ONLY in this commit: the recording side (redb tables, Opik
//! export, retention) is being implemented on the `tracing` branch.

use std::future::Future;

use serde_json::Value;
use uuid::Uuid;

use crate::ai::usage::Usage;

/// What a span represents (Opik's span `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    /// Phases, composers, hooks.
    General,
    /// One LLM or embeddings call; carries model, usage and cost.
    Llm,
    /// One tool execution (`tool:<name>`).
    Tool,
}

/// The opening facts of a trace.
#[derive(Clone, Debug, Default)]
pub struct TraceStart {
    /// e.g. `agent.run`
    pub name: String,
    /// What the run was asked (user message, channel, …).
    pub input: Value,
    /// Free-form metadata (channel, principal ref, tier, …).
    pub metadata: Value,
    /// Conversation/thread key, when the run belongs to one.
    pub thread_id: Option<String>,
}

/// Records traces for the current tenant. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Tracer {}

impl Tracer {
    /// A tracer that records nothing.
    pub fn disabled() -> Tracer {
        Tracer {}
    }

    /// Run `fut` inside a new trace for the current tenant. When a trace is
    /// already current, `fut` simply runs inside it (no nested traces).
    pub async fn run<F: Future>(&self, _start: TraceStart, fut: F) -> F::Output {
        fut.await
    }
}

/// The id of the current trace (§3.3 `getCurrentTraceId`), `None` outside a
/// trace or when tracing is off.
pub fn current_trace_id() -> Option<Uuid> {
    None
}

/// Run `fut` as a child span of the current span (or of the trace).
pub async fn span<F: Future>(_name: &str, _kind: SpanKind, _input: Value, fut: F) -> F::Output {
    fut.await
}

/// Set the output of the current span.
pub fn set_span_output(_output: Value) {}

/// Attach model, token usage and cost to the current span (an LLM span).
pub fn record_llm_usage(_model: &str, _usage: &Usage) {}

/// Set the output of the current trace (the final reply, success flag, …).
pub fn set_trace_output(_output: Value) {}

/// Attach a feedback score to the current trace (§3.3 `logFeedbackScore`).
pub fn log_feedback_score(_name: &str, _value: f64) {}
