//! A channel turn as an NDJSON stream (§8.4): `phase`, `tool`, `progress`,
//! `answer` deltas, then `done` or `error`, each line flushed as it
//! happens. Shared by the web test chat (`POST /web/:slug/messages/stream`)
//! and the dashboard's admin chat (`POST /chat/stream`).
//!
//! The turn runs in its own task: a client that goes away stops receiving
//! events, the turn still finishes and its exchange is logged.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use storage::Tenant;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::turn_response::turn_error;
use crate::ai::chat::ChatDelta;
use crate::channels::{TurnRequest, run_channel_turn};
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::tools::ToolEvent;

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

/// Run `req` for `tenant` and answer with its events as NDJSON.
pub fn ndjson_turn(state: &AppState, tenant: Arc<Tenant>, req: TurnRequest) -> Response {
    let (out, rx) = mpsc::channel::<Bytes>(256);
    let _ = out.try_send(line(&StreamEvent::Phase { phase: "thinking" }));
    let turns = state.turns.clone();
    tokio::spawn(async move {
        let (dtx, mut drx) = mpsc::channel::<ChatDelta>(256);
        let (ptx, mut prx) = mpsc::channel::<String>(64);
        let (etx, mut erx) = mpsc::channel::<ToolEvent>(64);
        let mut req = req;
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
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(body),
    )
        .into_response()
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
