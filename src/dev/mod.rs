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
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::Channel;

use crate::api::Caller;
use crate::api::json::ApiJson;
use crate::app::AppState;
use crate::channels::{TurnError, TurnOutcome, TurnRequest, run_channel_turn};
use crate::error::ApiError;
use crate::limits::TurnRefusal;

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
) -> Result<Json<Value>, ApiError> {
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
    match run_channel_turn(&state, req).await {
        Ok(outcome) => Ok(Json(outcome_json(&outcome))),
        Err(TurnError::Refused(
            r @ (TurnRefusal::BudgetExhausted { .. } | TurnRefusal::MessageTooLong { .. }),
        )) => Ok(Json(refusal_json(&r))),
        Err(e) => Err(turn_error(e)),
    }
}

/// What a channel member sees for a refused turn, in the harness's shape.
pub fn refusal_json(r: &TurnRefusal) -> Value {
    json!({
        "response": r.member_text(),
        "success": false,
        "refused": refusal_code(r),
        "tool_calls": [],
        "images": [],
    })
}

fn refusal_code(r: &TurnRefusal) -> &'static str {
    match r {
        TurnRefusal::MessageTooLong { .. } => "message_too_long",
        TurnRefusal::Limited(e) if e.concurrency => "concurrency_limited",
        TurnRefusal::Limited(_) => "rate_limited",
        TurnRefusal::BudgetExhausted { .. } => "llm_budget_exhausted",
    }
}

/// A turn failure as an HTTP error: a message over the size cap is a 400;
/// rate, concurrency and budget refusals are 429 with `Retry-After` (the
/// budget's is the time until 00:00 UTC).
pub fn turn_error(e: TurnError) -> ApiError {
    match e {
        TurnError::Invalid(m) => ApiError::BadRequest(m),
        TurnError::Internal(e) => ApiError::Internal(e),
        TurnError::Refused(r) => match r {
            TurnRefusal::MessageTooLong { .. } => ApiError::BadRequest(r.to_string()),
            TurnRefusal::Limited(e) => e.into(),
            TurnRefusal::BudgetExhausted { retry_after_secs } => ApiError::TooManyRequests {
                code: refusal_code(&r),
                message: r.to_string(),
                retry_after_secs,
            },
        },
    }
}

/// The JSON answer shared by the harness and the REST agent-turn route:
/// the reply, the tool calls (model view: no `error_detail`, no images)
/// and the trace id.
pub fn outcome_json(o: &TurnOutcome) -> Value {
    let tool_calls: Vec<Value> = o
        .tool_calls
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "name": c.name,
                "args": c.args,
                "round": c.round,
                "success": c.result.success,
                "result": c.result.model_view(),
                "duration_ms": c.duration_ms,
            })
        })
        .collect();
    json!({
        "response": o.reply,
        "success": o.success,
        "tool_calls": tool_calls,
        "trace_id": o.trace_id,
        "thread_key": o.thread_key,
        "exchange_key": o.exchange_key,
        "principal": {"ref": o.principal_ref, "tier": o.tier, "tier_source": o.tier_source},
        "degraded": o.degraded,
        "offered_tools": o.offered_tools,
        "images": o.images,
        "usage": {"llm_calls": o.usage.llm_calls, "tokens": o.usage.tokens, "cost_usd": o.usage.cost_usd},
    })
}
