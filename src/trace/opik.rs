//! Best-effort export of stored traces to Opik (§3.3, only with
//! `OPIK_API_KEY`), on its own task so a slow Opik never delays local
//! writes, let alone a turn.
//!
//! Opik REST API (`OPIK_BASE_URL`, default `https://www.comet.com/opik/api`):
//! `POST /v1/private/traces/batch` `{traces:[…]}`, `POST
//! /v1/private/spans/batch` `{spans:[…]}` (≤ 1000 per request), `PUT
//! /v1/private/traces/feedback-scores` `{scores:[{id,name,value,source}]}`;
//! headers `authorization: <api key>` (no scheme) and `Comet-Workspace`
//! (`OPIK_WORKSPACE`). Ids are our UUID v7s, times ISO-8601, span `type`
//! `general|llm|tool`, LLM spans carry `model`, `usage`
//! (`prompt_tokens`/`completion_tokens`/`total_tokens`) and
//! `total_estimated_cost`. Each request has a 10 s timeout and one retry on
//! a 5xx or network failure; then the batch is dropped with a warning.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use storage::{AgentTrace, AgentTraceSpan, Json, Ts};
use tokio::sync::{mpsc, oneshot};

use super::TraceView;
use crate::config::Secret;

/// Per-request timeout.
pub const OPIK_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause before the one retry.
const RETRY_DELAY: Duration = Duration::from_millis(200);
/// Opik's limit of spans per batch request.
const SPAN_BATCH: usize = 1000;
/// Stored batches waiting for export.
const EXPORT_QUEUE: usize = 256;

/// Where and as whom to export.
pub(super) struct OpikConfig {
    pub base_url: String,
    pub api_key: Secret,
    pub workspace: Option<String>,
    pub project_name: Option<String>,
}

pub(super) enum ExportMsg {
    Traces(Arc<Vec<TraceView>>),
    /// A feedback score logged after its trace was stored.
    Score {
        trace_id: uuid::Uuid,
        name: String,
        value: f64,
    },
    Flush(oneshot::Sender<()>),
}

pub(super) struct OpikExporter {
    http: reqwest::Client,
    cfg: OpikConfig,
}

pub(super) fn spawn(
    rt: &tokio::runtime::Handle,
    exporter: OpikExporter,
) -> mpsc::Sender<ExportMsg> {
    let (tx, mut rx) = mpsc::channel(EXPORT_QUEUE);
    rt.spawn(async move {
        while let Some(msg) = rx.recv().await {
            match msg {
                ExportMsg::Traces(batch) => exporter.export(&batch).await,
                ExportMsg::Score {
                    trace_id,
                    name,
                    value,
                } => exporter.export_score(trace_id, &name, value).await,
                ExportMsg::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    tx
}

#[derive(Debug)]
enum SendError {
    /// Worth one more try (5xx, timeout, connection failure).
    Retryable(String),
    Permanent(String),
}

impl OpikExporter {
    /// The exporter, or the reason its HTTP client could not be built (then
    /// there is no export: a client without the 10 s timeout could hang
    /// the export task forever).
    pub(super) fn new(cfg: OpikConfig) -> Result<OpikExporter, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(OPIK_TIMEOUT)
            .connect_timeout(OPIK_TIMEOUT)
            .build()?;
        Ok(OpikExporter { http, cfg })
    }

    /// One late feedback score (`PUT v1/private/traces/feedback-scores`).
    async fn export_score(&self, trace_id: uuid::Uuid, name: &str, value: f64) {
        let mut score = json!({"id": trace_id, "name": name, "value": value, "source": "sdk"});
        if let Some(p) = self.cfg.project_name.as_deref() {
            score["project_name"] = json!(p);
        }
        if let Err(e) = self
            .send(
                reqwest::Method::PUT,
                "v1/private/traces/feedback-scores",
                json!({ "scores": [score] }),
            )
            .await
        {
            tracing::warn!(error = %e, "Opik export failed: feedback score dropped");
        }
    }

    async fn export(&self, batch: &[TraceView]) {
        let project = self.cfg.project_name.as_deref();
        let traces: Vec<Value> = batch
            .iter()
            .map(|v| trace_json(&v.trace, project))
            .collect();
        if let Err(e) = self
            .send(
                reqwest::Method::POST,
                "v1/private/traces/batch",
                json!({ "traces": traces }),
            )
            .await
        {
            tracing::warn!(error = %e, traces = batch.len(), "Opik export failed: traces dropped");
            return;
        }
        let spans: Vec<Value> = batch
            .iter()
            .flat_map(|v| v.spans.iter())
            .map(|s| span_json(s, project))
            .collect();
        for chunk in spans.chunks(SPAN_BATCH) {
            if let Err(e) = self
                .send(
                    reqwest::Method::POST,
                    "v1/private/spans/batch",
                    json!({ "spans": chunk }),
                )
                .await
            {
                tracing::warn!(error = %e, spans = chunk.len(), "Opik export failed: spans dropped");
            }
        }
        let scores: Vec<Value> = batch
            .iter()
            .flat_map(|v| {
                v.trace.feedback_scores.iter().map(|s| {
                    let mut score = json!({
                        "id": v.trace.id,
                        "name": s.name,
                        "value": s.value,
                        "source": "sdk",
                    });
                    if let Some(p) = project {
                        score["project_name"] = json!(p);
                    }
                    score
                })
            })
            .collect();
        if !scores.is_empty()
            && let Err(e) = self
                .send(
                    reqwest::Method::PUT,
                    "v1/private/traces/feedback-scores",
                    json!({ "scores": scores }),
                )
                .await
        {
            tracing::warn!(error = %e, "Opik export failed: feedback scores dropped");
        }
    }

    /// One request with one retry on a retryable failure.
    async fn send(&self, method: reqwest::Method, path: &str, body: Value) -> Result<(), String> {
        match self.send_once(method.clone(), path, &body).await {
            Ok(()) => Ok(()),
            Err(SendError::Permanent(e)) => Err(e),
            Err(SendError::Retryable(e)) => {
                tracing::debug!(error = %e, path, "Opik request failed; retrying once");
                tokio::time::sleep(RETRY_DELAY).await;
                self.send_once(method, path, &body)
                    .await
                    .map_err(|e| match e {
                        SendError::Retryable(e) | SendError::Permanent(e) => e,
                    })
            }
        }
    }

    async fn send_once(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &Value,
    ) -> Result<(), SendError> {
        let url = format!("{}/{path}", self.cfg.base_url);
        let mut req = self
            .http
            .request(method, &url)
            .header("authorization", self.cfg.api_key.expose())
            .json(body);
        if let Some(ws) = &self.cfg.workspace {
            req = req.header("Comet-Workspace", ws);
        }
        // reqwest errors carry the URL, never headers, so they are safe to log.
        let resp = req
            .send()
            .await
            .map_err(|e| SendError::Retryable(format!("{path}: {e}")))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let text = resp.text().await.unwrap_or_default();
        let msg = format!("{path}: HTTP {status}: {}", truncate(&text, 300));
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            Err(SendError::Retryable(msg))
        } else {
            Err(SendError::Permanent(msg))
        }
    }
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn iso(ts: Ts) -> String {
    ts.to_jiff().to_string()
}

/// Opik's `input`/`output`/`metadata` are JSON objects: other values are
/// wrapped as `{key: value}`, null is left out.
fn object(v: &Json, wrap_as: &str) -> Option<Value> {
    match &v.0 {
        Value::Null => None,
        Value::Object(_) => Some(v.0.clone()),
        other => {
            let mut m = Map::new();
            m.insert(wrap_as.to_string(), other.clone());
            Some(Value::Object(m))
        }
    }
}

fn error_info(error: &Option<String>) -> Option<Value> {
    error.as_ref().map(|e| {
        json!({
            "exception_type": if e == super::CANCELLED { "Cancelled" } else { "Error" },
            "message": e,
            "traceback": "",
        })
    })
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.to_string(), v);
    }
}

pub(super) fn trace_json(t: &AgentTrace, project: Option<&str>) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(t.id));
    put(&mut m, "project_name", project.map(|p| json!(p)));
    m.insert("name".into(), json!(t.name));
    m.insert("start_time".into(), json!(iso(t.started_at)));
    m.insert("end_time".into(), json!(iso(t.ended_at)));
    put(&mut m, "input", object(&t.input, "input"));
    put(&mut m, "output", object(&t.output, "output"));
    let mut metadata = object(&t.metadata, "metadata").unwrap_or_else(|| json!({}));
    metadata["llm_calls"] = json!(t.llm_calls);
    metadata["total_tokens"] = json!(t.total_tokens);
    metadata["cost_usd"] = json!(t.cost_usd);
    m.insert("metadata".into(), metadata);
    put(&mut m, "thread_id", t.thread_id.as_ref().map(|s| json!(s)));
    put(&mut m, "error_info", error_info(&t.error));
    Value::Object(m)
}

pub(super) fn span_json(s: &AgentTraceSpan, project: Option<&str>) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(s.id));
    put(&mut m, "project_name", project.map(|p| json!(p)));
    m.insert("trace_id".into(), json!(s.trace_id));
    put(&mut m, "parent_span_id", s.parent_span_id.map(|p| json!(p)));
    m.insert("name".into(), json!(s.name));
    m.insert("type".into(), json!(s.kind.as_str()));
    m.insert("start_time".into(), json!(iso(s.started_at)));
    m.insert("end_time".into(), json!(iso(s.ended_at)));
    put(&mut m, "input", object(&s.input, "input"));
    put(&mut m, "output", object(&s.output, "output"));
    put(&mut m, "model", s.model.as_ref().map(|x| json!(x)));
    if s.kind == storage::TraceSpanKind::Llm {
        m.insert(
            "usage".into(),
            json!({
                "prompt_tokens": s.prompt_tokens,
                "completion_tokens": s.completion_tokens,
                "total_tokens": s.total_tokens,
            }),
        );
        put(&mut m, "total_estimated_cost", s.cost_usd.map(|c| json!(c)));
    }
    put(&mut m, "error_info", error_info(&s.error));
    Value::Object(m)
}
