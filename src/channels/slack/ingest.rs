//! The Slack ingest hook (§8.2, §13 `slack-knowledge-ingest`): every human
//! message in a public channel whose text is longer than 10 characters, or
//! that shares files, is queued — whether or not Root replies. The job
//! summarises the files into `slack_message_enrichments` (`enrich`), and a
//! text over 10 characters it writes into
//! `processed_slack_messages` with its embedding and the Slack index
//! (`Retrieval::index_slack_message`), with the author's and channel's
//! names and the message's permalink when Slack gives them. The queue's
//! rate limits (60/min global, 30/min per tenant) apply. An edit re-queues
//! the new text; a deletion withdraws the message from search at once.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use storage::{EnqueueMode, ProcessedSlackMessage};
use uuid::Uuid;

use super::enrich::SharedFile;
use super::{SlackChannel, distill};
use crate::queue::job::{JobOptions, QueuePayload, TypedJobHandler};
use crate::queue::registry;
use crate::queue::{HandlerResult, JobContext, JobError, Queues};
use crate::retrieval::Retrieval;
use crate::slack::events::{MessageEvent, ts_instant};

/// §8.2: "public-channel human messages with text length > 10".
pub const MIN_INGEST_TEXT_CHARS: usize = 10;

/// One public-channel message to index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlackIngestPayload {
    /// The channel.
    pub channel_id: String,
    /// The author.
    pub user_id: String,
    /// The message's ts.
    pub message_ts: String,
    /// Its thread's parent ts, for replies.
    #[serde(default)]
    pub thread_ts: Option<String>,
    /// The text as typed.
    pub text: String,
    /// The files it shares (older jobs have none).
    #[serde(default)]
    pub files: Vec<SharedFile>,
}

impl QueuePayload for SlackIngestPayload {
    const QUEUE: &'static str = registry::SLACK_KNOWLEDGE_INGEST;
}

/// Is `text` long enough for the Slack index (§8.2: "> 10")?
pub fn indexable(text: &str) -> bool {
    text.trim().chars().count() > MIN_INGEST_TEXT_CHARS
}

/// Does `m` (by a human) go to the ingest job: a public-channel message
/// with indexable text or shared files?
pub fn should_ingest(m: &MessageEvent) -> bool {
    m.channel_type.as_deref() == Some("channel")
        && (indexable(&m.text) || !SharedFile::from_event(m).is_empty())
}

/// Queue `m`, written by `user`, for the index (job id
/// `{tenant}:{channel}_{ts}`, or `…:edit:{edit ts}` for an edit so it is
/// not deduplicated away).
pub async fn enqueue(
    queues: &Queues,
    tenant: Uuid,
    m: &MessageEvent,
    user: &str,
    edit_ts: Option<&str>,
) -> Result<(), storage::StorageError> {
    let id = match edit_ts {
        Some(e) => format!("{tenant}:{}:edit:{e}", m.dedupe_suffix()),
        None => format!("{tenant}:{}", m.dedupe_suffix()),
    };
    queues
        .enqueue_job(
            &SlackIngestPayload {
                channel_id: m.channel.clone(),
                user_id: user.to_string(),
                message_ts: m.ts.clone(),
                thread_ts: m.thread_ts.clone().filter(|t| *t != m.ts),
                text: m.text.clone(),
                files: SharedFile::from_event(m),
            },
            JobOptions {
                id: Some(id),
                tenant_id: Some(tenant),
                mode: EnqueueMode::Dedupe,
                ..JobOptions::default()
            },
        )
        .await?;
    Ok(())
}

/// The `slack-knowledge-ingest` handler.
#[derive(Clone)]
pub struct SlackIngest {
    slack: SlackChannel,
    retrieval: Retrieval,
}

impl SlackIngest {
    /// A handler indexing through `retrieval`, asking Slack through `slack`.
    pub fn new(slack: SlackChannel, retrieval: Retrieval) -> Self {
        SlackIngest { slack, retrieval }
    }
}

#[async_trait]
impl TypedJobHandler for SlackIngest {
    type Payload = SlackIngestPayload;

    async fn run(&self, p: SlackIngestPayload, _ctx: &mut JobContext) -> HandlerResult {
        let api = self
            .slack
            .current_api()
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?;
        // Files first: one failing file names it only; a storage failure retries.
        let enriched = self
            .slack
            .enricher()
            .enrich_message(api.as_ref(), &p.channel_id, &p.message_ts, &p.files)
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?
            .is_some();
        if !indexable(&p.text) {
            return Ok(Some(
                serde_json::json!({"indexed": false, "enriched": enriched}),
            ));
        }
        // Names and permalink are best effort: the text is what is searched.
        let (user_name, channel_name, permalink) = match &api {
            Some(api) => (
                self.slack.user_name(api, &p.user_id).await,
                self.slack.channel_name(api, &p.channel_id).await,
                api.permalink(&p.channel_id, &p.message_ts).await.ok(),
            ),
            None => (None, None, None),
        };
        let now = self.slack.now();
        let row = ProcessedSlackMessage {
            id: Uuid::new_v4(),
            channel_id: p.channel_id.clone(),
            channel_name,
            user_id: Some(p.user_id.clone()),
            user_name,
            message_ts: p.message_ts.clone(),
            thread_ts: p.thread_ts.clone(),
            message_text: p.text.clone(),
            message_date: ts_instant(&p.message_ts).unwrap_or(now),
            permalink,
            created_at: now,
            ..ProcessedSlackMessage::default()
        };
        let (stored, _) = self
            .retrieval
            .index_slack_message(row)
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?;
        // A reply (re)starts its thread's distillation timer (§10.4).
        if let Some(thread_ts) = &p.thread_ts
            && self.slack.config.slack_thread_artifacts
        {
            let tenant = crate::platform::tenancy::current_tenant_id()
                .map_err(|e| JobError::Retry(e.to_string()))?;
            distill::enqueue(&self.slack.queues, tenant, &p.channel_id, thread_ts)
                .await
                .map_err(|e| JobError::Retry(e.to_string()))?;
        }
        Ok(Some(serde_json::json!({
            "message_id": stored.id,
            "embedded": stored.embedding.is_some(),
            "enriched": enriched,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::Ts;

    #[test]
    fn only_public_channel_messages_over_ten_chars_or_with_files_are_ingested() {
        let m = |channel_type: &str, text: &str| MessageEvent {
            channel_type: Some(channel_type.into()),
            text: text.into(),
            ..MessageEvent::default()
        };
        assert!(should_ingest(&m("channel", "eleven char")));
        assert!(!should_ingest(&m("channel", "ten chars!")));
        assert!(!should_ingest(&m("channel", "   ten chars!   ")));
        assert!(!should_ingest(&m("im", "a long enough direct message")));
        assert!(!should_ingest(&m("group", "a long enough private message")));
        assert!(!should_ingest(&m("mpim", "a long enough group DM message")));
        // Shared files are ingested (summarised) whatever the text's length.
        let file = serde_json::json!({"id": "F1", "name": "a.png", "mimetype": "image/png"});
        let with_file = |channel_type: &str| MessageEvent {
            channel_type: Some(channel_type.into()),
            text: "".into(),
            files: vec![file.clone()],
            ..MessageEvent::default()
        };
        assert!(should_ingest(&with_file("channel")));
        assert!(!should_ingest(&with_file("im")));
    }

    #[test]
    fn old_payloads_without_files_still_decode() {
        let old = serde_json::json!({"channel_id": "C1", "user_id": "U1",
            "message_ts": "1.1", "text": "an older queued message"});
        let p: SlackIngestPayload = serde_json::from_value(old).unwrap();
        assert!(p.files.is_empty());
    }

    #[test]
    fn slack_timestamps_are_instants() {
        let t = ts_instant("1664408649.009629").unwrap();
        assert_eq!(t, Ts::from_secs(1_664_408_649).plus_micros(9_629));
        // Slack's docs print an `event_ts` without a dot: a huge number of
        // seconds, refused rather than overflowing.
        assert_eq!(ts_instant("1515449522000016000000"), None);
        assert_eq!(
            ts_instant("12.5").unwrap(),
            Ts::from_secs(12).plus_micros(500_000)
        );
        assert_eq!(ts_instant("nope"), None);
    }
}
