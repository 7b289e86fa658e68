//! Knowledge source tools of the dashboard chat (§5.1, §11): list, create,
//! update, delete and sync sources through `KnowledgeSync` — the calls
//! behind `/api/v1/kb/sources*` (`sources`, `create_source`,
//! `update_source`, `delete_source`, `sync_now` → `start_run`), with the
//! same field validation (`SourceInput`) and the same secret-free view
//! (`SourceView`).
//!
//! The tools take no credentials (`secrets`, `request_headers`): a tool
//! call's arguments are stored in the run's trace and exported with it, so
//! a token typed into the chat would outlive the conversation there. Such
//! sources are finished through the API (`PATCH /api/v1/kb/sources/{id}`).

use async_trait::async_trait;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Value, json};
use storage::KnowledgeSource;

use super::{AdminConfig, broke, changed};
use crate::agent::ToolResult;
use crate::knowledge::runs::{RunOptions, StartError};
use crate::knowledge::sources::{CREDENTIAL_FIELDS, SourceError, SourceInput};
use crate::knowledge::views::{RunView, SourceView};
use crate::platform::tenancy;
use crate::platform::tool_names as names;
use crate::tools::{TurnContext, TypedTool};

/// The fields of a source the chat may set: [`SourceInput`] without the
/// [`CREDENTIAL_FIELDS`] (left out of the schema the model sees, refused
/// when sent anyway).
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct SourceFields(pub SourceInput);

impl JsonSchema for SourceFields {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SourceFields".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = SourceInput::json_schema(generator);
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for f in CREDENTIAL_FIELDS {
                props.remove(f);
            }
        }
        schema
    }
}

impl SourceFields {
    /// The input, or the refusal when it carries credentials.
    fn checked(self) -> Result<SourceInput, ToolResult> {
        let creds = self.0.credential_fields();
        if creds.is_empty() {
            return Ok(self.0);
        }
        Err(ToolResult::failed(format!(
            "{} cannot be set through the chat (tool arguments are kept in traces). Set them \
             with PATCH /api/v1/kb/sources/{{id}}; everything else can be set here.",
            creds.join(" and ")
        )))
    }
}

/// A failed result for a refused source operation.
fn refused(tool: &str, e: SourceError) -> ToolResult {
    match e {
        SourceError::Invalid(m) | SourceError::Conflict(m) => ToolResult::failed(m),
        SourceError::NotFound(m) => {
            ToolResult::failed(format!("{m}; list the sources for the right id or key."))
        }
        SourceError::Start(StartError::Queue(e)) => {
            tracing::error!(error = %e, "knowledge sync not queued");
            ToolResult::failed("The sync could not be queued right now; try again.")
        }
        other => broke(tool, other),
    }
}

/// A source's view as JSON (never a secret value: `SourceView`).
fn view(row: &KnowledgeSource) -> Value {
    serde_json::to_value(SourceView::from(row)).unwrap_or(Value::Null)
}

/// `list_knowledge_sources()`.
pub struct ListKnowledgeSources(pub AdminConfig);

/// No arguments.
#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

#[async_trait]
impl TypedTool for ListKnowledgeSources {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_KNOWLEDGE_SOURCES
    }
    fn description(&self) -> &'static str {
        "List the community's knowledge sources (web pages, API pulls, webhooks, API pushes \
         that feed the knowledge base) with their status, schedule and last sync."
    }
    async fn run(&self, _: NoArgs, ctx: &TurnContext) -> ToolResult {
        let rows = match self.0.inner.knowledge.sources(ctx.tenant_id).await {
            Ok(r) => r,
            Err(e) => return refused(self.name(), e),
        };
        let list: Vec<Value> = rows
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "source_key": s.source_key,
                    "name": s.name,
                    "source_kind": s.source_kind.as_str(),
                    "status": s.status.as_str(),
                    "url": s.url,
                    "schedule_interval_minutes": s.schedule_interval_minutes,
                    "last_synced_at": s.last_synced_at,
                    "last_error": s.last_error,
                    "consecutive_failures": s.consecutive_failures,
                })
            })
            .collect();
        ToolResult::ok(json!({"sources": list, "count": list.len()}))
    }
}

/// `create_knowledge_source(source_key, name, source_kind, …)`.
pub struct CreateKnowledgeSource(pub AdminConfig);

#[async_trait]
impl TypedTool for CreateKnowledgeSource {
    type Args = SourceFields;
    fn name(&self) -> &'static str {
        names::CREATE_KNOWLEDGE_SOURCE
    }
    fn description(&self) -> &'static str {
        "Register a knowledge source. Required: source_key (a-z, 0-9, '.', '_', '-'), name, \
         source_kind (web_page | api_pull | webhook | api_push); web_page, api_pull and webhook \
         need a url. Optional: schedule_interval_minutes, ai_cleanup, replace_missing, mapping, \
         response_mode, auth_type, auth_config. Secrets and request headers are set through \
         the API, not here."
    }
    async fn run(&self, a: SourceFields, ctx: &TurnContext) -> ToolResult {
        let input = match a.checked() {
            Ok(i) => i,
            Err(r) => return r,
        };
        let Some(tenant) = tenancy::current() else {
            return broke(self.name(), "no tenant context");
        };
        let svc = &self.0.inner;
        match svc
            .knowledge
            .create_source(&tenant.tenant, input, svc.policy)
            .await
        {
            Ok(row) => {
                changed(
                    ctx,
                    self.name(),
                    &format!("source {} created", row.source_key),
                );
                ToolResult::ok(json!({"created": true, "source": view(&row)}))
            }
            Err(e) => refused(self.name(), e),
        }
    }
}

/// `update_knowledge_source(source, changes)`.
pub struct UpdateKnowledgeSource(pub AdminConfig);

/// Arguments of `update_knowledge_source`.
#[derive(Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// The source's id or source_key (from `list_knowledge_sources`).
    pub source: String,
    /// Only the fields to change; `null` clears a field that may be empty.
    pub changes: SourceFields,
}

#[async_trait]
impl TypedTool for UpdateKnowledgeSource {
    type Args = UpdateArgs;
    fn name(&self) -> &'static str {
        names::UPDATE_KNOWLEDGE_SOURCE
    }
    fn description(&self) -> &'static str {
        "Change a knowledge source's settings (name, url, status active|paused, schedule, AI \
         cleanup, mapping, …): only the fields given change. Secrets and request headers are \
         set through the API, not here."
    }
    async fn run(&self, a: UpdateArgs, ctx: &TurnContext) -> ToolResult {
        let input = match a.changes.checked() {
            Ok(i) => i,
            Err(r) => return r,
        };
        let svc = &self.0.inner;
        match svc
            .knowledge
            .update_source(ctx.tenant_id, a.source.trim(), input, svc.policy)
            .await
        {
            Ok(row) => {
                changed(
                    ctx,
                    self.name(),
                    &format!("source {} updated", row.source_key),
                );
                ToolResult::ok(json!({"updated": true, "source": view(&row)}))
            }
            Err(e) => refused(self.name(), e),
        }
    }
}

/// `delete_knowledge_source(source)`.
pub struct DeleteKnowledgeSource(pub AdminConfig);

/// Arguments naming one source.
#[derive(Deserialize, JsonSchema)]
pub struct SourceArgs {
    /// The source's id or source_key (from `list_knowledge_sources`).
    pub source: String,
}

#[async_trait]
impl TypedTool for DeleteKnowledgeSource {
    type Args = SourceArgs;
    fn name(&self) -> &'static str {
        names::DELETE_KNOWLEDGE_SOURCE
    }
    fn description(&self) -> &'static str {
        "Delete a knowledge source and its run history. The pages it synced stay in the \
         knowledge base, no longer owned by a source."
    }
    async fn run(&self, a: SourceArgs, ctx: &TurnContext) -> ToolResult {
        let source = a.source.trim();
        match self
            .0
            .inner
            .knowledge
            .delete_source(ctx.tenant_id, source)
            .await
        {
            Ok(()) => {
                changed(ctx, self.name(), &format!("source {source} deleted"));
                ToolResult::ok(json!({"source": source, "deleted": true}))
            }
            Err(e) => refused(self.name(), e),
        }
    }
}

/// `sync_knowledge_source(source, options?)`.
pub struct SyncKnowledgeSource(pub AdminConfig);

/// Arguments of `sync_knowledge_source`.
#[derive(Deserialize, JsonSchema)]
pub struct SyncArgs {
    /// The source's id or source_key (from `list_knowledge_sources`).
    pub source: String,
    /// This run only: override the source's AI cleanup or replace_missing.
    #[serde(default)]
    pub options: Option<RunOptions>,
}

#[async_trait]
impl TypedTool for SyncKnowledgeSource {
    type Args = SyncArgs;
    fn name(&self) -> &'static str {
        names::SYNC_KNOWLEDGE_SOURCE
    }
    fn description(&self) -> &'static str {
        "Queue a sync run of a knowledge source now (not for api_push sources, which receive \
         documents through the API). The run happens in the background; list the sources later \
         for its outcome."
    }
    async fn run(&self, a: SyncArgs, ctx: &TurnContext) -> ToolResult {
        let source = a.source.trim();
        match self
            .0
            .inner
            .knowledge
            .sync_now(ctx.tenant_id, source, a.options)
            .await
        {
            Ok(run) => {
                changed(ctx, self.name(), &format!("source {source} sync queued"));
                let run = serde_json::to_value(RunView::from(&run)).unwrap_or(Value::Null);
                ToolResult::ok(json!({"queued": true, "run": run}))
            }
            Err(e) => refused(self.name(), e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::params_schema;

    #[test]
    fn the_schema_offers_no_credential_field_and_a_call_with_one_is_refused() {
        let schema = params_schema::<SourceFields>();
        let props = schema["properties"].as_object().unwrap();
        assert!(props.contains_key("source_key") && props.contains_key("url"));
        for f in CREDENTIAL_FIELDS {
            assert!(!props.contains_key(f), "{f}");
        }
        let with_token: SourceFields =
            serde_json::from_value(json!({"name": "x", "secrets": {"token": "t0k"}})).unwrap();
        let refusal = with_token.checked().unwrap_err();
        assert!(!refusal.success);
        assert!(refusal.error.unwrap().starts_with("secrets cannot be set"));
        let plain: SourceFields = serde_json::from_value(json!({"name": "x"})).unwrap();
        assert!(plain.checked().is_ok());
    }
}
