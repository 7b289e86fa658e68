//! The dev harness (§8.5): `POST /dev/simulate-message` runs a full
//! Slack-style turn without Slack.
//!
//! It can run a turn as any Slack user id — an admin's included — so it is
//! fenced three ways: mounted only with `ROOT_DEV_HARNESS=true` (refused by
//! config in production and on a non-loopback bind), behind an API key of
//! the tenant (the tenant comes from the key), and behind the `Host` check
//! of browser-facing routes (`http::host_check`).
//!
//! Limits: like a channel, a message over the size cap or a tenant over its
//! daily LLM budget gets the member-facing refusal as the reply (200,
//! `success: false`, `refused`); rate and concurrency limits answer 429
//! with `Retry-After`.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use storage::Channel;

use crate::channels::{TurnError, TurnRequest, run_channel_turn};
use crate::limits::TurnRefusal;
use crate::state::AppState;
use crate::web::api::Caller;
use crate::web::api::json::ApiJson;
use crate::web::error::ApiError;
use crate::web::turn_response::{RefusalResponse, TurnResponse, turn_error};

/// The Slack conversation a simulated message arrives in when the body
/// names none: a DM, as most member questions are.
pub const SIMULATED_DM_CHANNEL: &str = "DSIMULATED";

/// `/dev` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/simulate-message", post(simulate_message))
}

/// Body of `POST /dev/simulate-message`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulateBody {
    /// Tenant slug (or id). Optional (kept for compatibility): the tenant
    /// is the API key's; when given it must name that tenant (403 otherwise).
    #[serde(default)]
    tenant: Option<String>,
    /// The member's message.
    message: String,
    /// The Slack user id the message comes from.
    #[serde(default)]
    slack_user_id: Option<String>,
    /// Display name when the principal has none.
    #[serde(default)]
    user_name: Option<String>,
    /// Slack conversation id (`D…` = DM, the default).
    #[serde(default)]
    channel_id: Option<String>,
    /// Continue a conversation.
    #[serde(default)]
    thread_key: Option<String>,
}

async fn simulate_message(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<SimulateBody>,
) -> Result<Response, ApiError> {
    let tenant = caller.tenant;
    if let Some(named) = body.tenant.as_deref().map(str::trim)
        && named != tenant.slug
        && uuid::Uuid::parse_str(named).ok() != Some(tenant.id)
    {
        tracing::warn!(key_tenant = %tenant.slug, "simulate-message refused: body names another tenant than the API key's");
        return Err(ApiError::Forbidden(
            "the tenant field must name the API key's tenant".into(),
        ));
    }
    let req = TurnRequest {
        channel: Some(Channel::Slack),
        message: body.message,
        slack_user_id: body.slack_user_id,
        user_name: body.user_name,
        slack_channel_id: Some(
            body.channel_id
                .unwrap_or_else(|| SIMULATED_DM_CHANNEL.to_string()),
        ),
        thread_key: body.thread_key,
        api_key_id: Some(caller.key.id),
        ..TurnRequest::default()
    };
    // The auth middleware already runs this request in the key's tenant.
    match run_channel_turn(&state.turns, req).await {
        Ok(outcome) => Ok(Json(TurnResponse::from_outcome(&outcome)).into_response()),
        Err(TurnError::Refused(
            r @ (TurnRefusal::BudgetExhausted { .. } | TurnRefusal::MessageTooLong { .. }),
        )) => Ok(Json(RefusalResponse::new(&r)).into_response()),
        Err(e) => Err(turn_error(e)),
    }
}
