//! The web test chat (§8.4): `GET /web/:slug/test?token=…` (the chat page),
//! `POST /web/:slug/messages` (a whole turn as JSON) and `POST
//! /web/:slug/messages/stream` (NDJSON: `phase`, `tool`, `progress`,
//! `answer` deltas, then `done` or `error`, each line flushed as it
//! happens; `web::turn_stream`). Every route needs the tenant's chat token — the `token` query
//! parameter or `Authorization: Bearer` — compared in constant time; a
//! wrong token and an unknown tenant get the same 403; a suspended
//! community's chat is a 403 too.
//!
//! The token only proves "a tester the admins trusted": the `email` field
//! picks a tier to try, never an admin's rights, memory or threads
//! ([`TurnOrigin::WebTestChat`]), and the JSON answer names the tools that
//! ran and their arguments but not what they returned (security review M-1).
//!
//! The turn runs in its own task: a client that goes away stops receiving
//! events, the turn still finishes and its exchange is logged.

use std::sync::Arc;

use askama::Template;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;
use storage::{Channel, Tenant};

use super::api::json::ApiJson;
use super::turn_response::{TurnResponse, turn_error};
use super::turn_stream::ndjson_turn;
use crate::channels::web::{token_matches, web_token};
use crate::channels::{TurnOrigin, TurnOutcome, TurnRequest, run_channel_turn};
use crate::platform::branding::logo_src;
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::web::error::ApiError;
use crate::web::pages::{notice, render_page};

/// `/web/:slug/…` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/web/{slug}/test", get(page))
        .route("/web/{slug}/messages", post(message))
        .route("/web/{slug}/messages/stream", post(stream))
}

/// `?token=`.
#[derive(Debug, Default, Deserialize)]
pub struct TokenQuery {
    #[serde(default)]
    token: Option<String>,
}

/// A chat message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatBody {
    /// The member's text.
    pub message: String,
    /// Run as this email identity (tier resolution, §8.4).
    #[serde(default)]
    pub email: Option<String>,
    /// Continue this conversation.
    #[serde(default)]
    pub thread_key: Option<String>,
    /// A display name for an unknown sender.
    #[serde(default)]
    pub user_name: Option<String>,
}

const DENIED: &str = "This chat link is not valid. Ask the community's admins for a current one.";
const SUSPENDED: &str = "This community's assistant is not available.";

/// Longest `user_name`, in characters (it becomes the prompt's display name).
pub const MAX_USER_NAME_CHARS: usize = crate::limits::caps::MAX_DISPLAY_NAME_CHARS;
/// Longest `email`, in characters (RFC 5321's path limit).
pub const MAX_EMAIL_CHARS: usize = 254;

/// The tenant of `slug` if `token` is its chat token (same answer for an
/// unknown tenant and a wrong token).
async fn admit(state: &AppState, slug: &str, token: Option<&str>) -> Result<Arc<Tenant>, ApiError> {
    let denied = || ApiError::Forbidden(DENIED.into());
    let tenant = state.tenants.by_slug(slug).await?;
    let expected = match &tenant {
        Some(t) => web_token(&state.store, t.id).await?,
        None => None,
    };
    let given = token.map(str::trim).unwrap_or("");
    // Compare even when there is nothing to compare with, so an unknown
    // tenant costs what a wrong token does.
    let ok = token_matches(expected.as_deref().unwrap_or("-"), given) && expected.is_some();
    let tenant = match tenant {
        Some(t) if ok => t,
        _ => {
            tracing::warn!(slug, "web chat refused: missing or wrong token");
            return Err(denied());
        }
    };
    if !tenancy::is_serving(&state.store, &tenant).await? {
        tracing::info!(tenant = %tenant.id, "web chat refused: community not active");
        return Err(ApiError::Forbidden(SUSPENDED.into()));
    }
    Ok(tenant)
}

/// The body's problem, if a field is over its cap (security review L-6).
fn oversized(body: &ChatBody) -> Option<String> {
    let over =
        |v: &Option<String>, max: usize| v.as_deref().is_some_and(|s| s.chars().count() > max);
    if over(&body.user_name, MAX_USER_NAME_CHARS) {
        return Some(format!(
            "user_name is longer than {MAX_USER_NAME_CHARS} characters"
        ));
    }
    if over(&body.email, MAX_EMAIL_CHARS) {
        return Some(format!("email is longer than {MAX_EMAIL_CHARS} characters"));
    }
    None
}

/// The turn of a checked body, or a 400 naming the oversized field.
fn checked_request(tenant: &Tenant, body: ChatBody) -> Result<TurnRequest, ApiError> {
    match oversized(&body) {
        Some(problem) => {
            tracing::info!(tenant = %tenant.id, problem = %problem, "web chat message refused");
            Err(ApiError::BadRequest(problem))
        }
        None => Ok(turn_request(body)),
    }
}

/// The answer of `POST /web/:slug/messages`: the API's turn shape without
/// the tool calls' `result`s. The token holder sees which tools ran with
/// which arguments (§8.4 `tool_calls`), never what they returned (M-1).
fn test_chat_answer(outcome: &TurnOutcome) -> Result<Value, ApiError> {
    let mut answer = serde_json::to_value(TurnResponse::from_outcome(outcome))
        .map_err(|e| ApiError::Internal(e.into()))?;
    if let Some(calls) = answer["tool_calls"].as_array_mut() {
        for call in calls.iter_mut().filter_map(Value::as_object_mut) {
            call.remove("result");
        }
    }
    Ok(answer)
}

fn token_of<'a>(q: &'a TokenQuery, headers: &'a HeaderMap) -> Option<&'a str> {
    q.token.as_deref().or_else(|| {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
    })
}

fn turn_request(body: ChatBody) -> TurnRequest {
    TurnRequest {
        channel: Some(Channel::Web),
        origin: TurnOrigin::WebTestChat,
        message: body.message,
        email: body.email,
        thread_key: body.thread_key,
        user_name: body.user_name,
        ..TurnRequest::default()
    }
}

/// `GET /web/:slug/test?token=…` — the chat page (403 page otherwise).
async fn page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
) -> Response {
    match admit(&state, &slug, token_of(&q, &headers)).await {
        Ok(t) => {
            let page = ChatPage {
                community: &t.display_name,
                slug: &slug,
                logo: logo_src(&t.settings.0, &slug),
            };
            render_page(
                &page,
                "web chat",
                [
                    (header::CACHE_CONTROL, "no-store"),
                    (header::REFERRER_POLICY, "no-referrer"),
                ],
            )
        }
        Err(_) => notice(StatusCode::FORBIDDEN, "Chat unavailable", DENIED),
    }
}

/// `POST /web/:slug/messages` — the whole turn as JSON.
async fn message(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let tenant = admit(&state, &slug, token_of(&q, &headers)).await?;
    let req = checked_request(&tenant, body)?;
    let turns = state.turns.clone();
    let outcome = tenancy::scope(TenantContext { tenant }, async move {
        run_channel_turn(&turns, req).await
    })
    .await
    .map_err(turn_error)?;
    Ok(Json(test_chat_answer(&outcome)?).into_response())
}

/// `POST /web/:slug/messages/stream` — NDJSON events as the turn runs.
async fn stream(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<TokenQuery>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let tenant = admit(&state, &slug, token_of(&q, &headers)).await?;
    let req = checked_request(&tenant, body)?;
    Ok(ndjson_turn(&state, tenant, req))
}

/// The chat page: no external assets; the token stays in the page's own
/// URL and is sent back with each message; text is always shown as text.
#[derive(Template)]
#[template(path = "webchat.html")]
struct ChatPage<'a> {
    community: &'a str,
    slug: &'a str,
    logo: String,
}
