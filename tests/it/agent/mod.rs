//! The agent kernel (§4) against the scripted fake LLM on 127.0.0.1 with
//! the real chat client: loop shape, batch rules, every recovery path A–I
//! (`cargo test recovery` selects them), retries, usage and hooks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use storage::{
    LlmTokenUsage, MigrationStore, RedbStore, ReplySourceUsage, Scan, Store, TenantStore,
};
use tokio::sync::Barrier;

use root::agent::constants::{STRING_TRUNCATION_MARKER, TOOL_RESULT_TRUNCATE_BUDGET};
use root::agent::phrases;
use root::agent::{
    AgentInput, AgentKernel, AgentOptions, AgentOutcome, AgentRun, AgentSettings, AgentTools,
    NoTools, Recovery, ReplySourceUsageHook, ToolCaller, ToolResult,
};
use root::ai::chat::{ChatClient, ChatMessage, ToolDefinition};
use root::ai::usage::{UsageRecorder, collect_usage};
use root::config::Config;
use root::platform::clock::SystemClock;
use root::platform::notify::{AdminNotice, NotificationSink};
use root::platform::tenancy::{self, TenantContext};
use root::trace::Tracer;

use crate::support::fake_llm::{FakeLlm, completion, error, sse_text, tool_calls};

mod llm_errors;
mod observability;
mod recovery;
mod rounds;

type Handler = Arc<dyn Fn(Value) -> ToolResult + Send + Sync>;

/// A tool surface scripted per test: handlers by name, a call log, and an
/// optional barrier every call waits on (proves a batch runs in parallel).
struct ScriptedTools {
    defs: Vec<ToolDefinition>,
    handlers: HashMap<String, Handler>,
    calls: Mutex<Vec<(String, Value)>>,
    executed: AtomicUsize,
    /// The first `n` calls wait for each other.
    barrier: Option<(usize, Arc<Barrier>)>,
}

impl ScriptedTools {
    fn new() -> Self {
        ScriptedTools {
            defs: Vec::new(),
            handlers: HashMap::new(),
            calls: Mutex::new(Vec::new()),
            executed: AtomicUsize::new(0),
            barrier: None,
        }
    }

    fn tool(mut self, name: &str, f: impl Fn(Value) -> ToolResult + Send + Sync + 'static) -> Self {
        self.defs.push(ToolDefinition {
            name: name.into(),
            description: format!("The {name} tool"),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        });
        self.handlers.insert(name.into(), Arc::new(f));
        self
    }

    fn with_barrier(mut self, n: usize) -> Self {
        self.barrier = Some((n, Arc::new(Barrier::new(n))));
        self
    }

    fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl AgentTools for ScriptedTools {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.defs
    }

    async fn execute(&self, name: &str, args: Value, _caller: &ToolCaller) -> ToolResult {
        let index = self.executed.fetch_add(1, Ordering::SeqCst);
        self.calls.lock().unwrap().push((name.into(), args.clone()));
        if let Some((n, b)) = &self.barrier
            && index < *n
        {
            b.wait().await;
        }
        (self.handlers[name])(args)
    }
}

#[derive(Clone, Default)]
struct RecordingSink(Arc<Mutex<Vec<AdminNotice>>>);

#[async_trait]
impl NotificationSink for RecordingSink {
    async fn notify(&self, notice: AdminNotice) {
        self.0.lock().unwrap().push(notice);
    }
}

struct Harness {
    fake: FakeLlm,
    store: RedbStore,
    kernel: AgentKernel,
    notices: RecordingSink,
    tenant: TenantContext,
}

async fn harness() -> Harness {
    harness_with(&[]).await
}

async fn harness_with(extra: &[(&str, &str)]) -> Harness {
    let fake = FakeLlm::start().await;
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let mut vars = vec![
        ("OPENROUTER_BASE_URL".to_string(), fake.base_url.clone()),
        ("OPENROUTER_API_KEY".to_string(), "sk-or-test".to_string()),
        (
            "LLM_MODEL_PLANNER".to_string(),
            "acme/planner-1".to_string(),
        ),
    ];
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let cfg = Config::from_vars(vars).unwrap();
    let usage = UsageRecorder::new(Arc::new(store.clone()), Arc::new(SystemClock));
    let client = ChatClient::from_config(&cfg.llm, usage).unwrap();
    let mut settings = AgentSettings::from_client(&client);
    // The real [0, 5000] ms would make the retry tests slow; the delay
    // sequence itself is asserted in `llm_retries_…`.
    settings.retry_delays = vec![Duration::ZERO, Duration::from_millis(40)];
    let notices = RecordingSink::default();
    let kernel = AgentKernel::new(
        Arc::new(client),
        settings,
        Arc::new(notices.clone()),
        Tracer::disabled(),
    )
    .with_hook(Arc::new(ReplySourceUsageHook::new(
        store.clone(),
        Arc::new(SystemClock),
    )));
    let root = store.tenant_by_slug("root").await.unwrap().unwrap();
    Harness {
        fake,
        store,
        kernel,
        notices,
        tenant: TenantContext {
            tenant: Arc::new(root),
        },
    }
}

fn input(message: &str) -> AgentInput {
    AgentInput {
        system_prompt: "You are an AI assistant for this community.".into(),
        history: vec![
            ChatMessage::user("earlier question"),
            ChatMessage::assistant("earlier answer"),
        ],
        user_message: ChatMessage::user(message),
        caller: ToolCaller {
            principal_ref: Some("U123".into()),
            tier: Some("member".into()),
            channel: "slack".into(),
            channel_id: Some("D123".into()),
            user_message: message.into(),
            degraded: None,
        },
    }
}

impl Harness {
    async fn run(&self, tools: &dyn AgentTools, options: AgentOptions) -> AgentRun {
        tenancy::scope(
            self.tenant.clone(),
            self.kernel.run(input("Where do I park?"), tools, options),
        )
        .await
    }
}

fn tools_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap()
}

fn system_texts(body: &Value) -> Vec<String> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn tool_messages(body: &Value) -> Vec<Value> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

fn found(_: Value) -> ToolResult {
    ToolResult::ok(json!({"results": [{"slug": "parking", "text": "Park in lot B."}]}))
}

fn nothing(_: Value) -> ToolResult {
    ToolResult::ok(json!({"results": []}))
}

const ANSWER: &str = "Park in lot B behind the main building.";

async fn usage_purposes(h: &Harness) -> Vec<String> {
    let mut rows: Vec<LlmTokenUsage> = h
        .store
        .scan(
            Some(h.tenant.id()),
            Scan::index(LlmTokenUsage::CREATED_AT_IDX, storage::key()),
        )
        .await
        .unwrap();
    rows.sort_by_key(|r| r.created_at);
    rows.into_iter().map(|r| r.purpose).collect()
}
