//! `GET /api/v1/me` → `{ tenant, key, environment }`.

use axum::Json;
use serde_json::{Value, json};

use super::Caller;
use crate::platform::tenancy;
use crate::web::error::ApiError;

/// Who am I: the tenant the key selects, the key (never its secret), and the environment.
pub async fn me(caller: Caller) -> Result<Json<Value>, ApiError> {
    // Services read the tenant from context; /me shows it is the key's row.
    let ctx_id = tenancy::current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let t = &caller.tenant;
    debug_assert_eq!(ctx_id, t.id);
    let k = &caller.key;
    Ok(Json(json!({
        "tenant": {
            "id": t.id,
            "slug": t.slug,
            "display_name": t.display_name,
            "agent_name": t.agent_name,
            "status": t.status,
            "timezone": t.timezone,
            "environment": t.environment,
            "live_tenant_id": t.live_tenant_id,
        },
        "key": {
            "id": k.id,
            "name": k.name,
            "token_prefix": k.token_prefix,
            "environment": k.environment,
            "created_at": k.created_at,
            "revoked_at": k.revoked_at,
        },
        "environment": t.environment,
    })))
}
