//! `POST /api/v1/identity/resolve` (§12.2, §6): `{email | slack_user_id,
//! channel?}` → `{principal, acts_for}`, asking the tenant's integrations
//! first. When none resolves the person the answer is `{principal: null}`;
//! the access-policy fallback (§9) joins here when it lands.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::json::ApiJson;
use crate::integrations::IdentityQuery;
use crate::integrations::client::{ActsFor, ResolvedPrincipal};
use crate::state::AppState;
use crate::web::error::ApiError;

/// Body of `POST /identity/resolve`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    slack_user_id: Option<String>,
    /// `slack` or `email`; defaults to `slack` when a Slack id is given.
    #[serde(default)]
    channel: Option<String>,
}

/// The integrations' answer: the person (or `null`), who they act for, and
/// `source: "integration"` when someone answered.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct IdentityAnswer {
    principal: Option<ResolvedPrincipal>,
    acts_for: Option<ActsFor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'static str>,
}

/// `POST /api/v1/identity/resolve`
pub async fn resolve(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ResolveBody>,
) -> Result<Json<IdentityAnswer>, ApiError> {
    let email = body
        .email
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty());
    let slack = body
        .slack_user_id
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if email.is_none() && slack.is_none() {
        return Err(ApiError::BadRequest(
            "give an email or a slack_user_id".into(),
        ));
    }
    let channel = match body.channel.as_deref() {
        Some(c @ ("slack" | "email")) => c.to_string(),
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "channel must be slack or email (got {other:?})"
            )));
        }
        None if slack.is_some() => "slack".into(),
        None => "email".into(),
    };
    let query = IdentityQuery {
        channel,
        slack_user_id: slack,
        email,
    };
    let resolved = state
        .integrations
        .resolve_identity_via_integrations(&query)
        .await?;
    Ok(Json(match resolved {
        Some(r) => IdentityAnswer {
            principal: r.principal,
            acts_for: r.acts_for,
            source: Some("integration"),
        },
        None => IdentityAnswer {
            principal: None,
            acts_for: None,
            source: None,
        },
    }))
}
