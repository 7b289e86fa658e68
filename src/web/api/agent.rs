//! `POST /api/v1/agent/turns` (§12.2): a full agent turn as a principal,
//! through the shared turn runner on the API surface (admin flags off),
//! metered into `api_request_usage` (`rest_agent_turn`). Limits: a message
//! over 16 000 characters or history over its caps is a 400; rate,
//! in-flight and daily-budget refusals are 429 with `Retry-After`.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use storage::Channel;

use super::json::ApiJson;
use super::tools::PrincipalArg;
use crate::ai::chat::ChatMessage;
use crate::channels::{TurnOutcome, TurnRequest, run_channel_turn};
use crate::limits::caps::{MAX_HISTORY_ENTRY_CHARS, MAX_HISTORY_TOTAL_CHARS};
use crate::state::AppState;
use crate::web::error::ApiError;
use crate::web::turn_response::{TurnResponse, turn_error};

/// Most history messages a client may send.
pub const MAX_CLIENT_HISTORY: usize = 50;

/// One client-sent history message.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryItem {
    /// `user` | `assistant`.
    role: String,
    /// The text.
    content: String,
}

/// Body of `POST /agent/turns`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnBody {
    message: String,
    principal: PrincipalArg,
    #[serde(default)]
    thread_key: Option<String>,
    #[serde(default)]
    history: Option<Vec<HistoryItem>>,
}

/// `POST /api/v1/agent/turns` → `{response, tool_calls, images, usage, trace_id, thread_key, …}`.
pub async fn turns(
    State(state): State<AppState>,
    caller: super::Caller,
    ApiJson(body): ApiJson<TurnBody>,
) -> Result<Response, ApiError> {
    let (ref_, email, slack) = body.principal.parts();
    if ref_.is_none() && email.is_none() && slack.is_none() {
        return Err(ApiError::BadRequest(
            "principal must be a ref or {ref | email | slack_user_id}".into(),
        ));
    }
    let history = match body.history {
        None => None,
        Some(items) if items.len() > MAX_CLIENT_HISTORY => {
            return Err(ApiError::BadRequest(format!(
                "history holds at most {MAX_CLIENT_HISTORY} messages"
            )));
        }
        Some(items) => Some({
            let mut total = 0usize;
            for (i, h) in items.iter().enumerate() {
                let chars = h.content.chars().count();
                if chars > MAX_HISTORY_ENTRY_CHARS {
                    return Err(ApiError::BadRequest(format!(
                        "history[{i}] is {chars} characters long; at most {MAX_HISTORY_ENTRY_CHARS} per message"
                    )));
                }
                total += chars;
            }
            if total > MAX_HISTORY_TOTAL_CHARS {
                return Err(ApiError::BadRequest(format!(
                    "history holds {total} characters; at most {MAX_HISTORY_TOTAL_CHARS} in all"
                )));
            }
            items
                .into_iter()
                .map(|h| match h.role.as_str() {
                    "user" => Ok(ChatMessage::user(h.content)),
                    "assistant" => Ok(ChatMessage::assistant(h.content)),
                    other => Err(ApiError::BadRequest(format!(
                        "history role must be user or assistant, not {other:?}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?
        }),
    };
    let req = TurnRequest {
        channel: Some(Channel::Api),
        message: body.message,
        stable_user_id: ref_,
        email,
        slack_user_id: slack,
        thread_key: body.thread_key,
        history,
        api_key_id: Some(caller.key.id),
        ..TurnRequest::default()
    };
    let outcome =
        run_metered_turn(&state, &caller, req, storage::ApiSurface::RestAgentTurn).await?;
    Ok(Json(TurnResponse::from_outcome(&outcome)).into_response())
}

/// Run `req` as an API-surface turn for `caller` and meter it into
/// `api_request_usage` under `surface` (REST and MCP share this).
pub(crate) async fn run_metered_turn(
    state: &AppState,
    caller: &super::Caller,
    req: TurnRequest,
    surface: storage::ApiSurface,
) -> Result<TurnOutcome, ApiError> {
    let outcome = run_channel_turn(&state.turns, req)
        .await
        .map_err(turn_error)?;
    let row = storage::ApiRequestUsage {
        id: uuid::Uuid::new_v4(),
        tenant_id: caller.tenant.id,
        surface,
        api_key_id: Some(caller.key.id),
        llm_calls: outcome.usage.llm_calls as i64,
        total_tokens: outcome.usage.tokens as i64,
        cost_usd: outcome.usage.cost_usd,
        created_at: state.clock.now(),
        ..Default::default()
    };
    if let Err(e) = state.store.insert_relaxed(row).await {
        tracing::warn!(error = %e, "api_request_usage row not written");
    }
    Ok(outcome)
}
