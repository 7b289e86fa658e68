//! The recovery composers of the loop (§4.4): B composes from the
//! successful tool calls under strict grounding, C from the last
//! transcript messages, and the all-attempts-failed path that notifies the
//! tenant's admins and answers with the canned retryable failure.

use serde_json::json;

use super::constants::*;
use super::kernel::{AgentKernel, RunState, finish};
use super::phrases;
use super::run::{AgentOutcome, AgentRun};
use super::signals::classify_non_answer;
use super::tool::ToolCaller;
use crate::ai::chat::{ChatMessage, ChatRequest};
use crate::ai::http::AiError;
use crate::platform::notify::AdminNotice;
use crate::platform::tenancy;
use crate::trace::{self, SpanKind};

impl AgentKernel {
    /// B: compose from the successful calls under strict grounding.
    pub(super) async fn compose_exhausted(
        &self,
        st: &mut RunState,
        caller: &ToolCaller,
    ) -> Option<String> {
        let digest = phrases::tool_digest(&st.calls);
        let messages = vec![
            ChatMessage::system(phrases::EXHAUSTED_TOOLS_SYSTEM),
            ChatMessage::user(format!(
                "Member's message:\n{}\n\nTool calls this turn:\n{digest}",
                caller.user_message
            )),
        ];
        self.compose(
            st,
            "recovery:tool_exhaustion",
            TOOL_EXHAUSTION_PURPOSE,
            TOOL_EXHAUSTION_TEMPERATURE,
            messages,
        )
        .await
    }

    /// C: compose from the last 6 transcript messages.
    pub(super) async fn compose_best_effort(&self, st: &mut RunState) -> Option<String> {
        let recent: Vec<&ChatMessage> = st
            .messages
            .iter()
            .filter(|m| !matches!(m, ChatMessage::System { .. }))
            .collect();
        let from = recent.len().saturating_sub(BEST_EFFORT_HISTORY_MESSAGES);
        let transcript = recent[from..]
            .iter()
            .map(|m| phrases::render_message(m))
            .collect::<Vec<_>>()
            .join("\n\n");
        let messages = vec![
            ChatMessage::system(phrases::BEST_EFFORT_SYSTEM),
            ChatMessage::user(format!("Conversation (latest messages):\n\n{transcript}")),
        ];
        self.compose(
            st,
            "recovery:best_effort",
            BEST_EFFORT_PURPOSE,
            BEST_EFFORT_TEMPERATURE,
            messages,
        )
        .await
    }

    /// One composer call (no retries: the next fallback is the retry). A
    /// failed call or a non-answer yields `None`.
    async fn compose(
        &self,
        st: &mut RunState,
        span_name: &str,
        purpose: &str,
        temperature: f64,
        messages: Vec<ChatMessage>,
    ) -> Option<String> {
        let mut request = ChatRequest::new(self.settings.planner_model.clone(), messages);
        request.temperature = Some(temperature);
        request.max_tokens = Some(self.settings.max_tokens);
        request.reasoning_effort = self.settings.reasoning_effort;
        st.llm_calls += 1;
        let tools_ran = st.tools_attempted;
        trace::span(
            span_name,
            SpanKind::General,
            json!({"purpose": purpose}),
            async {
                match self.llm.chat(purpose, &request).await {
                    Ok(resp) if classify_non_answer(&resp.text, tools_ran).is_none() => {
                        trace::set_span_output(json!({"text": resp.text}));
                        Some(resp.text)
                    }
                    Ok(resp) => {
                        trace::set_span_output(json!({"non_answer": resp.text}));
                        None
                    }
                    Err(e) => {
                        tracing::warn!(purpose, error = %e, "recovery composer failed");
                        None
                    }
                }
            },
        )
        .await
    }

    /// All attempts failed: notify the tenant's admins (with the trace id)
    /// and answer with the canned retryable failure.
    pub(super) async fn llm_failed(&self, mut st: RunState, error: AiError) -> AgentRun {
        if matches!(error, AiError::NotConfigured) {
            return finish(
                st,
                phrases::NOT_CONFIGURED_REPLY.into(),
                false,
                AgentOutcome::NotConfigured,
            );
        }
        let trace_id = trace::current_trace_id();
        let tenant = tenancy::current_tenant_id().ok();
        tracing::error!(error = %error, ?trace_id, ?tenant, "agent LLM calls exhausted");
        self.admin_sink
            .notify(AdminNotice {
                kind: "agent.llm_unavailable".into(),
                title: "The assistant could not reach its language model".into(),
                body: format!(
                    "Every attempt of an agent turn failed ({error}). Tenant: {}. Trace: {}.",
                    tenant.map(|t| t.to_string()).unwrap_or_else(|| "-".into()),
                    trace_id
                        .map(|t| t.to_string())
                        .unwrap_or_else(|| "-".into()),
                ),
            })
            .await;
        st.last_batch_failures.clear();
        finish(
            st,
            phrases::LLM_UNAVAILABLE_REPLY.into(),
            false,
            AgentOutcome::LlmUnavailable,
        )
    }
}
