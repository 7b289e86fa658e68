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

use super::fake_llm::{FakeLlm, completion, error, sse_text, tool_calls};

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

#[tokio::test]
async fn agent_planning_rounds_offer_tools_and_the_answer_round_omits_them() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            Some("Checking two places."),
            &[
                ("c1", "search_knowledge_base", r#"{"query":"parking"}"#),
                ("c2", "search_slack_messages", r#"{"query":"parking"}"#),
            ],
        ))
        .json(tool_calls(
            None,
            &[("c3", "search_knowledge_base", r#"{"query":"lot"}"#)],
        ))
        .json(completion(ANSWER));
    // Both calls of the first batch must be in flight together.
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", found)
        .tool("search_slack_messages", found)
        .with_barrier(2);
    let run = tokio::time::timeout(
        Duration::from_secs(20),
        h.run(&tools, AgentOptions::default()),
    )
    .await
    .expect("a sequential batch would deadlock on the barrier");

    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    assert_eq!(run.outcome, AgentOutcome::Answered);
    assert!(run.recoveries.is_empty());
    assert_eq!(run.plan_messages, vec!["Checking two places.".to_string()]);
    assert_eq!(run.tool_calls.len(), 3);
    assert_eq!(run.llm_calls, 3, "≤ planning rounds + 1");

    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 3);
    let offered = vec!["search_knowledge_base", "search_slack_messages"];
    assert_eq!(tools_of(&bodies[0]), offered);
    assert_eq!(tools_of(&bodies[1]), offered);
    assert!(
        bodies[2].get("tools").is_none(),
        "answer round: tools omitted"
    );
    for b in &bodies {
        assert_eq!(b["model"], "acme/planner-1");
        assert_eq!(b["temperature"], json!(0.0));
        assert_eq!(b["max_tokens"], json!(16000));
        assert_eq!(b["reasoning"], json!({"effort": "medium"}));
    }
    // One transient phase message per round, last, never accumulating.
    let s0 = system_texts(&bodies[0]);
    let s1 = system_texts(&bodies[1]);
    let s2 = system_texts(&bodies[2]);
    assert_eq!(s0.len(), 2);
    assert!(s0[1].starts_with("PLANNING PHASE (round 1 of 2)"));
    assert_eq!(s1.len(), 2);
    assert!(s1[1].starts_with("PLANNING PHASE (round 2 of 2)"));
    assert_eq!(s2.len(), 2);
    assert_eq!(s2[1], phrases::ANSWER_INSTRUCTION);
    assert_eq!(messages(&bodies[0]).last().unwrap()["role"], "system");
    // System prompt, history, the member's message, in order.
    let m0 = messages(&bodies[0]);
    assert_eq!(m0[1]["content"], "earlier question");
    assert_eq!(m0[3]["content"], "Where do I park?");
    // Round 2 sees the assistant tool-call turn and both results.
    let results = tool_messages(&bodies[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["success"], json!(true));
    assert_eq!(results[0]["data"]["results"][0]["slug"], "parking");
    assert_eq!(tool_messages(&bodies[2]).len(), 3);
}

#[tokio::test]
async fn agent_batch_rules_unknown_tool_malformed_args_and_error_detail() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "search_knowledge_base", "{not json"),
                ("c2", "drop_database", r#"{"really":true}"#),
                ("c3", "book_room", r#"{"room":"A"}"#),
            ],
        ))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", found)
        .tool("book_room", |_| ToolResult {
            success: false,
            error: Some("The room could not be booked.".into()),
            error_detail: Some("HTTP 502 from https://backend.internal/rooms".into()),
            ..ToolResult::default()
        });
    let run = h.run(&tools, AgentOptions::default()).await;

    // Malformed arguments reach the handler as {}; the unknown name never does.
    assert_eq!(
        tools.calls(),
        vec![
            ("search_knowledge_base".to_string(), json!({})),
            ("book_room".to_string(), json!({"room": "A"}))
        ]
    );
    let bodies = h.fake.bodies();
    let results = tool_messages(&bodies[1]);
    assert_eq!(
        results[1],
        json!({"success": false, "error": "Unknown tool: drop_database"})
    );
    assert_eq!(
        results[2],
        json!({"success": false, "error": "The room could not be booked."}),
        "error_detail stripped from the transcript"
    );
    let raw = bodies[1].to_string();
    assert!(!raw.contains("backend.internal"));
    // The failure note follows the batch and names both failures.
    let notes = system_texts(&bodies[1]);
    let note = notes.iter().find(|s| s.starts_with("NOTE:")).unwrap();
    assert!(note.contains("drop_database, book_room"), "{note}");
    assert!(note.contains("NOT completed"));
    // The run keeps the detail for operators.
    assert_eq!(
        run.tool_calls[2].result.error_detail.as_deref(),
        Some("HTTP 502 from https://backend.internal/rooms")
    );
}

#[tokio::test]
async fn agent_oversized_tool_result_is_deep_truncated_in_the_transcript() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "fetch_page", "{}")]))
        .json(tool_calls(None, &[("c2", "list_members", "{}")]))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new()
        .tool("fetch_page", |_| {
            ToolResult::ok(json!({"title": "Handbook", "body": "policy text ".repeat(10_000)}))
        })
        .tool("list_members", |_| {
            let members: Vec<Value> = (0..3000)
                .map(|i| json!({"id": i, "name": format!("Member {i}")}))
                .collect();
            ToolResult::ok(json!({"members": members}))
        });
    let run = h.run(&tools, AgentOptions::default()).await;
    assert!(run.tool_calls.iter().all(|c| c.truncated));
    let body = &h.fake.bodies()[2];
    let raw: Vec<&str> = messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    for r in &raw {
        assert!(
            r.chars().count() <= TOOL_RESULT_TRUNCATE_BUDGET,
            "{}",
            r.len()
        );
    }
    let page: Value = serde_json::from_str(raw[0]).unwrap();
    assert_eq!(page["data"]["title"], "Handbook");
    assert!(
        page["data"]["body"]
            .as_str()
            .unwrap()
            .ends_with(STRING_TRUNCATION_MARKER)
    );
    let list: Value = serde_json::from_str(raw[1]).unwrap();
    let members = list["data"]["members"].as_array().unwrap();
    let kept = members.len() - 1;
    assert_eq!(
        members[kept],
        json!(format!("[… {} more items omitted for size]", 3000 - kept))
    );
    // The run keeps the full result.
    assert_eq!(
        run.tool_calls[1].result.data.as_ref().unwrap()["members"]
            .as_array()
            .unwrap()
            .len(),
        3000
    );
}

#[tokio::test]
async fn recovery_a_tool_stall_retry_nudges_once_with_tools_still_on() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(""))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::ToolStallRetry]);
    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(tools_of(&bodies[2]), vec!["search_knowledge_base"]);
    let sys = system_texts(&bodies[2]);
    assert!(
        sys[1].starts_with("PLANNING PHASE (round 2 of 2)"),
        "same round again"
    );
    assert_eq!(sys[2], phrases::TOOL_STALL_NUDGE);
}

#[tokio::test]
async fn recovery_b_exhausted_tools_composition_after_three_empty_same_tool_calls() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "find_member", r#"{"query":"Ann"}"#),
                ("c2", "find_member", r#"{"query":"Anne"}"#),
                ("c3", "find_member", r#"{"query":"Annie"}"#),
            ],
        ))
        .json(completion(""))
        .json(completion("👍"))
        .json(completion(
            "I checked the member directory three ways and found no one by that name.",
        ));
    let tools = ScriptedTools::new().tool("find_member", nothing);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![
            Recovery::ToolStallRetry,
            Recovery::ExhaustedToolsComposition
        ]
    );
    assert_eq!(run.outcome, AgentOutcome::Recovered);
    assert!(run.text.starts_with("I checked the member directory"));
    assert!(run.success);
    assert!(run.tool_calls.iter().all(|c| c.empty));
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 4);
    let composer = &bodies[3];
    assert_eq!(composer["model"], "acme/planner-1");
    assert_eq!(composer["temperature"], json!(0.7));
    assert!(composer.get("tools").is_none());
    let sys = system_texts(composer);
    assert!(sys[0].contains("STRICT GROUNDING"));
    let user = messages(composer)[1]["content"].as_str().unwrap();
    assert!(user.contains("find_member({\"query\":\"Annie\"}) → successful, no results"));
    let purposes = usage_purposes(&h).await;
    assert_eq!(purposes.last().unwrap(), "agent.tool-exhaustion-recovery");
}

#[tokio::test]
async fn recovery_c_best_effort_composition_sees_the_last_six_messages() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(""))
        .json(completion(
            "Sources:\n• <https://kb.example/parking|Parking>",
        ))
        .json(completion(
            "Lot B is the member parking lot, behind the main building.",
        ));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![Recovery::ToolStallRetry, Recovery::BestEffortComposition]
    );
    assert!(run.text.starts_with("Lot B is the member parking lot"));
    let composer = &h.fake.bodies()[3];
    assert_eq!(composer["temperature"], json!(0.3));
    assert_eq!(composer["model"], "acme/planner-1");
    let convo = messages(composer)[1]["content"].as_str().unwrap();
    // Non-system transcript: earlier question, earlier answer, member
    // message, assistant tool call, tool result = 5 ≤ 6, all present.
    assert!(convo.contains("[member] earlier question"));
    assert!(convo.contains("[member] Where do I park?"));
    assert!(convo.contains("(called: search_knowledge_base)"));
    assert!(convo.contains("[tool result]"));
    assert_eq!(convo.matches("\n\n[").count(), 5, "{convo}");
    let purposes = usage_purposes(&h).await;
    assert_eq!(
        purposes.last().unwrap(),
        "agent.best-effort-response-recovery"
    );
}

#[tokio::test]
async fn recovery_c_best_effort_window_is_capped_at_six() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "a", "{}"), ("c2", "b", "{}")]))
        .json(tool_calls(None, &[("c3", "a", "{}"), ("c4", "b", "{}")]))
        .json(completion(""))
        .json(completion(""))
        .json(completion(
            "Here is the best answer I can give from those results.",
        ));
    let tools = ScriptedTools::new().tool("a", found).tool("b", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![Recovery::GenericEmptyRetry, Recovery::BestEffortComposition]
    );
    let composer = &h.fake.bodies()[4];
    let convo = messages(composer)[1]["content"].as_str().unwrap();
    assert_eq!(convo.matches("\n\n[").count(), 6, "{convo}");
    assert!(
        !convo.contains("earlier question"),
        "older messages are cut"
    );
}

#[tokio::test]
async fn recovery_d_missing_tool_call_retry_when_nothing_was_said_or_called() {
    let h = harness().await;
    h.fake.json(completion("  ")).json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::MissingToolCallRetry]);
    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(tools_of(&bodies[1]), vec!["search_knowledge_base"]);
    assert_eq!(
        system_texts(&bodies[1])[2],
        phrases::MISSING_TOOL_CALL_NUDGE
    );
}

#[tokio::test]
async fn recovery_e_fail_closed_after_the_retry_still_says_nothing() {
    let h = harness().await;
    h.fake.json(completion("")).json(completion("🙂"));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![Recovery::MissingToolCallRetry, Recovery::FailClosed]
    );
    assert_eq!(run.outcome, AgentOutcome::FailClosed);
    assert_eq!(run.text, phrases::FAIL_CLOSED_REPLY);
    assert!(!run.success);
    assert_eq!(h.fake.bodies().len(), 2, "no answer round, no composer");
}

#[tokio::test]
async fn recovery_f_generic_empty_retry_for_other_non_answers() {
    // No tools on this surface: a sources-only reply gets one nudge.
    let h = harness().await;
    h.fake
        .json(completion(
            "Sources:\n- [Parking](https://kb.example/parking)",
        ))
        .json(completion(ANSWER));
    let run = h.run(&NoTools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::GenericEmptyRetry]);
    assert_eq!(run.text, ANSWER);
    let bodies = h.fake.bodies();
    assert!(bodies[1].get("tools").is_none());
    assert_eq!(system_texts(&bodies[1])[2], phrases::GENERIC_EMPTY_NUDGE);
}

#[tokio::test]
async fn recovery_f_generic_empty_retry_in_the_answer_round() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(tool_calls(None, &[("c2", "search_knowledge_base", "{}")]))
        .json(completion("ok"))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::GenericEmptyRetry]);
    assert_eq!(run.text, ANSWER);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(bodies[3].get("tools").is_none(), "still the answer round");
    let sys = system_texts(&bodies[3]);
    assert_eq!(sys[1], phrases::ANSWER_INSTRUCTION);
    assert_eq!(sys[2], phrases::GENERIC_EMPTY_NUDGE);
}

#[tokio::test]
async fn recovery_g_unexecuted_plan_retry_then_the_batch_runs() {
    let h = harness().await;
    let plan = "On it — checking a few places.\n• Searching the KB\n• Scanning Slack\n• Asking who knows\n• Checking events\n• Stretching";
    h.fake
        .json(completion(plan))
        .json(tool_calls(
            Some(plan),
            &[("c1", "search_knowledge_base", "{}")],
        ))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::UnexecutedPlanRetry]);
    assert_eq!(run.text, ANSWER);
    assert_eq!(run.tool_calls.len(), 1);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 3);
    let sys = system_texts(&bodies[1]);
    assert!(sys[1].starts_with("PLANNING PHASE (round 1 of 2)"));
    assert_eq!(sys[2], phrases::UNEXECUTED_PLAN_NUDGE);
    assert_eq!(tools_of(&bodies[1]), vec!["search_knowledge_base"]);
    assert!(
        bodies[2].get("tools").is_some(),
        "round 2 is still planning"
    );
}

#[tokio::test]
async fn recovery_h_tries_b_then_c_then_the_tool_derived_fallback() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "find_member", "{}"),
                ("c2", "find_member", "{}"),
                ("c3", "find_member", "{}"),
            ],
        ))
        .json(completion(""))
        .json(completion(""))
        .json(completion("")) // B: a non-answer
        .then(error(500)); // C: fails
    let tools = ScriptedTools::new().tool("find_member", nothing);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![
            Recovery::ToolStallRetry,
            Recovery::ExhaustedToolsComposition,
            Recovery::BestEffortComposition,
            Recovery::ToolDerivedFallback,
        ]
    );
    assert_eq!(run.outcome, AgentOutcome::Recovered);
    assert!(
        run.text.contains("Nothing matched in: find member."),
        "{}",
        run.text
    );
    assert!(run.success, "nothing failed, nothing was found");
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 5, "composers are not retried");
    assert_eq!(bodies[3]["temperature"], json!(0.7));
    assert_eq!(bodies[4]["temperature"], json!(0.3));
    assert!(
        h.notices.0.lock().unwrap().is_empty(),
        "composer failure is not an outage"
    );
}

#[tokio::test]
async fn recovery_i_unresolved_failures_in_the_last_batch_mean_success_false() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "book_room", "{}"),
                ("c2", "search_knowledge_base", "{}"),
            ],
        ))
        .json(completion(
            "I couldn't book the room, but parking is in lot B.",
        ));
    let tools = ScriptedTools::new()
        .tool("book_room", |_| ToolResult::failed("Booking failed."))
        .tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::UnresolvedToolFailures]);
    assert!(
        !run.success,
        "text was produced, but an action did not happen"
    );
    assert_eq!(
        run.text,
        "I couldn't book the room, but parking is in lot B."
    );
}

#[tokio::test]
async fn recovery_i_a_failure_resolved_by_a_later_batch_is_success() {
    let h = harness().await;
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = attempts.clone();
    h.fake
        .json(tool_calls(None, &[("c1", "book_room", "{}")]))
        .json(tool_calls(None, &[("c2", "book_room", "{}")]))
        .json(completion("Booked room A for you on the second try."));
    let tools = ScriptedTools::new().tool("book_room", move |_| {
        if a.fetch_add(1, Ordering::SeqCst) == 0 {
            ToolResult::failed("Busy, try again.")
        } else {
            ToolResult::ok(json!({"booking": "A"}))
        }
    });
    let run = h.run(&tools, AgentOptions::default()).await;
    assert!(run.success);
    assert!(run.recoveries.is_empty());
}

#[tokio::test]
async fn agent_max_iterations_sets_the_planning_rounds() {
    let h = harness().await;
    for i in 0..6 {
        let id = format!("c{i}");
        h.fake.json(tool_calls(
            None,
            &[(id.as_str(), "search_knowledge_base", "{}")],
        ));
    }
    h.fake.json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h
        .run(
            &tools,
            AgentOptions {
                max_iterations: Some(6),
                ..AgentOptions::default()
            },
        )
        .await;
    assert_eq!(run.tool_calls.len(), 6);
    assert_eq!(run.llm_calls, 7);
    let bodies = h.fake.bodies();
    assert!(system_texts(&bodies[5])[1].starts_with("PLANNING PHASE (round 6 of 6)"));
    assert!(bodies[6].get("tools").is_none());

    // max_iterations 0 still plans once: max(1, 0).
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    let run = h
        .run(
            &tools,
            AgentOptions {
                max_iterations: Some(0),
                ..AgentOptions::default()
            },
        )
        .await;
    assert_eq!(run.llm_calls, 2);
    assert!(h.fake.bodies()[1].get("tools").is_none());
}

#[tokio::test]
async fn agent_llm_retries_transient_errors_with_the_spec_delays() {
    assert_eq!(root::agent::constants::LLM_CALL_RETRY_DELAYS_MS, [0, 5000]);
    let h = harness().await;
    h.fake
        .then(error(503))
        .then(error(429))
        .json(completion(ANSWER));
    let started = std::time::Instant::now();
    let run = h.run(&NoTools, AgentOptions::default()).await;
    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    assert_eq!(h.fake.bodies().len(), 3, "3 attempts in total");
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "second delay waited"
    );
    assert!(h.notices.0.lock().unwrap().is_empty());
    // Settings built from the client carry the spec's delays.
    assert_eq!(
        AgentSettings::from_client(
            &ChatClient::from_config(
                &Config::from_vars(Vec::<(String, String)>::new())
                    .unwrap()
                    .llm,
                UsageRecorder::new(Arc::new(h.store.clone()), Arc::new(SystemClock)),
            )
            .unwrap()
        )
        .retry_delays,
        vec![Duration::ZERO, Duration::from_millis(5000)]
    );
}

#[tokio::test]
async fn agent_llm_exhausted_notifies_admins_and_returns_the_canned_failure() {
    let h = harness().await;
    h.fake.then(error(502)).then(error(503)).then(error(504));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(h.fake.bodies().len(), 3);
    assert_eq!(run.outcome, AgentOutcome::LlmUnavailable);
    assert_eq!(run.text, phrases::LLM_UNAVAILABLE_REPLY);
    assert!(!run.success);
    let notices = h.notices.0.lock().unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, "agent.llm_unavailable");
    assert!(notices[0].body.contains(&h.tenant.id().to_string()));
    assert!(notices[0].body.contains("Trace:"));
}

#[tokio::test]
async fn agent_client_errors_are_not_retried() {
    let h = harness().await;
    h.fake.then(error(400));
    let run = h.run(&NoTools, AgentOptions::default()).await;
    assert_eq!(h.fake.bodies().len(), 1);
    assert_eq!(run.outcome, AgentOutcome::LlmUnavailable);
    assert_eq!(h.notices.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn agent_without_a_provider_reports_not_configured_at_once() {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let cfg = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
    let usage = UsageRecorder::new(Arc::new(store.clone()), Arc::new(SystemClock));
    let client = ChatClient::from_config(&cfg.llm, usage).unwrap();
    let notices = RecordingSink::default();
    let kernel = AgentKernel::new(
        Arc::new(client.clone()),
        AgentSettings::from_client(&client),
        Arc::new(notices.clone()),
        Tracer::disabled(),
    );
    let run = tokio::time::timeout(
        Duration::from_secs(5),
        kernel.run(input("hi"), &NoTools, AgentOptions::default()),
    )
    .await
    .expect("no hang");
    assert_eq!(run.outcome, AgentOutcome::NotConfigured);
    assert_eq!(run.text, phrases::NOT_CONFIGURED_REPLY);
    assert!(!run.success);
    assert!(notices.0.lock().unwrap().is_empty());
}

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

#[tokio::test]
async fn agent_usage_rows_and_collector_totals_cover_every_round() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(tool_calls(None, &[("c2", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let (run, totals) = collect_usage(h.run(&tools, AgentOptions::default())).await;
    assert!(run.success);
    assert_eq!(totals.llm_calls, 3);
    assert_eq!(totals.tokens, 60 + 60 + 120);
    assert!((totals.cost_usd - (1.0e-4 + 1.0e-4 + 2.5e-4)).abs() < 1e-12);
    assert_eq!(
        usage_purposes(&h).await,
        vec!["agent.planning", "agent.planning", "agent.answer"]
    );
}

#[tokio::test]
async fn agent_reply_source_usage_hook_records_refs_and_is_skipped_in_replay() {
    let h = harness().await;
    let slack_matches: Vec<Value> = (0..250)
        .map(|i| json!({"channel_id": "C1", "message_ts": format!("1700000000.{i:06}"), "text": "private words"}))
        .collect();
    let matches = slack_matches.clone();
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", |_| {
            ToolResult::ok(
                json!({"results": [{"slug": "parking"}, {"slug": "parking"}, {"slug": "hours"}]}),
            )
        })
        .tool("search_slack_messages", move |_| {
            ToolResult::ok(json!({"matches": matches.clone()}))
        });
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "search_knowledge_base", "{}"),
                ("c2", "search_slack_messages", "{}"),
            ],
        ))
        .json(tool_calls(None, &[("c3", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    let run = h.run(&tools, AgentOptions::default()).await;
    h.kernel.hooks_idle().await;
    let rows: Vec<ReplySourceUsage> = h
        .store
        .scan(Some(h.tenant.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 200, "cap 200 refs per run");
    assert!(rows.iter().all(|r| r.run_id == run.run_id));
    let kb: Vec<&str> = rows
        .iter()
        .filter(|r| r.source_type.as_str() == "knowledge_page")
        .map(|r| r.source_ref.as_str())
        .collect();
    assert_eq!(kb.len(), 2, "deduplicated across batches: {kb:?}");
    assert!(rows.iter().any(|r| r.source_ref == "C1:1700000000.000000"));

    // Replay mode: the same run writes nothing.
    let h2 = harness().await;
    h2.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    h2.run(
        &tools,
        AgentOptions {
            replay: true,
            ..AgentOptions::default()
        },
    )
    .await;
    h2.kernel.hooks_idle().await;
    let rows: Vec<ReplySourceUsage> = h2
        .store
        .scan(Some(h2.tenant.id()), Scan::all())
        .await
        .unwrap();
    assert!(rows.is_empty());
    drop(slack_matches);
}

#[tokio::test]
async fn agent_run_is_traced_with_phase_tool_and_llm_spans() {
    let mut h = harness().await;
    let cfg = Config::from_vars([
        ("OPENROUTER_BASE_URL".to_string(), h.fake.base_url.clone()),
        ("OPENROUTER_API_KEY".to_string(), "sk-or-test".to_string()),
    ])
    .unwrap();
    let tracer = Tracer::from_config(&cfg, h.store.clone(), Arc::new(SystemClock));
    let usage = UsageRecorder::new(Arc::new(h.store.clone()), Arc::new(SystemClock));
    let client = ChatClient::from_config(&cfg.llm, usage).unwrap();
    h.kernel = AgentKernel::new(
        Arc::new(client.clone()),
        AgentSettings::from_client(&client),
        Arc::new(h.notices.clone()),
        tracer.clone(),
    );
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "search_knowledge_base", "{}"),
                ("c2", "book_room", "{}"),
            ],
        ))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", found)
        .tool("book_room", |_| ToolResult::failed("No rooms left."));
    let run = h.run(&tools, AgentOptions::default()).await;
    let trace_id = run.trace_id.expect("tracing is on by default");
    tracer.flush().await;
    let view = tenancy::scope(h.tenant.clone(), tracer.get(trace_id))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(view.trace.name, "agent.run");
    assert_eq!(view.trace.llm_calls, 2);
    let names: Vec<&str> = view.spans.iter().map(|s| s.name.as_str()).collect();
    for want in [
        "planning_round_1",
        "tool:search_knowledge_base",
        "tool:book_room",
        "planning_round_2",
        "llm:agent.planning",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let round1 = view.span("planning_round_1").unwrap();
    let llm = view
        .spans
        .iter()
        .find(|s| s.name == "llm:agent.planning" && s.parent_span_id == Some(round1.id))
        .expect("the LLM call is a child of its round");
    assert_eq!(llm.total_tokens, 60);
    assert_eq!(
        view.span("tool:book_room").unwrap().error.as_deref(),
        Some("No rooms left.")
    );
    assert!(
        view.span("tool:search_knowledge_base")
            .unwrap()
            .error
            .is_none()
    );
    assert_eq!(view.trace.output.0["success"], json!(false));
}

#[tokio::test]
async fn agent_streams_the_answer_round_to_the_channel() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(tool_calls(None, &[("c2", "search_knowledge_base", "{}")]))
        .sse(sse_text(&[
            "Park in ",
            "lot B ",
            "behind the main building.",
        ]));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let run = h
        .run(
            &tools,
            AgentOptions {
                stream: Some(tx),
                ..AgentOptions::default()
            },
        )
        .await;
    assert_eq!(run.text, "Park in lot B behind the main building.");
    let mut streamed = String::new();
    while let Ok(delta) = rx.try_recv() {
        if let root::ai::chat::ChatDelta::Text(t) = delta {
            streamed.push_str(&t);
        }
    }
    assert_eq!(streamed, run.text, "only the answer round is streamed");
    let bodies = h.fake.bodies();
    assert_eq!(bodies[2]["stream"], json!(true));
    assert!(bodies[0].get("stream").is_none_or(|v| v == &json!(false)));
}
