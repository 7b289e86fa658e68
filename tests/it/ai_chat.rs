//! The chat client and the LLM reranker against a fake OpenAI-compatible
//! server on 127.0.0.1:0 that replays recorded OpenRouter answers
//! (tests/fixtures/openrouter) and records every request. The fake speaks
//! raw HTTP/1.1 so a stream can be sent in pieces, with pauses, or stalled.
//! Never the internet.

use std::sync::Arc;
use std::time::{Duration, Instant};

use index::rerank::{RerankCandidate, RerankError, Reranker};
use serde_json::{Value, json};
use storage::{LlmTokenUsage, MigrationStore, RedbStore, Scan, Store, TenantStore};
use tokio::sync::mpsc;

use root::ai::AiError;
use root::ai::chat::{
    ChatClient, ChatDelta, ChatMessage, ChatOptions, ChatRequest, JsonSchema, ModelRole,
    ReasoningEffort, ToolCall, ToolChoice, ToolDefinition,
};
use root::ai::usage::{UsageRecorder, collect_usage};
use root::config::Config;
use root::platform::clock::SystemClock;
use root::platform::tenancy::{self, TenantContext};
use root::retrieval::rerank::LlmReranker;

use crate::support::fake_llm::{FakeLlm, Reply, completion};

const RECORDED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/openrouter/recorded/"
);

fn recorded(path: &str) -> Vec<u8> {
    std::fs::read(format!("{RECORDED}{path}")).unwrap()
}

fn config(fake: &FakeLlm, extra: &[(&str, &str)]) -> Config {
    let mut vars = vec![
        ("OPENROUTER_BASE_URL".to_string(), fake.base_url.clone()),
        (
            "OPENROUTER_API_KEY".to_string(),
            "sk-or-test-key".to_string(),
        ),
        ("OPENROUTER_TITLE".to_string(), "Root Tests".to_string()),
    ];
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::from_vars(vars).unwrap()
}

async fn store() -> RedbStore {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    store
}

fn chat(cfg: &Config, store: &RedbStore) -> ChatClient {
    let usage = UsageRecorder::new(Arc::new(store.clone()), Arc::new(SystemClock));
    ChatClient::from_config(&cfg.llm, usage).unwrap()
}

async fn client(fake: &FakeLlm) -> ChatClient {
    chat(&config(fake, &[]), &store().await)
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "weather".into(),
        description: "Get weather information for a location".into(),
        parameters: json!({
            "type": "object",
            "properties": {"location": {"type": "string", "description": "the city"}},
            "required": ["location"]
        }),
    }
}

#[tokio::test]
async fn ai_chat_tool_call_then_answer_round_without_tools() {
    let fake = FakeLlm::start().await;
    fake.json(recorded("openai_tool/00.response.json"))
        .json(recorded("openai_tool/01.response.json"));
    let c = client(&fake).await;
    let model = c.model(ModelRole::Planner).unwrap().to_string();

    // Planning round: tools offered.
    let mut req = ChatRequest::new(
        &model,
        vec![
            ChatMessage::system("You are a helpful assistant"),
            ChatMessage::user("What's the weather in Florence, Italy?"),
        ],
    );
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    req.temperature = Some(c.agent_temperature());
    req.max_tokens = Some(c.agent_max_tokens());
    req.reasoning_effort = c.agent_reasoning_effort();
    let first = c.chat("agent.planning", &req).await.unwrap();
    assert_eq!(
        first.tool_calls,
        vec![ToolCall {
            id: "call_DCueNvTKgjMyxnoqkMFfEefn".into(),
            name: "weather".into(),
            arguments: r#"{"location":"Florence, Italy"}"#.into(),
        }]
    );
    assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));

    // Answer round: the transcript grows, tools are omitted.
    req.messages.push(first.to_assistant_message());
    req.messages
        .push(ChatMessage::tool(first.tool_calls[0].id.clone(), "40 C"));
    req.tools.clear();
    let answer = c.chat("agent.answer", &req).await.unwrap();
    assert!(answer.tool_calls.is_empty());
    assert!(answer.text.contains("40"), "{}", answer.text);

    let bodies = fake.bodies();
    assert_eq!(
        bodies[0],
        json!({
            "model": "google/gemini-3.5-flash",
            "messages": [
                {"role": "system", "content": "You are a helpful assistant"},
                {"role": "user", "content": "What's the weather in Florence, Italy?"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "weather",
                "description": "Get weather information for a location",
                "parameters": weather_tool().parameters
            }}],
            "tool_choice": "auto",
            "temperature": 0.0,
            "max_tokens": 16000,
            "reasoning": {"effort": "medium"},
            "usage": {"include": true}
        })
    );
    assert!(bodies[1].get("tools").is_none() && bodies[1].get("tool_choice").is_none());
    assert_eq!(
        bodies[1]["messages"][2],
        json!({"role": "assistant", "tool_calls": [{
            "id": "call_DCueNvTKgjMyxnoqkMFfEefn", "type": "function",
            "function": {"name": "weather", "arguments": "{\"location\":\"Florence, Italy\"}"}
        }]})
    );
    assert_eq!(
        bodies[1]["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_DCueNvTKgjMyxnoqkMFfEefn", "content": "40 C"})
    );
    let h = fake.headers(0);
    assert!(h.contains("authorization: bearer sk-or-test-key"), "{h}");
    assert!(h.contains("x-title: root tests"), "{h}");
}

#[tokio::test]
async fn ai_chat_stream_delivers_text_deltas_in_order_and_assembles_the_answer() {
    let fake = FakeLlm::start().await;
    fake.then(Reply::sse_pieces(
        recorded("openai_simple_streaming/00.response.sse"),
        5,
        Duration::from_millis(3),
    ));
    let c = client(&fake).await;
    let (tx, mut rx) = mpsc::channel(64);
    let collector = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(d) = rx.recv().await {
            seen.push(d);
        }
        seen
    });
    let req = ChatRequest::new(
        "openai/gpt-5.4-nano",
        vec![ChatMessage::user("Say hi in Portuguese")],
    );
    let r = c.chat_stream("web.answer", &req, &tx).await.unwrap();
    drop(tx);
    let seen = collector.await.unwrap();
    assert_eq!(
        seen,
        vec![
            ChatDelta::Text("Olá".into()),
            ChatDelta::Text("!".into()),
            ChatDelta::Text(" 😊".into()),
        ]
    );
    assert_eq!(r.text, "Olá! 😊");
    assert_eq!(r.usage.total_tokens, 26);
    let body = &fake.bodies()[0];
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn ai_chat_stream_assembles_parallel_tool_calls_and_survives_a_closed_sink() {
    let fake = FakeLlm::start().await;
    fake.sse(recorded("openai_parallel_tools_streaming/00.response.sse"));
    let c = client(&fake).await;
    let (tx, rx) = mpsc::channel(1);
    drop(rx);
    let req = ChatRequest::new(
        "openai/gpt-5.4-nano",
        vec![ChatMessage::user("add and multiply 2 and 3")],
    );
    let r = c.chat_stream("agent.planning", &req, &tx).await.unwrap();
    let names: Vec<&str> = r.tool_calls.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["add", "multiply"]);
    assert!(
        r.tool_calls
            .iter()
            .all(|t| t.arguments == r#"{"a":2,"b":3}"#)
    );
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
}

#[tokio::test]
async fn ai_chat_stream_idle_timeout_is_a_retryable_timeout() {
    let fake = FakeLlm::start().await;
    fake.then(Reply::stall_sse());
    let c = client(&fake).await.with_timeouts(
        Duration::from_secs(5),
        Duration::from_millis(200),
        Duration::from_secs(10),
    );
    let (tx, _rx) = mpsc::channel(4);
    let started = Instant::now();
    let e = c
        .chat_stream(
            "t",
            &ChatRequest::new("m", vec![ChatMessage::user("u")]),
            &tx,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, AiError::Timeout(_)), "{e:?}");
    assert!(e.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Summary {
    title: String,
    topics: Vec<String>,
}

fn summary_schema() -> JsonSchema {
    JsonSchema::new(
        "summary",
        json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "topics": {"type": "array", "items": {"type": "string"}}},
            "required": ["title", "topics"],
            "additionalProperties": false
        }),
    )
}

#[tokio::test]
async fn ai_chat_json_repairs_an_invalid_reply_with_an_escalated_budget() {
    let fake = FakeLlm::start().await;
    fake.json(completion("{\"title\": \"Dues\", \"topics\": [\"bil"))
        .json(completion(
            "{\"title\": \"Dues\", \"topics\": [\"billing\"]}",
        ));
    let c = client(&fake).await;
    let opts = ChatOptions {
        max_tokens: Some(3000),
        ..ChatOptions::default()
    };
    let s: Summary = c
        .chat_json(
            "thread.distill",
            "Summarise.",
            "the thread",
            &summary_schema(),
            &opts,
        )
        .await
        .unwrap();
    assert_eq!(
        s,
        Summary {
            title: "Dues".into(),
            topics: vec!["billing".into()]
        }
    );
    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["max_tokens"], json!(3000));
    assert_eq!(bodies[1]["max_tokens"], json!(6000));
    assert_eq!(bodies[0]["reasoning"], json!({"effort": "low"}));
    assert_eq!(
        bodies[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "summary", "strict": true, "schema": summary_schema().schema
        }})
    );
    let repair = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(repair.len(), 4);
    assert_eq!(
        repair[2],
        json!({"role": "assistant", "content": "{\"title\": \"Dues\", \"topics\": [\"bil"})
    );
    assert_eq!(repair[3]["role"], "user");
    assert!(
        repair[3]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
}

#[tokio::test]
async fn ai_chat_json_gives_up_after_three_repairs_with_a_typed_error() {
    let fake = FakeLlm::start().await;
    for bad in ["nope", "{\"title\": 3}", "", "{\"title\":\"x\"}"] {
        fake.json(completion(bad));
    }
    let c = client(&fake).await;
    let e = c
        .chat_json::<Summary>("t", "", "u", &summary_schema(), &ChatOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, AiError::StructuredOutput { attempts: 4, message } if message.contains("topics")),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    let budgets: Vec<Value> = fake
        .bodies()
        .iter()
        .map(|b| b["max_tokens"].clone())
        .collect();
    assert_eq!(
        budgets,
        vec![json!(16000), json!(32000), json!(32000), json!(32000)]
    );
    // No system message when the system prompt is empty.
    assert_eq!(fake.bodies()[0]["messages"][0]["role"], "user");
}

#[tokio::test]
async fn ai_chat_503_is_retryable_a_400_is_not_and_neither_is_retried_by_the_client() {
    let fake = FakeLlm::start().await;
    fake.then(Reply::raw_json(
        503,
        br#"{"error":{"message":"No instances available","code":503}}"#.to_vec(),
    ))
    .then(Reply::raw_json(
        400,
        br#"{"error":{"message":"Invalid tool schema","code":400}}"#.to_vec(),
    ))
    .json(br#"{"error":{"message":"upstream overloaded","code":429}}"#.to_vec());
    let c = client(&fake).await;
    let req = ChatRequest::new("m", vec![ChatMessage::user("u")]);
    let e = c.chat("t", &req).await.unwrap_err();
    assert!(matches!(e, AiError::Provider { status: 503, .. }), "{e:?}");
    assert!(e.is_retryable());
    let e = c.chat("t", &req).await.unwrap_err();
    assert!(
        matches!(&e, AiError::Provider { status: 400, message, .. } if message == "Invalid tool schema"),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    // A 200 carrying an error body is the provider error it reports.
    let e = c.chat("t", &req).await.unwrap_err();
    assert!(matches!(e, AiError::Provider { status: 429, .. }), "{e:?}");
    assert_eq!(fake.bodies().len(), 3);
}

#[tokio::test]
async fn ai_chat_without_a_key_fails_at_once_and_sends_nothing() {
    let fake = FakeLlm::start().await;
    let cfg =
        Config::from_vars([("OPENROUTER_BASE_URL".to_string(), fake.base_url.clone())]).unwrap();
    let c = chat(&cfg, &store().await);
    assert!(!c.is_configured());
    let req = ChatRequest::new("m", vec![ChatMessage::user("u")]);
    let started = Instant::now();
    assert!(matches!(
        c.chat("t", &req).await,
        Err(AiError::NotConfigured)
    ));
    let (tx, _rx) = mpsc::channel(1);
    assert!(matches!(
        c.chat_stream("t", &req, &tx).await,
        Err(AiError::NotConfigured)
    ));
    assert!(matches!(
        c.chat_text("t", "s", "u", &ChatOptions::default()).await,
        Err(AiError::NotConfigured)
    ));
    assert!(matches!(
        c.chat_json::<Summary>("t", "s", "u", &summary_schema(), &ChatOptions::default())
            .await,
        Err(AiError::NotConfigured)
    ));
    let candidates = vec![
        RerankCandidate::new("a", "x"),
        RerankCandidate::new("b", "y"),
    ];
    assert!(matches!(
        LlmReranker::new(c).score("q", &candidates).await,
        Err(RerankError::Backend(_))
    ));
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(fake.bodies().is_empty());
}

/// purpose, model, prompt/completion/total tokens, cost.
type UsageRow<'a> = (&'a str, &'a str, i64, i64, i64, Option<f64>);

#[tokio::test]
async fn ai_chat_usage_is_written_with_purpose_model_tokens_and_cost() {
    let fake = FakeLlm::start().await;
    fake.json(recorded(
        "grok_tool_cached_tokens_reasoning/00.response.json",
    ))
    .sse(recorded(
        "glm_tool_streaming_cached_tokens_reasoning/00.response.sse",
    ))
    .json(completion("Hello"));
    let store = store().await;
    let c = chat(&config(&fake, &[]), &store);
    let root = store.tenant_by_slug("root").await.unwrap().unwrap();
    let tenant = root.id;
    let ctx = TenantContext {
        tenant: Arc::new(root),
    };
    let ((), totals) = tenancy::scope(ctx, async {
        collect_usage(async {
            let req = ChatRequest::new("x-ai/grok-4.1-fast", vec![ChatMessage::user("u")]);
            c.chat("agent.planning", &req).await.unwrap();
            let (tx, _rx) = mpsc::channel(1024);
            let req = ChatRequest::new("z-ai/glm-5-turbo", vec![ChatMessage::user("u")]);
            c.chat_stream("web.answer", &req, &tx).await.unwrap();
            let text = c
                .chat_text("kb.cleanup", "s", "u", &ChatOptions::default())
                .await
                .unwrap();
            assert_eq!(text, "Hello");
        })
        .await
    })
    .await;
    assert_eq!(totals.llm_calls, 3);
    assert_eq!(totals.tokens, 523 + 206 + 120);
    assert!((totals.cost_usd - (0.0001052 + 0.00021672 + 0.00025)).abs() < 1e-12);

    let mut rows: Vec<LlmTokenUsage> = store.scan(Some(tenant), Scan::all()).await.unwrap();
    rows.sort_by_key(|r| r.purpose.clone());
    let summary: Vec<UsageRow> = rows
        .iter()
        .map(|r| {
            (
                r.purpose.as_str(),
                r.model.as_str(),
                r.prompt_tokens,
                r.completion_tokens,
                r.total_tokens,
                r.cost_usd,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "agent.planning",
                "x-ai/grok-4.1-fast",
                366,
                157,
                523,
                Some(0.0001052)
            ),
            (
                "kb.cleanup",
                "google/gemini-3.5-flash",
                100,
                20,
                120,
                Some(0.00025)
            ),
            (
                "web.answer",
                "z-ai/glm-5-turbo",
                173,
                33,
                206,
                Some(0.00021672)
            ),
        ]
    );
}

#[tokio::test]
async fn ai_chat_vision_sends_image_parts_to_the_vision_role() {
    let fake = FakeLlm::start().await;
    fake.json(completion("A cat."));
    let c = chat(
        &config(&fake, &[("LLM_MODEL_VISION", "acme/vision-1")]),
        &store().await,
    );
    let images = vec!["data:image/png;base64,iVBORw0KGgo=".to_string()];
    let text = c
        .chat_vision(
            "vision.describe",
            "What is this?",
            &images,
            &ChatOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(text, "A cat.");
    let body = &fake.bodies()[0];
    assert_eq!(body["model"], "acme/vision-1");
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}})
    );
    let bad = c
        .chat_vision(
            "t",
            "p",
            &["file:///etc/passwd".to_string()],
            &ChatOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(bad, AiError::InvalidRequest(_)), "{bad:?}");
    assert_eq!(fake.bodies().len(), 1);
}

#[tokio::test]
async fn ai_rerank_asks_the_search_model_at_temperature_0_and_returns_what_it_said() {
    let fake = FakeLlm::start().await;
    fake.json(completion(
        r#"{"scores":[{"id":1,"score":9},{"id":0,"score":2},{"id":7,"score":8},{"score":5},{"id":2,"score":11}]}"#,
    ));
    let store = store().await;
    let c = chat(
        &config(&fake, &[("LLM_MODEL_SEARCH", "acme/search-1")]),
        &store,
    );
    let reranker = LlmReranker::new(c);
    let candidates = vec![
        RerankCandidate::new("message:C1:1.0", "Dues are paid in January."),
        RerankCandidate::new(
            "message:C1:2.0",
            "Membership dues: 50 EUR, due every January.",
        ),
        RerankCandidate::new("thread_summary:C1:3.0", "Lunch plans"),
    ];
    let scores = reranker
        .score("when are dues paid?", &candidates)
        .await
        .unwrap();
    assert_eq!(
        scores,
        vec![
            ("message:C1:2.0".to_string(), 9.0),
            ("message:C1:1.0".to_string(), 2.0),
            ("thread_summary:C1:3.0".to_string(), 11.0),
        ]
    );
    let body = &fake.bodies()[0];
    assert_eq!(body["model"], "acme/search-1");
    assert_eq!(body["temperature"], json!(0.0));
    assert_eq!(body["max_tokens"], json!(4000));
    assert!(body.get("tools").is_none() && body.get("reasoning").is_none());
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        "rerank_scores"
    );
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.starts_with("Query: when are dues paid?"), "{user}");
    assert!(
        user.contains("\"id\": 1") && user.contains("Membership dues"),
        "{user}"
    );
    assert!(
        !user.contains("message:C1"),
        "candidate ids stay local: {user}"
    );

    // An unreadable answer is an error (rerank_fail_open keeps fused order).
    fake.json(completion("Candidate 1 is best."));
    let e = reranker.score("q", &candidates).await.unwrap_err();
    assert!(matches!(e, RerankError::InvalidResponse(_)), "{e:?}");
    // Metered as search.rerank on the search model (no tenant: collected only).
    let ((), totals) = collect_usage(async {
        fake.json(completion(r#"{"scores":[]}"#));
        reranker.score("q", &candidates).await.unwrap();
    })
    .await;
    assert_eq!(totals.llm_calls, 1);
}

#[tokio::test]
async fn ai_app_state_carries_the_llm_client() {
    let fake = FakeLlm::start().await;
    let app = crate::support::TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", &fake.base_url),
        ("OPENROUTER_API_KEY", "sk-or-test-key"),
    ])
    .await;
    assert!(app.state.llm.is_configured());
    assert_eq!(
        app.state.llm.agent_reasoning_effort(),
        Some(ReasoningEffort::Medium)
    );
    let app = crate::support::TestApp::spawn().await;
    assert!(!app.state.llm.is_configured());
}
