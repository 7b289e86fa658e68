//! `GET /api/v1/me` → `{ tenant, key, environment }`.

use axum::Json;
use serde::Serialize;
use storage::{Environment, TenantStatus, Ts};
use uuid::Uuid;

use super::Caller;
use crate::platform::tenancy;
use crate::web::error::ApiError;

/// `GET /me`: the tenant the key selects, the key (never its secret), and
/// the environment.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MeResponse {
    tenant: TenantView,
    key: KeyView,
    environment: Environment,
}

/// The key's tenant row.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct TenantView {
    id: Uuid,
    slug: String,
    display_name: String,
    agent_name: String,
    status: TenantStatus,
    timezone: String,
    environment: Environment,
    live_tenant_id: Option<Uuid>,
}

/// The key itself, without its hash.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct KeyView {
    id: Uuid,
    name: String,
    token_prefix: String,
    environment: Environment,
    created_at: Ts,
    revoked_at: Option<Ts>,
}

/// Who am I: the tenant the key selects, the key (never its secret), and the environment.
pub async fn me(caller: Caller) -> Result<Json<MeResponse>, ApiError> {
    // Services read the tenant from context; /me shows it is the key's row.
    let ctx_id = tenancy::current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let t = &caller.tenant;
    debug_assert_eq!(ctx_id, t.id);
    let k = &caller.key;
    Ok(Json(MeResponse {
        tenant: TenantView {
            id: t.id,
            slug: t.slug.clone(),
            display_name: t.display_name.clone(),
            agent_name: t.agent_name.clone(),
            status: t.status,
            timezone: t.timezone.clone(),
            environment: t.environment,
            live_tenant_id: t.live_tenant_id,
        },
        key: KeyView {
            id: k.id,
            name: k.name.clone(),
            token_prefix: k.token_prefix.clone(),
            environment: k.environment,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        },
        environment: t.environment,
    }))
}
