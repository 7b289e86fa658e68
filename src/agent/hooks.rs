//! Post-batch hooks (§4.6): work that follows every tool batch without
//! delaying the reply. The kernel spawns each hook on a task tracker, inside
//! the run's tenant and outside the requester's usage collection, and skips
//! them entirely in replay mode. A hook's failure is logged, never
//! propagated. The action-alerts evaluator plugs in through the same trait.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use storage::{
    RedbStore, ReplySourceUsage, Scan, SourceUsageType, StorageError, StorageResult, key,
};
use uuid::Uuid;

use super::constants::REPLY_SOURCE_USAGE_CAP;
use super::tool::{ExecutedToolCall, ToolCaller};
use crate::platform::clock::Clock;
use crate::platform::tool_names as names;

/// What a hook learns about one finished batch.
#[derive(Clone, Debug)]
pub struct BatchReport {
    /// The tenant the run belongs to.
    pub tenant_id: Uuid,
    /// Per-run UUID (also the `reply_source_usage.run_id`).
    pub run_id: Uuid,
    /// Who asked, and where.
    pub caller: ToolCaller,
    /// The batch's calls with their full results, in the model's order.
    pub calls: Vec<ExecutedToolCall>,
}

impl BatchReport {
    /// Names of the calls that succeeded (action alerts watch these).
    pub fn successful_tool_names(&self) -> BTreeSet<&str> {
        self.calls
            .iter()
            .filter(|c| c.result.success)
            .map(|c| c.name.as_str())
            .collect()
    }
}

/// Something that runs after every tool batch.
#[async_trait]
pub trait PostBatchHook: Send + Sync {
    /// Name for logs.
    fn name(&self) -> &'static str;
    /// Handle one batch. Errors are logged by the kernel.
    async fn after_batch(&self, batch: &BatchReport) -> anyhow::Result<()>;
}

/// The reply-source-usage hook: records which sources a run consulted — refs
/// only (`channel_id:message_ts`, page slug), never reply content or
/// participants (§2.4 privacy rule).
pub struct ReplySourceUsageHook {
    store: RedbStore,
    clock: Arc<dyn Clock>,
}

impl ReplySourceUsageHook {
    /// A hook writing through `store`.
    pub fn new(store: RedbStore, clock: Arc<dyn Clock>) -> Self {
        ReplySourceUsageHook { store, clock }
    }
}

/// Source refs found in a batch's successful results, in order, deduplicated.
pub fn extract_source_refs(calls: &[ExecutedToolCall]) -> Vec<(SourceUsageType, String)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut push = |kind: SourceUsageType, r: String| {
        if !r.is_empty() && seen.insert((kind.as_str(), r.clone())) {
            out.push((kind, r));
        }
    };
    for call in calls.iter().filter(|c| c.result.success) {
        let Some(data) = call.result.data.as_ref() else {
            continue;
        };
        match call.name.as_str() {
            names::SEARCH_SLACK_MESSAGES => {
                for m in list(data, &["matches", "results", "messages"]) {
                    let channel = m.get("channel_id").and_then(Value::as_str);
                    let ts = m
                        .get("message_ts")
                        .or_else(|| m.get("ts"))
                        .and_then(Value::as_str);
                    match (channel, ts) {
                        (Some(c), Some(t)) => {
                            push(SourceUsageType::SlackMessage, format!("{c}:{t}"))
                        }
                        _ => {
                            if let Some(r) = m
                                .get("permalink")
                                .and_then(Value::as_str)
                                .and_then(slack_ref_from_permalink)
                            {
                                push(SourceUsageType::SlackMessage, r);
                            }
                        }
                    }
                }
            }
            names::WHO_KNOWS => {
                for expert in list(data, &["experts", "results", "people"]) {
                    for ev in list(expert, &["evidence"]) {
                        if let Some(r) = ev
                            .get("permalink")
                            .and_then(Value::as_str)
                            .and_then(slack_ref_from_permalink)
                        {
                            push(SourceUsageType::SlackMessage, r);
                        }
                    }
                }
            }
            names::SEARCH_KNOWLEDGE_BASE => {
                for s in list(data, &["results", "sources"]) {
                    let slug = s
                        .get("slug")
                        .and_then(Value::as_str)
                        .or_else(|| s.get("public_id").and_then(Value::as_str));
                    if let Some(slug) = slug {
                        push(SourceUsageType::KnowledgePage, slug.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The first array found under one of `keys` (or `data` itself when it is
/// an array).
fn list<'a>(data: &'a Value, keys: &[&str]) -> &'a [Value] {
    if let Some(a) = data.as_array() {
        return a;
    }
    keys.iter()
        .find_map(|k| data.get(*k).and_then(Value::as_array))
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `https://team.slack.com/archives/C123/p1700000000123456` →
/// `C123:1700000000.123456` (the thread_ts query is ignored: the ref is
/// the message itself).
pub fn slack_ref_from_permalink(url: &str) -> Option<String> {
    let path = url.split(['?', '#']).next()?;
    let mut parts = path.rsplit('/');
    let p = parts.next()?;
    let channel = parts.next()?;
    if parts.next()? != "archives" {
        return None;
    }
    let digits = p.strip_prefix('p')?;
    if digits.len() <= 6 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (secs, micros) = digits.split_at(digits.len() - 6);
    Some(format!("{channel}:{secs}.{micros}"))
}

#[async_trait]
impl PostBatchHook for ReplySourceUsageHook {
    fn name(&self) -> &'static str {
        "reply_source_usage"
    }

    async fn after_batch(&self, batch: &BatchReport) -> anyhow::Result<()> {
        let refs = extract_source_refs(&batch.calls);
        if refs.is_empty() {
            return Ok(());
        }
        let tenant = batch.tenant_id;
        let run_id = batch.run_id;
        let now = self.clock.now();
        // One transaction: count what this run already stored (cap 200),
        // then insert the new refs; a ref seen in an earlier batch of the
        // run hits the unique key and is skipped (upsert by key). Relaxed
        // durability: analytics rows never cost the turn an fsync.
        let (written, _) = self
            .store
            .transact_relaxed(move |tx| -> StorageResult<usize> {
                let stored = tx
                    .scan::<ReplySourceUsage>(
                        Some(tenant),
                        Scan::index(ReplySourceUsage::RUN_SOURCE_KEY, key().uuid(run_id))
                            .limit(REPLY_SOURCE_USAGE_CAP),
                    )?
                    .len();
                let mut written = 0;
                for (source_type, source_ref) in refs {
                    if stored + written >= REPLY_SOURCE_USAGE_CAP {
                        break;
                    }
                    let row = ReplySourceUsage {
                        id: Uuid::new_v4(),
                        tenant_id: tenant,
                        run_id,
                        source_type,
                        source_ref,
                        created_at: now,
                    };
                    match tx.insert(&row) {
                        Ok(()) => written += 1,
                        Err(StorageError::Conflict { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(written)
            })
            .await?;
        tracing::debug!(%run_id, written, "reply source usage recorded");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tool::ToolResult;
    use serde_json::json;

    fn call(name: &str, data: Value, success: bool) -> ExecutedToolCall {
        ExecutedToolCall {
            id: "c1".into(),
            name: name.into(),
            args: json!({}),
            result: ToolResult {
                success,
                data: Some(data),
                ..ToolResult::default()
            },
            round: 1,
            empty: false,
            truncated: false,
            duration_ms: 0,
        }
    }

    #[test]
    fn permalink_to_ref() {
        assert_eq!(
            slack_ref_from_permalink(
                "https://acme.slack.com/archives/C0123ABC/p1700000000123456?thread_ts=1699999999.000100"
            )
            .as_deref(),
            Some("C0123ABC:1700000000.123456")
        );
        assert_eq!(slack_ref_from_permalink("https://example.com/x/p1"), None);
        assert_eq!(slack_ref_from_permalink("not a url"), None);
    }

    #[test]
    fn refs_from_the_three_tools_only_from_successes() {
        let calls = vec![
            call(
                "search_slack_messages",
                json!({"matches": [
                    {"channel_id": "C1", "message_ts": "1.000001", "text": "secret content"},
                    {"channel_id": "C1", "message_ts": "1.000001"},
                    {"permalink": "https://a.slack.com/archives/C2/p1700000000000200"}
                ]}),
                true,
            ),
            call(
                "who_knows",
                json!({"experts": [{"user_id": "U1", "evidence": [
                    {"permalink": "https://a.slack.com/archives/C3/p1700000000000300", "excerpt": "x"}
                ]}]}),
                true,
            ),
            call(
                "search_knowledge_base",
                json!({"results": [{"slug": "parking"}, {"public_id": "kb_9"}]}),
                true,
            ),
            call(
                "search_knowledge_base",
                json!({"results": [{"slug": "failed-call"}]}),
                false,
            ),
            call("other_tool", json!({"results": [{"slug": "nope"}]}), true),
        ];
        let refs: Vec<(String, String)> = extract_source_refs(&calls)
            .into_iter()
            .map(|(t, r)| (t.as_str().to_string(), r))
            .collect();
        let want: Vec<(String, String)> = [
            ("slack_message", "C1:1.000001"),
            ("slack_message", "C2:1700000000.000200"),
            ("slack_message", "C3:1700000000.000300"),
            ("knowledge_page", "parking"),
            ("knowledge_page", "kb_9"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(refs, want);
    }
}
