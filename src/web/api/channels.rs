//! Channel setup routes (§8.2, §12.2), for the key's tenant:
//! `PUT /api/v1/channels/slack` sets the Slack app credentials (checked with
//! Slack's `auth.test` first; answers the workspace and the bot user, never
//! a secret; rate-limited like KB writes).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use storage::ChannelStatus;

use super::json::ApiJson;
use super::limited::{Admitted, ChannelWrite};
use crate::channels::slack_setup::{SetupError, SlackAppInput};
use crate::config::Secret;
use crate::state::AppState;
use crate::web::error::ApiError;

/// Body of `PUT /channels/slack`.
#[derive(Deserialize)]
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
#[derive(Debug, Serialize)]
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
