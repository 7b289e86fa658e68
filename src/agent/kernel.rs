//! `runAgent` (§4.1–§4.4): planning rounds with tools, one answer round
//! without, parallel tool batches, and every recovery path A–I.
//!
//! The loop, as built (choices the spec leaves open are in
//! `docs/decisions.md`):
//!
//! 1. PLANNING, rounds `1..=max(1, max_iterations ?? 2)`: a transient phase
//!    message is pushed before the call and popped after it. Tool calls ⇒
//!    execute the batch in parallel (the first 16 calls; the rest get a
//!    failed "not run" result), append results (+ a failure note),
//!    fire the post-batch hooks, continue (a burst of 3 empty same-tool
//!    successes is remembered for path B).
//!    A text without tool calls is checked: plan-shaped ⇒ G; a non-answer ⇒
//!    A (tools already ran) / D (no tool ran, empty or emoji) / E (D's budget
//!    spent) / F (anything else); a real answer ends the loop — the model
//!    needed no (more) tools. A retry re-runs the same round with a transient
//!    nudge; it does not consume a planning round.
//! 2. ANSWER, once, tools omitted, only when the last planning round ended
//!    with tool results the model has not answered from yet (F may re-run it).
//! 3. H: a final non-answer goes to B (if a burst happened and B is unused),
//!    then C, then a tool-derived fallback message.
//! 4. I: unresolved failures in the last batch ⇒ `success: false`.
//!
//! Every LLM round retries transient provider errors after
//! [`LLM_CALL_RETRY_DELAYS_MS`]; when all attempts fail the tenant's admins
//! are notified with the trace id and the member gets a canned retryable
//! failure.

use std::sync::Arc;
use std::time::Instant;

use futures_util::future::join_all;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::constants::*;
use super::hooks::{BatchReport, PostBatchHook};
pub use super::run::{AgentInput, AgentOptions, AgentOutcome, AgentRun, AgentSettings, Recovery};
use super::signals::{EmptyBurst, NonAnswer, classify_non_answer, is_plan_shaped};
use super::tool::{AgentTools, ExecutedToolCall, ToolCaller, ToolImage, ToolResult};
use super::truncate::serialize_for_transcript;
use super::{phrases, signals};
use crate::ai::chat::{ChatDelta, ChatMessage, ChatRequest, ChatResponse, LlmClient, ToolCall};
use crate::ai::http::AiError;
use crate::platform::notify::NotificationSink;
use crate::platform::tenancy;
use crate::trace::{self, SpanKind, TraceStart, Tracer};

/// The agent kernel: an LLM, hooks and a notification sink. Cheap to clone.
#[derive(Clone)]
pub struct AgentKernel {
    pub(super) llm: Arc<dyn LlmClient>,
    pub(super) settings: AgentSettings,
    pub(super) admin_sink: Arc<dyn NotificationSink>,
    pub(super) hooks: Vec<Arc<dyn PostBatchHook>>,
    pub(super) hook_tasks: TaskTracker,
    pub(super) tracer: Tracer,
}

impl std::fmt::Debug for AgentKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentKernel")
            .field("settings", &self.settings)
            .field(
                "hooks",
                &self.hooks.iter().map(|h| h.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Which phase a round belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Planning { round: u32, of: u32 },
    Answer,
}

/// Every attempt of a round failed.
struct RoundFailed(AiError);

/// Mutable state of one run.
pub(super) struct RunState {
    pub(super) run_id: Uuid,
    pub(super) messages: Vec<ChatMessage>,
    pub(super) tools_attempted: bool,
    pub(super) empty_response_retries: u32,
    pub(super) unexecuted_plan_retries: u32,
    pub(super) exhausted_tool_recovery_attempts: u32,
    pub(super) burst: EmptyBurst,
    pub(super) last_batch_failures: Vec<String>,
    pub(super) calls: Vec<ExecutedToolCall>,
    pub(super) images: Vec<ToolImage>,
    pub(super) recoveries: Vec<Recovery>,
    pub(super) plan_messages: Vec<String>,
    pub(super) llm_calls: u32,
}

impl AgentKernel {
    /// A kernel over `llm`.
    pub fn new(
        llm: Arc<dyn LlmClient>,
        settings: AgentSettings,
        admin_sink: Arc<dyn NotificationSink>,
        tracer: Tracer,
    ) -> Self {
        AgentKernel {
            llm,
            settings,
            admin_sink,
            hooks: Vec::new(),
            hook_tasks: TaskTracker::new(),
            tracer,
        }
    }

    /// Add a post-batch hook.
    pub fn with_hook(mut self, hook: Arc<dyn PostBatchHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// The loop's settings.
    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }

    /// Wait until every spawned post-batch hook has finished (tests,
    /// shutdown). New hooks may still be spawned afterwards.
    pub async fn hooks_idle(&self) {
        self.hook_tasks.close();
        self.hook_tasks.wait().await;
        self.hook_tasks.reopen();
    }

    /// `runAgent`: run one turn to a reply. Never fails: provider and tool
    /// failures end in a reply with `success: false`.
    pub async fn run(
        &self,
        input: AgentInput,
        tools: &dyn AgentTools,
        options: AgentOptions,
    ) -> AgentRun {
        let start = TraceStart {
            name: "agent.run".into(),
            input: json!({
                "channel": input.caller.channel,
                "user_message": input.caller.user_message,
            }),
            metadata: json!({
                "principal_ref": input.caller.principal_ref,
                "tier": input.caller.tier,
                "tools": tools.definitions().len(),
                "replay": options.replay,
                "degraded": input.caller.degraded,
            }),
            thread_id: None,
        };
        self.tracer
            .run(start, async {
                let run = self.run_inner(input, tools, options).await;
                trace::set_trace_output(json!({
                    "text": run.text,
                    "success": run.success,
                    "outcome": run.outcome,
                    "recoveries": run.recoveries,
                }));
                run
            })
            .await
    }

    async fn run_inner(
        &self,
        input: AgentInput,
        tools: &dyn AgentTools,
        options: AgentOptions,
    ) -> AgentRun {
        let mut messages = Vec::with_capacity(input.history.len() + 8);
        messages.push(ChatMessage::system(input.system_prompt));
        messages.extend(input.history);
        messages.push(input.user_message);
        let mut st = RunState {
            run_id: Uuid::new_v4(),
            messages,
            tools_attempted: false,
            empty_response_retries: 0,
            unexecuted_plan_retries: 0,
            exhausted_tool_recovery_attempts: 0,
            burst: EmptyBurst::default(),
            last_batch_failures: Vec::new(),
            calls: Vec::new(),
            images: Vec::new(),
            recoveries: Vec::new(),
            plan_messages: Vec::new(),
            llm_calls: 0,
        };
        let caller = input.caller;
        let tools_available = !tools.definitions().is_empty();
        let planning_rounds = options.max_iterations.unwrap_or(MAX_PLANNING_ROUNDS).max(1);

        let mut final_text: Option<String> = None;
        let mut round = 1;
        let mut nudge: Option<&'static str> = None;
        while round <= planning_rounds {
            let phase = Phase::Planning {
                round,
                of: planning_rounds,
            };
            let resp = match self.round(&mut st, phase, tools, nudge.take(), None).await {
                Ok(r) => r,
                Err(RoundFailed(e)) => return self.llm_failed(st, e).await,
            };
            if !resp.tool_calls.is_empty() {
                st.tools_attempted = true;
                if !resp.text.trim().is_empty() {
                    st.plan_messages.push(resp.text.trim().to_string());
                }
                st.messages.push(resp.to_assistant_message());
                self.execute_batch(&mut st, round, &resp.tool_calls, tools, &caller, &options)
                    .await;
                round += 1;
                continue;
            }

            let text = resp.text;
            if tools_available
                && is_plan_shaped(&text)
                && st.unexecuted_plan_retries < MAX_UNEXECUTED_PLAN_RETRIES
            {
                // G: a plan without the tool batch.
                st.unexecuted_plan_retries += 1;
                st.recoveries.push(Recovery::UnexecutedPlanRetry);
                nudge = Some(phrases::UNEXECUTED_PLAN_NUDGE);
                continue;
            }
            let Some(reason) = classify_non_answer(&text, st.tools_attempted) else {
                final_text = Some(text);
                break;
            };
            let budget_left = st.empty_response_retries < MAX_EMPTY_RESPONSE_RETRIES;
            if st.tools_attempted && tools_available && budget_left {
                // A: tools ran, the model stalled; nudge with tools still on.
                st.empty_response_retries += 1;
                st.recoveries.push(Recovery::ToolStallRetry);
                nudge = Some(phrases::TOOL_STALL_NUDGE);
                continue;
            }
            let silent = matches!(reason, NonAnswer::Empty | NonAnswer::EmojiOnly);
            if !st.tools_attempted && tools_available && silent {
                if budget_left {
                    // D: answered nothing without calling a tool.
                    st.empty_response_retries += 1;
                    st.recoveries.push(Recovery::MissingToolCallRetry);
                    nudge = Some(phrases::MISSING_TOOL_CALL_NUDGE);
                    continue;
                }
                // E: the retry did not help either.
                st.recoveries.push(Recovery::FailClosed);
                return finish(
                    st,
                    phrases::FAIL_CLOSED_REPLY.into(),
                    false,
                    AgentOutcome::FailClosed,
                );
            }
            if budget_left {
                // F: one nudge for the remaining non-answers.
                st.empty_response_retries += 1;
                st.recoveries.push(Recovery::GenericEmptyRetry);
                nudge = Some(phrases::GENERIC_EMPTY_NUDGE);
                continue;
            }
            final_text = Some(text);
            break;
        }

        let mut text = match final_text {
            Some(text) => text,
            None => {
                // ANSWER: tools omitted; synthesize from the transcript.
                let mut answer = match self
                    .round(&mut st, Phase::Answer, tools, None, options.stream.as_ref())
                    .await
                {
                    Ok(r) => r.text,
                    Err(RoundFailed(e)) => return self.llm_failed(st, e).await,
                };
                if classify_non_answer(&answer, st.tools_attempted).is_some()
                    && st.empty_response_retries < MAX_EMPTY_RESPONSE_RETRIES
                {
                    st.empty_response_retries += 1;
                    st.recoveries.push(Recovery::GenericEmptyRetry);
                    match self
                        .round(
                            &mut st,
                            Phase::Answer,
                            tools,
                            Some(phrases::GENERIC_EMPTY_NUDGE),
                            options.stream.as_ref(),
                        )
                        .await
                    {
                        Ok(r) => answer = r.text,
                        Err(RoundFailed(e)) => return self.llm_failed(st, e).await,
                    }
                }
                answer
            }
        };

        // H: still a non-answer ⇒ B, then C, then the tool-derived fallback.
        let recovered = classify_non_answer(&text, st.tools_attempted).is_some();
        if recovered {
            let mut replaced = None;
            if st.burst.reached()
                && st.exhausted_tool_recovery_attempts < MAX_EXHAUSTED_TOOL_RECOVERY_ATTEMPTS
            {
                st.exhausted_tool_recovery_attempts += 1;
                st.recoveries.push(Recovery::ExhaustedToolsComposition);
                replaced = self.compose_exhausted(&mut st, &caller).await;
            }
            if replaced.is_none() {
                st.recoveries.push(Recovery::BestEffortComposition);
                replaced = self.compose_best_effort(&mut st).await;
            }
            text = match replaced {
                Some(t) => t,
                None => {
                    st.recoveries.push(Recovery::ToolDerivedFallback);
                    phrases::tool_derived_fallback(&st.calls)
                }
            };
        }

        // I: unresolved failures in the last batch.
        let success = st.last_batch_failures.is_empty();
        if !success {
            st.recoveries.push(Recovery::UnresolvedToolFailures);
        }
        let outcome = if recovered {
            AgentOutcome::Recovered
        } else {
            AgentOutcome::Answered
        };
        finish(st, text, success, outcome)
    }

    /// One LLM round with the phase message (and an optional nudge) pushed
    /// for the call and popped after it, retried per
    /// [`LLM_CALL_RETRY_DELAYS_MS`] on transient errors.
    async fn round(
        &self,
        st: &mut RunState,
        phase: Phase,
        tools: &dyn AgentTools,
        nudge: Option<&'static str>,
        stream: Option<&mpsc::Sender<ChatDelta>>,
    ) -> Result<ChatResponse, RoundFailed> {
        let (span_name, purpose, instruction, offered) = match phase {
            Phase::Planning { round, of } => (
                format!("planning_round_{round}"),
                "agent.planning",
                phrases::planning_instruction(round, of),
                tools.definitions().to_vec(),
            ),
            Phase::Answer => (
                "answer_phase".to_string(),
                "agent.answer",
                phrases::ANSWER_INSTRUCTION.to_string(),
                Vec::new(),
            ),
        };
        let pushed = 1 + usize::from(nudge.is_some());
        st.messages.push(ChatMessage::system(instruction));
        if let Some(n) = nudge {
            st.messages.push(ChatMessage::system(n));
        }
        let mut request = ChatRequest::new(
            self.settings.model.clone(),
            std::mem::take(&mut st.messages),
        );
        request.tools = offered;
        request.temperature = Some(self.settings.temperature);
        request.max_tokens = Some(self.settings.max_tokens);
        request.reasoning_effort = self.settings.reasoning_effort;
        let input = json!({"messages": request.messages.len(), "tools": request.tools.len(), "nudge": nudge});
        let result = trace::span(&span_name, SpanKind::General, input, async {
            let r = self
                .call_with_retries(purpose, &request, stream, &mut st.llm_calls)
                .await;
            if let Ok(resp) = &r {
                trace::set_span_output(json!({
                    "text": resp.text,
                    "tool_calls": resp.tool_calls.iter().map(|c| &c.name).collect::<Vec<_>>(),
                }));
            }
            r
        })
        .await;
        st.messages = request.messages;
        st.messages.truncate(st.messages.len() - pushed);
        result
    }

    async fn call_with_retries(
        &self,
        purpose: &str,
        request: &ChatRequest,
        stream: Option<&mpsc::Sender<ChatDelta>>,
        llm_calls: &mut u32,
    ) -> Result<ChatResponse, RoundFailed> {
        let mut attempt = 0;
        loop {
            *llm_calls += 1;
            let result = match stream {
                Some(sink) => self.llm.chat_stream(purpose, request, sink).await,
                None => self.llm.chat(purpose, request).await,
            };
            match result {
                Ok(resp) => return Ok(resp),
                Err(e) if e.is_retryable() && attempt < self.settings.retry_delays.len() => {
                    let delay = self.settings.retry_delays[attempt];
                    attempt += 1;
                    tracing::warn!(purpose, attempt, error = %e, ?delay, "LLM call failed; retrying");
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(RoundFailed(e)),
            }
        }
    }

    /// Run a batch in parallel (one task, so tenant, usage collector and
    /// trace follow every call), append the results and a failure note.
    async fn execute_batch(
        &self,
        st: &mut RunState,
        round: u32,
        calls: &[ToolCall],
        tools: &dyn AgentTools,
        caller: &ToolCaller,
        options: &AgentOptions,
    ) {
        let offered = tools.definitions();
        if calls.len() > MAX_TOOL_CALLS_PER_BATCH {
            tracing::warn!(
                calls = calls.len(),
                cap = MAX_TOOL_CALLS_PER_BATCH,
                "tool batch over the cap; the extra calls are not run"
            );
        }
        let executed = join_all(calls.iter().enumerate().map(|(i, call)| async move {
            let args = parse_args(&call.arguments);
            if i >= MAX_TOOL_CALLS_PER_BATCH {
                return ExecutedToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args,
                    result: ToolResult::failed(format!(
                        "Not run: at most {MAX_TOOL_CALLS_PER_BATCH} tool calls run per batch. \
                         Call {} again in the next round if you still need it.",
                        call.name
                    )),
                    round,
                    empty: false,
                    truncated: false,
                    duration_ms: 0,
                };
            }
            let started = Instant::now();
            let span_name = format!("tool:{}", call.name);
            let result = trace::span(&span_name, SpanKind::Tool, args.clone(), async {
                let result = if offered.iter().any(|d| d.name == call.name) {
                    tools.execute(&call.name, args.clone(), caller).await
                } else {
                    ToolResult::failed(format!("Unknown tool: {}", call.name))
                };
                trace::set_span_output(json!({
                    "success": result.success,
                    "error": result.error,
                    "error_detail": result.error_detail,
                }));
                if !result.success {
                    trace::set_span_error(result.error.as_deref().unwrap_or("tool failed"));
                }
                result
            })
            .await;
            if !result.success {
                // Errors can quote the arguments (member text): WARN gets the
                // tool and the failure's kind, DEBUG the whole text.
                tracing::warn!(
                    tool = %call.name,
                    kind = %result.failure_kind(),
                    "tool call failed"
                );
                tracing::debug!(
                    tool = %call.name,
                    error = result.error.as_deref().unwrap_or(""),
                    detail = result.error_detail.as_deref().unwrap_or(""),
                    "tool call failure text"
                );
            }
            let empty = result.success && signals::tool_call_signals_empty(&result.model_view());
            ExecutedToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                args,
                result,
                round,
                empty,
                truncated: false,
                duration_ms: started.elapsed().as_millis() as u64,
            }
        }))
        .await;

        let mut failures = Vec::new();
        let mut batch = Vec::with_capacity(executed.len());
        for mut call in executed {
            let (content, truncated) = serialize_for_transcript(&call.result.model_view());
            call.truncated = truncated;
            st.messages
                .push(ChatMessage::tool(call.id.clone(), content));
            st.burst.record(&call.name, call.result.success, call.empty);
            if !call.result.success {
                failures.push(call.name.clone());
            }
            st.images.extend(call.result.images.iter().cloned());
            batch.push(call);
        }
        if !failures.is_empty() {
            st.messages
                .push(ChatMessage::system(phrases::failure_note(&failures)));
        }
        st.last_batch_failures = failures;
        self.spawn_hooks(st.run_id, caller, &batch, options);
        st.calls.extend(batch);
    }

    fn spawn_hooks(
        &self,
        run_id: Uuid,
        caller: &ToolCaller,
        batch: &[ExecutedToolCall],
        options: &AgentOptions,
    ) {
        if options.replay || self.hooks.is_empty() {
            return;
        }
        let Some(tenant) = tenancy::current() else {
            return;
        };
        let report = Arc::new(BatchReport {
            tenant_id: tenant.id(),
            run_id,
            caller: caller.clone(),
            calls: batch.to_vec(),
        });
        for hook in &self.hooks {
            let hook = hook.clone();
            let report = report.clone();
            let tenant = tenant.clone();
            // A spawned task starts outside the requester's usage
            // collection and trace: hooks are never billed to the member.
            self.hook_tasks.spawn(tenancy::scope(tenant, async move {
                if let Err(e) = hook.after_batch(&report).await {
                    tracing::warn!(hook = hook.name(), error = %e, "post-batch hook failed");
                }
            }));
        }
    }
}

/// A tool call's raw `arguments` string as the model sent it → the JSON
/// handed to the tool. Malformed, empty or non-object arguments become `{}`
/// (§4.3).
pub fn parse_args(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(serde_json::Map::new()),
    }
}

pub(super) fn finish(st: RunState, text: String, success: bool, outcome: AgentOutcome) -> AgentRun {
    AgentRun {
        run_id: st.run_id,
        trace_id: trace::current_trace_id(),
        text,
        success,
        outcome,
        tool_calls: st.calls,
        images: st.images,
        recoveries: st.recoveries,
        plan_messages: st.plan_messages,
        llm_calls: st.llm_calls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_args_become_empty_object() {
        assert_eq!(parse_args("{\"q\":\"x\"}"), json!({"q": "x"}));
        assert_eq!(parse_args("{not json"), json!({}));
        assert_eq!(parse_args(""), json!({}));
        assert_eq!(parse_args("[1,2]"), json!({}));
        assert_eq!(parse_args("\"str\""), json!({}));
    }
}
