//! The callback a webhook knowledge source pushes its documents to (§11.1):
//! `POST /webhooks/knowledge/{tenant_id}/{run_id}`, signed like §7.1 with
//! the source's `webhook_signing_secret` (`x-root-timestamp`,
//! `x-root-signature`, 300 s skew) — the tenant's CMS needs no API key.
//! Body `{documents[≤ 250], options?}`; 202 once the run is queued again.
//! Unknown tenant or run 404, bad signature 401, a run that is not waiting
//! for documents 409.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde::Serialize;
use uuid::Uuid;

use crate::knowledge::views::RunView;
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::web::error::ApiError;

/// `/webhooks/knowledge` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/webhooks/knowledge/{tenant_id}/{run_id}", post(callback))
}

/// `{run}` once queued.
#[derive(Serialize)]
pub struct CallbackAnswer {
    run: RunView,
}

async fn callback(
    State(state): State<AppState>,
    Path((tenant_id, run_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<CallbackAnswer>), ApiError> {
    let not_found = || ApiError::NotFound("no such sync run".into());
    let (Ok(tenant_id), Ok(run_id)) = (Uuid::parse_str(&tenant_id), Uuid::parse_str(&run_id))
    else {
        return Err(not_found());
    };
    let tenant = state
        .tenants
        .by_id(tenant_id)
        .await?
        .ok_or_else(not_found)?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let ts = header(crate::integrations::signing::TIMESTAMP_HEADER);
    let sig = header(crate::integrations::signing::SIGNATURE_HEADER);
    let knowledge = state.knowledge.clone();
    let run = tenancy::scope(
        TenantContext { tenant },
        async move { knowledge.push_to_run(tenant_id, run_id, &body, ts, sig).await },
    )
    .await
    .inspect_err(|e| tracing::warn!(tenant = %tenant_id, run = %run_id, error = %e, "knowledge callback refused"))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(CallbackAnswer {
            run: RunView::from(&run),
        }),
    ))
}
