//! The action-alerts evaluator (§4.6), a post-batch hook: after every tool
//! batch, the tenant's active `root_action_alerts` whose
//! `watch_tool_names` meet the batch's successful tool names (or hold `*`)
//! each get an LLM judge (purpose `action-alerts.evaluate`) against their
//! instruction; a match DMs the recipient (`channels::private_dm`) and
//! inserts a `root_action_alert_triggers` row saying whether it arrived.
//! The kernel runs hooks outside the requester's usage collection and
//! skips them in replay.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{
    Principal, RedbStore, RootActionAlert, RootActionAlertTrigger, Scan, Store, TenantStore, key,
};
use uuid::Uuid;

use super::private_dm::{PrivateDm, Recipient};
use crate::agent::{BatchReport, ExecutedToolCall, PostBatchHook};
use crate::ai::chat::{ChatClient, ChatOptions, JsonSchema};
use crate::platform::clock::Clock;
use crate::prompts::Prompts;
use crate::prompts::platform::keys::ACTION_ALERTS_EVALUATE_SYSTEM;
use crate::prompts::render::PromptVars;
use crate::tools::core::alerts::{ALERT_ACTIVE, WATCH_ANY_TOOL};

/// `llm:<purpose>` of the judge's call (§4.6).
pub const EVALUATE_PURPOSE: &str = "action-alerts.evaluate";
/// A tool result is cut to this many characters for the judge.
pub const RESULT_CHARS_FOR_JUDGE: usize = 4_000;

/// The judge's answer.
#[derive(Debug, Deserialize)]
struct Judgement {
    matches: bool,
    #[serde(default)]
    reasoning: String,
    #[serde(default)]
    message: String,
}

fn judgement_schema() -> JsonSchema {
    JsonSchema::new(
        "action_alert_evaluation",
        json!({
            "type": "object",
            "properties": {
                "matches": {"type": "boolean"},
                "reasoning": {"type": "string"},
                "message": {"type": "string"},
            },
            "required": ["matches", "reasoning", "message"],
            "additionalProperties": false,
        }),
    )
}

/// Evaluates action alerts after each batch.
pub struct ActionAlertHook {
    store: RedbStore,
    llm: ChatClient,
    prompts: Prompts,
    dm: PrivateDm,
    clock: Arc<dyn Clock>,
}

impl ActionAlertHook {
    /// A hook judging with `llm` and delivering through `dm`.
    pub fn new(
        store: RedbStore,
        llm: ChatClient,
        prompts: Prompts,
        dm: PrivateDm,
        clock: Arc<dyn Clock>,
    ) -> Self {
        ActionAlertHook {
            store,
            llm,
            prompts,
            dm,
            clock,
        }
    }

    /// Ask the judge about one alert; `None` when the judge failed.
    async fn judge(
        &self,
        alert: &RootActionAlert,
        calls: &[&ExecutedToolCall],
    ) -> Option<Judgement> {
        let system = self
            .prompts
            .render(ACTION_ALERTS_EVALUATE_SYSTEM, &PromptVars::new())
            .await
            .ok()?;
        let user = judge_input(alert, calls);
        match self
            .llm
            .chat_json::<Judgement>(
                EVALUATE_PURPOSE,
                &system,
                &user,
                &judgement_schema(),
                &ChatOptions::default(),
            )
            .await
        {
            Ok(j) => Some(j),
            Err(e) => {
                tracing::warn!(alert = %alert.id, error = %e, "action alert judge failed; not triggered");
                None
            }
        }
    }

    /// Who the alert notifies: `notify_slack_id`, else its member.
    async fn recipient(&self, alert: &RootActionAlert) -> anyhow::Result<Recipient> {
        let member: Option<Principal> = self
            .store
            .get(Some(alert.tenant_id), key().uuid(alert.member_id))
            .await?;
        let (slack, email) = member.map_or((None, None), |m| (m.slack_user_id, m.email));
        Ok(match &alert.notify_slack_id {
            // Someone else's Slack id (an admin's alert): no email fallback
            // to the member who set it up.
            Some(id) if slack.as_deref() != Some(id.as_str()) => Recipient {
                slack_user_id: Some(id.clone()),
                email: None,
            },
            _ => Recipient {
                slack_user_id: slack.or_else(|| alert.notify_slack_id.clone()),
                email,
            },
        })
    }
}

/// The judge's user message: the instruction and the watched calls.
fn judge_input(alert: &RootActionAlert, calls: &[&ExecutedToolCall]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|c| {
            let mut result = c
                .result
                .data
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default();
            if result.len() > RESULT_CHARS_FOR_JUDGE {
                let mut cut = RESULT_CHARS_FOR_JUDGE;
                while !result.is_char_boundary(cut) {
                    cut -= 1;
                }
                result.truncate(cut);
                result.push('…');
            }
            json!({"tool": c.name, "arguments": c.args, "result": result})
        })
        .collect();
    format!(
        "Alert instruction:\n{}\n\nTool calls that just succeeded:\n{}",
        alert.instruction,
        serde_json::to_string_pretty(&calls).unwrap_or_default()
    )
}

/// Alerts whose watch list meets `names` (or watches everything).
pub fn watching<'a>(
    alerts: &'a [RootActionAlert],
    names: &std::collections::BTreeSet<&str>,
) -> Vec<&'a RootActionAlert> {
    alerts
        .iter()
        .filter(|a| {
            a.watch_tool_names
                .iter()
                .any(|w| w == WATCH_ANY_TOOL || names.contains(w.as_str()))
        })
        .collect()
}

#[async_trait]
impl PostBatchHook for ActionAlertHook {
    fn name(&self) -> &'static str {
        "action-alerts"
    }

    async fn after_batch(&self, batch: &BatchReport) -> anyhow::Result<()> {
        let names = batch.successful_tool_names();
        if names.is_empty() {
            return Ok(());
        }
        let alerts: Vec<RootActionAlert> = self
            .store
            .scan(
                Some(batch.tenant_id),
                Scan::index(RootActionAlert::STATUS_IDX, key().str(ALERT_ACTIVE)),
            )
            .await?;
        let watched = watching(&alerts, &names);
        if watched.is_empty() {
            return Ok(());
        }
        let Some(tenant) = self.store.tenant_by_id(batch.tenant_id).await? else {
            return Ok(());
        };
        for alert in watched {
            let calls: Vec<&ExecutedToolCall> = batch
                .calls
                .iter()
                .filter(|c| c.result.success)
                .filter(|c| {
                    alert
                        .watch_tool_names
                        .iter()
                        .any(|w| w == WATCH_ANY_TOOL || *w == c.name)
                })
                .collect();
            let Some(judgement) = self.judge(alert, &calls).await else {
                continue;
            };
            tracing::debug!(alert = %alert.id, matches = judgement.matches, reasoning = %judgement.reasoning, "action alert judged");
            if !judgement.matches {
                continue;
            }
            let message = if judgement.message.trim().is_empty() {
                format!("Your alert fired: {}", alert.instruction)
            } else {
                judgement.message.trim().to_string()
            };
            let recipient = self.recipient(alert).await?;
            let subject = format!("Alert from {}", tenant.agent_name);
            let delivered = match self.dm.send(&tenant, &recipient, &subject, &message).await {
                Ok(_) => true,
                Err(reason) => {
                    tracing::warn!(alert = %alert.id, reason = %reason, "action alert matched but was not delivered");
                    false
                }
            };
            // Each watched tool once, whatever the batch's call order.
            let matched: Vec<String> = calls
                .iter()
                .map(|c| c.name.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(str::to_string)
                .collect();
            self.store
                .insert(RootActionAlertTrigger {
                    id: Uuid::new_v4(),
                    tenant_id: alert.tenant_id,
                    alert_id: alert.id,
                    matched_tools: matched,
                    delivered,
                    run_id: Some(batch.run_id),
                    created_at: self.clock.now(),
                })
                .await?;
            tracing::info!(alert = %alert.id, delivered, "action alert triggered");
        }
        Ok(())
    }
}
