//! `conversation-memory` (§6, §13): after an exchange, the member's new
//! `conversation_logs` rows and their current memory become the new memory
//! (a rolling LLM summary in `principals.conversation_memory`).
//!
//! "New" means after the later of the memory's watermark
//! (`conversation_memory_updated_at`: the `message_at` of the newest row the
//! memory covers) and `conversation_memory_reset_at`, so nothing before a
//! reset is ever summarised again and a second run over the same rows makes
//! no LLM call and changes nothing. The watermark is a message time, not
//! the job's: a row logged late with an earlier time than a later compaction
//! (an email reply logged after the provider accepted it) is still ahead of
//! the newest row the memory covers.
//!
//! The summary is written only whole: a failed or malformed answer records
//! `conversation_memory_last_error` and fails the job into the queue's
//! retries, and the write is a compare-and-set on the row the summary was
//! computed from (a reset or another compaction in between → retry).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;
use storage::{
    ConversationLog, Direction, EnqueueMode, Principal, RedbStore, Scan, StorageResult, Store, Ts,
    key,
};
use uuid::Uuid;

use crate::ai::chat::{ChatClient, ChatOptions, JsonSchema};
use crate::platform::clock::Clock;
use crate::platform::tenancy;
use crate::prompts::platform::keys as platform_keys;
use crate::prompts::{PromptVars, Prompts};
use crate::queue::job::{JobOptions, QueuePayload, TypedJobHandler};
use crate::queue::registry;
use crate::queue::{HandlerResult, JobContext, JobError, Queues};

/// The `llm:<purpose>` of the compaction call.
pub const MEMORY_PURPOSE: &str = "conversation.memory";

/// §13: the job runs 5 s after the exchange (a burst of messages coalesces
/// into one run).
pub const MEMORY_DELAY: Duration = Duration::from_secs(5);

/// At most this many new rows (the newest) go into one compaction; older
/// ones past a long silence are not worth a bigger prompt.
pub const MEMORY_MAX_NEW_LOGS: usize = 60;

/// Each message is cut to this many characters in the compaction input.
pub const MEMORY_MAX_MESSAGE_CHARS: usize = 2_000;

/// The stored memory is at most this many characters (cut at a line break).
pub const MEMORY_MAX_CHARS: usize = 4_000;

/// `conversation_memory_last_error` keeps at most this many characters.
pub const MEMORY_ERROR_MAX_CHARS: usize = 500;

/// One member's memory to bring up to date.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationMemoryJob {
    /// `principals.id` of the member.
    pub principal_id: Uuid,
}

impl QueuePayload for ConversationMemoryJob {
    const QUEUE: &'static str = registry::CONVERSATION_MEMORY;
}

/// The job id of a member: one per tenant and principal, so a burst of
/// exchanges is one job.
pub fn job_id(tenant: Uuid, principal: Uuid) -> String {
    format!("{tenant}:{principal}")
}

/// Queue the member's compaction [`MEMORY_DELAY`] from now. Coalescing: a
/// waiting job's timer restarts, and an exchange that ends while the job
/// runs gets exactly one more run after it.
pub async fn enqueue(queues: &Queues, tenant: Uuid, principal: Uuid) -> StorageResult<()> {
    queues
        .enqueue_job(
            &ConversationMemoryJob {
                principal_id: principal,
            },
            JobOptions {
                id: Some(job_id(tenant, principal)),
                tenant_id: Some(tenant),
                delay_ms: MEMORY_DELAY.as_millis() as u64,
                mode: EnqueueMode::Coalesce,
            },
        )
        .await?;
    Ok(())
}

/// The model's answer.
#[derive(Debug, Deserialize)]
struct MemoryAnswer {
    memory: String,
}

fn schema() -> JsonSchema {
    JsonSchema::new(
        "conversation_memory",
        json!({
            "type": "object",
            "properties": {"memory": {"type": "string"}},
            "required": ["memory"],
            "additionalProperties": false,
        }),
    )
}

/// The `conversation-memory` handler.
#[derive(Clone)]
pub struct MemoryCompaction {
    store: RedbStore,
    llm: ChatClient,
    prompts: Prompts,
    clock: Arc<dyn Clock>,
}

/// What the compare-and-set write found.
enum Write {
    Done { version: i32 },
    Gone,
    Changed,
}

impl MemoryCompaction {
    /// A handler over the app's store, LLM client, prompts and clock.
    pub fn new(store: RedbStore, llm: ChatClient, prompts: Prompts, clock: Arc<dyn Clock>) -> Self {
        MemoryCompaction {
            store,
            llm,
            prompts,
            clock,
        }
    }

    /// Record a failed attempt on the row (memory untouched).
    async fn record_failure(&self, tenant: Uuid, principal: Uuid, error: &str) {
        let now = self.clock.now();
        let error: String = error.chars().take(MEMORY_ERROR_MAX_CHARS).collect();
        let written = self
            .store
            .transact(move |tx| {
                let Some(mut row) = tx.get::<Principal>(Some(tenant), key().uuid(principal))?
                else {
                    return Ok(());
                };
                row.conversation_memory_last_attempted_at = Some(now);
                row.conversation_memory_last_error = Some(error);
                tx.update(&row)
            })
            .await;
        if let Err(e) = written {
            tracing::warn!(error = %e, "memory failure not recorded");
        }
    }
}

/// The later of the memory's watermark and its reset.
fn since(p: &Principal) -> Option<Ts> {
    p.conversation_memory_updated_at
        .max(p.conversation_memory_reset_at)
}

/// The member's rows after `since`, oldest first (at most the newest
/// [`MEMORY_MAX_NEW_LOGS`]); rows without text are left out.
async fn new_logs(
    store: &RedbStore,
    tenant: Uuid,
    principal: Uuid,
    since: Option<Ts>,
) -> StorageResult<Vec<ConversationLog>> {
    let from = since.map(|s| key().ts(s.plus_micros(1)));
    let mut rows: Vec<ConversationLog> = store
        .scan(
            Some(tenant),
            Scan::index(
                ConversationLog::PRINCIPAL_MESSAGE_AT_IDX,
                key().uuid(principal),
            )
            .between(from, None)
            .desc()
            .limit(MEMORY_MAX_NEW_LOGS),
        )
        .await?;
    rows.retain(|r| since.is_none_or(|s| r.message_at > s));
    // Oldest first; a question before its answer when both share a time.
    rows.sort_by_key(|r| (r.message_at, r.direction == Direction::Outbound));
    Ok(rows)
}

/// The compaction's user message: the current memory, then the new
/// messages oldest first, each with its time, author and channel.
pub fn compaction_input(memory: Option<&str>, logs: &[ConversationLog]) -> String {
    let memory = memory.map(str::trim).filter(|m| !m.is_empty());
    let mut out = format!(
        "CURRENT MEMORY:\n{}\n\nNEW MESSAGES (oldest first):",
        memory.unwrap_or("(empty)")
    );
    for row in logs {
        let text = row.message_text.as_deref().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let who = match row.direction {
            Direction::Inbound => "Member",
            Direction::Outbound => "Assistant",
        };
        let at = row.message_at.to_jiff().strftime("%Y-%m-%d %H:%M UTC");
        let text: String = text.chars().take(MEMORY_MAX_MESSAGE_CHARS).collect();
        out.push_str(&format!("\n[{at}] {who} ({}): {text}", row.channel));
    }
    out
}

/// The stored form of an answer: trimmed, `None` when blank, at most
/// [`MEMORY_MAX_CHARS`] (cut after the last whole line that fits).
pub fn stored_memory(answer: &str) -> Option<String> {
    let text = answer.trim();
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= MEMORY_MAX_CHARS {
        return Some(text.to_string());
    }
    let head: String = text.chars().take(MEMORY_MAX_CHARS).collect();
    let cut = match head.rfind('\n') {
        Some(i) if i > 0 => head[..i].trim_end().to_string(),
        _ => head,
    };
    Some(cut)
}

#[async_trait]
impl TypedJobHandler for MemoryCompaction {
    type Payload = ConversationMemoryJob;

    async fn run(&self, p: ConversationMemoryJob, _ctx: &mut JobContext) -> HandlerResult {
        let tenant = tenancy::current_tenant_id()
            .map_err(|_| JobError::Permanent("a conversation-memory job needs a tenant".into()))?;
        let retry = |e: &dyn std::fmt::Display| JobError::Retry(e.to_string());
        let principal: Option<Principal> = self
            .store
            .get(Some(tenant), key().uuid(p.principal_id))
            .await
            .map_err(|e| retry(&e))?;
        let Some(principal) = principal else {
            tracing::debug!(principal = %p.principal_id, "no principal row; no memory to keep");
            return Ok(Some(json!({"skipped": "no principal"})));
        };
        let since = since(&principal);
        let logs = new_logs(&self.store, tenant, principal.id, since)
            .await
            .map_err(|e| retry(&e))?;
        let Some(watermark) = logs.last().map(|r| r.message_at) else {
            return Ok(Some(json!({"new_logs": 0})));
        };
        let system = self
            .prompts
            .render(
                platform_keys::CONVERSATION_MEMORY_SYSTEM,
                &PromptVars::new(),
            )
            .await
            .map_err(|e| retry(&e))?;
        let input = compaction_input(principal.conversation_memory.as_deref(), &logs);
        let answer = self
            .llm
            .chat_json::<MemoryAnswer>(
                MEMORY_PURPOSE,
                &system,
                &input,
                &schema(),
                &ChatOptions::default(),
            )
            .await;
        let answer = match answer {
            Ok(a) => a,
            Err(e) => {
                let message = format!("memory compaction failed: {e}");
                self.record_failure(tenant, principal.id, &message).await;
                return Err(JobError::Retry(message));
            }
        };
        let memory = stored_memory(&answer.memory);
        let count = i32::try_from(logs.len()).unwrap_or(i32::MAX);
        let now = self.clock.now();
        let read = principal;
        let written = self
            .store
            .transact(move |tx| {
                let Some(mut row) = tx.get::<Principal>(Some(tenant), key().uuid(read.id))? else {
                    return Ok(Write::Gone);
                };
                let unchanged = row.conversation_memory_version == read.conversation_memory_version
                    && row.conversation_memory_updated_at == read.conversation_memory_updated_at
                    && row.conversation_memory_reset_at == read.conversation_memory_reset_at;
                if !unchanged {
                    return Ok(Write::Changed);
                }
                row.conversation_memory = memory;
                row.conversation_memory_updated_at = Some(watermark);
                row.conversation_memory_source_count =
                    row.conversation_memory_source_count.saturating_add(count);
                row.conversation_memory_version = row.conversation_memory_version.saturating_add(1);
                row.conversation_memory_last_attempted_at = Some(now);
                row.conversation_memory_last_error = None;
                tx.update(&row)?;
                Ok(Write::Done {
                    version: row.conversation_memory_version,
                })
            })
            .await
            .map_err(|e| retry(&e))?
            .0;
        match written {
            Write::Done { version } => Ok(Some(json!({"new_logs": count, "version": version}))),
            Write::Gone => {
                tracing::debug!(principal = %p.principal_id, "principal deleted while compacting");
                Ok(Some(json!({"skipped": "no principal"})))
            }
            Write::Changed => Err(JobError::Retry(
                "the memory changed while it was compacted (reset or another run); recomputing"
                    .into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::Channel;

    fn row(direction: Direction, text: &str, secs: i64) -> ConversationLog {
        let mut r = ConversationLog::new(Uuid::nil(), Channel::Slack, direction);
        r.message_text = Some(text.into());
        r.message_at = Ts::from_secs(secs);
        r
    }

    #[test]
    fn the_input_lists_the_memory_then_each_message_with_time_author_and_channel() {
        let input = compaction_input(
            Some("  - Works on the billing API  "),
            &[
                row(Direction::Inbound, "How do refunds work?", 1_773_781_500),
                row(Direction::Outbound, "  ", 1_773_781_501),
                row(Direction::Outbound, "Refunds take 5 days.", 1_773_781_560),
            ],
        );
        assert_eq!(
            input,
            "CURRENT MEMORY:\n- Works on the billing API\n\nNEW MESSAGES (oldest first):\n\
             [2026-03-17 21:05 UTC] Member (slack): How do refunds work?\n\
             [2026-03-17 21:06 UTC] Assistant (slack): Refunds take 5 days."
        );
        assert!(compaction_input(None, &[]).starts_with("CURRENT MEMORY:\n(empty)\n"));
    }

    #[test]
    fn long_messages_are_cut_in_the_input() {
        let long = "é".repeat(MEMORY_MAX_MESSAGE_CHARS + 50);
        let input = compaction_input(None, &[row(Direction::Inbound, &long, 0)]);
        let line = input.lines().last().unwrap();
        let text = line.split_once("): ").unwrap().1;
        assert_eq!(text.chars().count(), MEMORY_MAX_MESSAGE_CHARS);
    }

    #[test]
    fn the_stored_memory_is_trimmed_blank_is_none_and_long_is_cut_at_a_line() {
        assert_eq!(stored_memory("  - a\n- b \n"), Some("- a\n- b".into()));
        assert_eq!(stored_memory(" \n "), None);
        let line = format!("- {}\n", "x".repeat(97));
        let long = line.repeat(MEMORY_MAX_CHARS / 100 + 5);
        let cut = stored_memory(&long).unwrap();
        assert!(cut.chars().count() <= MEMORY_MAX_CHARS);
        assert!(cut.ends_with('x'), "whole lines only");
        assert_eq!(cut.lines().count(), MEMORY_MAX_CHARS / 100);
        let one_line = "y".repeat(MEMORY_MAX_CHARS + 10);
        assert_eq!(
            stored_memory(&one_line).unwrap().chars().count(),
            MEMORY_MAX_CHARS
        );
    }
}
