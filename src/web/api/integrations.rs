//! Integration routes (§12.2): `GET /api/v1/integrations`, `POST
//! /api/v1/integrations` (201, the signing secret shown once), `POST
//! /api/v1/integrations/:name/refresh`, `POST
//! /api/v1/integrations/:name/rotate-secret` (the new secret shown once),
//! `PUT /api/v1/integrations/:name/tool-overrides` (§7.4, through
//! `Integrations::set_tool_overrides`, the validation the dashboard's
//! `/integrations/{name}` form uses) and `DELETE /api/v1/integrations/:name`
//! (sets `disabled`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use storage::{Integration, Ts};
use uuid::Uuid;

use super::json::ApiJson;
use crate::integrations::manifest::ToolOverride;
use crate::integrations::registry::NewIntegration;
use crate::integrations::{CallError, IntegrationError};
use crate::state::AppState;
use crate::web::REQUEST_ID_HEADER;
use crate::web::error::ApiError;

impl From<IntegrationError> for ApiError {
    fn from(e: IntegrationError) -> Self {
        match e {
            IntegrationError::Invalid(m) => ApiError::BadRequest(m),
            IntegrationError::Duplicate(_) => ApiError::Conflict {
                constraint: storage::Integration::NAME_KEY,
            },
            IntegrationError::NotFound(_) => ApiError::NotFound(e.to_string()),
            IntegrationError::Disabled(_) => ApiError::Unprocessable(e.to_string()),
            IntegrationError::Refresh { name, source } => upstream_failed(&name, &source, None),
            IntegrationError::Storage(s) => s.into(),
            IntegrationError::NoTenant(n) => ApiError::Internal(n.into()),
        }
    }
}

/// A backend call failed: the details (network error, status, body
/// excerpt) go to the server log only — echoing them would make the API a
/// port-scan oracle for whatever the URL points at.
fn upstream_failed(name: &str, source: &CallError, request_id: Option<&str>) -> ApiError {
    tracing::warn!(integration = %name, error = %source, "integration backend call failed");
    let id = request_id.map_or(String::new(), |id| format!(" (request id {id})"));
    ApiError::BadGateway(format!(
        "the integration backend could not be reached or gave an invalid answer; see the server log{id}"
    ))
}

/// Body of `POST /integrations`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterBody {
    name: String,
    base_url: String,
    #[serde(default)]
    signing_secret: Option<String>,
    #[serde(default)]
    endpoint_paths: Option<Value>,
}

/// An integration as the API shows it: never its signing secret (only
/// register and rotate-secret add it, once).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IntegrationView {
    id: Uuid,
    name: String,
    base_url: String,
    status: &'static str,
    environment: &'static str,
    endpoint_paths: Value,
    tool_overrides: Value,
    manifest: Option<ManifestView>,
    manifest_fetched_at: Option<Ts>,
    created_at: Ts,
    /// Register / rotate-secret only.
    #[serde(skip_serializing_if = "Option::is_none")]
    signing_secret: Option<String>,
}

/// The cached manifest: a summary, or (refresh only) the whole validated
/// manifest just fetched.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ManifestView {
    /// Identity and tool names.
    Summary(ManifestSummary),
    /// The manifest as validated.
    Full(Value),
}

/// The cached manifest's identity and tool names.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ManifestSummary {
    protocol: Value,
    name: Value,
    tools: Vec<String>,
}

impl From<&Integration> for IntegrationView {
    fn from(row: &Integration) -> Self {
        let manifest = row.manifest.as_ref().map(|m| {
            ManifestView::Summary(ManifestSummary {
                protocol: m.0["protocol"].clone(),
                name: m.0["name"].clone(),
                tools: m.0["tools"]
                    .as_array()
                    .map(|ts| {
                        ts.iter()
                            .filter_map(|t| t["name"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        });
        IntegrationView {
            id: row.id,
            name: row.name.clone(),
            base_url: row.base_url.clone(),
            status: row.status.as_str(),
            environment: row.environment.as_str(),
            endpoint_paths: row.endpoint_paths.0.clone(),
            tool_overrides: row.tool_overrides.0.clone(),
            manifest,
            manifest_fetched_at: row.manifest_fetched_at,
            created_at: row.created_at,
            signing_secret: None,
        }
    }
}

/// `GET /integrations`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IntegrationList {
    integrations: Vec<IntegrationView>,
}

/// `GET /api/v1/integrations`
pub async fn list(State(state): State<AppState>) -> Result<Json<IntegrationList>, ApiError> {
    let rows = state.integrations.list().await?;
    Ok(Json(IntegrationList {
        integrations: rows.iter().map(IntegrationView::from).collect(),
    }))
}

/// `POST /api/v1/integrations` — 201 with `signing_secret` (only here).
pub async fn register(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<RegisterBody>,
) -> Result<(StatusCode, Json<IntegrationView>), ApiError> {
    let registered = state
        .integrations
        .register(NewIntegration {
            name: body.name,
            base_url: body.base_url,
            signing_secret: body.signing_secret,
            endpoint_paths: body.endpoint_paths,
        })
        .await?;
    let mut out = IntegrationView::from(&registered.integration);
    out.signing_secret = Some(registered.signing_secret);
    Ok((StatusCode::CREATED, Json(out)))
}

/// `POST /api/v1/integrations/:name/refresh` — fetch and validate the
/// manifest now; 502 when the backend fails (the stale manifest stays),
/// with a generic message naming the request id (details in the log).
pub async fn refresh(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Json<IntegrationView>, ApiError> {
    let (row, manifest) = match state.integrations.refresh(&name).await {
        Ok(r) => r,
        Err(IntegrationError::Refresh { name, source }) => {
            let id = headers.get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok());
            return Err(upstream_failed(&name, &source, id));
        }
        Err(e) => return Err(e.into()),
    };
    let mut out = IntegrationView::from(&row);
    out.manifest = Some(ManifestView::Full(
        serde_json::to_value(&manifest).map_err(|e| ApiError::Internal(e.into()))?,
    ));
    Ok(Json(out))
}

/// `POST /api/v1/integrations/:name/rotate-secret` — the new secret, once.
pub async fn rotate_secret(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<IntegrationView>, ApiError> {
    let rotated = state.integrations.rotate_secret(&name).await?;
    let mut out = IntegrationView::from(&rotated.integration);
    out.signing_secret = Some(rotated.signing_secret);
    Ok(Json(out))
}

/// `DELETE /api/v1/integrations/:name` — sets `disabled`, answers the row.
pub async fn disable(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<IntegrationView>, ApiError> {
    let row = state.integrations.disable(&name).await?;
    Ok(Json(IntegrationView::from(&row)))
}

/// Body of `PUT /integrations/{name}/tool-overrides`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOverridesBody {
    /// Tool name → its §7.4 override (`removed`, `description`,
    /// `channels`, `tiers`, `admin_only`), or `null` to clear it. Tools
    /// not named keep their overrides.
    overrides: BTreeMap<String, Option<ToolOverride>>,
}

/// `PUT /api/v1/integrations/:name/tool-overrides` — set or clear the
/// named tools' overrides (all checked first: one invalid entry changes
/// nothing, 400); answers the row. 404 for an unknown integration.
pub async fn put_tool_overrides(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<ToolOverridesBody>,
) -> Result<Json<IntegrationView>, ApiError> {
    if body.overrides.is_empty() {
        return Err(ApiError::field(
            "overrides",
            "name at least one tool (its override, or null to clear it)",
        ));
    }
    let row = state
        .integrations
        .set_tool_overrides(&name, body.overrides)
        .await?;
    Ok(Json(IntegrationView::from(&row)))
}
