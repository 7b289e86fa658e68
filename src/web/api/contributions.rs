//! Author-scoped Slack contribution management (§12.2
//! `/slack/contributions`, §5.1): a portal lists, adds, refreshes and
//! removes one member's indexed public Slack messages. The member is named by
//! exactly one of `ref`, `email` or `slack_user_id` (query on `GET` and
//! `DELETE`, body on `POST`); the rules live in
//! `retrieval::contributions`, shared with the member tools.

use axum::Json;
use axum::extract::{Path, State};
use schemars::JsonSchema;
use serde::Deserialize;
use uuid::Uuid;

use super::json::{ApiJson, ApiQuery};
use super::principals::{PrincipalQuery, lookup, principal};
use crate::retrieval::contributions::{
    ContributionError, ContributionList, Reindexed, Removed, SlackContributions,
};
use crate::state::AppState;
use crate::web::error::ApiError;

/// Body of `POST /slack/contributions`: the member and the message link.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddContributionBody {
    /// `principals.ref`.
    #[serde(default, rename = "ref")]
    pub ref_: Option<String>,
    /// Email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Slack user id.
    #[serde(default)]
    pub slack_user_id: Option<String>,
    /// Link of one of the member's own public messages
    /// (`https://<workspace>.slack.com/archives/<channel>/p<digits>`).
    pub permalink: String,
}

impl From<ContributionError> for ApiError {
    fn from(e: ContributionError) -> Self {
        match e {
            ContributionError::NoSlackAccount => {
                ApiError::Unprocessable("the member has no known Slack account".into())
            }
            ContributionError::NotALink => ApiError::field("permalink", e.to_string()),
            ContributionError::NotFound => {
                ApiError::NotFound("no such contribution of this member".into())
            }
            ContributionError::NotInPublicChannel => ApiError::NotFound(e.to_string()),
            ContributionError::NotTheAuthor => ApiError::Forbidden(e.to_string()),
            ContributionError::Withdrawn => ApiError::StateConflict(e.to_string()),
            ContributionError::Internal(e) => ApiError::Internal(e),
        }
    }
}

/// The contributions of the member named by one of `r`, `email`, `slack`
/// (404 for an unknown one).
async fn of_member<'a>(
    state: &'a AppState,
    r: Option<&str>,
    email: Option<&str>,
    slack: Option<&str>,
) -> Result<SlackContributions<'a>, ApiError> {
    let p = principal(state, &lookup(r, email, slack)?).await?;
    Ok(SlackContributions::of(
        &state.retrieval,
        &state.tools.slack,
        p.slack_user_id.as_deref(),
    )?)
}

async fn of_query<'a>(
    state: &'a AppState,
    q: &PrincipalQuery,
) -> Result<SlackContributions<'a>, ApiError> {
    of_member(
        state,
        q.ref_.as_deref(),
        q.email.as_deref(),
        q.slack_user_id.as_deref(),
    )
    .await
}

fn contribution_id(raw: &str) -> Result<Uuid, ApiError> {
    raw.trim()
        .parse()
        .map_err(|_| ApiError::field("id", format!("{raw:?} is not a contribution id (a UUID)")))
}

/// `GET /api/v1/slack/contributions`
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PrincipalQuery>,
) -> Result<Json<ContributionList>, ApiError> {
    Ok(Json(of_query(&state, &q).await?.list().await?))
}

/// `POST /api/v1/slack/contributions`
pub async fn add(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<AddContributionBody>,
) -> Result<Json<Reindexed>, ApiError> {
    let c = of_member(
        &state,
        body.ref_.as_deref(),
        body.email.as_deref(),
        body.slack_user_id.as_deref(),
    )
    .await?;
    let done = c.add(&body.permalink).await?;
    tracing::info!(contribution = %done.contribution.contribution_id, restored = done.restored,
        "slack contribution added to search");
    Ok(Json(done))
}

/// `POST /api/v1/slack/contributions/{id}/refresh`
pub async fn refresh(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PrincipalQuery>,
) -> Result<Json<Reindexed>, ApiError> {
    let id = contribution_id(&id)?;
    Ok(Json(of_query(&state, &body).await?.refresh(id).await?))
}

/// `DELETE /api/v1/slack/contributions/{id}`: out of search, never out of
/// Slack; repeating it changes nothing (`was_in_search: false`).
pub async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<PrincipalQuery>,
) -> Result<Json<Removed>, ApiError> {
    let id = contribution_id(&id)?;
    let done = of_query(&state, &q).await?.remove(id).await?;
    if done.was_in_search {
        tracing::info!(contribution = %id, "slack contribution removed from search");
    }
    Ok(Json(done))
}
