//! `POST/GET /interventions` and `POST /interventions/{id}/status` (§12.2,
//! §2.4): thin handlers over [`crate::insights::interventions`]. A created
//! intervention fans out to the tenant's intervention sinks (§15.2) after
//! it is stored, like one the agent opens.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use storage::{Channel, InterventionCategory, InterventionStatus};
use uuid::Uuid;

use super::conventions::{decode_cursor, encode_cursor};
use super::json::ApiJson;
use super::read_params::{limit, one_of, principal, query, tenant};
use crate::insights::PageKey;
use crate::insights::interventions::{
    self, DEFAULT_LIMIT, InterventionFilter, InterventionView, MAX_LIMIT, NewIntervention,
};
use crate::state::AppState;
use crate::web::error::ApiError;

/// Body of `POST /interventions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterventionBody {
    /// `request`, `escalation`, `missing_tool`, `system_failure` or `mistake_report`.
    pub category: String,
    /// One line (≤ 200 characters).
    pub title: String,
    /// More (≤ 8000 characters).
    #[serde(default)]
    pub details: Option<String>,
    /// Where it came from: `slack`, `email`, `api` (default) or `web`.
    #[serde(default)]
    pub channel: Option<String>,
    /// The member it concerns (their stable ref).
    #[serde(default)]
    pub principal_ref: Option<String>,
    /// Free-form context (a JSON object).
    #[serde(default)]
    pub metadata: Option<Value>,
}

/// Query of `GET /interventions`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterventionsQuery {
    /// Only this category.
    pub category: Option<String>,
    /// Only these statuses, comma-separated (`open,in_progress`).
    pub status: Option<String>,
    /// Page size, 1–200 (default 50).
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// A page of interventions, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct InterventionList {
    /// Newest first.
    pub items: Vec<InterventionView>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub next_cursor: Option<String>,
}

/// Body of `POST /interventions/{id}/status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusBody {
    /// The new status: `open`, `in_progress`, `resolved`, `dismissed` or `cancelled`.
    pub status: String,
}

/// `POST /api/v1/interventions` — 201.
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<InterventionBody>,
) -> Result<(StatusCode, Json<InterventionView>), ApiError> {
    let t = tenant()?;
    let category = one_of::<InterventionCategory>("category", &body.category)?;
    let channel = match body.channel.as_deref() {
        None => Channel::Api,
        Some(c) => one_of::<Channel>("channel", c)?,
    };
    let who = principal(&state.store, &t, body.principal_ref.as_deref()).await?;
    let (row, view) = interventions::create(
        &state.store,
        t.id,
        NewIntervention {
            category,
            channel,
            title: body.title,
            details: body.details,
            principal: who,
            metadata: body
                .metadata
                .unwrap_or_else(|| Value::Object(Default::default())),
        },
        state.clock.now(),
    )
    .await?;
    tracing::info!(tenant = %t.id, intervention = %row.id, category = row.category.as_str(), "intervention opened over the API");
    state.interventions.dispatch(&row);
    Ok((StatusCode::CREATED, Json(view)))
}

/// `GET /api/v1/interventions`
pub async fn list(
    State(state): State<AppState>,
    q: Result<Query<InterventionsQuery>, QueryRejection>,
) -> Result<Json<InterventionList>, ApiError> {
    let q = query(q)?;
    let t = tenant()?;
    let limit = limit(q.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let category = q
        .category
        .as_deref()
        .map(|c| one_of::<InterventionCategory>("category", c))
        .transpose()?;
    let statuses = q
        .status
        .as_deref()
        .map(|s| {
            s.split(',')
                .map(|one| one_of::<InterventionStatus>("status", one))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    let after = decode_cursor::<PageKey>("cursor", q.cursor.as_deref())?;
    let (items, next) = interventions::list(
        &state.store,
        t.id,
        InterventionFilter { category, statuses },
        after,
        limit,
    )
    .await?;
    Ok(Json(InterventionList {
        items,
        next_cursor: next.as_ref().map(encode_cursor),
    }))
}

/// `POST /api/v1/interventions/{id}/status` — 200 with the row; 409 for a
/// transition the status table refuses.
pub async fn set_status(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<StatusBody>,
) -> Result<Json<InterventionView>, ApiError> {
    let t = tenant()?;
    let id: Uuid = id
        .trim()
        .parse()
        .map_err(|_| ApiError::field("id", format!("must be an intervention id (got {id:?})")))?;
    let to = one_of::<InterventionStatus>("status", &body.status)?;
    let view = interventions::set_status(&state.store, t.id, id, to, state.clock.now()).await?;
    tracing::info!(tenant = %t.id, intervention = %id, status = to.as_str(), "intervention status set");
    Ok(Json(view))
}
