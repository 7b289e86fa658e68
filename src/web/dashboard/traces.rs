//! `/traces` and `/traces/{id}` (§3.3, §14.2): the local trace viewer — the
//! community's recent agent runs (tokens, cost, errors) and one run's spans
//! as a timeline: nesting, when each started and how long it took, its
//! input, output, error, model, tokens and cost. Read through `trace::Tracer`
//! (`recent`, `get`), which only ever returns the current tenant's traces.

use std::collections::HashMap;

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;
use storage::{AgentTrace, AgentTraceSpan};
use uuid::Uuid;

use super::{Chrome, Dashboard, failed, harden, page_notice};
use crate::state::AppState;
use crate::web::pages::render_page;

/// Runs the list shows.
pub const TRACES_SHOWN: usize = 50;
/// Longest input/output shown per span, in characters.
pub const PAYLOAD_SHOWN_CHARS: usize = 4_000;
/// Deepest nesting the page indents (deeper spans share the last step).
const MAX_DEPTH: usize = 6;
/// Timeline width (SVG user units).
const TIMELINE_W: f64 = 1000.0;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/traces", get(list))
        .route("/traces/{id}", get(detail))
}

/// A trace in the list.
struct TraceRow {
    trace: AgentTrace,
    duration_ms: i64,
    cost: String,
}

#[derive(Template)]
#[template(path = "dashboard/traces.html")]
struct ListPage {
    chrome: Chrome,
    traces: Vec<TraceRow>,
}

fn row(trace: AgentTrace) -> TraceRow {
    TraceRow {
        duration_ms: (trace.ended_at.micros() - trace.started_at.micros()) / 1000,
        cost: format!("{:.4}", trace.cost_usd),
        trace,
    }
}

async fn list(State(state): State<AppState>, d: Dashboard) -> Response {
    let traces = match d.scoped(state.tracer.recent(TRACES_SHOWN)).await {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "trace list failed");
            return failed("The traces could not be loaded.");
        }
    };
    let view = ListPage {
        chrome: Chrome::of(&d, "/traces"),
        traces: traces.into_iter().map(row).collect(),
    };
    harden(render_page(&view, "traces", ()))
}

/// One span on the timeline.
struct SpanRow {
    span: AgentTraceSpan,
    depth: usize,
    offset_ms: i64,
    duration_ms: i64,
    /// Bar position and width on the timeline (SVG units).
    x: f64,
    w: f64,
    input: String,
    output: String,
    cost: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/trace.html")]
struct DetailPage {
    chrome: Chrome,
    trace: TraceRow,
    input: String,
    output: String,
    spans: Vec<SpanRow>,
    timeline_w: f64,
}

/// Pretty JSON, cut to [`PAYLOAD_SHOWN_CHARS`].
fn shown(v: &Value) -> String {
    if v.is_null() {
        return String::new();
    }
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    match text.char_indices().nth(PAYLOAD_SHOWN_CHARS) {
        Some((cut, _)) => format!("{}… (cut)", &text[..cut]),
        None => text,
    }
}

/// The spans in timeline order with their depth and bar geometry.
fn timeline(trace: &AgentTrace, spans: Vec<AgentTraceSpan>) -> Vec<SpanRow> {
    let start = trace.started_at.micros();
    let total = (trace.ended_at.micros() - start).max(1) as f64;
    let parents: HashMap<Uuid, Option<Uuid>> =
        spans.iter().map(|s| (s.id, s.parent_span_id)).collect();
    let depth_of = |mut id: Option<Uuid>| {
        let mut depth = 0;
        while let Some(p) = id.and_then(|i| parents.get(&i).copied().flatten()) {
            depth += 1;
            id = Some(p);
            if depth >= MAX_DEPTH {
                break;
            }
        }
        depth
    };
    let r = |v: f64| (v * 10.0).round() / 10.0;
    let mut rows: Vec<SpanRow> = spans
        .into_iter()
        .map(|s| {
            let from = (s.started_at.micros() - start).max(0);
            let dur = (s.ended_at.micros() - s.started_at.micros()).max(0);
            let x = r(from as f64 / total * TIMELINE_W).min(TIMELINE_W);
            let w = r((dur as f64 / total * TIMELINE_W).max(2.0))
                .min(TIMELINE_W - x)
                .max(1.0);
            SpanRow {
                depth: depth_of(Some(s.id)),
                offset_ms: from / 1000,
                duration_ms: dur / 1000,
                x,
                w,
                input: shown(&s.input.0),
                output: shown(&s.output.0),
                cost: s.cost_usd.map(|c| format!("{c:.4}")),
                span: s,
            }
        })
        .collect();
    rows.sort_by_key(|r| (r.span.started_at, r.span.id));
    rows
}

async fn detail(State(state): State<AppState>, d: Dashboard, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<Uuid>() else {
        return page_notice(
            StatusCode::NOT_FOUND,
            "No such trace",
            "That is not a trace id.",
        );
    };
    let view = match d.scoped(state.tracer.get(id)).await {
        Ok(Some(v)) => v,
        Ok(None) => {
            return page_notice(
                StatusCode::NOT_FOUND,
                "No such trace",
                "This community has no trace with that id (traces are kept for the retention period).",
            );
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "trace read failed");
            return failed("The trace could not be loaded.");
        }
    };
    let spans = timeline(&view.trace, view.spans);
    let page = DetailPage {
        chrome: Chrome::of(&d, "/traces"),
        input: shown(&view.trace.input.0),
        output: shown(&view.trace.output.0),
        trace: row(view.trace),
        spans,
        timeline_w: TIMELINE_W,
    };
    harden(render_page(&page, "trace", ()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::Ts;

    fn span(id: u128, parent: Option<u128>, from_ms: i64, to_ms: i64, t0: Ts) -> AgentTraceSpan {
        AgentTraceSpan {
            id: Uuid::from_u128(id),
            parent_span_id: parent.map(Uuid::from_u128),
            started_at: t0.plus_micros(from_ms * 1000),
            ended_at: t0.plus_micros(to_ms * 1000),
            ..AgentTraceSpan::default()
        }
    }

    #[test]
    fn the_timeline_nests_spans_and_scales_them_to_the_run() {
        let t0 = Ts::from_secs(1_800_000_000);
        let trace = AgentTrace {
            started_at: t0,
            ended_at: t0.plus_micros(1_000_000),
            ..AgentTrace::default()
        };
        let rows = timeline(
            &trace,
            vec![span(2, Some(1), 250, 500, t0), span(1, None, 0, 1000, t0)],
        );
        assert_eq!(rows[0].span.id, Uuid::from_u128(1), "in start order");
        assert_eq!((rows[0].depth, rows[0].x, rows[0].w), (0, 0.0, 1000.0));
        assert_eq!((rows[1].depth, rows[1].x, rows[1].w), (1, 250.0, 250.0));
        assert_eq!((rows[1].offset_ms, rows[1].duration_ms), (250, 250));
    }
}
