//! `root bench agent`: the platform's own overhead in one full `runAgent`
//! turn — system-prompt assembly (§4.5), two LLM rounds answered instantly,
//! a 3-tool parallel batch, truncation checks, usage rows, the trace and
//! hooks — on a real database file (real fsyncs). Variants: tracing on/off,
//! no writes at all (pure compute), and two LLM transports:
//!
//! - `in-process`: an [`LlmClient`] that answers from memory but meters
//!   every call through the real [`UsageRecorder`] (what `ChatClient` does);
//! - `http`: the real [`ChatClient`] against an instant OpenAI-compatible
//!   server on 127.0.0.1 (adds request encoding, loopback HTTP, parsing).
//!
//! Build with `--release`. Reports median and p99 per turn in µs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use storage::{MigrationStore, RedbStore, TenantStore};
use tokio::sync::mpsc;

use crate::agent::{
    AgentInput, AgentKernel, AgentOptions, AgentSettings, AgentTools, ReplySourceUsageHook,
    ToolCaller, ToolResult,
};
use crate::ai::chat::{
    ChatClient, ChatDelta, ChatMessage, ChatRequest, ChatResponse, LlmClient, ToolCall,
    ToolDefinition,
};
use crate::ai::http::AiError;
use crate::ai::usage::{Usage, UsageRecorder};
use crate::config::Config;
use crate::platform::clock::SystemClock;
use crate::platform::notify::LogSink;
use crate::platform::tenancy::{self, TenantContext};
use crate::platform::tool_names as names;
use crate::prompts::Prompts;
use crate::prompts::system::{Channel, SystemPromptInput};
use crate::trace::Tracer;

/// Options of `root bench agent`.
#[derive(Clone, Debug)]
pub struct AgentBenchOptions {
    /// Timed turns per transport.
    pub turns: usize,
}

/// Answers round 1 with three tool calls and round 2 with text; meters
/// every call like the real client.
struct InstantLlm {
    usage: UsageRecorder,
    calls: AtomicUsize,
}

fn scripted_response(round: usize) -> ChatResponse {
    let usage = Usage {
        prompt_tokens: 1200,
        completion_tokens: 80,
        total_tokens: 1280,
        cost_usd: Some(3.1e-4),
        ..Usage::default()
    };
    if round.is_multiple_of(2) {
        ChatResponse {
            text: "Checking three places.\n• KB\n• Slack\n• Experts\n• Events\n• Coffee".into(),
            tool_calls: [
                names::SEARCH_KNOWLEDGE_BASE,
                names::SEARCH_SLACK_MESSAGES,
                names::WHO_KNOWS,
            ]
            .iter()
            .enumerate()
            .map(|(i, name)| ToolCall {
                id: format!("call_{i}"),
                name: name.to_string(),
                arguments: r#"{"query":"parking for events"}"#.into(),
            })
            .collect(),
            usage,
            ..ChatResponse::default()
        }
    } else {
        ChatResponse {
            text: "Event parking is in lot B behind the main building; Ann coordinates it.".into(),
            usage,
            ..ChatResponse::default()
        }
    }
}

#[async_trait]
impl LlmClient for InstantLlm {
    async fn chat(&self, purpose: &str, request: &ChatRequest) -> Result<ChatResponse, AiError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let resp = scripted_response(n);
        self.usage
            .record(purpose, &request.model, &resp.usage)
            .await;
        Ok(resp)
    }

    async fn chat_stream(
        &self,
        purpose: &str,
        request: &ChatRequest,
        _sink: &mpsc::Sender<ChatDelta>,
    ) -> Result<ChatResponse, AiError> {
        self.chat(purpose, request).await
    }
}

/// Drops usage rows (the "no usage rows" variants).
struct NullUsage;

#[async_trait]
impl crate::ai::usage::UsageSink for NullUsage {
    async fn insert_usage(&self, _row: storage::LlmTokenUsage) -> storage::StorageResult<()> {
        Ok(())
    }
}

/// Three tools answering at once with realistic payload sizes.
struct BenchTools {
    defs: Vec<ToolDefinition>,
}

impl BenchTools {
    fn new() -> Self {
        let def = |name: &str| ToolDefinition {
            name: name.into(),
            description: format!("{name} over the community's data"),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        };
        BenchTools {
            defs: vec![
                def(names::SEARCH_KNOWLEDGE_BASE),
                def(names::SEARCH_SLACK_MESSAGES),
                def(names::WHO_KNOWS),
            ],
        }
    }
}

#[async_trait]
impl AgentTools for BenchTools {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.defs
    }

    async fn execute(&self, name: &str, _args: Value, _caller: &ToolCaller) -> ToolResult {
        let text = "Members park in lot B behind the main building; on event nights the \
                    overflow lot on 5th street opens at 6pm. "
            .repeat(6);
        match name {
            names::SEARCH_KNOWLEDGE_BASE => {
                ToolResult::ok(json!({"results": (0..12).map(|i| json!({
                "slug": format!("parking-{i}"), "title": "Parking", "text": text
            })).collect::<Vec<_>>()}))
            }
            names::SEARCH_SLACK_MESSAGES => {
                ToolResult::ok(json!({"matches": (0..25).map(|i| json!({
                "channel_id": "C0PARK", "message_ts": format!("1700000000.{i:06}"), "text": text
            })).collect::<Vec<_>>()}))
            }
            _ => ToolResult::ok(json!({"experts": [{"user_id": "U1", "evidence": [
                {"permalink": "https://acme.slack.com/archives/C0PARK/p1700000000000100"}
            ]}]})),
        }
    }
}

/// An OpenAI-compatible server on 127.0.0.1 answering instantly, alternating
/// a 3-call tool batch and a text answer.
async fn instant_server() -> anyhow::Result<String> {
    let counter = Arc::new(AtomicUsize::new(0));
    let respond = move |_body: Value| {
        let r = scripted_response(counter.fetch_add(1, Ordering::Relaxed));
        let calls: Vec<Value> = r
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": r.text});
        if !calls.is_empty() {
            message["tool_calls"] = json!(calls);
        }
        json!({
            "id": "gen-bench", "model": "bench/model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 80,
                      "total_tokens": 1280, "cost": 3.1e-4}
        })
    };
    let addr =
        crate::web::loopback::serve_json("/api/v1/chat/completions", Arc::new(respond)).await?;
    Ok(format!("http://{addr}/api/v1"))
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

/// Run the benchmark and print one line per transport.
pub async fn run_agent_bench(opts: AgentBenchOptions) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = RedbStore::open(&dir.path().join("root.redb"))?;
    store.migrate().await?;
    let root = store
        .tenant_by_slug("root")
        .await?
        .ok_or_else(|| anyhow::anyhow!("root tenant missing"))?;
    let ctx = TenantContext {
        tenant: Arc::new(root.clone()),
    };
    let clock = Arc::new(SystemClock);
    let usage = UsageRecorder::new(Arc::new(store.clone()), clock.clone());
    let prompts = Prompts::new(store.clone(), clock.clone());
    let tools = BenchTools::new();
    let base_url = instant_server().await?;
    let cfg = Config::from_vars([
        ("OPENROUTER_BASE_URL".to_string(), base_url),
        ("OPENROUTER_API_KEY".to_string(), "sk-bench".to_string()),
    ])?;
    let http_client = ChatClient::from_config(&cfg.llm, usage.clone())?;
    let settings = AgentSettings::from_client(&http_client);
    let null_usage = UsageRecorder::new(Arc::new(NullUsage), clock.clone());
    let instant = |usage: &UsageRecorder| -> Arc<dyn LlmClient> {
        Arc::new(InstantLlm {
            usage: usage.clone(),
            calls: AtomicUsize::new(0),
        })
    };
    let tracer = Tracer::from_config(&cfg, store.clone(), clock.clone());
    let off = Tracer::disabled();
    // (name, transport, post-batch hook on?, tracer)
    let transports: Vec<(&str, Arc<dyn LlmClient>, bool, Tracer)> = vec![
        ("in-process, traced", instant(&usage), true, tracer.clone()),
        (
            "in-process, tracing off",
            instant(&usage),
            true,
            off.clone(),
        ),
        (
            "in-process, no writes",
            instant(&null_usage),
            false,
            off.clone(),
        ),
        ("http, traced", Arc::new(http_client), true, tracer.clone()),
    ];
    for (name, llm, hook, tracer) in transports {
        let mut kernel = AgentKernel::new(llm, settings.clone(), Arc::new(LogSink), tracer);
        if hook {
            kernel = kernel.with_hook(Arc::new(ReplySourceUsageHook::new(
                store.clone(),
                clock.clone(),
            )));
        }
        let turn = || async {
            let mut input = SystemPromptInput::new(Channel::Slack, "Ann Example", clock_now());
            input = input.with_tenant(&root);
            input.tools = tools
                .defs
                .iter()
                .map(|d| (d.name.clone(), d.description.clone()))
                .collect();
            input.tier = "member".into();
            let system_prompt = prompts
                .system_prompt(&input)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let run = kernel
                .run(
                    AgentInput {
                        system_prompt,
                        history: vec![ChatMessage::user("hi"), ChatMessage::assistant("hello!")],
                        user_message: ChatMessage::user("Where do I park for events?"),
                        caller: ToolCaller {
                            channel: "slack".into(),
                            user_message: "Where do I park for events?".into(),
                            ..ToolCaller::default()
                        },
                    },
                    &tools,
                    AgentOptions::default(),
                )
                .await;
            anyhow::ensure!(
                run.success && run.tool_calls.len() == 3,
                "turn failed: {}",
                run.text
            );
            Ok::<_, anyhow::Error>(())
        };
        // Warm-up: caches, connection pool, page cache.
        for _ in 0..20 {
            tenancy::scope(ctx.clone(), turn()).await?;
        }
        kernel.hooks_idle().await;
        // The reply's latency is timed; the fire-and-forget hooks then
        // drain untimed (a real turn spends seconds in the LLM, so they
        // never overlap the next turn of the same conversation) and their
        // own time is reported separately.
        let mut samples = Vec::with_capacity(opts.turns);
        let mut hook_samples = Vec::with_capacity(opts.turns);
        for _ in 0..opts.turns {
            let t = Instant::now();
            tenancy::scope(ctx.clone(), turn()).await?;
            samples.push(t.elapsed());
            let t = Instant::now();
            kernel.hooks_idle().await;
            hook_samples.push(t.elapsed());
        }
        samples.sort();
        hook_samples.sort();
        let hooks = if hook {
            format!(
                "   (hooks after the reply: median {:.0} µs)",
                percentile_us(&hook_samples, 0.5)
            )
        } else {
            String::new()
        };
        println!(
            "  {name:<26}  median {:>6.0} µs   p99 {:>6.0} µs   max {:>7.0} µs{hooks}",
            percentile_us(&samples, 0.5),
            percentile_us(&samples, 0.99),
            percentile_us(&samples, 1.0),
        );
    }
    tracer.flush().await;
    store.close().await;
    Ok(())
}

fn clock_now() -> storage::Ts {
    use crate::platform::clock::Clock;
    SystemClock.now()
}
