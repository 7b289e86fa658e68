//! `PUT /api/v1/branding/logo` and `DELETE /api/v1/branding/logo` (§2.3
//! `tenant_assets`): the key's tenant's logo for its public pages. The body
//! is the image itself (PNG, JPEG, GIF or WebP, ≤ 512 KiB), typed by its
//! bytes; deleting goes back to Root's mark.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use serde::Serialize;

use super::limited::{Admitted, ChannelWrite};
use crate::platform::branding::{LogoError, clear_logo, logo_src, set_logo};
use crate::platform::tenancy;
use crate::state::AppState;
use crate::web::error::ApiError;

/// What the logo is now.
#[derive(Serialize, schemars::JsonSchema)]
pub struct LogoAnswer {
    /// `true` when the community's own image is served.
    uploaded: bool,
    content_type: Option<&'static str>,
    bytes: usize,
    /// Where public pages load it from.
    url: String,
}

/// Where the public pages load the logo from: `settings.logo_url` wins
/// over the upload when the admin set one.
fn logo_url(state: &AppState, tenant: &storage::Tenant) -> String {
    let src = logo_src(&tenant.settings.0, &tenant.slug);
    if src.starts_with('/') {
        format!(
            "{}{src}",
            state.config.platform_base_url.trim_end_matches('/')
        )
    } else {
        src
    }
}

/// `PUT /api/v1/branding/logo`
pub async fn put_logo(
    State(state): State<AppState>,
    _rate: Admitted<ChannelWrite>,
    body: Bytes,
) -> Result<Json<LogoAnswer>, ApiError> {
    let tenant = tenancy::current()
        .map(|c| c.tenant)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant context")))?;
    let size = body.len();
    let content_type = set_logo(&state.store, state.clock.as_ref(), tenant.id, body.to_vec())
        .await?
        .map_err(|e| {
            tracing::warn!(tenant = %tenant.id, bytes = size, error = %e, "logo upload refused");
            match e {
                LogoError::TooLarge(_) => ApiError::PayloadTooLarge(e.to_string()),
                LogoError::Empty | LogoError::NotAnImage => ApiError::BadRequest(e.to_string()),
            }
        })?;
    tracing::info!(tenant = %tenant.id, bytes = size, content_type, "logo replaced");
    Ok(Json(LogoAnswer {
        uploaded: true,
        content_type: Some(content_type),
        bytes: size,
        url: logo_url(&state, &tenant),
    }))
}

/// `DELETE /api/v1/branding/logo`
pub async fn delete_logo(
    State(state): State<AppState>,
    _rate: Admitted<ChannelWrite>,
) -> Result<Json<LogoAnswer>, ApiError> {
    let tenant = tenancy::current()
        .map(|c| c.tenant)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant context")))?;
    if clear_logo(&state.store, tenant.id).await? {
        tracing::info!(tenant = %tenant.id, "logo removed; Root's mark is shown");
    }
    Ok(Json(LogoAnswer {
        uploaded: false,
        content_type: None,
        bytes: 0,
        url: logo_url(&state, &tenant),
    }))
}
