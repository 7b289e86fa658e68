//! The web test chat (§8.4): `GET /web/:slug/test?token=…` (the chat page),
//! `POST /web/:slug/messages` (a whole turn as JSON) and `POST
//! /web/:slug/messages/stream` (NDJSON: `phase`, `tool`, `progress`,
//! `answer` deltas, then `done` or `error`, each line flushed as it
//! happens). Every route needs the tenant's chat token — the `token` query
//! parameter or `Authorization: Bearer` — compared in constant time; a
//! wrong token and an unknown tenant get the same 403.
//!
//! The turn runs in its own task: a client that goes away stops receiving
//! events, the turn still finishes and its exchange is logged.

use std::convert::Infallible;
use std::sync::Arc;

use askama::Template;
use axum::Json;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use storage::{Channel, Tenant};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::api::json::ApiJson;
use super::turn_response::{TurnResponse, turn_error};
use crate::ai::chat::ChatDelta;
use crate::channels::web::{token_matches, web_token};
use crate::channels::{TurnRequest, run_channel_turn};
use crate::platform::branding::logo_src;
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::tools::ToolEvent;
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
    match tenant {
        Some(t) if ok => Ok(t),
        _ => {
            tracing::warn!(slug, "web chat refused: missing or wrong token");
            Err(denied())
        }
    }
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
    let turns = state.turns.clone();
    let outcome = tenancy::scope(TenantContext { tenant }, async move {
        run_channel_turn(&turns, turn_request(body)).await
    })
    .await
    .map_err(turn_error)?;
    Ok(Json(TurnResponse::from_outcome(&outcome)).into_response())
}

/// One NDJSON line of the stream.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// What the turn is doing (`thinking`, then `answering`).
    Phase {
        /// The phase.
        phase: &'static str,
    },
    /// A tool started or finished.
    Tool {
        /// Tool name.
        name: String,
        /// `started` or `finished`.
        status: &'static str,
        /// On `finished`: did it succeed?
        #[serde(skip_serializing_if = "Option::is_none")]
        success: Option<bool>,
    },
    /// A tool's progress message.
    Progress {
        /// The message.
        message: String,
    },
    /// Answer text, as it is written.
    Answer {
        /// The next piece.
        delta: String,
    },
    /// The turn ended.
    Done {
        /// The reply as delivered (links attached).
        response: String,
        /// `false` when the agent could not complete the request.
        success: bool,
        /// Tools that ran.
        tool_calls: Vec<ToolCallBrief>,
        /// The run's trace.
        trace_id: Option<Uuid>,
        /// Send it back to continue.
        thread_key: String,
    },
    /// The turn could not run.
    Error {
        /// Why (safe to show).
        message: String,
    },
}

/// A tool call in the `done` event.
#[derive(Debug, Serialize)]
pub struct ToolCallBrief {
    name: String,
    success: bool,
}

fn line(e: &StreamEvent) -> Bytes {
    let mut v = serde_json::to_vec(e).unwrap_or_else(|_| b"{\"type\":\"error\"}".to_vec());
    v.push(b'\n');
    Bytes::from(v)
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
    let (out, rx) = mpsc::channel::<Bytes>(256);
    let _ = out.try_send(line(&StreamEvent::Phase { phase: "thinking" }));
    let turns = state.turns.clone();
    tokio::spawn(async move {
        let (dtx, mut drx) = mpsc::channel::<ChatDelta>(256);
        let (ptx, mut prx) = mpsc::channel::<String>(64);
        let (etx, mut erx) = mpsc::channel::<ToolEvent>(64);
        let mut req = turn_request(body);
        req.stream = Some(dtx);
        req.progress = Some(ptx);
        req.tool_events = Some(etx);
        let turn = tenancy::scope(TenantContext { tenant }, async move {
            run_channel_turn(&turns, req).await
        });
        tokio::pin!(turn);
        let mut answering = false;
        // A gone client only makes these sends fail; the turn goes on.
        let send = |e: StreamEvent| {
            let out = out.clone();
            async move {
                let _ = out.send(line(&e)).await;
            }
        };
        let outcome = loop {
            tokio::select! {
                o = &mut turn => break o,
                Some(d) = drx.recv() => {
                    if let ChatDelta::Text(t) = d {
                        if !answering {
                            answering = true;
                            send(StreamEvent::Phase { phase: "answering" }).await;
                        }
                        send(StreamEvent::Answer { delta: t }).await;
                    }
                }
                Some(p) = prx.recv() => send(StreamEvent::Progress { message: p }).await,
                Some(e) = erx.recv() => send(tool_event(e)).await,
            }
        };
        while let Ok(e) = erx.try_recv() {
            send(tool_event(e)).await;
        }
        while let Ok(d) = drx.try_recv() {
            if let ChatDelta::Text(t) = d {
                send(StreamEvent::Answer { delta: t }).await;
            }
        }
        let last = match outcome {
            Ok(o) => StreamEvent::Done {
                tool_calls: o
                    .tool_calls
                    .iter()
                    .map(|c| ToolCallBrief {
                        name: c.name.clone(),
                        success: c.result.success,
                    })
                    .collect(),
                response: o.reply,
                success: o.success,
                trace_id: o.trace_id,
                thread_key: o.thread_key,
            },
            Err(e) => {
                let err = turn_error(e);
                StreamEvent::Error {
                    message: err.to_string(),
                }
            }
        };
        send(last).await;
    });
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx))
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

fn tool_event(e: ToolEvent) -> StreamEvent {
    match e {
        ToolEvent::Started { name } => StreamEvent::Tool {
            name,
            status: "started",
            success: None,
        },
        ToolEvent::Finished { name, success } => StreamEvent::Tool {
            name,
            status: "finished",
            success: Some(success),
        },
    }
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
