//! Channel setup routes (§8.2, §12.2), for the key's tenant:
//! `PUT /api/v1/channels/slack` sets the Slack app credentials (checked with
//! Slack's `auth.test` first; answers the workspace and the bot user, never
//! a secret; rate-limited like KB writes), and the Slack app manifest
//! generator (§14.2) at `GET /api/v1/channels/slack/manifest` and the
//! dashboard's `GET /channels/slack/manifest?tenant=<slug>` (the same API
//! key auth; `tenant` must name the key's tenant or its live row, else 403).

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use storage::ChannelStatus;

use super::Caller;
use super::json::ApiJson;
use super::limited::{Admitted, ChannelWrite};
use crate::channels::slack_setup::{SetupError, SlackAppInput};
use crate::config::Secret;
use crate::slack::manifest::{AppManifest, tenant_app_manifest};
use crate::state::AppState;
use crate::web::error::ApiError;

/// Body of `PUT /channels/slack`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlackCredentialsBody {
    bot_token: String,
    signing_secret: String,
    #[serde(default)]
    team_id: Option<String>,
}

impl std::fmt::Debug for SlackCredentialsBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackCredentialsBody")
            .field("team_id", &self.team_id)
            .finish_non_exhaustive()
    }
}

/// `PUT /channels/slack`: what is now configured (never the secrets).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SlackChannelView {
    team_id: String,
    bot_user_id: String,
    status: ChannelStatus,
}

impl From<SetupError> for ApiError {
    fn from(e: SetupError) -> Self {
        match e {
            SetupError::Invalid(_) | SetupError::Rejected { .. } => {
                ApiError::BadRequest(e.to_string())
            }
            SetupError::Unavailable(_) => ApiError::BadGateway(e.to_string()),
            SetupError::Storage(s) => s.into(),
            SetupError::NoTenant(n) => ApiError::Internal(n.into()),
        }
    }
}

/// `PUT /api/v1/channels/slack`
pub async fn put_slack(
    State(state): State<AppState>,
    _rate: Admitted<ChannelWrite>,
    ApiJson(body): ApiJson<SlackCredentialsBody>,
) -> Result<Json<SlackChannelView>, ApiError> {
    let installed = state
        .slack_setup
        .set_credentials(SlackAppInput {
            bot_token: Secret::new(body.bot_token),
            signing_secret: Secret::new(body.signing_secret),
            team_id: body.team_id,
        })
        .await?;
    Ok(Json(SlackChannelView {
        team_id: installed.team_id,
        bot_user_id: installed.bot_user_id,
        status: installed.status,
    }))
}

/// Query of the manifest routes.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestQuery {
    /// A slug naming the key's tenant (its own or its live row's).
    #[serde(default)]
    tenant: Option<String>,
}

/// `GET /api/v1/channels/slack/manifest`, `GET /channels/slack/manifest`:
/// the Slack app manifest of the key's tenant; the request URL is always the
/// live slug's (a dev shadow shares its live tenant's events route).
pub async fn slack_manifest(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<ManifestQuery>, QueryRejection>,
) -> Result<Json<AppManifest>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let tenant = &caller.tenant;
    let (manifest, live_slug) =
        tenant_app_manifest(&state.tenants, &state.config.platform_base_url, tenant)
            .await?
            .ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!(
                    "live tenant {:?} missing",
                    tenant.live_tenant_id
                ))
            })?;
    if let Some(asked) = q.tenant.as_deref().map(str::trim)
        && asked != tenant.slug
        && asked != live_slug
    {
        return Err(ApiError::Forbidden(
            "the tenant query does not name this API key's tenant".into(),
        ));
    }
    Ok(Json(manifest))
}
