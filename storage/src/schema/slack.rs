//! §2.5, the Slack half: indexed public Slack history
//! (`processed_slack_messages`, with its embedding-free projection), thread
//! artifacts, per-message enrichments and the knowledge extracted from
//! Slack. The knowledge-base half is `knowledge.rs`.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::knowledge::EmbeddingLayout;
use super::tenant_row;
use crate::codec::{Embedding, Ts};
use crate::enums::*;
use crate::error::StorageResult;
use crate::key::{Key, key};
use crate::table::{IndexDef, Projection, Record, Scope, TableDef};

/// `processed_slack_messages` — indexed public Slack history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ProcessedSlackMessage {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub channel_id: String,
    pub channel_name: Option<String>,
    pub user_id: Option<String>,
    pub user_name: Option<String>,
    pub message_ts: String,
    pub thread_ts: Option<String>,
    pub message_text: String,
    pub message_date: Ts,
    pub permalink: Option<String>,
    pub embedding: Option<Embedding>,
    pub extraction_processed_at: Option<Ts>,
    pub withdrawn_at: Option<Ts>,
    pub created_at: Ts,
}

/// A `processed_slack_messages` row read without its embedding (`embedding`
/// is `None`) — a [`Projection`] for Slack search, which reads up to 200 rows
/// per query and never their vectors.
#[derive(Clone, Debug, PartialEq)]
pub struct SlackMessageText(pub ProcessedSlackMessage);

/// [`ProcessedSlackMessage`]'s stored layout, every column borrowed
/// (bincode is positional: its fields in its order;
/// `a_slack_message_text_reads_what_a_message_row_stores` and
/// `a_slack_message_vector_reads_what_a_message_row_stores` fail when they
/// drift). Each projection copies out only what it keeps.
#[derive(Deserialize)]
struct SlackMessageLayout<'a> {
    id: Uuid,
    tenant_id: Uuid,
    channel_id: &'a str,
    #[serde(borrow)]
    channel_name: Option<&'a str>,
    #[serde(borrow)]
    user_id: Option<&'a str>,
    #[serde(borrow)]
    user_name: Option<&'a str>,
    message_ts: &'a str,
    #[serde(borrow)]
    thread_ts: Option<&'a str>,
    message_text: &'a str,
    message_date: Ts,
    #[serde(borrow)]
    permalink: Option<&'a str>,
    #[serde(borrow)]
    embedding: Option<EmbeddingLayout<'a>>,
    extraction_processed_at: Option<Ts>,
    withdrawn_at: Option<Ts>,
    created_at: Ts,
}

impl<'a> SlackMessageLayout<'a> {
    fn decode(bytes: &'a [u8]) -> StorageResult<Self> {
        crate::codec::decode_row_borrowed(
            ProcessedSlackMessage::DEF.name,
            ProcessedSlackMessage::VERSION,
            bytes,
        )
    }
}

impl Projection for SlackMessageText {
    type Of = ProcessedSlackMessage;
    fn decode(bytes: &[u8]) -> StorageResult<Self> {
        let r = SlackMessageLayout::decode(bytes)?;
        let owned = |s: Option<&str>| s.map(str::to_string);
        Ok(SlackMessageText(ProcessedSlackMessage {
            id: r.id,
            tenant_id: r.tenant_id,
            channel_id: r.channel_id.to_string(),
            channel_name: owned(r.channel_name),
            user_id: owned(r.user_id),
            user_name: owned(r.user_name),
            message_ts: r.message_ts.to_string(),
            thread_ts: owned(r.thread_ts),
            message_text: r.message_text.to_string(),
            message_date: r.message_date,
            permalink: owned(r.permalink),
            embedding: None,
            extraction_processed_at: r.extraction_processed_at,
            withdrawn_at: r.withdrawn_at,
            created_at: r.created_at,
        }))
    }
}

/// What the Slack vector lane's exact rescoring reads of a
/// `processed_slack_messages` row — a [`Projection`] of
/// [`ProcessedSlackMessage`]: the embedding and whether the message was
/// withdrawn; the text columns are skipped without a copy (the lane reads
/// 200 candidates per query, `rescore_candidates` of its k = 100).
#[derive(Clone, Debug, PartialEq)]
pub struct SlackMessageVector {
    pub embedding: Option<Embedding>,
    pub withdrawn_at: Option<Ts>,
}

impl Projection for SlackMessageVector {
    type Of = ProcessedSlackMessage;
    fn decode(bytes: &[u8]) -> StorageResult<Self> {
        let r = SlackMessageLayout::decode(bytes)?;
        Ok(SlackMessageVector {
            embedding: r.embedding.as_ref().map(EmbeddingLayout::to_owned),
            withdrawn_at: r.withdrawn_at,
        })
    }
}

impl ProcessedSlackMessage {
    /// `UNIQUE (tenant_id, channel_id, message_ts)`
    pub const MESSAGE_KEY: &'static str =
        "processed_slack_messages_tenant_id_channel_id_message_ts_key";
    /// index `(tenant_id, message_date DESC)`
    pub const DATE_IDX: &'static str = "processed_slack_messages_tenant_id_message_date_idx";
    /// partial index `(tenant_id, message_date) WHERE extraction_processed_at IS NULL`
    pub const UNEXTRACTED_IDX: &'static str = "processed_slack_messages_unextracted_idx";
    /// index `(tenant_id, channel_id, thread_ts)` (thread distillation reads a thread).
    pub const THREAD_IDX: &'static str = "processed_slack_messages_thread_idx";
    /// partial index `WHERE embedding IS NULL` (embedding-audit sweep).
    pub const UNEMBEDDED_IDX: &'static str = "processed_slack_messages_unembedded_idx";
    /// partial index `(tenant_id, user_id, message_date) WHERE user_id IS NOT NULL`
    /// (a member's own contributions, newest first).
    pub const USER_IDX: &'static str = "processed_slack_messages_tenant_id_user_id_idx";
}

impl Record for ProcessedSlackMessage {
    const DEF: TableDef = TableDef {
        name: "processed_slack_messages",
        scope: Scope::Tenant,
        pkey: "processed_slack_messages_pkey",
        indexes: &[
            IndexDef::unique(ProcessedSlackMessage::MESSAGE_KEY),
            IndexDef::secondary(ProcessedSlackMessage::DATE_IDX),
            IndexDef::secondary(ProcessedSlackMessage::UNEXTRACTED_IDX),
            IndexDef::secondary(ProcessedSlackMessage::THREAD_IDX),
            IndexDef::secondary(ProcessedSlackMessage::UNEMBEDDED_IDX),
            IndexDef::secondary(ProcessedSlackMessage::USER_IDX),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.channel_id).str(&self.message_ts)),
            Some(key().ts(self.message_date)),
            self.extraction_processed_at
                .is_none()
                .then(|| key().ts(self.message_date)),
            self.thread_ts
                .as_deref()
                .map(|t| key().str(&self.channel_id).str(t).str(&self.message_ts)),
            self.embedding.is_none().then(|| key().ts(self.created_at)),
            self.user_id
                .as_deref()
                .map(|u| key().str(u).ts(self.message_date)),
        ]
    }
}

/// `slack_thread_artifacts` — distilled thread documents (§10.4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SlackThreadArtifact {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub channel_id: String,
    pub channel_name: Option<String>,
    pub thread_ts: String,
    pub kind: ArtifactKind,
    /// NULL for `kind='thread'`.
    pub burst_ts: Option<String>,
    pub question: Option<String>,
    pub summary: Option<String>,
    pub resolution: Option<String>,
    pub topics: Vec<String>,
    pub participant_user_ids: Vec<String>,
    pub message_count: i32,
    pub reaction_count: i32,
    pub author_user_id: Option<String>,
    pub author_name: Option<String>,
    pub document_text: String,
    pub embedding: Option<Embedding>,
    pub permalink: Option<String>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl SlackThreadArtifact {
    /// `UNIQUE (tenant_id, channel_id, thread_ts, kind, COALESCE(burst_ts, ''))`
    pub const ARTIFACT_KEY: &'static str = "slack_thread_artifacts_unique_key";
    /// partial index `WHERE embedding IS NULL` (embedding-audit sweep, batch 20).
    pub const UNEMBEDDED_IDX: &'static str = "slack_thread_artifacts_unembedded_idx";
}

impl Record for SlackThreadArtifact {
    const DEF: TableDef = TableDef {
        name: "slack_thread_artifacts",
        scope: Scope::Tenant,
        pkey: "slack_thread_artifacts_pkey",
        indexes: &[
            IndexDef::unique(SlackThreadArtifact::ARTIFACT_KEY),
            IndexDef::secondary(SlackThreadArtifact::UNEMBEDDED_IDX),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(
                key()
                    .str(&self.channel_id)
                    .str(&self.thread_ts)
                    .str(self.kind.as_str())
                    .str(self.burst_ts.as_deref().unwrap_or("")),
            ),
            self.embedding.is_none().then(|| key().ts(self.updated_at)),
        ]
    }
}

/// `slack_message_enrichments` — LLM summaries of file/image attachments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SlackMessageEnrichment {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub channel_id: String,
    pub message_ts: String,
    pub summary: String,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl SlackMessageEnrichment {
    /// `UNIQUE (tenant_id, channel_id, message_ts)`
    pub const MESSAGE_KEY: &'static str =
        "slack_message_enrichments_tenant_id_channel_id_message_ts_key";
}

impl Record for SlackMessageEnrichment {
    const DEF: TableDef = TableDef {
        name: "slack_message_enrichments",
        scope: Scope::Tenant,
        pkey: "slack_message_enrichments_pkey",
        indexes: &[IndexDef::unique(SlackMessageEnrichment::MESSAGE_KEY)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.channel_id).str(&self.message_ts))]
    }
}

/// `slack_knowledge_extractions` — LLM-proposed KB entries from Slack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SlackKnowledgeExtraction {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub status: ExtractionStatus,
    pub title: String,
    pub content: String,
    /// `channel:ts` refs of the messages the entry came from.
    pub source_refs: Vec<String>,
    pub author_user_id: Option<String>,
    pub author_name: Option<String>,
    pub confidence_score: f32,
    pub auto_reviewed_at: Option<Ts>,
    pub review_notes: Option<String>,
    /// The page created when approved.
    pub knowledge_page_id: Option<Uuid>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl SlackKnowledgeExtraction {
    /// index `(tenant_id, status, created_at)`
    pub const STATUS_IDX: &'static str = "slack_knowledge_extractions_tenant_id_status_idx";
    /// index `(tenant_id, author_user_id)` (author-scoped contribution tools).
    pub const AUTHOR_IDX: &'static str = "slack_knowledge_extractions_author_idx";
}

impl Record for SlackKnowledgeExtraction {
    const DEF: TableDef = TableDef {
        name: "slack_knowledge_extractions",
        scope: Scope::Tenant,
        pkey: "slack_knowledge_extractions_pkey",
        indexes: &[
            IndexDef::secondary(SlackKnowledgeExtraction::STATUS_IDX),
            IndexDef::secondary(SlackKnowledgeExtraction::AUTHOR_IDX),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(self.status.as_str()).ts(self.created_at)),
            self.author_user_id.as_deref().map(|a| key().str(a)),
        ]
    }
}

/// `slack_extraction_state` — per-tenant extraction watermark (PK `tenant_id`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SlackExtractionState {
    pub tenant_id: Uuid,
    pub watermark: Option<Ts>,
    pub updated_at: Ts,
}

impl Record for SlackExtractionState {
    const DEF: TableDef = TableDef {
        name: "slack_extraction_state",
        scope: Scope::Tenant,
        pkey: "slack_extraction_state_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        Some(self.tenant_id)
    }
    fn local_pk(&self) -> Key {
        key()
    }
}
