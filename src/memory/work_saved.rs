//! `conversation-work-saved` (§6, §13): per exchange on a live tenant, the
//! model estimates the minutes of human work the reply saved (0–480) and
//! its confidence (0–1); the answer is clamped into those ranges and
//! upserted on `(tenant_id, exchange_key)`, so a rerun replaces the
//! estimate instead of adding one. Dev shadows are never estimated: their
//! traffic is the admin testing, not members being helped.
//!
//! The job reads the exchange from `conversation_logs` (its two rows share
//! the `exchange_key`); a reply not yet logged (email logs it once the
//! provider accepted the send) is retried, an unparsable answer too.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;
use storage::{
    ConversationLog, ConversationWorkSaved, Direction, EnqueueMode, Environment, RedbStore, Scan,
    StorageResult, Store, key,
};
use uuid::Uuid;

use crate::ai::chat::{ChatClient, ChatOptions, JsonSchema, ModelRole};
use crate::platform::clock::Clock;
use crate::platform::tenancy;
use crate::prompts::platform::keys as platform_keys;
use crate::prompts::{PromptVars, Prompts};
use crate::queue::job::{JobOptions, QueuePayload, TypedJobHandler};
use crate::queue::registry;
use crate::queue::{HandlerResult, JobContext, JobError, Queues};

/// The `llm:<purpose>` of the estimate (model `LLM_MODEL_WORK_SAVED`).
pub const WORK_SAVED_PURPOSE: &str = "conversation.work-saved";

/// The job runs this long after the exchange: its reply row is logged by
/// then on every channel (email logs it after the send).
pub const WORK_SAVED_DELAY: Duration = Duration::from_secs(30);

/// §2.4 `estimated_minutes` CHECK (0–480).
pub const WORK_SAVED_MAX_MINUTES: i32 = 480;

/// Each side of the exchange is cut to this many characters in the input.
pub const WORK_SAVED_MAX_TEXT_CHARS: usize = 6_000;

/// One exchange to estimate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkSavedJob {
    /// The exchange's `conversation_logs.exchange_key`.
    pub exchange_key: String,
}

impl QueuePayload for WorkSavedJob {
    const QUEUE: &'static str = registry::CONVERSATION_WORK_SAVED;
}

/// The job id of an exchange (one estimate job per exchange).
pub fn job_id(tenant: Uuid, exchange_key: &str) -> String {
    format!("{tenant}:{exchange_key}")
}

/// Queue the exchange's estimate [`WORK_SAVED_DELAY`] from now.
pub async fn enqueue(queues: &Queues, tenant: Uuid, exchange_key: &str) -> StorageResult<()> {
    queues
        .enqueue_job(
            &WorkSavedJob {
                exchange_key: exchange_key.to_string(),
            },
            JobOptions {
                id: Some(job_id(tenant, exchange_key)),
                tenant_id: Some(tenant),
                delay_ms: WORK_SAVED_DELAY.as_millis() as u64,
                mode: EnqueueMode::Dedupe,
            },
        )
        .await?;
    Ok(())
}

/// The model's answer, before clamping.
#[derive(Debug, Deserialize)]
struct WorkSavedAnswer {
    estimated_minutes: f64,
    confidence: f64,
    rationale: String,
}

fn schema() -> JsonSchema {
    JsonSchema::new(
        "conversation_work_saved",
        json!({
            "type": "object",
            "properties": {
                "estimated_minutes": {"type": "number"},
                "confidence": {"type": "number"},
                "rationale": {"type": "string"},
            },
            "required": ["estimated_minutes", "confidence", "rationale"],
            "additionalProperties": false,
        }),
    )
}

/// An estimate inside the §2.4 ranges.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// Whole minutes, 0–480.
    pub minutes: i32,
    /// 0–1.
    pub confidence: f64,
}

impl Estimate {
    /// Round and clamp a model's numbers into the column ranges (a value
    /// out of range is the model overshooting, not a reason to fail).
    pub fn clamped(minutes: f64, confidence: f64) -> Estimate {
        Estimate {
            minutes: minutes
                .round()
                .clamp(0.0, f64::from(WORK_SAVED_MAX_MINUTES)) as i32,
            confidence: confidence.clamp(0.0, 1.0),
        }
    }
}

/// The estimate's user message: the member's message and the reply.
pub fn exchange_input(inbound: &ConversationLog, outbound: &ConversationLog) -> String {
    let cut = |r: &ConversationLog| -> String {
        r.message_text
            .as_deref()
            .unwrap_or("")
            .trim()
            .chars()
            .take(WORK_SAVED_MAX_TEXT_CHARS)
            .collect()
    };
    format!(
        "CHANNEL: {}\n\nMEMBER MESSAGE:\n{}\n\nASSISTANT REPLY:\n{}",
        inbound.channel,
        cut(inbound),
        cut(outbound)
    )
}

/// The `conversation-work-saved` handler.
#[derive(Clone)]
pub struct WorkSavedEstimator {
    store: RedbStore,
    llm: ChatClient,
    prompts: Prompts,
    clock: Arc<dyn Clock>,
}

impl WorkSavedEstimator {
    /// A handler over the app's store, LLM client, prompts and clock.
    pub fn new(store: RedbStore, llm: ChatClient, prompts: Prompts, clock: Arc<dyn Clock>) -> Self {
        WorkSavedEstimator {
            store,
            llm,
            prompts,
            clock,
        }
    }
}

#[async_trait]
impl TypedJobHandler for WorkSavedEstimator {
    type Payload = WorkSavedJob;

    async fn run(&self, p: WorkSavedJob, _ctx: &mut JobContext) -> HandlerResult {
        let ctx = tenancy::current().ok_or_else(|| {
            JobError::Permanent("a conversation-work-saved job needs a tenant".into())
        })?;
        if ctx.tenant.environment != Environment::Live {
            tracing::debug!("work-saved is estimated for live tenants only");
            return Ok(Some(json!({"skipped": "not a live tenant"})));
        }
        let tenant = ctx.id();
        let retry = |e: &dyn std::fmt::Display| JobError::Retry(e.to_string());
        let rows: Vec<ConversationLog> = self
            .store
            .scan(
                Some(tenant),
                Scan::index(
                    ConversationLog::EXCHANGE_KEY_IDX,
                    key().str(&p.exchange_key),
                ),
            )
            .await
            .map_err(|e| retry(&e))?;
        let side = |d: Direction| rows.iter().find(|r| r.direction == d);
        let Some(inbound) = side(Direction::Inbound) else {
            tracing::debug!(exchange = %p.exchange_key, "no logged exchange to estimate");
            return Ok(Some(json!({"skipped": "no exchange"})));
        };
        let Some(outbound) = side(Direction::Outbound) else {
            return Err(JobError::Retry(
                "the exchange's reply is not logged yet".into(),
            ));
        };
        let system = self
            .prompts
            .render(
                platform_keys::CONVERSATION_WORK_SAVED_SYSTEM,
                &PromptVars::new(),
            )
            .await
            .map_err(|e| retry(&e))?;
        let answer = self
            .llm
            .chat_json::<WorkSavedAnswer>(
                WORK_SAVED_PURPOSE,
                &system,
                &exchange_input(inbound, outbound),
                &schema(),
                &ChatOptions {
                    role: Some(ModelRole::WorkSaved),
                    ..ChatOptions::default()
                },
            )
            .await
            .map_err(|e| JobError::Retry(format!("work-saved estimate failed: {e}")))?;
        let estimate = Estimate::clamped(answer.estimated_minutes, answer.confidence);
        let rationale = Some(answer.rationale.trim().to_string()).filter(|r| !r.is_empty());
        let row = ConversationWorkSaved {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            exchange_key: p.exchange_key.clone(),
            principal_id: inbound.principal_id,
            estimated_minutes: estimate.minutes,
            confidence: estimate.confidence,
            rationale,
            model: self.llm.model(ModelRole::WorkSaved).map(str::to_string),
            created_at: self.clock.now(),
        };
        let exchange_key = p.exchange_key.clone();
        self.store
            .transact(move |tx| {
                let existing: Vec<ConversationWorkSaved> = tx.scan(
                    Some(tenant),
                    Scan::index(
                        ConversationWorkSaved::EXCHANGE_KEY,
                        key().str(&exchange_key),
                    ),
                )?;
                match existing.into_iter().next() {
                    Some(old) => tx.update(&ConversationWorkSaved {
                        id: old.id,
                        created_at: old.created_at,
                        ..row
                    }),
                    None => tx.insert(&row),
                }
            })
            .await
            .map_err(|e| retry(&e))?;
        Ok(Some(json!({
            "estimated_minutes": estimate.minutes,
            "confidence": estimate.confidence,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::Channel;

    #[test]
    fn estimates_are_rounded_and_clamped_into_the_column_ranges() {
        assert_eq!(
            Estimate::clamped(12.6, 0.8),
            Estimate {
                minutes: 13,
                confidence: 0.8
            }
        );
        assert_eq!(
            Estimate::clamped(900.0, 1.7),
            Estimate {
                minutes: 480,
                confidence: 1.0
            }
        );
        assert_eq!(
            Estimate::clamped(-4.0, -0.2),
            Estimate {
                minutes: 0,
                confidence: 0.0
            }
        );
    }

    #[test]
    fn the_input_holds_the_channel_the_message_and_the_reply() {
        let mut inbound = ConversationLog::new(Uuid::nil(), Channel::Web, Direction::Inbound);
        inbound.message_text = Some(" How do I export my data? ".into());
        let mut outbound = ConversationLog::new(Uuid::nil(), Channel::Web, Direction::Outbound);
        outbound.message_text = Some("x".repeat(WORK_SAVED_MAX_TEXT_CHARS + 9));
        let input = exchange_input(&inbound, &outbound);
        assert!(
            input.starts_with(
                "CHANNEL: web\n\nMEMBER MESSAGE:\nHow do I export my data?\n\nASSISTANT REPLY:\nxxx"
            ),
            "{input}"
        );
        assert_eq!(
            input.rsplit('\n').next().unwrap().len(),
            WORK_SAVED_MAX_TEXT_CHARS
        );
    }
}
