//! `/chat` (§14.2): an owner or admin talks with the agent as themselves
//! (their email identity, the web channel), and watches the turn live —
//! phases, tool calls, the answer as it is written — over the same NDJSON
//! stream as the web test chat (`web::turn_stream`). Without a script the
//! form still works: `POST /chat` runs the whole turn and renders the
//! exchange. Viewers read the dashboard but do not run the agent (403).
//!
//! This is the one surface with the admin config tools (§5.1: knowledge
//! pages and sources, prompts, interventions, integrations): its turns set
//! `TurnRequest::dashboard_chat` — only after `change_refusal` passed (the
//! CSRF token, then the owner / admin role), so a viewer never gets them.

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use storage::Channel;

use super::{Chrome, Dashboard, PageForm, failed, harden, page_notice};
use crate::channels::{TurnRequest, run_channel_turn};
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::web::pages::render_page;
use crate::web::turn_response::turn_error;
use crate::web::turn_stream::ndjson_turn;

/// Longest message, in characters.
pub const CHAT_MESSAGE_MAX_CHARS: usize = 8_000;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/chat", get(page).post(send))
        .route("/chat/stream", post(stream))
}

/// One exchange shown on the page (the no-script path).
struct Exchange {
    asked: String,
    answer: String,
    tools: Vec<String>,
    trace_id: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/chat.html")]
struct ChatPage {
    chrome: Chrome,
    exchange: Option<Exchange>,
    thread_key: String,
    error: Option<String>,
}

/// The message form (both paths).
#[derive(Debug, Deserialize)]
pub struct ChatForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    thread_key: String,
}

fn chat_page(
    d: &Dashboard,
    exchange: Option<Exchange>,
    thread_key: String,
    error: Option<String>,
) -> Response {
    let status = if error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let view = ChatPage {
        chrome: Chrome::of(d, "/chat"),
        exchange,
        thread_key,
        error,
    };
    harden((status, render_page(&view, "admin chat", ())).into_response())
}

async fn page(d: Dashboard) -> Response {
    if !d.user.can_change() {
        return read_only();
    }
    chat_page(&d, None, String::new(), None)
}

fn read_only() -> Response {
    page_notice(
        StatusCode::FORBIDDEN,
        "Chat is for owners and admins",
        "Your role in this community is read-only; the agent's chat runs as an owner or admin.",
    )
}

/// The refusal for a message, or the turn to run.
fn request(d: &Dashboard, form: &ChatForm) -> Result<TurnRequest, String> {
    let message = form.message.trim();
    if message.is_empty() {
        return Err("Write a message first.".into());
    }
    if message.chars().count() > CHAT_MESSAGE_MAX_CHARS {
        return Err(format!("At most {CHAT_MESSAGE_MAX_CHARS} characters."));
    }
    Ok(TurnRequest {
        channel: Some(Channel::Web),
        message: message.to_string(),
        email: Some(d.user.email.clone()),
        thread_key: Some(form.thread_key.trim().to_string()).filter(|t| !t.is_empty()),
        dashboard_chat: true,
        dashboard_user: Some(d.user.team_actor()),
        ..TurnRequest::default()
    })
}

async fn send(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<ChatForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let req = match request(&d, &form) {
        Ok(r) => r,
        Err(e) => return chat_page(&d, None, form.thread_key, Some(e)),
    };
    let turns = state.turns.clone();
    let ctx = TenantContext {
        tenant: Arc::new(d.user.tenant.clone()),
    };
    let outcome = tenancy::scope(ctx, async move { run_channel_turn(&turns, req).await }).await;
    match outcome {
        Ok(o) => {
            let exchange = Exchange {
                asked: form.message.trim().to_string(),
                answer: o.reply.clone(),
                tools: o.tool_calls.iter().map(|c| c.name.clone()).collect(),
                trace_id: o.trace_id.map(|t| t.to_string()),
            };
            chat_page(&d, Some(exchange), o.thread_key, None)
        }
        Err(e) => {
            let err = turn_error(e);
            tracing::warn!(tenant = %d.user.tenant.id, error = %err, "admin chat turn failed");
            match err.status() {
                StatusCode::INTERNAL_SERVER_ERROR => failed("The agent could not answer."),
                _ => chat_page(&d, None, form.thread_key, Some(err.to_string())),
            }
        }
    }
}

/// `POST /chat/stream` body (JSON, from the page's script).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamBody {
    #[serde(default)]
    csrf: String,
    message: String,
    #[serde(default)]
    thread_key: Option<String>,
}

async fn stream(
    State(state): State<AppState>,
    d: Dashboard,
    body: Result<Json<StreamBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(body)) = body else {
        return page_notice(
            StatusCode::BAD_REQUEST,
            "Bad message",
            "The chat message was not understood.",
        );
    };
    let form = ChatForm {
        csrf: body.csrf,
        message: body.message,
        thread_key: body.thread_key.unwrap_or_default(),
    };
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match request(&d, &form) {
        Ok(req) => harden(ndjson_turn(&state, Arc::new(d.user.tenant.clone()), req)),
        Err(e) => page_notice(StatusCode::UNPROCESSABLE_ENTITY, "Bad message", &e),
    }
}
