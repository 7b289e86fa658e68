//! Capability-gap detection (§4.6): after `runAgent`, in the channel
//! handler and off the reply's path, an LLM classification (purpose
//! `agent.capability-gap-assessment`, default model, temperature 0,
//! reasoning effort low) decides whether the member asked for something
//! Root has no tool for. On detection: a `missing_tool` human intervention
//! (its sinks notify the admins), an admin notice, and a `capability_gap`
//! feedback score on the run's trace. A successful escalation still counts
//! as a gap when a direct tool should have existed.
//!
//! Only turns with a gap signal are assessed — the run failed, a tool
//! failed, or the model escalated to a human — so an ordinary answered
//! question costs no extra model call (docs/decisions.md).

use serde::Deserialize;
use serde_json::json;
use storage::{Channel, HumanIntervention, InterventionCategory, InterventionStatus, Json, Store};
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::agent::ExecutedToolCall;
use crate::ai::chat::{ChatOptions, JsonSchema, ReasoningEffort};
use crate::platform::notify::AdminNotice;
use crate::platform::tenancy::{self, TenantContext};
use crate::platform::tool_names::{ESCALATE_TO_ADMIN, REQUEST_HUMAN_INTERVENTION};
use crate::prompts::Prompts;
use crate::prompts::platform::keys::CAPABILITY_GAP_ASSESSMENT_SYSTEM;
use crate::prompts::render::PromptVars;
use crate::tools::ToolServices;
use crate::trace::Tracer;

/// `llm:<purpose>` of the classification (§4.6).
pub const GAP_PURPOSE: &str = "agent.capability-gap-assessment";
/// The trace feedback score's name (§4.6).
pub const GAP_SCORE: &str = "capability_gap";
/// Below this confidence a "requires a new tool" answer is not acted on.
pub const GAP_MIN_CONFIDENCE: f64 = 0.6;

/// The classification's answer (§4.6, every field).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct GapAssessment {
    pub requires_new_tool: bool,
    pub requested_capability_summary: String,
    pub reasoning: String,
    pub confidence: f64,
    pub suggested_tool_name: Option<String>,
    pub implementation_notes: Option<String>,
}

fn schema() -> JsonSchema {
    JsonSchema::new(
        "capability_gap_assessment",
        json!({
            "type": "object",
            "properties": {
                "requires_new_tool": {"type": "boolean"},
                "requested_capability_summary": {"type": "string"},
                "reasoning": {"type": "string"},
                "confidence": {"type": "number"},
                "suggested_tool_name": {"type": ["string", "null"]},
                "implementation_notes": {"type": ["string", "null"]},
            },
            "required": ["requires_new_tool", "requested_capability_summary", "reasoning",
                         "confidence", "suggested_tool_name", "implementation_notes"],
            "additionalProperties": false,
        }),
    )
}

/// Does this run show a possible gap (worth one classification)?
pub fn gap_signal(success: bool, calls: &[ExecutedToolCall]) -> bool {
    !success
        || calls.iter().any(|c| {
            !c.result.success || c.name == ESCALATE_TO_ADMIN || c.name == REQUEST_HUMAN_INTERVENTION
        })
}

/// One finished turn, as the classification sees it.
#[derive(Clone, Debug)]
pub struct GapInput {
    pub tenant: TenantContext,
    pub channel: Channel,
    pub principal_id: Option<Uuid>,
    pub principal_ref: String,
    pub message: String,
    pub reply: String,
    pub success: bool,
    /// `(tool, succeeded, error)` of every call.
    pub calls: Vec<(String, bool, Option<String>)>,
    pub offered_tools: Vec<String>,
    pub trace_id: Option<Uuid>,
}

/// Runs assessments on their own tasks. Cheap to clone.
#[derive(Clone)]
pub struct CapabilityGaps {
    tools: ToolServices,
    prompts: Prompts,
    tracer: Tracer,
    tasks: TaskTracker,
}

impl CapabilityGaps {
    /// A detector writing interventions through `tools`.
    pub fn new(tools: ToolServices, prompts: Prompts, tracer: Tracer) -> Self {
        CapabilityGaps {
            tools,
            prompts,
            tracer,
            tasks: TaskTracker::new(),
        }
    }

    /// Assess `input` on its own task (the reply does not wait).
    pub fn spawn(&self, input: GapInput) {
        let this = self.clone();
        let ctx = input.tenant.clone();
        self.tasks.spawn(tenancy::scope(ctx, async move {
            if let Err(e) = this.assess(input).await {
                tracing::warn!(error = %e, "capability-gap assessment failed");
            }
        }));
    }

    /// Wait for running assessments (tests, shutdown).
    pub async fn idle(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }

    /// Classify one turn; the intervention when a gap was found.
    pub async fn assess(&self, input: GapInput) -> anyhow::Result<Option<HumanIntervention>> {
        let system = self
            .prompts
            .render(CAPABILITY_GAP_ASSESSMENT_SYSTEM, &PromptVars::new())
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let calls: Vec<_> = input
            .calls
            .iter()
            .map(|(name, ok, error)| json!({"tool": name, "success": ok, "error": error}))
            .collect();
        let user = format!(
            "Member's message:\n{}\n\nAssistant's reply:\n{}\n\nRun succeeded: {}\nTool calls:\n{}\n\nTools available to the assistant:\n{}",
            input.message,
            input.reply,
            input.success,
            serde_json::to_string_pretty(&calls).unwrap_or_default(),
            input.offered_tools.join(", ")
        );
        let opts = ChatOptions {
            temperature: Some(0.0),
            reasoning_effort: Some(ReasoningEffort::Low),
            ..ChatOptions::default()
        };
        let a: GapAssessment = self
            .tools
            .llm
            .chat_json(GAP_PURPOSE, &system, &user, &schema(), &opts)
            .await?;
        let detected = a.requires_new_tool && a.confidence >= GAP_MIN_CONFIDENCE;
        if let Some(trace) = input.trace_id {
            let score = if detected {
                a.confidence.clamp(0.0, 1.0)
            } else {
                0.0
            };
            self.tracer
                .add_feedback_score(input.tenant.id(), trace, GAP_SCORE, score);
        }
        if !detected {
            return Ok(None);
        }
        Ok(Some(self.open(&input, &a).await?))
    }

    async fn open(&self, input: &GapInput, a: &GapAssessment) -> anyhow::Result<HumanIntervention> {
        let now = self.tools.clock.now();
        let summary: String = a
            .requested_capability_summary
            .trim()
            .chars()
            .take(120)
            .collect();
        let mut details = format!("{}\n\nMember asked: {}", a.reasoning.trim(), input.message);
        if let Some(t) = a
            .suggested_tool_name
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        {
            details.push_str(&format!("\nSuggested tool: {t}"));
        }
        if let Some(n) = a
            .implementation_notes
            .as_deref()
            .filter(|n| !n.trim().is_empty())
        {
            details.push_str(&format!("\nImplementation notes: {n}"));
        }
        let row = HumanIntervention {
            id: Uuid::new_v4(),
            tenant_id: input.tenant.id(),
            principal_id: input.principal_id,
            channel: input.channel,
            category: InterventionCategory::MissingTool,
            status: InterventionStatus::Open,
            title: format!("Missing capability: {summary}"),
            details: Some(details),
            metadata: Json(json!({
                "source": "capability_gap_assessment",
                "principal_ref": input.principal_ref,
                "confidence": a.confidence,
                "suggested_tool_name": a.suggested_tool_name,
                "trace_id": input.trace_id,
            })),
            created_at: now,
            updated_at: now,
        };
        let row = self.tools.store.insert(row).await?;
        self.tools.interventions.dispatch(&row);
        self.tools
            .sinks
            .notify(AdminNotice {
                kind: "intervention.missing_tool".into(),
                title: format!(
                    "New missing_tool intervention {} in tenant {}",
                    row.id, row.tenant_id
                ),
                body: row.title.clone(),
            })
            .await;
        tracing::info!(intervention = %row.id, confidence = a.confidence, "capability gap detected");
        Ok(row)
    }
}

impl std::fmt::Debug for CapabilityGaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapabilityGaps").finish()
    }
}

/// The input of `run`'s turn.
pub fn calls_of(calls: &[ExecutedToolCall]) -> Vec<(String, bool, Option<String>)> {
    calls
        .iter()
        .map(|c| (c.name.clone(), c.result.success, c.result.error.clone()))
        .collect()
}
