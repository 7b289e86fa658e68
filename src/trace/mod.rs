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
//! Flow: a run records into an in-memory buffer (no I/O on the turn's path).
//! When the run ends, the buffered trace goes to one background writer
//! (`writer.rs`) over a bounded channel — never blocking the turn: a full
//! channel drops the trace with a warning. The writer stores each batch of
//! queued traces (rows of `agent_traces` + `agent_trace_spans`) in one redb
//! transaction, then hands them to the Opik exporter (`opik.rs`) when
//! `OPIK_API_KEY` is set. [`Tracer::prune_expired`] applies
//! `TRACE_RETENTION_DAYS` (run by `queue-metrics`).
//!
//! A span's parent is the span current in the polling task when the span
//! starts; each span's future runs in its own task-local scope, so spans
//! polled together (`join_all`) each get the right parent. A `tokio::spawn`ed
//! task starts outside the trace unless wrapped in [`in_current_span`].

mod opik;
mod writer;

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use storage::{Json, RedbStore, StorageResult, TraceFeedbackScore, TraceSpanKind};
use uuid::Uuid;

pub use storage::{AgentTrace, AgentTraceSpan};

use crate::config::Config;
use crate::platform::clock::Clock;
use crate::platform::tenancy;

/// Error text of a span or trace whose future was dropped before finishing.
pub const CANCELLED: &str = "cancelled";

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

impl SpanKind {
    fn stored(self) -> TraceSpanKind {
        match self {
            SpanKind::General => TraceSpanKind::General,
            SpanKind::Llm => TraceSpanKind::Llm,
            SpanKind::Tool => TraceSpanKind::Tool,
        }
    }
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

/// One recorded trace with its spans (creation order).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceView {
    /// The `agent_traces` row.
    pub trace: AgentTrace,
    /// Its `agent_trace_spans` rows.
    pub spans: Vec<AgentTraceSpan>,
}

impl TraceView {
    /// The first span named `name`, if any (handy in tests).
    pub fn span(&self, name: &str) -> Option<&AgentTraceSpan> {
        self.spans.iter().find(|s| s.name == name)
    }
}

/// Records traces for the current tenant. Cheap to clone.
#[derive(Clone, Default)]
pub struct Tracer {
    recorder: Option<Arc<writer::Recorder>>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

impl Tracer {
    /// A tracer that records nothing.
    pub fn disabled() -> Tracer {
        Tracer { recorder: None }
    }

    /// The tracer `config` asks for: disabled when `ROOT_TRACING=off`,
    /// otherwise recording into `store` (and exporting to Opik when
    /// `OPIK_API_KEY` is set). Starts the background writer, so it must be
    /// called inside a tokio runtime; outside one it returns a disabled
    /// tracer (logged).
    pub fn from_config(config: &Config, store: RedbStore, clock: Arc<dyn Clock>) -> Tracer {
        if !config.tracing_enabled {
            return Tracer::disabled();
        }
        let exporter = config.opik_api_key.as_ref().and_then(|key| {
            opik::OpikExporter::new(opik::OpikConfig {
                base_url: config.opik_base_url.clone(),
                api_key: key.clone(),
                workspace: config.opik_workspace.clone(),
                project_name: config.opik_project_name.clone(),
            })
            .inspect_err(|e| {
                tracing::warn!(error = %e, "Opik HTTP client not built: traces are kept locally only");
            })
            .ok()
        });
        match writer::Recorder::start(store, clock, config.trace_retention_days, exporter) {
            Some(r) => Tracer {
                recorder: Some(Arc::new(r)),
            },
            None => {
                tracing::warn!("no tokio runtime: agent tracing is off");
                Tracer::disabled()
            }
        }
    }

    /// Whether this tracer records anything.
    pub fn is_enabled(&self) -> bool {
        self.recorder.is_some()
    }

    /// Run `fut` inside a new trace for the current tenant. When a trace is
    /// already current, `fut` simply runs inside it (no nested traces).
    /// Without a tenant context or when disabled, `fut` just runs.
    pub async fn run<F: Future>(&self, start: TraceStart, fut: F) -> F::Output {
        let Some(recorder) = &self.recorder else {
            return fut.await;
        };
        if CURRENT.try_with(|_| ()).is_ok() {
            return fut.await;
        }
        let Ok(tenant_id) = tenancy::current_tenant_id() else {
            return fut.await;
        };
        let buffer = Arc::new(Buffer::open(recorder.clock().clone(), tenant_id, start));
        let mut guard = TraceGuard {
            recorder: recorder.clone(),
            buffer: buffer.clone(),
            done: false,
        };
        let current = Current { buffer, span: None };
        let out = CURRENT.scope(current, fut).await;
        guard.finish(None);
        out
    }

    /// A recorded trace of the current tenant (`None`: unknown id, another
    /// tenant's trace, no tenant context, or tracing off). Traces still
    /// queued for the writer are not visible yet: see [`Tracer::flush`].
    pub async fn get(&self, trace_id: Uuid) -> StorageResult<Option<TraceView>> {
        match (&self.recorder, tenancy::current_tenant_id()) {
            (Some(r), Ok(tenant)) => r.get(tenant, trace_id).await,
            _ => Ok(None),
        }
    }

    /// Attach a feedback score to a trace whose run has ended (§3.3
    /// `logFeedbackScore` from a channel handler); stored after the trace
    /// itself, replacing a score of the same name, and exported to Opik.
    pub fn add_feedback_score(&self, tenant: Uuid, trace_id: Uuid, name: &str, value: f64) {
        if let Some(r) = &self.recorder {
            r.score(tenant, trace_id, name, value);
        }
    }

    /// The current tenant's most recent traces (by start), newest first,
    /// without their spans.
    pub async fn recent(&self, limit: usize) -> StorageResult<Vec<AgentTrace>> {
        match (&self.recorder, tenancy::current_tenant_id()) {
            (Some(r), Ok(tenant)) => r.recent(tenant, limit).await,
            _ => Ok(Vec::new()),
        }
    }

    /// Wait until every trace handed to the writer so far is stored (and,
    /// with Opik configured, its export attempted).
    pub async fn flush(&self) {
        if let Some(r) = &self.recorder {
            r.flush().await;
        }
    }

    /// Delete traces (and their spans) that started more than
    /// `TRACE_RETENTION_DAYS` ago, tenant by tenant. Returns how many.
    pub async fn prune_expired(&self) -> StorageResult<usize> {
        match &self.recorder {
            Some(r) => r.prune_expired().await,
            None => Ok(0),
        }
    }
}

/// The trace being recorded by one run, shared by every span of it.
struct Buffer {
    clock: Arc<dyn Clock>,
    state: Mutex<Recording>,
}

struct Recording {
    trace: AgentTrace,
    /// Spans in creation order, each with "still open".
    spans: Vec<(AgentTraceSpan, bool)>,
    /// Set when the trace was handed to the writer; later changes are ignored.
    finished: bool,
}

impl Buffer {
    fn open(clock: Arc<dyn Clock>, tenant_id: Uuid, start: TraceStart) -> Buffer {
        let now = clock.now();
        Buffer {
            state: Mutex::new(Recording {
                trace: AgentTrace {
                    id: Uuid::now_v7(),
                    tenant_id,
                    name: start.name,
                    input: Json(start.input),
                    output: Json(Value::Null),
                    metadata: Json(start.metadata),
                    thread_id: start.thread_id,
                    started_at: now,
                    ended_at: now,
                    ..AgentTrace::default()
                },
                spans: Vec::new(),
                finished: false,
            }),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Recording> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn trace_id(&self) -> Uuid {
        self.lock().trace.id
    }

    /// Run `f` on the open span `id` (no-op once the trace is finished).
    fn with_span(&self, id: Uuid, f: impl FnOnce(&mut AgentTraceSpan)) {
        let mut st = self.lock();
        if st.finished {
            return;
        }
        if let Some((span, _)) = st.spans.iter_mut().rev().find(|(s, _)| s.id == id) {
            f(span);
        }
    }

    fn with_trace(&self, f: impl FnOnce(&mut AgentTrace)) {
        let mut st = self.lock();
        if !st.finished {
            f(&mut st.trace);
        }
    }

    fn open_span(&self, parent: Option<Uuid>, name: &str, kind: SpanKind, input: Value) -> Uuid {
        let id = Uuid::now_v7();
        let now = self.clock.now();
        let mut st = self.lock();
        if !st.finished {
            let span = AgentTraceSpan {
                id,
                tenant_id: st.trace.tenant_id,
                trace_id: st.trace.id,
                parent_span_id: parent,
                name: name.to_string(),
                kind: kind.stored(),
                input: Json(input),
                output: Json(Value::Null),
                started_at: now,
                ended_at: now,
                ..AgentTraceSpan::default()
            };
            st.spans.push((span, true));
        }
        id
    }

    fn end_span(&self, id: Uuid, error: Option<&str>) {
        let now = self.clock.now();
        let mut st = self.lock();
        if st.finished {
            return;
        }
        if let Some((span, open)) = st.spans.iter_mut().rev().find(|(s, _)| s.id == id) {
            span.ended_at = now;
            if let Some(e) = error {
                span.error = Some(e.to_string());
            }
            *open = false;
        }
    }

    /// Close the trace (and any span still open) and take its contents.
    fn finish(&self, error: Option<&str>) -> Option<TraceView> {
        let now = self.clock.now();
        let mut st = self.lock();
        if st.finished {
            return None;
        }
        st.finished = true;
        st.trace.ended_at = now;
        if let Some(e) = error {
            st.trace.error = Some(e.to_string());
        }
        let spans = std::mem::take(&mut st.spans)
            .into_iter()
            .map(|(mut span, open)| {
                if open {
                    span.ended_at = now;
                    span.error.get_or_insert_with(|| "unfinished".to_string());
                }
                span
            })
            .collect();
        Some(TraceView {
            trace: st.trace.clone(),
            spans,
        })
    }
}

/// What the current task is recording into.
#[derive(Clone)]
struct Current {
    buffer: Arc<Buffer>,
    /// The innermost span (`None`: directly under the trace).
    span: Option<Uuid>,
}

tokio::task_local! {
    static CURRENT: Current;
}

fn current() -> Option<Current> {
    CURRENT.try_with(Current::clone).ok()
}

/// Ends the trace on every exit: normally, or `cancelled` when the run's
/// future is dropped mid-way.
struct TraceGuard {
    recorder: Arc<writer::Recorder>,
    buffer: Arc<Buffer>,
    done: bool,
}

impl TraceGuard {
    fn finish(&mut self, error: Option<&str>) {
        self.done = true;
        if let Some(view) = self.buffer.finish(error) {
            self.recorder.submit(view);
        }
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Some(CANCELLED));
        }
    }
}

/// Ends a span on every exit (`cancelled` when its future is dropped).
struct SpanGuard {
    buffer: Arc<Buffer>,
    id: Uuid,
    done: bool,
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        if !self.done {
            self.buffer.end_span(self.id, Some(CANCELLED));
        }
    }
}

/// Whether the caller runs inside a trace (lets call sites skip building
/// span inputs when nothing would record them).
pub fn active() -> bool {
    CURRENT.try_with(|_| ()).is_ok()
}

/// The id of the current trace (§3.3 `getCurrentTraceId`), `None` outside a
/// trace or when tracing is off.
pub fn current_trace_id() -> Option<Uuid> {
    CURRENT.try_with(|c| c.buffer.trace_id()).ok()
}

/// Run `fut` as a child span of the current span (or of the trace).
pub async fn span<F: Future>(name: &str, kind: SpanKind, input: Value, fut: F) -> F::Output {
    let Some(parent) = current() else {
        return fut.await;
    };
    let id = parent.buffer.open_span(parent.span, name, kind, input);
    let mut guard = SpanGuard {
        buffer: parent.buffer.clone(),
        id,
        done: false,
    };
    let inner = Current {
        buffer: parent.buffer,
        span: Some(id),
    };
    let out = CURRENT.scope(inner, fut).await;
    guard.done = true;
    guard.buffer.end_span(id, None);
    out
}

/// Carry the current trace and span into `fut`, for work handed to
/// `tokio::spawn` (task-locals do not cross spawns). Spans it records after
/// the trace ended are ignored.
pub fn in_current_span<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    let cur = current();
    async move {
        match cur {
            Some(c) => CURRENT.scope(c, fut).await,
            None => fut.await,
        }
    }
}

/// Set the output of the current span (no-op directly under the trace).
pub fn set_span_output(output: Value) {
    let _ = CURRENT.try_with(|c| {
        if let Some(id) = c.span {
            c.buffer.with_span(id, |s| s.output = Json(output));
        }
    });
}

/// Mark the current span — or the trace, directly under it — as failed.
pub fn set_span_error(error: &str) {
    let _ = CURRENT.try_with(|c| match c.span {
        Some(id) => c
            .buffer
            .with_span(id, |s| s.error = Some(error.to_string())),
        None => c.buffer.with_trace(|t| t.error = Some(error.to_string())),
    });
}

/// What one LLM call used, as the trace records it (the AI layer converts
/// its provider `Usage` into this, so tracing does not depend on `ai`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LlmUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Reported cost, when the provider reported one.
    pub cost_usd: Option<f64>,
}

/// Attach model, token usage and cost to the current span (an LLM span),
/// and add them to the trace's totals.
pub fn record_llm_usage(model: &str, usage: LlmUsage) {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let _ = CURRENT.try_with(|c| {
        if let Some(id) = c.span {
            c.buffer.with_span(id, |s| {
                s.model = Some(model.to_string());
                s.prompt_tokens = s.prompt_tokens.saturating_add(count(usage.prompt_tokens));
                s.completion_tokens = s
                    .completion_tokens
                    .saturating_add(count(usage.completion_tokens));
                s.total_tokens = s.total_tokens.saturating_add(count(usage.total_tokens));
                if let Some(cost) = usage.cost_usd {
                    s.cost_usd = Some(s.cost_usd.unwrap_or(0.0) + cost);
                }
            });
        }
        c.buffer.with_trace(|t| {
            t.llm_calls += 1;
            t.prompt_tokens = t.prompt_tokens.saturating_add(count(usage.prompt_tokens));
            t.completion_tokens = t
                .completion_tokens
                .saturating_add(count(usage.completion_tokens));
            t.total_tokens = t.total_tokens.saturating_add(count(usage.total_tokens));
            t.cost_usd += usage.cost_usd.unwrap_or(0.0);
        });
    });
}

/// Set the output of the current trace (the final reply, success flag, …).
pub fn set_trace_output(output: Value) {
    let _ = CURRENT.try_with(|c| c.buffer.with_trace(|t| t.output = Json(output)));
}

/// Attach a feedback score to the current trace (§3.3 `logFeedbackScore`);
/// a second score of the same name replaces the first.
pub fn log_feedback_score(name: &str, value: f64) {
    let _ = CURRENT.try_with(|c| {
        c.buffer.with_trace(|t| {
            t.feedback_scores.retain(|s| s.name != name);
            t.feedback_scores.push(TraceFeedbackScore {
                name: name.to_string(),
                value,
            });
        })
    });
}

#[cfg(test)]
mod tests;
