//! `/knowledge-sources` (§14.2, §11): the community's knowledge sources —
//! register one, edit it (secrets write-only: the page says which are set,
//! never their values), pause it, delete it (its pages stay, detached), run
//! a sync now — and each source's run history with the run's diff: which
//! pages were created, updated, deleted, and which documents failed. Every
//! change goes through `knowledge::KnowledgeSync`, the functions behind
//! `/api/v1/kb/sources`.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value};
use storage::{KnowledgeSource, KnowledgeSyncRun, SourceKind};

use super::forms::{Failure, TokenForm};
use super::{Chrome, Dashboard, Done, PageForm, failed, harden, page_notice};
use crate::knowledge::sources::{SourceError, SourceInput};
use crate::outbound::OutboundPolicy;
use crate::state::AppState;
use crate::web::pages::render_page;

/// Runs a source's page shows.
pub const RUNS_SHOWN: usize = 20;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/knowledge-sources", get(list).post(create))
        .route("/knowledge-sources/{id}", get(detail).post(update))
        .route("/knowledge-sources/{id}/sync", post(sync))
        .route("/knowledge-sources/{id}/delete", post(delete))
}

/// The source form (create and edit share it).
#[derive(Debug, Default, Deserialize)]
pub struct SourceForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    source_key: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    source_kind: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    http_method: String,
    #[serde(default)]
    request_headers: String,
    #[serde(default)]
    request_body: String,
    #[serde(default)]
    auth_type: String,
    #[serde(default)]
    auth_config: String,
    /// `name=value` per line; `name=` removes a secret; absent names stay.
    #[serde(default)]
    secrets: String,
    #[serde(default)]
    response_mode: String,
    #[serde(default)]
    mapping: String,
    #[serde(default)]
    schedule_interval_minutes: String,
    #[serde(default)]
    replace_missing: Option<String>,
    #[serde(default)]
    ai_cleanup: Option<String>,
    #[serde(default)]
    ai_cleanup_instructions: String,
}

impl SourceForm {
    /// The form of a stored source (secrets never shown).
    fn of(s: &KnowledgeSource) -> SourceForm {
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
        SourceForm {
            source_key: s.source_key.clone(),
            name: s.name.clone(),
            source_kind: s.source_kind.to_string(),
            status: s.status.to_string(),
            url: s.url.clone().unwrap_or_default(),
            http_method: s.http_method.to_string(),
            request_headers: pretty(&s.request_headers.expose().0),
            request_body: s
                .request_body
                .as_ref()
                .map(|b| pretty(&b.0))
                .unwrap_or_default(),
            auth_type: s.auth_type.to_string(),
            auth_config: pretty(&s.auth_config.0),
            response_mode: s.response_mode.to_string(),
            mapping: pretty(&s.mapping.0),
            schedule_interval_minutes: s
                .schedule_interval_minutes
                .map(|m| m.to_string())
                .unwrap_or_default(),
            replace_missing: s.replace_missing.then(|| "on".into()),
            ai_cleanup: s.ai_cleanup.then(|| "on".into()),
            ai_cleanup_instructions: s.ai_cleanup_instructions.clone().unwrap_or_default(),
            ..SourceForm::default()
        }
    }

    /// The API's input, or the field at fault and why.
    fn input(&self, creating: bool) -> Result<SourceInput, (&'static str, String)> {
        let mut m = Map::new();
        let text = |v: &str| Value::String(v.trim().to_string());
        let json_field =
            |field: &'static str, raw: &str| -> Result<Option<Value>, (&'static str, String)> {
                let raw = raw.trim();
                if raw.is_empty() {
                    return Ok(None);
                }
                serde_json::from_str(raw)
                    .map(Some)
                    .map_err(|e| (field, format!("Not valid JSON: {e}")))
            };
        if creating {
            m.insert("source_key".into(), text(&self.source_key));
            m.insert("source_kind".into(), text(&self.source_kind));
        } else if !self.status.trim().is_empty() {
            m.insert("status".into(), text(&self.status));
        }
        m.insert("name".into(), text(&self.name));
        m.insert(
            "url".into(),
            if self.url.trim().is_empty() {
                Value::Null
            } else {
                text(&self.url)
            },
        );
        for (field, raw) in [
            ("http_method", &self.http_method),
            ("auth_type", &self.auth_type),
            ("response_mode", &self.response_mode),
        ] {
            if !raw.trim().is_empty() {
                m.insert(field.into(), text(raw));
            }
        }
        for (field, raw) in [
            ("request_headers", &self.request_headers),
            ("auth_config", &self.auth_config),
            ("mapping", &self.mapping),
        ] {
            if let Some(v) = json_field(field, raw)? {
                m.insert(field.into(), v);
            }
        }
        m.insert(
            "request_body".into(),
            json_field("request_body", &self.request_body)?.unwrap_or(Value::Null),
        );
        let minutes = self.schedule_interval_minutes.trim();
        m.insert(
            "schedule_interval_minutes".into(),
            if minutes.is_empty() {
                Value::Null
            } else {
                Value::from(minutes.parse::<i64>().map_err(|_| {
                    (
                        "schedule_interval_minutes",
                        "A whole number of minutes, or empty for no schedule.".to_string(),
                    )
                })?)
            },
        );
        m.insert(
            "replace_missing".into(),
            Value::Bool(self.replace_missing.is_some()),
        );
        m.insert("ai_cleanup".into(), Value::Bool(self.ai_cleanup.is_some()));
        let instructions = self.ai_cleanup_instructions.trim();
        m.insert(
            "ai_cleanup_instructions".into(),
            if instructions.is_empty() {
                Value::Null
            } else {
                text(instructions)
            },
        );
        let mut secrets = Map::new();
        for line in self
            .secrets
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let Some((name, value)) = line.split_once('=') else {
                return Err((
                    "secrets",
                    "One secret per line, as name=value (name= removes it).".into(),
                ));
            };
            let value = value.trim();
            secrets.insert(
                name.trim().to_string(),
                if value.is_empty() {
                    Value::Null
                } else {
                    Value::String(value.to_string())
                },
            );
        }
        if !secrets.is_empty() {
            m.insert("secrets".into(), Value::Object(secrets));
        }
        serde_json::from_value(Value::Object(m)).map_err(|e| ("form", e.to_string()))
    }
}

/// A source in the list.
struct SourceRow {
    source: KnowledgeSource,
    pushed: bool,
}

#[derive(Template)]
#[template(path = "dashboard/sources.html")]
struct ListPage {
    chrome: Chrome,
    sources: Vec<SourceRow>,
    form: SourceForm,
    error: Option<(&'static str, String)>,
}

/// A run with its diff.
struct RunRow {
    run: KnowledgeSyncRun,
    created: Vec<String>,
    updated: Vec<String>,
    deleted: Vec<String>,
    errors: Vec<String>,
}

impl RunRow {
    fn of(run: KnowledgeSyncRun) -> RunRow {
        let list = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let diff = &run.metadata.0["diff"];
        let errors = run.metadata.0["document_errors"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let id = e["external_id"]
                            .as_str()
                            .map(|i| format!("{i}: "))
                            .unwrap_or_default();
                        format!("#{} {id}{}", e["index"], e["error"].as_str().unwrap_or(""))
                    })
                    .collect()
            })
            .unwrap_or_default();
        RunRow {
            created: list(&diff["created"]),
            updated: list(&diff["updated"]),
            deleted: list(&diff["deleted"]),
            errors,
            run,
        }
    }
}

#[derive(Template)]
#[template(path = "dashboard/source.html")]
struct DetailPage {
    chrome: Chrome,
    source: KnowledgeSource,
    secrets_set: Vec<String>,
    form: SourceForm,
    runs: Vec<RunRow>,
    error: Option<(&'static str, String)>,
}

async fn list_page(
    state: &AppState,
    d: &Dashboard,
    chrome: Chrome,
    form: SourceForm,
    error: Option<(&'static str, String)>,
) -> Response {
    let sources = match state.knowledge.sources(d.user.tenant.id).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "knowledge sources page failed");
            return failed("The sources could not be loaded.");
        }
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let view = ListPage {
        chrome,
        sources: sources
            .into_iter()
            .map(|s| SourceRow {
                pushed: s.source_kind == SourceKind::ApiPush,
                source: s,
            })
            .collect(),
        form,
        error,
    };
    harden((status, render_page(&view, "knowledge sources", ())).into_response())
}

async fn list(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/knowledge-sources").with_flash(done.done.as_deref());
    let form = SourceForm {
        source_kind: "web_page".into(),
        ..SourceForm::default()
    };
    list_page(&state, &d, chrome, form, None).await
}

fn source_failure(e: SourceError) -> Failure {
    match e {
        SourceError::Invalid(m) | SourceError::Conflict(m) => Failure::Field(("form", m)),
        SourceError::NotFound(m) => {
            Failure::Page(page_notice(StatusCode::NOT_FOUND, "No such source", &m))
        }
        other => {
            tracing::error!(error = %other, "knowledge source change failed");
            Failure::Page(failed("The source could not be changed."))
        }
    }
}

async fn create(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<SourceForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/knowledge-sources");
    let input = match form.input(true) {
        Ok(i) => i,
        Err(e) => return list_page(&state, &d, chrome, form, Some(e)).await,
    };
    let policy = OutboundPolicy::from_config(&state.config);
    match state
        .knowledge
        .create_source(&d.user.tenant, input, policy)
        .await
    {
        Ok(row) => {
            tracing::info!(tenant = %d.user.tenant.id, source = %row.id, by = %d.user.email, "knowledge source registered from the dashboard");
            Redirect::to(&format!("/knowledge-sources/{}?done=source-saved", row.id))
                .into_response()
        }
        Err(e) => match source_failure(e) {
            Failure::Field(field) => list_page(&state, &d, chrome, form, Some(field)).await,
            Failure::Page(page) => page,
        },
    }
}

async fn detail_page(
    state: &AppState,
    d: &Dashboard,
    id: &str,
    chrome: Chrome,
    typed: Option<SourceForm>,
    error: Option<(&'static str, String)>,
) -> Response {
    let tenant = d.user.tenant.id;
    let source = match state.knowledge.source(tenant, id).await {
        Ok(s) => s,
        Err(e) => {
            return match source_failure(e) {
                Failure::Field((_, m)) => page_notice(StatusCode::NOT_FOUND, "No such source", &m),
                Failure::Page(page) => page,
            };
        }
    };
    let runs = match state.knowledge.runs(tenant, source.id, RUNS_SHOWN).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(%tenant, error = %e, "knowledge source runs failed");
            return failed("The run history could not be loaded.");
        }
    };
    let mut secrets_set: Vec<String> = source
        .secrets
        .expose()
        .0
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    secrets_set.sort();
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let view = DetailPage {
        chrome,
        form: typed.unwrap_or_else(|| SourceForm::of(&source)),
        secrets_set,
        runs: runs.into_iter().map(RunRow::of).collect(),
        source,
        error,
    };
    harden((status, render_page(&view, "knowledge source", ())).into_response())
}

async fn detail(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let chrome = Chrome::of(&d, "/knowledge-sources").with_flash(done.done.as_deref());
    detail_page(&state, &d, &id, chrome, None, None).await
}

async fn update(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<String>,
    PageForm(form): PageForm<SourceForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/knowledge-sources");
    let input = match form.input(false) {
        Ok(i) => i,
        Err(e) => return detail_page(&state, &d, &id, chrome, Some(form), Some(e)).await,
    };
    let policy = OutboundPolicy::from_config(&state.config);
    match state
        .knowledge
        .update_source(d.user.tenant.id, &id, input, policy)
        .await
    {
        Ok(row) => {
            tracing::info!(tenant = %d.user.tenant.id, source = %row.id, by = %d.user.email, "knowledge source updated from the dashboard");
            Redirect::to(&format!("/knowledge-sources/{}?done=source-saved", row.id))
                .into_response()
        }
        Err(e) => match source_failure(e) {
            Failure::Field(field) => {
                detail_page(&state, &d, &id, chrome, Some(form), Some(field)).await
            }
            Failure::Page(page) => page,
        },
    }
}

async fn sync(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<String>,
    PageForm(form): PageForm<TokenForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match state.knowledge.sync_now(d.user.tenant.id, &id, None).await {
        Ok(run) => {
            tracing::info!(tenant = %d.user.tenant.id, source = %run.source_id, run = %run.id, by = %d.user.email, "knowledge sync started from the dashboard");
            Redirect::to(&format!(
                "/knowledge-sources/{}?done=sync-started",
                run.source_id
            ))
            .into_response()
        }
        Err(e) => match source_failure(e) {
            Failure::Field((_, m)) => {
                page_notice(StatusCode::CONFLICT, "The sync did not start", &m)
            }
            Failure::Page(page) => page,
        },
    }
}

async fn delete(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<String>,
    PageForm(form): PageForm<TokenForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match state.knowledge.delete_source(d.user.tenant.id, &id).await {
        Ok(()) => {
            tracing::info!(tenant = %d.user.tenant.id, source = %id, by = %d.user.email, "knowledge source deleted from the dashboard");
            Redirect::to("/knowledge-sources?done=source-deleted").into_response()
        }
        Err(e) => match source_failure(e) {
            Failure::Field((_, m)) => {
                page_notice(StatusCode::CONFLICT, "The source was not deleted", &m)
            }
            Failure::Page(page) => page,
        },
    }
}
