//! Bearer authentication for `/api/v1/*` (§12.1). Resolves the key, selects
//! the tenant row by the key's environment, and runs the rest of the request
//! inside that tenant's context.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use storage::{Tenant, TenantApiKey};

use crate::platform::api_keys::{self, AuthError};
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::web::error::ApiError;

/// The authenticated caller, available to handlers as an extractor.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The key used.
    pub key: TenantApiKey,
    /// The tenant row it selects.
    pub tenant: Arc<Tenant>,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or(ApiError::Unauthorized)
    }
}

/// The token of an `Authorization: Bearer …` header.
pub(super) fn bearer_token(req: &Request) -> Option<String> {
    req.headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then(|| token.trim().to_string())
        })
}

/// Middleware: authenticate, then continue inside the tenant scope.
pub async fn require_api_key(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let result = match bearer_token(&req) {
        None => Err(AuthError::Missing),
        Some(raw) => api_keys::authenticate(&state.store, &state.tenants, &raw).await,
    };
    let authed = match result {
        Ok(a) => a,
        Err(AuthError::InactiveTenant(slug)) => {
            tracing::info!(tenant = %slug, "api key refused: tenant not active");
            return ApiError::Forbidden("tenant is not active".into()).into_response();
        }
        Err(AuthError::Storage(e)) => return ApiError::from(e).into_response(),
        Err(reason) => {
            // The reason is logged for operators; the client learns nothing.
            tracing::info!(%reason, "api key refused");
            return ApiError::Unauthorized.into_response();
        }
    };
    // Every request counts against the key's and the tenant's API rate
    // before any work (429 + Retry-After), so one key cannot starve others.
    if let Err(limited) = state.limits.check(
        crate::limits::Action::ApiRequest,
        &authed.tenant,
        Some(authed.key.id),
    ) {
        return ApiError::from(limited).into_response();
    }
    let ctx = TenantContext {
        tenant: authed.tenant.clone(),
    };
    req.extensions_mut().insert(Caller {
        key: authed.key,
        tenant: authed.tenant,
    });
    tenancy::scope(ctx, next.run(req)).await
}
