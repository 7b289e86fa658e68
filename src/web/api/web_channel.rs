//! `PUT /api/v1/channels/web` (§8.4): create or rotate the key's tenant's
//! web test-chat token. Answers the token and the chat page's URL once;
//! any previous token stops working at once.

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use super::limited::{Admitted, ChannelWrite};
use crate::channels::web::{chat_url, rotate_web_token};
use crate::platform::tenancy;
use crate::state::AppState;
use crate::web::error::ApiError;

/// The answer: shown once.
#[derive(Serialize, schemars::JsonSchema)]
pub struct WebChannelAnswer {
    token: String,
    url: String,
}

/// `PUT /api/v1/channels/web`
pub async fn put_web(
    State(state): State<AppState>,
    _rate: Admitted<ChannelWrite>,
) -> Result<Json<WebChannelAnswer>, ApiError> {
    let tenant = tenancy::current()
        .map(|c| c.tenant)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant context")))?;
    let token = rotate_web_token(&state.store, state.clock.as_ref(), tenant.id).await?;
    tracing::info!(tenant = %tenant.id, "web chat token rotated");
    Ok(Json(WebChannelAnswer {
        url: chat_url(&state.config.platform_base_url, &tenant.slug, &token),
        token,
    }))
}
