//! Agent-run tracing (§3.3) end to end: traces recorded in redb through the
//! real `AppState`, LLM calls against a fake OpenAI-compatible server,
//! tenant isolation, retention on a manual clock, and the Opik export
//! against a fake Opik on 127.0.0.1 (and with Opik down).

use std::sync::Arc;

use serde_json::{Value, json};
use storage::{LlmTokenUsage, MigrationStore, RedbStore, Scan, Store, Ts};
use uuid::Uuid;

use root::ai::chat::{ChatMessage, ChatRequest};
use root::app::AppState;
use root::config::Config;
use root::platform::clock::{Clock, ManualClock, SystemClock};
use root::platform::notify::LogSink;
use root::platform::tenancy::{self, TenantContext};
use root::queue::metrics::QueueMetrics;
use root::trace::{self, SpanKind, TraceStart};

use crate::support::{FakeHttp, closed_port_url, create_tenant};

const DAY_MS: i64 = 24 * 3600 * 1000;
const MODEL: &str = "test/model-x";
const OPIK_KEY: &str = "opik-test-key";

struct Setup {
    state: AppState,
    a: TenantContext,
    b: TenantContext,
}

async fn setup(vars: &[(&str, &str)], clock: Arc<dyn Clock>) -> Setup {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let a = create_tenant(&store, "alpha", "Alpha").await;
    let b = create_tenant(&store, "beta", "Beta").await;
    let config =
        Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
    let state = AppState::new(config, store, clock).unwrap();
    Setup { state, a, b }
}

/// A fake provider answering chat completions like OpenRouter does.
async fn fake_llm() -> FakeHttp {
    let llm = FakeHttp::start().await;
    llm.reply(
        "/api/v1/chat/completions",
        200,
        json!({
            "id": "gen-1", "model": MODEL, "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Hello!"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, "cost": 2.5e-4}
        }),
    );
    llm
}

fn llm_vars(llm: &FakeHttp) -> Vec<(&'static str, String)> {
    vec![
        ("OPENROUTER_BASE_URL", format!("{}/api/v1", llm.base)),
        ("OPENROUTER_API_KEY", "sk-or-test".to_string()),
    ]
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// One traced turn: an answer phase with one LLM call. Returns the trace id
/// and the reply.
async fn turn(state: &AppState) -> (Uuid, String) {
    let start = TraceStart {
        name: "agent.run".into(),
        input: json!({"message": "hi"}),
        metadata: json!({"channel": "api"}),
        thread_id: Some("thread-1".into()),
    };
    state
        .tracer
        .run(start, async {
            let reply = trace::span("answer_phase", SpanKind::General, json!({}), async {
                let req = ChatRequest::new(MODEL, vec![ChatMessage::user("hi")]);
                state
                    .llm
                    .chat("agent", &req)
                    .await
                    .expect("fake LLM answers")
            })
            .await;
            trace::set_trace_output(json!({"reply": reply.text}));
            trace::log_feedback_score("helpful", 1.0);
            (trace::current_trace_id().unwrap(), reply.text)
        })
        .await
}

#[tokio::test]
async fn a_turn_with_an_llm_call_is_stored_with_an_llm_span() {
    let llm = fake_llm().await;
    let vars = llm_vars(&llm);
    let s = setup(&as_refs(&vars), Arc::new(SystemClock)).await;
    let (id, view) = tenancy::scope(s.a.clone(), async {
        let (id, reply) = turn(&s.state).await;
        assert_eq!(reply, "Hello!");
        s.state.tracer.flush().await;
        (id, s.state.tracer.get(id).await.unwrap().expect("stored"))
    })
    .await;
    assert_eq!(view.trace.id, id);
    assert_eq!(view.trace.tenant_id, s.a.id());
    assert_eq!(view.trace.name, "agent.run");
    assert_eq!(view.trace.thread_id.as_deref(), Some("thread-1"));
    assert_eq!(view.trace.output.0, json!({"reply": "Hello!"}));
    assert_eq!(view.trace.feedback_scores[0].name, "helpful");
    assert_eq!((view.trace.llm_calls, view.trace.total_tokens), (1, 120));
    assert!((view.trace.cost_usd - 2.5e-4).abs() < 1e-12);
    let phase = view.span("answer_phase").expect("phase span");
    let call = view.span("llm:agent").expect("llm span");
    assert_eq!(call.parent_span_id, Some(phase.id));
    assert_eq!(call.kind, storage::TraceSpanKind::Llm);
    assert_eq!(call.model.as_deref(), Some(MODEL));
    assert_eq!(
        (
            call.prompt_tokens,
            call.completion_tokens,
            call.total_tokens
        ),
        (100, 20, 120)
    );
    assert_eq!(call.cost_usd, Some(2.5e-4));
    assert_eq!(call.input.0["messages"][0]["content"], "hi");
    assert_eq!(call.output.0["text"], "Hello!");
    // Metering is unchanged: the call still has its llm_token_usage row.
    let rows: Vec<LlmTokenUsage> = s
        .state
        .store
        .scan(Some(s.a.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].purpose, "agent");
}

#[tokio::test]
async fn a_tenant_cannot_read_another_tenants_trace() {
    let llm = fake_llm().await;
    let vars = llm_vars(&llm);
    let s = setup(&as_refs(&vars), Arc::new(SystemClock)).await;
    let id = tenancy::scope(s.a.clone(), async {
        let (id, _) = turn(&s.state).await;
        s.state.tracer.flush().await;
        assert!(s.state.tracer.get(id).await.unwrap().is_some());
        assert_eq!(s.state.tracer.recent(10).await.unwrap().len(), 1);
        id
    })
    .await;
    tenancy::scope(s.b.clone(), async {
        assert!(s.state.tracer.get(id).await.unwrap().is_none());
        assert!(s.state.tracer.recent(10).await.unwrap().is_empty());
    })
    .await;
    // No tenant context: nothing readable.
    assert!(s.state.tracer.get(id).await.unwrap().is_none());
}

#[tokio::test]
async fn retention_prunes_traces_past_the_window_with_their_spans() {
    let clock = ManualClock::new(Ts::from_secs(1_800_000_000));
    let s = setup(&[], Arc::new(clock.clone())).await;
    let traced = |name: &'static str| {
        let tracer = s.state.tracer.clone();
        async move {
            tracer
                .run(
                    TraceStart {
                        name: name.into(),
                        ..TraceStart::default()
                    },
                    async {
                        trace::span("step", SpanKind::General, json!({}), async {}).await;
                        trace::current_trace_id().unwrap()
                    },
                )
                .await
        }
    };
    let (old, young, other) = tenancy::scope(s.a.clone(), async {
        let old = traced("old").await;
        let other = tenancy::scope(s.b.clone(), traced("b-old")).await;
        clock.advance_ms(2 * DAY_MS);
        let young = traced("young").await;
        (old, young, other)
    })
    .await;
    s.state.tracer.flush().await;
    // Now: `old` and `b-old` are 15 days old, `young` 13 (default 14-day window).
    clock.advance_ms(13 * DAY_MS);
    let metrics = QueueMetrics::new(
        s.state.store.clone(),
        Arc::new(clock.clone()),
        Arc::new(LogSink),
        s.state.config.queue_alerts,
    )
    .with_trace_retention(s.state.tracer.clone());
    let result = metrics.tick().await.unwrap();
    assert_eq!(result["traces_pruned"], 2, "{result}");
    tenancy::scope(s.a.clone(), async {
        assert!(s.state.tracer.get(old).await.unwrap().is_none());
        let kept = s
            .state
            .tracer
            .get(young)
            .await
            .unwrap()
            .expect("13 days: kept");
        assert_eq!(kept.spans.len(), 1);
    })
    .await;
    tenancy::scope(s.b.clone(), async {
        assert!(s.state.tracer.get(other).await.unwrap().is_none());
    })
    .await;
    let spans: Vec<storage::AgentTraceSpan> = s
        .state
        .store
        .scan(Some(s.a.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(spans.len(), 1, "the pruned trace's span went with it");
    assert_eq!(s.state.tracer.prune_expired().await.unwrap(), 0);
}

#[tokio::test]
async fn traces_are_exported_to_opik() {
    let llm = fake_llm().await;
    let opik = FakeHttp::start().await;
    opik.reply("/opik/api/v1/private/traces/batch", 204, Value::Null)
        .reply("/opik/api/v1/private/spans/batch", 204, Value::Null)
        .reply(
            "/opik/api/v1/private/traces/feedback-scores",
            204,
            Value::Null,
        );
    // The first request fails once: the exporter retries it.
    opik.fail_next(1);
    let mut vars = llm_vars(&llm);
    vars.extend([
        ("OPIK_API_KEY", OPIK_KEY.to_string()),
        ("OPIK_BASE_URL", format!("{}/opik/api", opik.base)),
        ("OPIK_WORKSPACE", "root-ws".to_string()),
        ("OPIK_PROJECT_NAME", "root-tests".to_string()),
    ]);
    let s = setup(&as_refs(&vars), Arc::new(SystemClock)).await;
    let id = tenancy::scope(s.a.clone(), async {
        let (id, _) = turn(&s.state).await;
        s.state.tracer.flush().await;
        id
    })
    .await;
    let all = opik.requests();
    for r in &all {
        assert_eq!(r.header("authorization"), Some(OPIK_KEY), "{}", r.path);
        assert_eq!(r.header("comet-workspace"), Some("root-ws"), "{}", r.path);
    }
    let traces = opik.requests_to("/opik/api/v1/private/traces/batch");
    assert_eq!(traces.len(), 2, "one 503, one retry");
    assert!(traces.iter().all(|r| r.method == "POST"));
    let t = &traces[1].body["traces"][0];
    assert_eq!(t["id"], json!(id.to_string()));
    assert_eq!(t["project_name"], "root-tests");
    assert_eq!(t["name"], "agent.run");
    assert_eq!(t["thread_id"], "thread-1");
    assert_eq!(t["input"], json!({"message": "hi"}));
    assert_eq!(t["output"], json!({"reply": "Hello!"}));
    assert!(t["start_time"].as_str().unwrap().ends_with('Z'));
    assert!(t["end_time"].is_string());
    let spans = opik.requests_to("/opik/api/v1/private/spans/batch");
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].method, "POST");
    let spans = spans[0].body["spans"].as_array().unwrap().clone();
    assert_eq!(spans.len(), 2);
    let by_name = |n: &str| spans.iter().find(|s| s["name"] == n).unwrap().clone();
    let phase = by_name("answer_phase");
    let call = by_name("llm:agent");
    assert_eq!(phase["type"], "general");
    assert_eq!(phase["trace_id"], json!(id.to_string()));
    assert!(phase.get("parent_span_id").is_none());
    assert_eq!(call["type"], "llm");
    assert_eq!(call["parent_span_id"], phase["id"]);
    assert_eq!(call["project_name"], "root-tests");
    assert_eq!(call["model"], MODEL);
    assert_eq!(
        call["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120})
    );
    assert_eq!(call["total_estimated_cost"], json!(2.5e-4));
    let span_id: Uuid = call["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(span_id.get_version_num(), 7);
    let scores = opik.requests_to("/opik/api/v1/private/traces/feedback-scores");
    assert_eq!(scores.len(), 1);
    assert_eq!(scores[0].method, "PUT");
    assert_eq!(
        scores[0].body["scores"][0],
        json!({"id": id.to_string(), "name": "helpful", "value": 1.0, "source": "sdk", "project_name": "root-tests"})
    );
}

#[tokio::test]
async fn opik_down_leaves_the_turn_and_the_local_trace_intact() {
    let llm = fake_llm().await;
    let mut vars = llm_vars(&llm);
    vars.extend([
        ("OPIK_API_KEY", OPIK_KEY.to_string()),
        ("OPIK_BASE_URL", closed_port_url().await),
    ]);
    let s = setup(&as_refs(&vars), Arc::new(SystemClock)).await;
    tenancy::scope(s.a.clone(), async {
        let (id, reply) = turn(&s.state).await;
        assert_eq!(reply, "Hello!");
        s.state.tracer.flush().await;
        let view = s
            .state
            .tracer
            .get(id)
            .await
            .unwrap()
            .expect("stored locally");
        assert!(view.span("llm:agent").is_some());
    })
    .await;
    // An Opik answering 500 (retried once, then dropped) changes nothing either.
    let opik = FakeHttp::start().await;
    opik.reply("/v1/private/traces/batch", 500, json!({"errors": ["boom"]}));
    let mut vars = llm_vars(&llm);
    vars.extend([
        ("OPIK_API_KEY", OPIK_KEY.to_string()),
        ("OPIK_BASE_URL", opik.base.clone()),
    ]);
    let s = setup(&as_refs(&vars), Arc::new(SystemClock)).await;
    tenancy::scope(s.a.clone(), async {
        let (id, _) = turn(&s.state).await;
        s.state.tracer.flush().await;
        assert!(s.state.tracer.get(id).await.unwrap().is_some());
    })
    .await;
    assert_eq!(opik.requests_to("/v1/private/traces/batch").len(), 2);
    assert!(opik.requests_to("/v1/private/spans/batch").is_empty());
    s.state.close().await;
}
