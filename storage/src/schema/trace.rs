//! Agent-run tracing (§3.3): one `agent_traces` row per traced run and one
//! `agent_trace_spans` row per span. Not tables of the spec (which sends
//! traces to Opik only); see `docs/decisions.md`. Both are tenant-scoped and
//! written together, one transaction per trace (or per batch of traces).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::codec::{Json, Ts};
use crate::enums::TraceSpanKind;
use crate::key::{Key, key};
use crate::table::{FkDef, IndexDef, OnDelete, Record, Scope, TableDef};

/// `agent_traces` table name.
pub const AGENT_TRACES: &str = "agent_traces";

/// A named feedback score on a trace (§3.3 `logFeedbackScore`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct TraceFeedbackScore {
    pub name: String,
    pub value: f64,
}

/// `agent_traces` — one traced agent run, with its LLM totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct AgentTrace {
    /// UUID v7 (time-ordered; also the Opik trace id).
    pub id: Uuid,
    pub tenant_id: Uuid,
    /// e.g. `agent.run`
    pub name: String,
    pub input: Json,
    pub output: Json,
    pub metadata: Json,
    pub thread_id: Option<String>,
    pub started_at: Ts,
    pub ended_at: Ts,
    /// `cancelled` when the run's future was dropped before it finished.
    pub error: Option<String>,
    pub feedback_scores: Vec<TraceFeedbackScore>,
    /// LLM/embedding calls recorded in the run.
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    /// Sum of reported costs (calls without a cost add 0).
    pub cost_usd: f64,
}

impl AgentTrace {
    /// index `(tenant_id, started_at)`
    pub const STARTED_AT_IDX: &'static str = "agent_traces_tenant_id_started_at_idx";
}

impl Record for AgentTrace {
    const DEF: TableDef = TableDef {
        name: AGENT_TRACES,
        scope: Scope::Tenant,
        pkey: "agent_traces_pkey",
        indexes: &[IndexDef::secondary(AgentTrace::STARTED_AT_IDX)],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        Some(self.tenant_id)
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().ts(self.started_at))]
    }
}

/// `agent_trace_spans` — one span of a trace, keyed `(trace_id, id)` so a
/// trace's spans are one prefix scan (in creation order: ids are UUID v7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct AgentTraceSpan {
    /// UUID v7 (also the Opik span id).
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub trace_id: Uuid,
    /// `None` for a span directly under the trace.
    pub parent_span_id: Option<Uuid>,
    /// `planning_round_1`, `tool:<name>`, `llm:<purpose>`, `embedding_batch`, …
    pub name: String,
    pub kind: TraceSpanKind,
    pub input: Json,
    pub output: Json,
    /// LLM spans: the requested model.
    pub model: Option<String>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    pub cost_usd: Option<f64>,
    /// Failure text, or `cancelled` when the span's future was dropped.
    pub error: Option<String>,
    pub started_at: Ts,
    pub ended_at: Ts,
}

impl AgentTraceSpan {
    /// FK `trace_id → agent_traces ON DELETE CASCADE`.
    pub const TRACE_FKEY: &'static str = "agent_trace_spans_trace_id_fkey";
}

impl Record for AgentTraceSpan {
    const DEF: TableDef = TableDef {
        name: "agent_trace_spans",
        scope: Scope::Tenant,
        pkey: "agent_trace_spans_pkey",
        indexes: &[],
        fks: &[FkDef {
            name: AgentTraceSpan::TRACE_FKEY,
            parent: AGENT_TRACES,
            on_delete: OnDelete::Cascade,
        }],
    };
    fn tenant(&self) -> Option<Uuid> {
        Some(self.tenant_id)
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.trace_id).uuid(self.id)
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.trace_id))]
    }
}
