//! `/integrations` (§14.2, §7): the community's root-int/1 backends —
//! register one (the signing secret is shown once, on the answer to the
//! form), refresh its manifest, rotate its secret (shown once), disable it,
//! and set per-tool overrides (§7.4) — plus what a backend must implement.
//! Every change goes through `integrations::Integrations`, the service
//! behind `/api/v1/integrations`, in the dashboard tenant's scope. A
//! signing secret is never shown but in the answer that made it.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{Integration, IntegrationStatus};

use super::forms::{Failure, TokenForm};
use super::{Chrome, Dashboard, Done, PageForm, failed, harden, page_notice};
use crate::integrations::endpoints::{Method, percent_encode};
use crate::integrations::manifest::{CHANNELS, parse_tool_overrides};
use crate::integrations::registry::NewIntegration;
use crate::integrations::{
    EndpointKey, EndpointPaths, IntegrationError, Manifest, ToolOverride, effective_tools,
};
use crate::state::AppState;
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/integrations", get(list).post(create))
        .route("/integrations/{name}", get(detail))
        .route("/integrations/{name}/refresh", post(refresh))
        .route("/integrations/{name}/rotate-secret", post(rotate))
        .route("/integrations/{name}/disable", post(disable))
        .route("/integrations/{name}/tools/{tool}", post(set_override))
}

/// An integration in the list.
struct Row {
    name: String,
    environment: &'static str,
    status: &'static str,
    base_url: String,
    fetched_at: Option<String>,
    tools: usize,
}

impl Row {
    fn of(r: &Integration) -> Row {
        Row {
            name: r.name.clone(),
            environment: r.environment.as_str(),
            status: r.status.as_str(),
            base_url: r.base_url.clone(),
            fetched_at: r.manifest_fetched_at.map(|t| t.to_string()),
            tools: r
                .manifest
                .as_ref()
                .and_then(|m| m.0["tools"].as_array().map(Vec::len))
                .unwrap_or(0),
        }
    }
}

/// One endpoint a backend implements (§7.2), from `EndpointPaths`.
struct Endpoint {
    key: &'static str,
    method: &'static str,
    path: String,
    timeout_secs: u64,
}

fn endpoints(paths: &EndpointPaths) -> Vec<Endpoint> {
    EndpointKey::ALL
        .iter()
        .map(|k| Endpoint {
            key: k.as_str(),
            method: match k.method() {
                Method::Get => "GET",
                Method::Post => "POST",
            },
            path: paths.path(*k).to_string(),
            timeout_secs: k.timeout().as_secs(),
        })
        .collect()
}

/// The register form.
#[derive(Debug, Default, Deserialize)]
pub struct RegisterForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    base_url: String,
    /// Write-only; empty = generated.
    #[serde(default)]
    signing_secret: String,
    /// JSON object of endpoint path overrides; empty = the defaults.
    #[serde(default)]
    endpoint_paths: String,
}

#[derive(Template)]
#[template(path = "dashboard/integrations.html")]
struct ListPage {
    chrome: Chrome,
    rows: Vec<Row>,
    form: RegisterForm,
    error: Option<(&'static str, String)>,
    endpoints: Vec<Endpoint>,
    signature_header: &'static str,
    timestamp_header: &'static str,
}

async fn list_page(
    state: &AppState,
    d: &Dashboard,
    chrome: Chrome,
    form: RegisterForm,
    error: Option<(&'static str, String)>,
) -> Response {
    let rows = match d.scoped(state.integrations.list()).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "integrations page failed");
            return failed("The integrations could not be loaded.");
        }
    };
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let view = ListPage {
        chrome,
        rows: rows.iter().map(Row::of).collect(),
        form,
        error,
        endpoints: endpoints(&EndpointPaths::default()),
        signature_header: crate::integrations::signing::SIGNATURE_HEADER,
        timestamp_header: crate::integrations::signing::TIMESTAMP_HEADER,
    };
    harden((status, render_page(&view, "integrations", ())).into_response())
}

async fn list(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/integrations").with_flash(done.done.as_deref());
    list_page(&state, &d, chrome, RegisterForm::default(), None).await
}

/// The field a registry refusal belongs to.
fn field_of(message: &str) -> &'static str {
    for f in ["name", "base_url", "signing_secret", "endpoint_paths"] {
        if message.starts_with(f) || message.contains(&format!(" {f}")) {
            return f;
        }
    }
    "form"
}

fn failure(e: IntegrationError, what: &str) -> Failure {
    match e {
        IntegrationError::Invalid(m) => Failure::Field((field_of(&m), m)),
        IntegrationError::Duplicate(_) => Failure::Field((
            "name",
            "An integration with this name is registered. Disable it first to register it again."
                .into(),
        )),
        IntegrationError::NotFound(_) => Failure::Page(page_notice(
            StatusCode::NOT_FOUND,
            "No such integration",
            "This community has no integration with that name.",
        )),
        IntegrationError::Disabled(_) => Failure::Page(page_notice(
            StatusCode::CONFLICT,
            "The integration is disabled",
            "Register it again with the same name to enable it (a new secret is made).",
        )),
        IntegrationError::Refresh { name, source } => {
            tracing::warn!(integration = %name, error = %source, "integration backend call failed");
            Failure::Page(page_notice(
                StatusCode::BAD_GATEWAY,
                "The manifest could not be fetched",
                "The backend could not be reached or gave an invalid manifest; the last good manifest stays. The server log has the details.",
            ))
        }
        other => {
            tracing::error!(error = %other, "integration change failed");
            Failure::Page(failed(what))
        }
    }
}

async fn create(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<RegisterForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/integrations");
    let endpoint_paths = match form.endpoint_paths.trim() {
        "" => None,
        raw => match serde_json::from_str(raw) {
            Ok(v) => Some(v),
            Err(e) => {
                let err = ("endpoint_paths", format!("Not valid JSON: {e}"));
                return list_page(&state, &d, chrome, form, Some(err)).await;
            }
        },
    };
    let secret = form.signing_secret.trim();
    let new = NewIntegration {
        name: form.name.trim().to_string(),
        base_url: form.base_url.trim().to_string(),
        signing_secret: (!secret.is_empty()).then(|| secret.to_string()),
        endpoint_paths,
    };
    match d.scoped(state.integrations.register(new)).await {
        Ok(done) => {
            tracing::info!(tenant = %d.user.tenant.id, integration = %done.integration.name, by = %d.user.email, "integration registered from the dashboard");
            detail_page(
                &state,
                &d,
                &done.integration.name,
                chrome,
                Shown {
                    secret: Some(done.signing_secret),
                    ..Shown::default()
                },
            )
            .await
        }
        Err(e) => match failure(e, "The integration could not be registered.") {
            Failure::Field(f) => {
                let typed = RegisterForm {
                    signing_secret: String::new(),
                    ..form
                };
                list_page(&state, &d, chrome, typed, Some(f)).await
            }
            Failure::Page(p) => p,
        },
    }
}

/// A tool as the detail page shows it: the manifest's values, the
/// override, and the effective values.
struct ToolRow {
    name: String,
    manifest_description: String,
    manifest_channels: String,
    manifest_tiers: String,
    manifest_admin_only: bool,
    /// The override form (typed values after a refused save).
    form: OverrideForm,
    overridden: bool,
    removed: bool,
    effective: Option<String>,
    error: Option<String>,
}

/// The per-tool override form.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct OverrideForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    removed: Option<String>,
    /// Empty = the manifest's.
    #[serde(default)]
    description: String,
    /// Comma or space separated; empty = the manifest's.
    #[serde(default)]
    channels: String,
    /// Comma or space separated; empty = the manifest's.
    #[serde(default)]
    tiers: String,
    /// `""` = the manifest's, `yes`, `no`.
    #[serde(default)]
    admin_only: String,
    /// Set: remove the override.
    #[serde(default)]
    clear: Option<String>,
}

fn words(raw: &str) -> Option<Vec<String>> {
    let v: Vec<String> = raw
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    (!v.is_empty()).then_some(v)
}

impl OverrideForm {
    fn of(o: &ToolOverride) -> OverrideForm {
        OverrideForm {
            removed: o.removed.then(|| "on".into()),
            description: o.description.clone().unwrap_or_default(),
            channels: o
                .channels
                .as_ref()
                .map(|c| c.join(", "))
                .unwrap_or_default(),
            tiers: o.tiers.as_ref().map(|t| t.join(", ")).unwrap_or_default(),
            admin_only: match o.admin_only {
                None => String::new(),
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
            },
            ..OverrideForm::default()
        }
    }

    /// The override (`None`: clear it), or what is wrong.
    fn input(&self) -> Result<Option<ToolOverride>, String> {
        if self.clear.is_some() {
            return Ok(None);
        }
        let description = self.description.trim();
        Ok(Some(ToolOverride {
            removed: self.removed.is_some(),
            description: (!description.is_empty()).then(|| description.to_string()),
            channels: words(&self.channels),
            tiers: words(&self.tiers),
            admin_only: match self.admin_only.trim() {
                "" => None,
                "yes" => Some(true),
                "no" => Some(false),
                _ => return Err("admin_only: choose the manifest's, yes or no.".into()),
            },
        }))
    }
}

/// What the detail page shows besides the row.
#[derive(Default)]
struct Shown {
    /// The signing secret just made (register, rotate): shown once.
    secret: Option<String>,
    /// A refused override: the tool, its typed form and the error.
    refused: Option<(String, OverrideForm, String)>,
}

#[derive(Template)]
#[template(path = "dashboard/integration.html")]
struct DetailPage {
    chrome: Chrome,
    row: Row,
    disabled: bool,
    secret: Option<String>,
    protocol: Option<String>,
    tools: Vec<ToolRow>,
    orphans: Vec<String>,
    overrides_error: Option<String>,
    endpoints: Vec<Endpoint>,
    channels: &'static [&'static str],
}

async fn detail_page(
    state: &AppState,
    d: &Dashboard,
    name: &str,
    chrome: Chrome,
    shown: Shown,
) -> Response {
    let row = match d.scoped(state.integrations.get(name)).await {
        Ok(r) => r,
        Err(e) => {
            return match failure(e, "The integration could not be loaded.") {
                Failure::Field((_, m)) => {
                    page_notice(StatusCode::NOT_FOUND, "No such integration", &m)
                }
                Failure::Page(p) => p,
            };
        }
    };
    let (overrides, overrides_error) = match parse_tool_overrides(&row.tool_overrides.0) {
        Ok(o) => (o, None),
        Err(e) => (Default::default(), Some(e)),
    };
    let manifest = row
        .manifest
        .as_ref()
        .and_then(|m| Manifest::parse(&m.0).ok());
    let effective = manifest
        .as_ref()
        .map(|m| effective_tools(m, &overrides))
        .unwrap_or_default();
    let list = |v: &Option<Vec<String>>, all: &str| {
        v.as_ref()
            .map(|v| v.join(", "))
            .unwrap_or_else(|| all.to_string())
    };
    let mut status = StatusCode::OK;
    let tools: Vec<ToolRow> = manifest
        .as_ref()
        .map(|m| m.tools.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let over = overrides.get(&t.name);
            let eff = effective.iter().find(|e| e.name == t.name);
            let (form, error) = match &shown.refused {
                Some((tool, typed, e)) if *tool == t.name => {
                    status = StatusCode::UNPROCESSABLE_ENTITY;
                    (typed.clone(), Some(e.clone()))
                }
                _ => (over.map(OverrideForm::of).unwrap_or_default(), None),
            };
            ToolRow {
                name: t.name.clone(),
                manifest_description: t.description.clone(),
                manifest_channels: list(&t.channels, "all"),
                manifest_tiers: list(&t.tiers, "every non-reserved tier"),
                manifest_admin_only: t.admin_only,
                overridden: over.is_some(),
                removed: over.is_some_and(|o| o.removed),
                effective: eff.map(|e| {
                    format!(
                        "channels: {} · tiers: {} · admin only: {}",
                        list(&e.channels, "all"),
                        list(&e.tiers, "every non-reserved tier"),
                        if e.admin_only { "yes" } else { "no" }
                    )
                }),
                form,
                error,
            }
        })
        .collect();
    let orphans = overrides
        .keys()
        .filter(|k| !tools.iter().any(|t| &t.name == *k))
        .cloned()
        .collect();
    let paths = EndpointPaths::from_json(&row.endpoint_paths.0).unwrap_or_default();
    let view = DetailPage {
        chrome,
        disabled: row.status == IntegrationStatus::Disabled,
        protocol: manifest.as_ref().map(|m| m.protocol.clone()),
        secret: shown.secret,
        tools,
        orphans,
        overrides_error,
        endpoints: endpoints(&paths),
        channels: &CHANNELS,
        row: Row::of(&row),
    };
    harden((status, render_page(&view, "integration", ())).into_response())
}

async fn detail(
    State(state): State<AppState>,
    d: Dashboard,
    Path(name): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let chrome = Chrome::of(&d, "/integrations").with_flash(done.done.as_deref());
    detail_page(&state, &d, &name, chrome, Shown::default()).await
}

fn to_detail(name: &str, done: &str) -> Response {
    Redirect::to(&format!(
        "/integrations/{}?done={done}",
        percent_encode(name)
    ))
    .into_response()
}

async fn refresh(
    State(state): State<AppState>,
    d: Dashboard,
    Path(name): Path<String>,
    PageForm(form): PageForm<TokenForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match d.scoped(state.integrations.refresh(&name)).await {
        Ok((row, _)) => {
            tracing::info!(tenant = %d.user.tenant.id, integration = %row.name, by = %d.user.email, "integration manifest refreshed from the dashboard");
            to_detail(&row.name, "manifest-refreshed")
        }
        Err(e) => match failure(e, "The manifest could not be refreshed.") {
            Failure::Field((_, m)) => {
                page_notice(StatusCode::CONFLICT, "The manifest was not refreshed", &m)
            }
            Failure::Page(p) => p,
        },
    }
}

async fn rotate(
    State(state): State<AppState>,
    d: Dashboard,
    Path(name): Path<String>,
    PageForm(form): PageForm<TokenForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match d.scoped(state.integrations.rotate_secret(&name)).await {
        Ok(done) => {
            tracing::info!(tenant = %d.user.tenant.id, integration = %done.integration.name, by = %d.user.email, "integration secret rotated from the dashboard");
            let chrome = Chrome::of(&d, "/integrations");
            detail_page(
                &state,
                &d,
                &done.integration.name,
                chrome,
                Shown {
                    secret: Some(done.signing_secret),
                    ..Shown::default()
                },
            )
            .await
        }
        Err(e) => match failure(e, "The secret could not be rotated.") {
            Failure::Field((_, m)) => {
                page_notice(StatusCode::CONFLICT, "The secret was not rotated", &m)
            }
            Failure::Page(p) => p,
        },
    }
}

async fn disable(
    State(state): State<AppState>,
    d: Dashboard,
    Path(name): Path<String>,
    PageForm(form): PageForm<TokenForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match d.scoped(state.integrations.disable(&name)).await {
        Ok(row) => {
            tracing::info!(tenant = %d.user.tenant.id, integration = %row.name, by = %d.user.email, "integration disabled from the dashboard");
            to_detail(&row.name, "integration-disabled")
        }
        Err(e) => match failure(e, "The integration could not be disabled.") {
            Failure::Field((_, m)) => {
                page_notice(StatusCode::CONFLICT, "The integration was not disabled", &m)
            }
            Failure::Page(p) => p,
        },
    }
}

async fn set_override(
    State(state): State<AppState>,
    d: Dashboard,
    Path((name, tool)): Path<(String, String)>,
    PageForm(form): PageForm<OverrideForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/integrations");
    let refused = |e: String| Shown {
        refused: Some((tool.clone(), form.clone(), e)),
        ..Shown::default()
    };
    let over = match form.input() {
        Ok(o) => o,
        Err(e) => return detail_page(&state, &d, &name, chrome, refused(e)).await,
    };
    match d
        .scoped(state.integrations.set_tool_override(&name, &tool, over))
        .await
    {
        Ok(row) => {
            tracing::info!(tenant = %d.user.tenant.id, integration = %row.name, %tool, by = %d.user.email, "integration tool override saved from the dashboard");
            to_detail(&row.name, "override-saved")
        }
        Err(e) => match failure(e, "The override could not be saved.") {
            Failure::Field((_, m)) => detail_page(&state, &d, &name, chrome, refused(m)).await,
            Failure::Page(p) => p,
        },
    }
}
