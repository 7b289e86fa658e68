//! Unit tests of the chat client: request bodies, and the recorded
//! OpenRouter answers (tests/fixtures/openrouter, byte for byte).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use storage::{LlmTokenUsage, StorageResult};

use super::client::is_image_ref;
use super::stream::{SseParser, StreamAssembler, apply_event, merge_reasoning_detail};
use super::wire::{WireResponse, response_from_wire};
use super::*;
use crate::ai::usage::{Usage, UsageSink};
use crate::config::Config;

macro_rules! fixture {
    ($path:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/openrouter/recorded/",
            $path
        ))
        .as_slice()
    };
}

struct NoSink;

#[async_trait]
impl UsageSink for NoSink {
    async fn insert_usage(&self, _row: LlmTokenUsage) -> StorageResult<()> {
        Ok(())
    }
}

fn client(vars: &[(&str, &str)]) -> ChatClient {
    let cfg = Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
    let usage = UsageRecorder::new(
        Arc::new(NoSink),
        Arc::new(crate::platform::clock::SystemClock),
    );
    ChatClient::from_config(&cfg.llm, usage).unwrap()
}

fn body(c: &ChatClient, req: &ChatRequest, stream: bool) -> Value {
    serde_json::to_value(c.wire(req, stream)).unwrap()
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

#[test]
fn planning_round_offers_tools_and_the_answer_round_omits_them_entirely() {
    let c = client(&[("OPENROUTER_API_KEY", "k")]);
    let mut req = ChatRequest::new(
        "google/gemini-3.5-flash",
        vec![ChatMessage::system("s"), ChatMessage::user("u")],
    );
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    req.temperature = Some(0.0);
    req.max_tokens = Some(16000);
    req.reasoning_effort = Some(ReasoningEffort::Medium);
    assert_eq!(
        body(&c, &req, false),
        json!({
            "model": "google/gemini-3.5-flash",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
            "tools": [{"type": "function", "function": {
                "name": "weather",
                "description": "Get weather information for a location",
                "parameters": {
                    "type": "object",
                    "properties": {"location": {"type": "string", "description": "the city"}},
                    "required": ["location"]
                }
            }}],
            "tool_choice": "auto",
            "temperature": 0.0,
            "max_tokens": 16000,
            "reasoning": {"effort": "medium"},
            "usage": {"include": true}
        })
    );

    // Answer round: no tools ⇒ neither `tools` nor `tool_choice`.
    req.tools.clear();
    let b = body(&c, &req, false);
    assert!(
        b.get("tools").is_none() && b.get("tool_choice").is_none(),
        "{b}"
    );

    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Function("weather".into()));
    assert_eq!(
        body(&c, &req, false)["tool_choice"],
        json!({"type": "function", "function": {"name": "weather"}})
    );
    req.tool_choice = Some(ToolChoice::Required);
    assert_eq!(body(&c, &req, false)["tool_choice"], json!("required"));
}

#[test]
fn reasoning_effort_none_or_unset_sends_no_reasoning_field() {
    let c = client(&[("OPENROUTER_API_KEY", "k")]);
    let mut req = ChatRequest::new("m", vec![ChatMessage::user("u")]);
    assert!(body(&c, &req, false).get("reasoning").is_none());
    req.reasoning_effort = Some(ReasoningEffort::None);
    assert!(body(&c, &req, false).get("reasoning").is_none());
    req.reasoning_effort = Some(ReasoningEffort::Low);
    assert_eq!(body(&c, &req, false)["reasoning"], json!({"effort": "low"}));

    assert_eq!(ReasoningEffort::parse(""), Some(ReasoningEffort::None));
    assert_eq!(
        ReasoningEffort::parse(" NONE "),
        Some(ReasoningEffort::None)
    );
    assert_eq!(ReasoningEffort::parse("High"), Some(ReasoningEffort::High));
    assert_eq!(ReasoningEffort::parse("extreme"), None);

    // The agent's effort follows LLM_AGENT_REASONING_EFFORT (default medium).
    assert_eq!(c.agent_reasoning_effort(), Some(ReasoningEffort::Medium));
    let off = client(&[("LLM_AGENT_REASONING_EFFORT", "none")]);
    assert_eq!(off.agent_reasoning_effort(), None);
    let blank = client(&[("LLM_AGENT_REASONING_EFFORT", "")]);
    assert_eq!(blank.agent_reasoning_effort(), None);
}

#[test]
fn provider_preferences_and_stream_options_are_sent() {
    let c = client(&[
        ("OPENROUTER_API_KEY", "k"),
        (
            "OPENROUTER_PROVIDER_PREFERENCES",
            r#"{"order":["anthropic"],"allow_fallbacks":false}"#,
        ),
    ]);
    let req = ChatRequest::new("m", vec![ChatMessage::user("u")]);
    let b = body(&c, &req, true);
    assert_eq!(
        b["provider"],
        json!({"order": ["anthropic"], "allow_fallbacks": false})
    );
    assert_eq!(b["stream"], json!(true));
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    assert_eq!(b["usage"], json!({"include": true}));
    let b = body(&c, &req, false);
    assert!(b.get("stream").is_none() && b.get("stream_options").is_none());
    assert!(body(&client(&[]), &req, false).get("provider").is_none());
}

#[test]
fn defaults_for_the_agent_loop_follow_the_spec() {
    let c = client(&[]);
    assert!(!c.is_configured());
    assert_eq!(c.temperature(), None);
    assert_eq!(c.agent_temperature(), 0.0);
    assert_eq!(c.max_tokens(), None);
    assert_eq!(c.agent_max_tokens(), 16000);
    let c = client(&[
        ("LLM_TEMPERATURE", "0.4"),
        ("LLM_MAX_TOKENS", "8000"),
        ("LLM_MODEL_SEARCH", "acme/search-1"),
    ]);
    assert_eq!(c.agent_temperature(), 0.4);
    assert_eq!(c.agent_max_tokens(), 8000);
    assert_eq!(c.model(ModelRole::Search), Some("acme/search-1"));
    assert_eq!(c.model(ModelRole::Planner), Some("google/gemini-3.5-flash"));
    assert_eq!(c.model(ModelRole::ImageGeneration), None);
}

#[test]
fn chat_json_budgets_escalate_to_double_capped_at_96000() {
    assert_eq!(chat_json_budgets(16000), [16000, 32000]);
    assert_eq!(chat_json_budgets(60000), [60000, 96000]);
    assert_eq!(chat_json_budgets(4000), [4000, 8000]);
    // Never below the base.
    assert_eq!(chat_json_budgets(120000), [120000, 120000]);
}

#[test]
fn json_replies_parse_with_or_without_a_code_fence() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct A {
        a: u32,
    }
    assert_eq!(parse_json_reply::<A>(" {\"a\":1}\n"), Ok(A { a: 1 }));
    assert_eq!(
        parse_json_reply::<A>("```json\n{\"a\":2}\n```"),
        Ok(A { a: 2 })
    );
    assert_eq!(parse_json_reply::<A>("```\n{\"a\":3}```"), Ok(A { a: 3 }));
    assert!(parse_json_reply::<A>("").is_err());
    assert!(parse_json_reply::<A>("{\"a\":\"x\"}").is_err());
    assert!(parse_json_reply::<A>("{\"a\":1").is_err());
}

fn wire(bytes: &[u8]) -> ChatResponse {
    let w: WireResponse = serde_json::from_slice(bytes).unwrap();
    let usage = w.usage.as_ref().map(Usage::from_json).unwrap_or_default();
    response_from_wire(w, usage).unwrap()
}

#[test]
fn a_recorded_non_streamed_tool_call_is_read_with_its_raw_arguments() {
    let r = wire(fixture!("openai_tool/00.response.json"));
    assert_eq!(r.text, "");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: "call_DCueNvTKgjMyxnoqkMFfEefn".into(),
            name: "weather".into(),
            arguments: r#"{"location":"Florence, Italy"}"#.into(),
        }]
    );
    assert_eq!(r.usage.prompt_tokens, 63);
    assert_eq!(r.usage.completion_tokens, 20);
    assert_eq!(r.usage.total_tokens, 83);
    assert_eq!(r.usage.cost_usd, Some(0.0000376));
    assert_eq!(r.usage.cached_tokens, Some(0));
    assert_eq!(r.usage.reasoning_tokens, Some(0));

    let r = wire(fixture!("openai_tool/01.response.json"));
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(r.text.contains("40"), "{}", r.text);
}

#[test]
fn recorded_usage_carries_cached_and_reasoning_tokens_and_cost() {
    let r = wire(fixture!(
        "grok_tool_cached_tokens_reasoning/00.response.json"
    ));
    assert_eq!(
        r.usage,
        Usage {
            prompt_tokens: 366,
            completion_tokens: 157,
            total_tokens: 523,
            cost_usd: Some(0.0001052),
            cached_tokens: Some(310),
            reasoning_tokens: Some(131),
        }
    );
    // Exponent notation is a number like any other.
    let u =
        Usage::from_json(&serde_json::from_str(r#"{"prompt_tokens":1,"cost":4.025e-05}"#).unwrap());
    assert_eq!(u.cost_usd, Some(0.00004025));
}

#[test]
fn the_echoed_assistant_turn_matches_the_recorded_follow_up_request() {
    // anthropic_reasoning: the follow-up request echoes the tool call,
    // `reasoning` and the signed `reasoning_details` of the first answer.
    let r = wire(fixture!("anthropic_reasoning/00.response.json"));
    let follow_up: Value =
        serde_json::from_slice(fixture!("anthropic_reasoning/01.request.json")).unwrap();
    let transcript = vec![
        ChatMessage::system("You are a helpful assistant"),
        ChatMessage::user("What's the weather in Florence, Italy?"),
        r.to_assistant_message(),
        ChatMessage::tool(r.tool_calls[0].id.clone(), "40 C"),
    ];
    assert_eq!(
        serde_json::to_value(&transcript).unwrap(),
        follow_up["messages"]
    );

    // The grok answer's two details (summary + encrypted) are echoed as
    // received. (The recording client sent a lossy `{format: "unknown"}`
    // stand-in; the encrypted detail is what lets xAI reuse its reasoning.)
    let r = wire(fixture!(
        "grok_tool_cached_tokens_reasoning/00.response.json"
    ));
    let answer: Value = serde_json::from_slice(fixture!(
        "grok_tool_cached_tokens_reasoning/00.response.json"
    ))
    .unwrap();
    let follow_up: Value = serde_json::from_slice(fixture!(
        "grok_tool_cached_tokens_reasoning/01.request.json"
    ))
    .unwrap();
    let echoed = serde_json::to_value(r.to_assistant_message()).unwrap();
    assert_eq!(
        echoed["reasoning_details"],
        answer["choices"][0]["message"]["reasoning_details"]
    );
    assert_eq!(
        echoed["reasoning_details"][1]["type"],
        "reasoning.encrypted"
    );
    assert_eq!(echoed["tool_calls"], follow_up["messages"][2]["tool_calls"]);
    // Transcripts round-trip (checkpointed turns are read back).
    let back: ChatMessage = serde_json::from_value(echoed.clone()).unwrap();
    assert_eq!(back, r.to_assistant_message());
}

/// Replay an SSE body in `chunk`-byte pieces; returns the response and
/// the deltas in order.
async fn replay(bytes: &[u8], chunk: usize) -> (ChatResponse, Vec<ChatDelta>) {
    let (tx, mut rx) = mpsc::channel(10_000);
    let mut parser = SseParser::default();
    let mut asm = StreamAssembler::default();
    let mut done = false;
    'outer: for piece in bytes.chunks(chunk) {
        for data in parser.push(piece).unwrap() {
            if apply_event(&data, &mut asm, &tx).await.unwrap() {
                done = true;
                break 'outer;
            }
        }
    }
    assert!(done, "every recording ends with [DONE]");
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    let usage = asm.usage.as_ref().map(Usage::from_json).unwrap_or_default();
    (asm.finish(usage), deltas)
}

fn texts(deltas: &[ChatDelta]) -> Vec<&str> {
    deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::Text(t) => Some(t.as_str()),
            ChatDelta::Reasoning(_) => None,
        })
        .collect()
}

#[tokio::test]
async fn a_recorded_text_stream_yields_its_deltas_in_order_whatever_the_chunking() {
    for chunk in [1, 7, 64, 100_000] {
        let (r, deltas) = replay(fixture!("openai_simple_streaming/00.response.sse"), chunk).await;
        assert_eq!(texts(&deltas), vec!["Olá", "!", " 😊"], "chunk {chunk}");
        assert_eq!(r.text, "Olá! 😊");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.id.as_deref(), Some("gen-1777319809-KRozO9hOQbdWkZAi8Zj7"));
        assert_eq!(r.usage.total_tokens, 26);
        assert_eq!(r.usage.cost_usd, Some(0.00001255));
    }
}

#[tokio::test]
async fn streamed_tool_call_fragments_are_assembled() {
    let (r, deltas) = replay(fixture!("openai_tool_streaming/00.response.sse"), 13).await;
    assert!(deltas.is_empty());
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: "call_PwnQR6IkH2UiHQ4qel3LGcri".into(),
            name: "weather".into(),
            arguments: r#"{"location":"Florence, Italy"}"#.into(),
        }]
    );
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.usage.cost_usd, Some(0.0000376));

    let (r, _) = replay(fixture!("openai_tool_streaming/01.response.sse"), 13).await;
    assert_eq!(
        r.text,
        "The current weather in **Florence, Italy** is **40°C**."
    );
}

#[tokio::test]
async fn parallel_streamed_tool_calls_are_kept_apart_by_index() {
    let (r, _) = replay(
        fixture!("openai_parallel_tools_streaming/00.response.sse"),
        50,
    )
    .await;
    let calls: Vec<(&str, &str, &str)> = r
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_8I6muAnyFaBjKyotk1gPRTwU", "add", r#"{"a":2,"b":3}"#),
            (
                "call_pKAAv6bKX2qLYJ85RW4Hxqfp",
                "multiply",
                r#"{"a":2,"b":3}"#
            ),
        ]
    );
    assert_eq!(r.usage.total_tokens, 163);
}

#[tokio::test]
async fn streamed_reasoning_and_its_details_are_merged_for_the_echo() {
    let (r, deltas) = replay(
        fixture!("anthropic_reasoning_streaming/00.response.sse"),
        31,
    )
    .await;
    let reasoning: String = deltas
        .iter()
        .filter_map(|d| match d {
            ChatDelta::Reasoning(t) => Some(t.as_str()),
            ChatDelta::Text(_) => None,
        })
        .collect();
    let expected = "The user is asking for weather information in Florence, Italy.";
    assert!(reasoning.starts_with(expected), "{reasoning}");
    assert_eq!(r.reasoning.as_deref(), Some(reasoning.as_str()));
    assert_eq!(r.reasoning_details.len(), 1, "{:?}", r.reasoning_details);
    let d = &r.reasoning_details[0];
    assert_eq!(d["type"], "reasoning.text");
    assert_eq!(d["text"], reasoning.as_str());
    assert_eq!(d["format"], "anthropic-claude-v1");
    assert!(
        d["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("Eq0E"))
    );
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(
        r.tool_calls[0].arguments,
        r#"{"location": "Florence, Italy"}"#
    );
    assert_eq!(r.usage.reasoning_tokens, Some(99));

    // The recorded follow-up echoed the same text (the recording client
    // dropped the signature; we keep it, as the non-streamed echo does).
    let follow_up: Value =
        serde_json::from_slice(fixture!("anthropic_reasoning_streaming/01.request.json")).unwrap();
    let recorded = &follow_up["messages"][2];
    assert_eq!(recorded["reasoning_details"][0]["text"], d["text"]);
    assert_eq!(recorded["reasoning"], json!(reasoning));
}

#[tokio::test]
async fn gemini_and_glm_streams_keep_their_details_and_cached_tokens() {
    let (r, _) = replay(fixture!("gemini_tool_streaming/00.response.sse"), 9).await;
    assert_eq!(r.tool_calls[0].id, "tool_weather_nNBvDVuJXrZZDwEjuOoj");
    assert_eq!(r.reasoning_details.len(), 1);
    assert_eq!(r.reasoning_details[0]["type"], "reasoning.encrypted");
    assert_eq!(
        r.reasoning_details[0]["id"],
        "tool_weather_nNBvDVuJXrZZDwEjuOoj"
    );
    assert_eq!(r.usage.cost_usd, Some(0.00004025));

    let (r, _) = replay(
        fixture!("glm_tool_streaming_cached_tokens_reasoning/00.response.sse"),
        17,
    )
    .await;
    assert_eq!(r.usage.cached_tokens, Some(128));
    assert_eq!(r.usage.reasoning_tokens, Some(19));
    assert_eq!(r.usage.cost_usd, Some(0.00021672));
    assert_eq!(
        r.tool_calls[0].arguments,
        r#"{"location":"Florence, Italy"}"#
    );
    assert_eq!(r.reasoning.as_deref().map(str::len), Some(88));
}

#[test]
fn the_sse_parser_handles_crlf_multiline_data_comments_and_a_missing_final_blank_line() {
    let mut p = SseParser::default();
    let mut events = p
        .push(b": OPENROUTER PROCESSING\r\n\r\nevent: x\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n   \n")
        .unwrap();
    events.extend(p.push(b"data: [DONE]").unwrap());
    assert_eq!(events, vec!["{\"a\":\n1}".to_string()]);
    assert_eq!(p.finish().unwrap().as_deref(), Some("[DONE]"));
    assert_eq!(p.finish().unwrap(), None);
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_provider_error() {
    let (tx, _rx) = mpsc::channel(4);
    let mut asm = StreamAssembler::default();
    let e = apply_event(
        r#"{"id":"g","object":"chat.completion.chunk","error":{"code":502,"message":"Upstream error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
        &mut asm,
        &tx,
    )
    .await
    .unwrap_err();
    assert!(matches!(e, AiError::Provider { status: 502, .. }), "{e:?}");
    assert!(e.is_retryable());
}

#[test]
fn reasoning_detail_fragments_merge_by_index_and_type() {
    let mut details = Vec::new();
    for d in [
        json!({"type": "reasoning.text", "text": "a", "index": 0}),
        json!({"type": "reasoning.text", "text": "b", "index": 0, "format": "f"}),
        json!({"type": "reasoning.text", "signature": "sig", "index": 0}),
        json!({"type": "reasoning.encrypted", "data": "x", "index": 1}),
        json!({"type": "reasoning.summary", "summary": "no index"}),
    ] {
        merge_reasoning_detail(&mut details, d);
    }
    assert_eq!(
        details,
        vec![
            json!({"type": "reasoning.text", "text": "ab", "index": 0, "format": "f", "signature": "sig"}),
            json!({"type": "reasoning.encrypted", "data": "x", "index": 1}),
            json!({"type": "reasoning.summary", "summary": "no index"}),
        ]
    );
}

#[test]
fn vision_messages_carry_image_parts() {
    let m = ChatMessage::user_with_images(
        "what is this?",
        &[
            "https://x.test/a.png".to_string(),
            "data:image/png;base64,AAAA".to_string(),
        ],
    );
    assert_eq!(
        serde_json::to_value(&m).unwrap(),
        json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]})
    );
    assert!(is_image_ref("data:image/jpeg;base64,/9j/"));
    assert!(!is_image_ref("/etc/passwd"));
}
