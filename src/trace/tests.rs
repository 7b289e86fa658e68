use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::json;
use storage::{MigrationStore, RedbStore, Tenant};

use super::*;
use crate::config::Config;
use crate::platform::clock::SystemClock;
use crate::platform::tenancy::{self, TenantContext};

async fn tracer_with(vars: &[(&str, &str)]) -> Tracer {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let config =
        Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
    Tracer::from_config(&config, store, Arc::new(SystemClock))
}

async fn tracer() -> Tracer {
    tracer_with(&[]).await
}

fn tenant() -> TenantContext {
    TenantContext {
        tenant: Arc::new(Tenant::new("acme", "Acme")),
    }
}

fn start(name: &str) -> TraceStart {
    TraceStart {
        name: name.into(),
        input: json!({"message": "hi"}),
        ..TraceStart::default()
    }
}

/// Run `fut` in a trace for `ctx` and return the stored trace.
async fn traced<F: Future<Output = ()>>(t: &Tracer, ctx: TenantContext, fut: F) -> TraceView {
    tenancy::scope(ctx, async {
        let id = t
            .run(start("agent.run"), async {
                fut.await;
                current_trace_id().expect("inside a trace")
            })
            .await;
        t.flush().await;
        t.get(id).await.unwrap().expect("trace stored")
    })
    .await
}

fn usage(prompt: u64, completion: u64, cost: Option<f64>) -> LlmUsage {
    LlmUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        cost_usd: cost,
    }
}

#[tokio::test]
async fn nested_spans_get_their_parent_and_concurrent_spans_do_not_nest() {
    let t = tracer().await;
    let view = traced(&t, tenant(), async {
        span("planning_round_1", SpanKind::General, json!({}), async {
            span("llm:planner", SpanKind::Llm, json!({}), async {
                set_span_output(json!({"text": "plan"}));
            })
            .await;
        })
        .await;
        // Two tools polled together in one task: each is its own child of
        // the trace, and a span inside each nests under its own tool.
        join_all(["a", "b"].map(|name| async move {
            span(&format!("tool:{name}"), SpanKind::Tool, json!({}), async {
                tokio::task::yield_now().await;
                span(
                    &format!("inner:{name}"),
                    SpanKind::General,
                    json!({}),
                    async {
                        tokio::task::yield_now().await;
                    },
                )
                .await;
            })
            .await;
        }))
        .await;
        set_trace_output(json!({"reply": "done"}));
    })
    .await;
    assert_eq!(view.spans.len(), 6, "{:#?}", view.spans);
    let planning = view.span("planning_round_1").unwrap();
    let llm = view.span("llm:planner").unwrap();
    assert_eq!(planning.parent_span_id, None);
    assert_eq!(llm.parent_span_id, Some(planning.id));
    assert_eq!(llm.kind, TraceSpanKind::Llm);
    assert_eq!(llm.output.0, json!({"text": "plan"}));
    for name in ["a", "b"] {
        let tool = view.span(&format!("tool:{name}")).unwrap();
        assert_eq!(tool.parent_span_id, None, "tool:{name} is under the trace");
        assert_eq!(tool.kind, TraceSpanKind::Tool);
        let inner = view.span(&format!("inner:{name}")).unwrap();
        assert_eq!(inner.parent_span_id, Some(tool.id), "inner:{name}");
    }
    assert!(
        view.spans
            .iter()
            .all(|s| s.trace_id == view.trace.id && s.error.is_none())
    );
    assert_eq!(view.trace.output.0, json!({"reply": "done"}));
    assert_eq!(view.trace.input.0, json!({"message": "hi"}));
    assert_eq!(view.trace.id.get_version_num(), 7);
}

#[tokio::test]
async fn outside_a_trace_everything_is_a_no_op() {
    let t = tracer().await;
    assert_eq!(current_trace_id(), None);
    assert!(!active());
    let out = span("x", SpanKind::Llm, json!({}), async {
        set_span_output(json!(1));
        record_llm_usage("m", usage(1, 1, None));
        log_feedback_score("s", 1.0);
        set_trace_output(json!(2));
        set_span_error("e");
        current_trace_id()
    })
    .await;
    assert_eq!(out, None);
    // No tenant: no trace, the future still runs.
    let out = t.run(start("x"), async { current_trace_id() }).await;
    assert_eq!(out, None);
    tenancy::scope(tenant(), async {
        assert!(t.recent(10).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_disabled_tracer_only_runs_the_future() {
    for t in [
        Tracer::disabled(),
        tracer_with(&[("ROOT_TRACING", "off")]).await,
    ] {
        assert!(!t.is_enabled());
        let (id, n) = tenancy::scope(
            tenant(),
            t.run(start("x"), async {
                let n = span("s", SpanKind::General, json!({}), async { 41 + 1 }).await;
                (current_trace_id(), n)
            }),
        )
        .await;
        assert_eq!((id, n), (None, 42));
        t.flush().await;
        assert_eq!(t.prune_expired().await.unwrap(), 0);
    }
}

#[tokio::test]
async fn llm_usage_lands_on_the_innermost_span_and_in_the_trace_totals() {
    let t = tracer().await;
    let view = traced(&t, tenant(), async {
        span("answer_phase", SpanKind::General, json!({}), async {
            span("llm:agent", SpanKind::Llm, json!({}), async {
                record_llm_usage("model-a", usage(100, 20, Some(0.5)));
            })
            .await;
        })
        .await;
        span("embedding_batch", SpanKind::Llm, json!({}), async {
            record_llm_usage("embed-m", usage(30, 0, None));
        })
        .await;
        log_feedback_score("helpful", 0.5);
        log_feedback_score("helpful", 1.0);
    })
    .await;
    let llm = view.span("llm:agent").unwrap();
    assert_eq!(llm.model.as_deref(), Some("model-a"));
    assert_eq!(
        (
            llm.prompt_tokens,
            llm.completion_tokens,
            llm.total_tokens,
            llm.cost_usd
        ),
        (100, 20, 120, Some(0.5))
    );
    let phase = view.span("answer_phase").unwrap();
    assert_eq!((phase.model.as_deref(), phase.total_tokens), (None, 0));
    let emb = view.span("embedding_batch").unwrap();
    assert_eq!((emb.total_tokens, emb.cost_usd), (30, None));
    let tr = &view.trace;
    assert_eq!(
        (
            tr.llm_calls,
            tr.prompt_tokens,
            tr.completion_tokens,
            tr.total_tokens
        ),
        (2, 130, 20, 150)
    );
    assert!((tr.cost_usd - 0.5).abs() < 1e-12);
    assert_eq!(
        tr.feedback_scores,
        vec![TraceFeedbackScore {
            name: "helpful".into(),
            value: 1.0
        }]
    );
}

#[tokio::test]
async fn a_dropped_span_is_recorded_as_cancelled() {
    let t = tracer().await;
    let view = traced(&t, tenant(), async {
        let slow = span("tool:slow", SpanKind::Tool, json!({}), pending::<()>());
        let timed_out = tokio::time::timeout(Duration::from_millis(5), slow).await;
        assert!(timed_out.is_err());
        span("after", SpanKind::General, json!({}), async {}).await;
    })
    .await;
    let slow = view.span("tool:slow").unwrap();
    assert_eq!(slow.error.as_deref(), Some(CANCELLED));
    assert!(slow.ended_at >= slow.started_at);
    let after = view.span("after").unwrap();
    assert_eq!((after.parent_span_id, after.error.as_deref()), (None, None));
    assert_eq!(view.trace.error, None);
}

#[tokio::test]
async fn a_dropped_run_still_stores_its_trace_as_cancelled() {
    let t = tracer().await;
    tenancy::scope(tenant(), async {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let run = t.run(start("agent.run"), async move {
            let _ = tx.send(current_trace_id().unwrap());
            span(
                "planning_round_1",
                SpanKind::General,
                json!({}),
                pending::<()>(),
            )
            .await;
        });
        assert!(
            tokio::time::timeout(Duration::from_millis(5), run)
                .await
                .is_err()
        );
        let id = rx.await.unwrap();
        t.flush().await;
        let view = t.get(id).await.unwrap().expect("stored");
        assert_eq!(view.trace.error.as_deref(), Some(CANCELLED));
        assert_eq!(
            view.span("planning_round_1").unwrap().error.as_deref(),
            Some(CANCELLED)
        );
        assert_eq!(t.recent(5).await.unwrap()[0].id, id);
    })
    .await;
}

#[tokio::test]
async fn a_run_inside_a_run_joins_the_outer_trace() {
    let t = tracer().await;
    let ctx = tenant();
    let view = traced(&t, ctx.clone(), async {
        let outer = current_trace_id();
        let inner = t.run(start("nested"), async { current_trace_id() }).await;
        assert_eq!(inner, outer);
        let spawned = tokio::spawn(in_current_span(async {
            span("spawned", SpanKind::General, json!({}), async {}).await;
            current_trace_id()
        }))
        .await
        .unwrap();
        assert_eq!(spawned, outer);
    })
    .await;
    assert!(view.span("spawned").is_some());
    tenancy::scope(ctx, async {
        assert_eq!(t.recent(10).await.unwrap().len(), 1);
    })
    .await;
}
