//! `slack-knowledge-extraction` (§13, §2.5): every hour, per tenant, the
//! good answers given in public Slack channels become knowledge pages their
//! authors own.
//!
//! The scheduler's tick (no tenant) fans out one job per active tenant
//! (`queue::fan_out`). A tenant's job has two phases:
//!
//! 1. **Propose.** Read the oldest un-extracted `processed_slack_messages`
//!    (the partial index `WHERE extraction_processed_at IS NULL`) from the
//!    tenant's watermark (`slack_extraction_state`) up to an hour ago, at
//!    most [`EXTRACTION_MAX_MESSAGES_PER_RUN`]. Threads stay together in
//!    batches the model reads whole; its proposals are stored as `pending`
//!    `slack_knowledge_extractions` **in the same transaction** that stamps
//!    the batch's messages extracted and moves the watermark to the first
//!    message not yet processed. A failed or malformed model answer writes
//!    nothing of its batch (the queue retries it); the batches before it
//!    stay done.
//! 2. **Review.** Every `pending` row (a crashed run's too) is judged
//!    automatically: below [`EXTRACTION_MIN_CONFIDENCE`] or naming no
//!    message → `rejected`; a knowledge page at least
//!    [`EXTRACTION_DUPLICATE_SIMILARITY`] similar → `duplicate`; else
//!    `approved`, and the entry becomes a private `knowledge_pages` row of
//!    source type `slack_extraction`, `extracted_knowledge_id` set, owned by
//!    the author of its main message (the principal identity resolve gives
//!    that Slack user, the owner the contribution tools check). The page's
//!    slug is derived from the extraction's id, so a review interrupted
//!    after the page write and run again rewrites the same page.
//!
//! Messages older than the watermark are never extracted: a first run
//! starts [`EXTRACTION_INITIAL_LOOKBACK_DAYS`] back, not at the start of a
//! backfilled history (docs/decisions.md).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;
use storage::{
    ExtractionStatus, IndexCorpus, ProcessedSlackMessage, RedbStore, Scan, SlackExtractionState,
    SlackKnowledgeExtraction, SlackMessageText, Store, TenantStatus, Ts, key,
};
use uuid::Uuid;

use crate::ai::chat::{ChatClient, ChatOptions, JsonSchema};
use crate::identity::Identity;
use crate::limits::caps::cut_chars;
use crate::platform::clock::Clock;
use crate::platform::tenancy;
use crate::prompts::platform::keys::SLACK_KNOWLEDGE_EXTRACTION_SYSTEM;
use crate::prompts::{PromptVars, Prompts};
use crate::queue::fan_out::fan_out;
use crate::queue::job::{SlackKnowledgeExtractionTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext, JobError, Queues};
use crate::retrieval::ingest::{SLACK_EXTRACTION_SOURCE_TYPE, entry_html, slugify};
use crate::retrieval::knowledge::KnowledgeQuery;
use crate::retrieval::{PageUpsert, Retrieval};

/// The `llm:<purpose>` of the proposal call.
pub const EXTRACTION_PURPOSE: &str = "slack.knowledge-extraction";
/// Messages one tenant's run reads at most (a backlog drains over hours).
pub const EXTRACTION_MAX_MESSAGES_PER_RUN: usize = 200;
/// Messages in one model call at most.
pub const EXTRACTION_BATCH_MESSAGES: usize = 50;
/// Characters of message text in one model call at most.
pub const EXTRACTION_BATCH_CHARS: usize = 16_000;
/// Each message is cut to this many characters in the model's input.
pub const EXTRACTION_MESSAGE_CHARS: usize = 2_000;
/// Messages younger than this wait for the next run: a question's answer
/// usually follows within the hour, and the model should see both.
pub const EXTRACTION_SETTLE: Duration = Duration::from_secs(3600);
/// Where a tenant's first run starts.
pub const EXTRACTION_INITIAL_LOOKBACK_DAYS: i64 = 30;
/// Proposals below this confidence are rejected.
pub const EXTRACTION_MIN_CONFIDENCE: f32 = 0.7;
/// A proposal this similar (cosine) to an existing page is a duplicate.
pub const EXTRACTION_DUPLICATE_SIMILARITY: f32 = 0.9;
/// Proposals kept from one model answer at most.
pub const EXTRACTION_MAX_ENTRIES_PER_BATCH: usize = 10;
/// A proposal's title is cut to this many characters.
pub const EXTRACTION_TITLE_CHARS: usize = 200;
/// A proposal's content is cut to this many characters.
pub const EXTRACTION_CONTENT_CHARS: usize = 8_000;
/// Pending rows one run reviews at most.
pub const EXTRACTION_REVIEW_LIMIT: usize = 100;

const DAY_MICROS: i64 = 86_400 * 1_000_000;

/// What one tenant's run did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExtractionReport {
    /// Messages stamped extracted (read by the model or withdrawn).
    pub messages: usize,
    /// Model calls.
    pub batches: usize,
    /// Entries proposed (stored `pending`).
    pub proposed: usize,
    /// Reviewed → a page.
    pub approved: usize,
    /// Reviewed → rejected.
    pub rejected: usize,
    /// Reviewed → duplicate of an existing page.
    pub duplicate: usize,
}

/// The model's answer.
#[derive(Debug, Deserialize)]
struct ExtractionAnswer {
    entries: Vec<ProposedEntry>,
}

#[derive(Debug, Deserialize)]
struct ProposedEntry {
    title: String,
    content: String,
    source_refs: Vec<String>,
    confidence: f64,
}

fn schema() -> JsonSchema {
    JsonSchema::new(
        "slack_knowledge_extraction",
        json!({
            "type": "object",
            "properties": {
                "entries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string"},
                            "content": {"type": "string"},
                            "source_refs": {"type": "array", "items": {"type": "string"}},
                            "confidence": {"type": "number"},
                        },
                        "required": ["title", "content", "source_refs", "confidence"],
                        "additionalProperties": false,
                    },
                },
            },
            "required": ["entries"],
            "additionalProperties": false,
        }),
    )
}

/// A message's `channel:ts` reference (`slack_knowledge_extractions.source_refs`).
pub fn source_ref(m: &ProcessedSlackMessage) -> String {
    format!("{}:{}", m.channel_id, m.message_ts)
}

/// The thread a message belongs to (its own ts when it starts one).
fn thread_root(m: &ProcessedSlackMessage) -> &str {
    m.thread_ts.as_deref().unwrap_or(&m.message_ts)
}

/// Split `messages` (oldest first) into model batches: a thread's messages
/// stay together and in order, threads ordered by their first message; a
/// batch holds at most [`EXTRACTION_BATCH_MESSAGES`] messages and
/// [`EXTRACTION_BATCH_CHARS`] characters (a longer thread spans batches).
pub fn batches(messages: Vec<ProcessedSlackMessage>) -> Vec<Vec<ProcessedSlackMessage>> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut threads: HashMap<(String, String), Vec<ProcessedSlackMessage>> = HashMap::new();
    for m in messages {
        let k = (m.channel_id.clone(), thread_root(&m).to_string());
        threads
            .entry(k.clone())
            .or_insert_with(|| {
                order.push(k);
                Vec::new()
            })
            .push(m);
    }
    let mut out: Vec<Vec<ProcessedSlackMessage>> = Vec::new();
    let mut current: Vec<ProcessedSlackMessage> = Vec::new();
    let mut chars = 0;
    for k in order {
        let thread = threads.remove(&k).unwrap_or_default();
        let size: usize = thread.iter().map(text_chars).sum();
        if !current.is_empty()
            && (current.len() + thread.len() > EXTRACTION_BATCH_MESSAGES
                || chars + size > EXTRACTION_BATCH_CHARS)
        {
            out.push(std::mem::take(&mut current));
            chars = 0;
        }
        for m in thread {
            let n = text_chars(&m);
            if !current.is_empty()
                && (current.len() >= EXTRACTION_BATCH_MESSAGES
                    || chars + n > EXTRACTION_BATCH_CHARS)
            {
                out.push(std::mem::take(&mut current));
                chars = 0;
            }
            chars += n;
            current.push(m);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn text_chars(m: &ProcessedSlackMessage) -> usize {
    m.message_text.chars().count().min(EXTRACTION_MESSAGE_CHARS)
}

/// The model's input: one line per message, `[m<i>]` being its reference
/// in the answer.
pub fn batch_input(batch: &[ProcessedSlackMessage]) -> String {
    let label: HashMap<(&str, &str), usize> = batch
        .iter()
        .enumerate()
        .map(|(i, m)| ((m.channel_id.as_str(), m.message_ts.as_str()), i + 1))
        .collect();
    let mut out = String::new();
    for (i, m) in batch.iter().enumerate() {
        let channel = m.channel_name.as_deref().unwrap_or(&m.channel_id);
        let author = m
            .user_name
            .as_deref()
            .or(m.user_id.as_deref())
            .unwrap_or("someone");
        let when = m.message_date.to_jiff().strftime("%Y-%m-%d %H:%M UTC");
        let reply = match m.thread_ts.as_deref().filter(|t| *t != m.message_ts) {
            Some(t) => match label.get(&(m.channel_id.as_str(), t)) {
                Some(parent) => format!(" (reply to m{parent})"),
                None => " (reply in a thread)".to_string(),
            },
            None => String::new(),
        };
        let text = cut_chars(m.message_text.trim(), EXTRACTION_MESSAGE_CHARS).replace('\n', " ");
        out.push_str(&format!(
            "[m{}] #{channel} {when} {author}{reply}: {text}\n",
            i + 1
        ));
    }
    out
}

/// The proposals of one batch as `pending` rows: references resolved to
/// the batch's messages (unknown ones dropped), the author taken from the
/// first message named, text trimmed and cut.
fn pending_rows(
    tenant: Uuid,
    batch: &[ProcessedSlackMessage],
    answer: ExtractionAnswer,
    now: Ts,
) -> Vec<SlackKnowledgeExtraction> {
    answer
        .entries
        .into_iter()
        .take(EXTRACTION_MAX_ENTRIES_PER_BATCH)
        .map(|e| {
            let mut refs: Vec<&ProcessedSlackMessage> = Vec::new();
            for r in &e.source_refs {
                let n = r
                    .trim()
                    .trim_matches(['[', ']'])
                    .trim_start_matches(['m', 'M'])
                    .parse::<usize>()
                    .ok();
                if let Some(m) = n.and_then(|n| n.checked_sub(1)).and_then(|i| batch.get(i))
                    && !refs.iter().any(|x| x.id == m.id)
                {
                    refs.push(m);
                }
            }
            let author = refs.first();
            SlackKnowledgeExtraction {
                id: Uuid::new_v4(),
                tenant_id: tenant,
                status: ExtractionStatus::Pending,
                title: cut_chars(e.title.trim(), EXTRACTION_TITLE_CHARS).to_string(),
                content: cut_chars(e.content.trim(), EXTRACTION_CONTENT_CHARS).to_string(),
                source_refs: refs.iter().map(|m| source_ref(m)).collect(),
                author_user_id: author.and_then(|m| m.user_id.clone()),
                author_name: author.and_then(|m| m.user_name.clone()),
                confidence_score: e.confidence.clamp(0.0, 1.0) as f32,
                auto_reviewed_at: None,
                review_notes: None,
                knowledge_page_id: None,
                created_at: now,
                updated_at: now,
            }
        })
        .collect()
}

/// The slug of an approved extraction's page (stable across reruns).
pub fn page_slug(row: &SlackKnowledgeExtraction) -> String {
    let base = slugify(&row.title, 80);
    let base = if base.is_empty() {
        "slack-entry".to_string()
    } else {
        base
    };
    format!("{base}-{}", &row.id.simple().to_string()[..8])
}

/// A review decision.
enum Verdict {
    Rejected(String),
    Duplicate(String),
    Approved,
}

/// The `slack-knowledge-extraction` handler. Cheap to clone.
#[derive(Clone)]
pub struct SlackExtraction {
    store: RedbStore,
    llm: ChatClient,
    prompts: Prompts,
    retrieval: Retrieval,
    identity: Identity,
    queues: Queues,
    clock: Arc<dyn Clock>,
}

impl SlackExtraction {
    /// The job over the app's services; the tick fans out through `queues`.
    pub fn new(
        llm: ChatClient,
        prompts: Prompts,
        retrieval: Retrieval,
        identity: Identity,
        queues: Queues,
        clock: Arc<dyn Clock>,
    ) -> Self {
        SlackExtraction {
            store: queues.store().clone(),
            llm,
            prompts,
            retrieval,
            identity,
            queues,
            clock,
        }
    }

    /// One tenant's run (in its scope): propose, then review.
    pub async fn extract(&self, tenant: Uuid) -> Result<ExtractionReport, JobError> {
        let mut report = ExtractionReport::default();
        let proposed = self.propose(tenant, &mut report).await;
        let reviewed = self.review(tenant, &mut report).await;
        proposed.and(reviewed)?;
        Ok(report)
    }

    async fn propose(&self, tenant: Uuid, report: &mut ExtractionReport) -> Result<(), JobError> {
        let retry = |e: &dyn std::fmt::Display| JobError::Retry(format!("slack extraction: {e}"));
        let now = self.clock.now();
        let state: Option<SlackExtractionState> = self
            .store
            .get(Some(tenant), key())
            .await
            .map_err(|e| retry(&e))?;
        let floor = state
            .and_then(|s| s.watermark)
            .unwrap_or(now.plus_micros(-EXTRACTION_INITIAL_LOOKBACK_DAYS * DAY_MICROS));
        let until = now.plus_micros(-(EXTRACTION_SETTLE.as_micros() as i64));
        if until <= floor {
            return Ok(());
        }
        let selected: Vec<ProcessedSlackMessage> = self
            .store
            .snapshot(move |s| {
                s.scan_projected::<SlackMessageText>(
                    Some(tenant),
                    &Scan::index(ProcessedSlackMessage::UNEXTRACTED_IDX, key())
                        .between(Some(key().ts(floor)), Some(key().ts(until)))
                        .limit(EXTRACTION_MAX_MESSAGES_PER_RUN),
                    |_| true,
                )
            })
            .await
            .map_err(|e| retry(&e))?
            .into_iter()
            .map(|m| m.0)
            .collect();
        if selected.is_empty() {
            return Ok(());
        }
        let mut pending_dates: Vec<Ts> = selected.iter().map(|m| m.message_date).collect();
        let last_date = pending_dates.iter().copied().max().unwrap_or(floor);
        let (withdrawn, live): (Vec<_>, Vec<_>) =
            selected.into_iter().partition(|m| m.withdrawn_at.is_some());
        let system = self
            .prompts
            .render(SLACK_KNOWLEDGE_EXTRACTION_SYSTEM, &PromptVars::new())
            .await
            .map_err(|e| retry(&e))?;
        // Withdrawn messages are never read; they go with the first commit.
        let mut skipped = withdrawn;
        let mut work = batches(live);
        if work.is_empty() {
            work.push(Vec::new());
        }
        for batch in work {
            let rows = if batch.is_empty() {
                Vec::new()
            } else {
                report.batches += 1;
                let answer = self
                    .llm
                    .chat_json::<ExtractionAnswer>(
                        EXTRACTION_PURPOSE,
                        &system,
                        &batch_input(&batch),
                        &schema(),
                        &ChatOptions::default(),
                    )
                    .await
                    .map_err(|e| retry(&format!("the model's proposal failed: {e}")))?;
                pending_rows(tenant, &batch, answer, now)
            };
            let mut done: Vec<ProcessedSlackMessage> = std::mem::take(&mut skipped);
            done.extend(batch);
            for m in &done {
                if let Some(i) = pending_dates.iter().position(|d| *d == m.message_date) {
                    pending_dates.swap_remove(i);
                }
            }
            // The first message not processed yet, else past the last read.
            let watermark = pending_dates.iter().copied().min().unwrap_or(last_date);
            let proposed = rows.len();
            let stamped = self
                .commit(tenant, done, rows, watermark.max(floor), now)
                .await
                .map_err(|e| retry(&e))?;
            if stamped > 0 {
                report.messages += stamped;
                report.proposed += proposed;
            }
        }
        Ok(())
    }

    /// Stamp `messages` extracted, store `rows` and move the watermark, in
    /// one transaction. A message another run stamped meanwhile voids the
    /// whole batch (that run has its proposals): returns 0.
    async fn commit(
        &self,
        tenant: Uuid,
        messages: Vec<ProcessedSlackMessage>,
        rows: Vec<SlackKnowledgeExtraction>,
        watermark: Ts,
        now: Ts,
    ) -> storage::StorageResult<usize> {
        let (stamped, _) = self
            .store
            .transact(move |tx| {
                let mut full = Vec::with_capacity(messages.len());
                for m in &messages {
                    match tx.get::<ProcessedSlackMessage>(Some(tenant), key().uuid(m.id))? {
                        Some(row) if row.extraction_processed_at.is_none() => full.push(row),
                        Some(_) => return Ok(0),
                        None => {}
                    }
                }
                for mut row in full.iter().cloned() {
                    row.extraction_processed_at = Some(now);
                    tx.update(&row)?;
                }
                for r in &rows {
                    tx.insert(r)?;
                }
                let state = SlackExtractionState {
                    tenant_id: tenant,
                    watermark: Some(watermark),
                    updated_at: now,
                };
                tx.upsert(&state)?;
                Ok(messages.len())
            })
            .await?;
        Ok(stamped)
    }

    async fn review(&self, tenant: Uuid, report: &mut ExtractionReport) -> Result<(), JobError> {
        let retry = |e: &dyn std::fmt::Display| JobError::Retry(format!("extraction review: {e}"));
        let pending: Vec<SlackKnowledgeExtraction> = self
            .store
            .scan(
                Some(tenant),
                Scan::index(
                    SlackKnowledgeExtraction::STATUS_IDX,
                    key().str(ExtractionStatus::Pending.as_str()),
                )
                .limit(EXTRACTION_REVIEW_LIMIT),
            )
            .await
            .map_err(|e| retry(&e))?;
        for mut row in pending {
            let verdict = self.judge(&row).await.map_err(|e| retry(&e))?;
            let now = self.clock.now();
            match verdict {
                Verdict::Rejected(note) => {
                    row.status = ExtractionStatus::Rejected;
                    row.review_notes = Some(note);
                    report.rejected += 1;
                }
                Verdict::Duplicate(note) => {
                    row.status = ExtractionStatus::Duplicate;
                    row.review_notes = Some(note);
                    report.duplicate += 1;
                }
                Verdict::Approved => {
                    let page = self.publish(tenant, &row).await.map_err(|e| retry(&e))?;
                    row.status = ExtractionStatus::Approved;
                    row.knowledge_page_id = Some(page);
                    report.approved += 1;
                }
            }
            row.auto_reviewed_at = Some(now);
            row.updated_at = now;
            self.store.update(row).await.map_err(|e| retry(&e))?;
        }
        Ok(())
    }

    /// The automatic review of one proposal.
    async fn judge(&self, row: &SlackKnowledgeExtraction) -> anyhow::Result<Verdict> {
        if row.title.is_empty() || row.content.is_empty() {
            return Ok(Verdict::Rejected("empty title or content".into()));
        }
        if row.source_refs.is_empty() {
            return Ok(Verdict::Rejected(
                "names no message of its batch as its source".into(),
            ));
        }
        if row.confidence_score < EXTRACTION_MIN_CONFIDENCE {
            return Ok(Verdict::Rejected(format!(
                "confidence {:.2} is below {EXTRACTION_MIN_CONFIDENCE}",
                row.confidence_score
            )));
        }
        let found = self
            .retrieval
            .search_knowledge(KnowledgeQuery {
                query: format!("{}\n{}", row.title, row.content),
                limit: Some(5),
                ..KnowledgeQuery::default()
            })
            .await?;
        if !found.vector_lane {
            anyhow::bail!("the proposal could not be embedded to look for duplicates");
        }
        let own = page_slug(row);
        let closest = found
            .results
            .iter()
            .filter(|r| r.slug != own)
            .filter_map(|r| r.similarity.map(|s| (s, r)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        Ok(match closest {
            Some((s, r)) if s >= EXTRACTION_DUPLICATE_SIMILARITY => {
                Verdict::Duplicate(format!("duplicates page {} (similarity {s:.2})", r.slug))
            }
            _ => Verdict::Approved,
        })
    }

    /// An approved proposal's page, owned by its author; returns the page id
    /// once the page is searchable (so the next proposal's duplicate check
    /// sees it).
    async fn publish(&self, tenant: Uuid, row: &SlackKnowledgeExtraction) -> anyhow::Result<Uuid> {
        let source = match row.source_refs.first().and_then(|r| r.split_once(':')) {
            Some((channel, ts)) => {
                let k = key().str(channel).str(ts);
                self.store
                    .snapshot(move |s| {
                        s.find_unique_many_projected::<SlackMessageText>(
                            Some(tenant),
                            ProcessedSlackMessage::MESSAGE_KEY,
                            &[k],
                        )
                    })
                    .await?
                    .into_iter()
                    .flatten()
                    .next()
                    .map(|m| m.0)
            }
            None => None,
        };
        let owner = match &row.author_user_id {
            Some(user) => self.identity.resolve_slack_member(user).await?.principal,
            None => None,
        };
        let author_name = row
            .author_name
            .clone()
            .or_else(|| owner.as_ref().and_then(|p| p.display_name.clone()));
        let write = self
            .retrieval
            .upsert_page(PageUpsert {
                slug: page_slug(row),
                title: row.title.clone(),
                content_html: entry_html(&row.content, None),
                source_type: SLACK_EXTRACTION_SOURCE_TYPE.into(),
                source_url: source.as_ref().and_then(|m| m.permalink.clone()),
                author_name,
                author_member_id: owner.map(|p| p.id.to_string()),
                knowledge_date: source
                    .as_ref()
                    .map(|m| m.message_date.to_jiff().strftime("%Y-%m-%d").to_string()),
                extracted_knowledge_id: Some(row.id),
                source_message_text: source.map(|m| m.message_text),
                ..PageUpsert::default()
            })
            .await?;
        self.retrieval
            .wait_searchable(IndexCorpus::Knowledge, write.index_seq)
            .await?;
        Ok(write.page.id)
    }
}

#[async_trait]
impl TypedJobHandler for SlackExtraction {
    type Payload = SlackKnowledgeExtractionTick;

    async fn run(
        &self,
        tick: SlackKnowledgeExtractionTick,
        _ctx: &mut JobContext,
    ) -> HandlerResult {
        match tenancy::current() {
            Some(ctx) if ctx.tenant.status != TenantStatus::Active => Ok(None),
            Some(ctx) => {
                let report = self.extract(ctx.id()).await?;
                Ok(serde_json::to_value(report).ok())
            }
            None => {
                let queued = fan_out(&self.queues, &tick, tick.scheduled_for)
                    .await
                    .map_err(|e| JobError::Retry(format!("extraction fan-out: {e}")))?;
                Ok(Some(json!({ "tenants_queued": queued })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(channel: &str, ts: &str, thread: Option<&str>, text: &str) -> ProcessedSlackMessage {
        ProcessedSlackMessage {
            id: Uuid::new_v4(),
            channel_id: channel.into(),
            channel_name: Some("help".into()),
            user_id: Some("U1".into()),
            user_name: Some("Ada".into()),
            message_ts: ts.into(),
            thread_ts: thread.map(str::to_string),
            message_text: text.into(),
            message_date: Ts::from_secs(1_700_000_000),
            ..ProcessedSlackMessage::default()
        }
    }

    #[test]
    fn a_thread_stays_together_and_batches_are_bounded() {
        let mut v = vec![
            msg("C1", "1.0", None, "question"),
            msg("C2", "2.0", None, "other"),
            msg("C1", "3.0", Some("1.0"), "answer"),
        ];
        let b = batches(v.clone());
        assert_eq!(b.len(), 1);
        let order: Vec<&str> = b[0].iter().map(|m| m.message_ts.as_str()).collect();
        assert_eq!(
            order,
            ["1.0", "3.0", "2.0"],
            "the reply follows its question"
        );

        v = (0..(EXTRACTION_BATCH_MESSAGES + 1))
            .map(|i| msg("C1", &format!("{i}.0"), None, "x"))
            .collect();
        let b = batches(v);
        assert_eq!(
            b.iter().map(Vec::len).collect::<Vec<_>>(),
            [EXTRACTION_BATCH_MESSAGES, 1]
        );

        let long = "y".repeat(EXTRACTION_MESSAGE_CHARS);
        let v: Vec<_> = (0..10)
            .map(|i| msg("C1", &format!("{i}.0"), None, &long))
            .collect();
        let b = batches(v);
        assert!(
            b.iter()
                .all(|b| b.len() * EXTRACTION_MESSAGE_CHARS <= EXTRACTION_BATCH_CHARS)
        );
        assert_eq!(b.iter().map(Vec::len).sum::<usize>(), 10);
    }

    #[test]
    fn the_input_labels_messages_and_their_thread_parents() {
        let b = vec![
            msg("C1", "1.0", None, "How do I reset\nmy key?"),
            msg("C1", "3.0", Some("1.0"), "Settings → Keys."),
            msg("C1", "4.0", Some("0.5"), "late reply"),
        ];
        let input = batch_input(&b);
        let lines: Vec<&str> = input.lines().collect();
        assert_eq!(
            lines[0],
            "[m1] #help 2023-11-14 22:13 UTC Ada: How do I reset my key?"
        );
        assert!(lines[1].starts_with("[m2] #help") && lines[1].contains("(reply to m1)"));
        assert!(lines[2].contains("(reply in a thread)"));
    }

    #[test]
    fn proposals_resolve_their_references_to_the_batch() {
        let b = vec![
            msg("C1", "1.0", None, "q"),
            ProcessedSlackMessage {
                user_id: Some("U2".into()),
                user_name: Some("Grace".into()),
                ..msg("C1", "3.0", Some("1.0"), "a")
            },
        ];
        let answer = ExtractionAnswer {
            entries: vec![
                ProposedEntry {
                    title: "  Reset a key ".into(),
                    content: "Settings → Keys.".into(),
                    source_refs: vec!["[m2]".into(), "m1".into(), "m2".into(), "m9".into()],
                    confidence: 1.7,
                },
                ProposedEntry {
                    title: "t".into(),
                    content: "c".into(),
                    source_refs: vec!["nonsense".into()],
                    confidence: 0.9,
                },
            ],
        };
        let rows = pending_rows(Uuid::nil(), &b, answer, Ts::from_secs(1));
        assert_eq!(rows[0].title, "Reset a key");
        assert_eq!(rows[0].source_refs, ["C1:3.0", "C1:1.0"]);
        assert_eq!(rows[0].author_user_id.as_deref(), Some("U2"));
        assert_eq!(rows[0].author_name.as_deref(), Some("Grace"));
        assert_eq!(rows[0].confidence_score, 1.0);
        assert_eq!(rows[0].status, ExtractionStatus::Pending);
        assert!(rows[1].source_refs.is_empty() && rows[1].author_user_id.is_none());
    }
}
