//! What the API shows of sources and runs: never a secret value (only
//! which secrets are set), never request header values (they often carry
//! credentials), never pushed document bodies (their count instead).

use serde::Serialize;
use serde_json::{Map, Value, json};
use storage::{KnowledgeSource, KnowledgeSyncRun, Ts};
use uuid::Uuid;

use super::sources::{SECRET_KEYS, secret_set};

/// A source as the API shows it: no secret values.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SourceView {
    id: Uuid,
    source_key: String,
    name: String,
    source_kind: &'static str,
    status: &'static str,
    url: Option<String>,
    http_method: &'static str,
    /// Header names; values hidden.
    request_headers: Value,
    request_body: Option<Value>,
    auth_type: &'static str,
    auth_config: Value,
    /// Which secret keys are set.
    secrets_set: Vec<String>,
    response_mode: &'static str,
    mapping: Value,
    schedule_interval_minutes: Option<i32>,
    next_sync_at: Option<Ts>,
    replace_missing: bool,
    ai_cleanup: bool,
    ai_cleanup_instructions: Option<String>,
    consecutive_failures: i32,
    last_synced_at: Option<Ts>,
    last_error: Option<String>,
    created_at: Ts,
    updated_at: Ts,
}

impl From<&KnowledgeSource> for SourceView {
    fn from(s: &KnowledgeSource) -> Self {
        let headers = s
            .request_headers
            .expose()
            .0
            .as_object()
            .map(|o| {
                o.keys()
                    .map(|k| (k.clone(), json!("[hidden]")))
                    .collect::<Map<_, _>>()
            })
            .unwrap_or_default();
        SourceView {
            id: s.id,
            source_key: s.source_key.clone(),
            name: s.name.clone(),
            source_kind: s.source_kind.as_str(),
            status: s.status.as_str(),
            url: s.url.clone(),
            http_method: s.http_method.as_str(),
            request_headers: Value::Object(headers),
            request_body: s.request_body.as_ref().map(|b| b.0.clone()),
            auth_type: s.auth_type.as_str(),
            auth_config: s.auth_config.0.clone(),
            secrets_set: SECRET_KEYS
                .iter()
                .filter(|k| secret_set(s, k))
                .map(|k| k.to_string())
                .collect(),
            response_mode: s.response_mode.as_str(),
            mapping: s.mapping.0.clone(),
            schedule_interval_minutes: s.schedule_interval_minutes,
            next_sync_at: s.next_sync_at,
            replace_missing: s.replace_missing,
            ai_cleanup: s.ai_cleanup,
            ai_cleanup_instructions: s.ai_cleanup_instructions.clone(),
            consecutive_failures: s.consecutive_failures,
            last_synced_at: s.last_synced_at,
            last_error: s.last_error.clone(),
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// A run as the API shows it (pushed document bodies left out).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunView {
    id: Uuid,
    source_id: Uuid,
    trigger_type: &'static str,
    status: &'static str,
    documents_received: i32,
    pages_created: i32,
    pages_updated: i32,
    pages_unchanged: i32,
    pages_deleted: i32,
    ai_cleaned: i32,
    /// `documents_count` and `options` of the input.
    input: Value,
    metadata: Value,
    http_status: Option<i32>,
    error: Option<String>,
    queue_job_id: Option<String>,
    created_at: Ts,
    started_at: Option<Ts>,
    finished_at: Option<Ts>,
}

impl From<&KnowledgeSyncRun> for RunView {
    fn from(r: &KnowledgeSyncRun) -> Self {
        let input = match r.input_payload.as_ref().map(|p| &p.0) {
            Some(p) => {
                let count = p.get("documents_count").cloned().unwrap_or_else(|| {
                    json!(
                        p.get("documents")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len)
                    )
                });
                json!({"documents_count": count, "options": p.get("options").cloned().unwrap_or(Value::Null)})
            }
            None => Value::Null,
        };
        RunView {
            id: r.id,
            source_id: r.source_id,
            trigger_type: r.trigger_type.as_str(),
            status: r.status.as_str(),
            documents_received: r.documents_received,
            pages_created: r.pages_created,
            pages_updated: r.pages_updated,
            pages_unchanged: r.pages_unchanged,
            pages_deleted: r.pages_deleted,
            ai_cleaned: r.ai_cleaned,
            input,
            metadata: r.metadata.0.clone(),
            http_status: r.http_status,
            error: r.error.clone(),
            queue_job_id: r.queue_job_id.clone(),
            created_at: r.created_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
        }
    }
}
