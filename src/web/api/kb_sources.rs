//! Knowledge source routes (§12.2): `GET/POST /kb/sources`,
//! `GET/PATCH/DELETE /kb/sources/:id` (`:id` = the id or the `source_key`),
//! `GET /kb/sources/:id/runs`, `POST /kb/sources/:id/sync` and
//! `POST /kb/sync` (api_push). Triggers answer 202 once the run's job is
//! durably queued, 503 when the queue refuses (§13). Writes and triggers
//! share the KB-write rate limit (a trigger costs fetches and model calls).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::json::ApiJson;
use super::limited::{Admitted, KbWrite};
use crate::knowledge::push::PushBody;
use crate::knowledge::runs::{RunOptions, StartError};
use crate::knowledge::sources::{SourceError, SourceInput};
use crate::knowledge::views::{RunView, SourceView};
use crate::outbound::OutboundPolicy;
use crate::platform::tenancy;
use crate::state::AppState;
use crate::web::error::ApiError;

/// Runs listed by default / at most.
pub const RUNS_DEFAULT_LIMIT: usize = 20;
/// Largest `limit` of the run history.
pub const RUNS_MAX_LIMIT: usize = 200;

impl From<SourceError> for ApiError {
    fn from(e: SourceError) -> Self {
        match e {
            SourceError::Invalid(m) => ApiError::BadRequest(m),
            SourceError::NotFound(m) => ApiError::NotFound(m),
            SourceError::Conflict(m) => ApiError::StateConflict(m),
            SourceError::BadSignature => ApiError::BadSignature,
            SourceError::Storage(s) => s.into(),
            SourceError::Start(StartError::Storage(s)) => s.into(),
            SourceError::Start(StartError::Queue(e)) => {
                tracing::error!(error = %e, "knowledge sync not queued");
                ApiError::Unavailable("the sync could not be queued; try again".into())
            }
        }
    }
}

fn tenant() -> Result<std::sync::Arc<storage::Tenant>, ApiError> {
    tenancy::current()
        .map(|c| c.tenant)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant context")))
}

/// `{sources: […]}`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct SourceList {
    sources: Vec<SourceView>,
}

/// `{runs: […]}`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct RunList {
    runs: Vec<RunView>,
}

/// `{run}` of a trigger.
#[derive(Serialize, schemars::JsonSchema)]
pub struct RunStarted {
    run: RunView,
}

/// Body of `POST /kb/sources/:id/sync` (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SourceSyncBody")]
pub struct SyncBody {
    #[serde(default)]
    options: Option<RunOptions>,
}

/// Query of the run history.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    #[serde(default)]
    limit: Option<usize>,
}

/// `GET /api/v1/kb/sources`
pub async fn list(State(state): State<AppState>) -> Result<Json<SourceList>, ApiError> {
    let t = tenant()?;
    let rows = state.knowledge.sources(t.id).await?;
    Ok(Json(SourceList {
        sources: rows.iter().map(SourceView::from).collect(),
    }))
}

/// `POST /api/v1/kb/sources` — 201.
pub async fn create(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    ApiJson(body): ApiJson<SourceInput>,
) -> Result<(StatusCode, Json<SourceView>), ApiError> {
    let t = tenant()?;
    let policy = OutboundPolicy::from_config(&state.config);
    let row = state.knowledge.create_source(&t, body, policy).await?;
    tracing::info!(tenant = %t.id, source = %row.id, kind = row.source_kind.as_str(), "knowledge source registered");
    Ok((StatusCode::CREATED, Json(SourceView::from(&row))))
}

/// `GET /api/v1/kb/sources/:id`
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<SourceView>, ApiError> {
    let t = tenant()?;
    let row = state.knowledge.source(t.id, &id).await?;
    Ok(Json(SourceView::from(&row)))
}

/// `PATCH /api/v1/kb/sources/:id`
pub async fn patch(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SourceInput>,
) -> Result<Json<SourceView>, ApiError> {
    let t = tenant()?;
    let policy = OutboundPolicy::from_config(&state.config);
    let row = state
        .knowledge
        .update_source(t.id, &id, body, policy)
        .await?;
    Ok(Json(SourceView::from(&row)))
}

/// `DELETE /api/v1/kb/sources/:id` — 204; its pages stay (detached).
pub async fn delete(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let t = tenant()?;
    state.knowledge.delete_source(t.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/kb/sources/:id/runs?limit=`
pub async fn runs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    query: Result<Query<RunsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RunList>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let limit = match q.limit {
        None => RUNS_DEFAULT_LIMIT,
        Some(n) if (1..=RUNS_MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "limit must be between 1 and {RUNS_MAX_LIMIT}"
            )));
        }
    };
    let t = tenant()?;
    let source = state.knowledge.source(t.id, &id).await?;
    let rows = state
        .knowledge
        .runs(t.id, source.id, limit)
        .await
        .map_err(ApiError::from)?;
    Ok(Json(RunList {
        runs: rows.iter().map(RunView::from).collect(),
    }))
}

/// `POST /api/v1/kb/sources/:id/sync` — 202 once queued.
pub async fn sync(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<RunStarted>), ApiError> {
    let t = tenant()?;
    let options = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        serde_json::from_slice::<SyncBody>(&body)
            .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?
            .options
    };
    let run = state.knowledge.sync_now(t.id, &id, options).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(RunStarted {
            run: RunView::from(&run),
        }),
    ))
}

/// `POST /api/v1/kb/sync` — api_push: `{source: {key}, documents[≤ 250], options?}`.
pub async fn push(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    ApiJson(body): ApiJson<PushBody>,
) -> Result<(StatusCode, Json<RunStarted>), ApiError> {
    let t = tenant()?;
    let run = state.knowledge.push(t.id, body).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(RunStarted {
            run: RunView::from(&run),
        }),
    ))
}
