//! §2.5 Knowledge (sources, pages, chunks and their search projections,
//! sync runs; the Slack half is `slack.rs`). Embedding columns are f16 bytes plus the
//! model id ([`Embedding`]); the usearch/tantivy index files are derived from
//! these rows.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::tenant_row;
use crate::codec::{Embedding, Json, Redacted, Ts};
use crate::enums::*;
use crate::error::{StorageError, StorageResult};
use crate::key::{Key, key};
use crate::table::{FkDef, IndexDef, OnDelete, Projection, Record, Scope, TableDef};

/// `knowledge_sources` — where synced knowledge comes from (§11).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct KnowledgeSource {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub source_key: String,
    pub name: String,
    pub source_kind: SourceKind,
    pub status: SourceStatus,
    pub url: Option<String>,
    pub http_method: HttpMethod,
    /// Often carries credentials (`Authorization`, API keys); redacted in
    /// `Debug`, stored as the plain JSON.
    pub request_headers: Redacted<Json>,
    pub request_body: Option<Json>,
    pub auth_type: AuthType,
    /// basic: `{username}`; api_key: `{header_name}` (default `x-api-key`).
    pub auth_config: Json,
    /// Keys `token`, `password`, `webhook_signing_secret`; redacted in
    /// `Debug`, stored as the plain JSON.
    pub secrets: Redacted<Json>,
    pub response_mode: ResponseMode,
    /// JSON-path mapping fields (documents_path, external_id_path, …).
    pub mapping: Json,
    /// NULL or 5–43200.
    pub schedule_interval_minutes: Option<i32>,
    pub next_sync_at: Option<Ts>,
    pub replace_missing: bool,
    pub ai_cleanup: bool,
    pub ai_cleanup_instructions: Option<String>,
    pub consecutive_failures: i32,
    pub last_synced_at: Option<Ts>,
    pub last_error: Option<String>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl KnowledgeSource {
    /// `UNIQUE (tenant_id, source_key)`
    pub const SOURCE_KEY: &'static str = "knowledge_sources_tenant_id_source_key_key";
    /// platform-wide partial index `(next_sync_at) WHERE status='active' AND scheduled`.
    pub const DUE_IDX: &'static str = "knowledge_sources_due_idx";
}

impl Record for KnowledgeSource {
    const DEF: TableDef = TableDef {
        name: "knowledge_sources",
        scope: Scope::Tenant,
        pkey: "knowledge_sources_pkey",
        indexes: &[
            IndexDef::unique(KnowledgeSource::SOURCE_KEY),
            IndexDef::global_secondary(KnowledgeSource::DUE_IDX),
        ],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["secrets", "request_headers"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        let due = match (
            self.status,
            self.schedule_interval_minutes,
            self.next_sync_at,
        ) {
            (SourceStatus::Active, Some(_), Some(at)) => Some(key().ts(at)),
            _ => None,
        };
        vec![Some(key().str(&self.source_key)), due]
    }
    fn check(&self) -> StorageResult<()> {
        if let Some(m) = self.schedule_interval_minutes
            && !(5..=43200).contains(&m)
        {
            return Err(StorageError::Check {
                column: "knowledge_sources.schedule_interval_minutes",
                message: format!("{m} is not NULL or BETWEEN 5 AND 43200"),
            });
        }
        Ok(())
    }
}

/// `knowledge_pages` — a KB page (manual, synced or extracted from Slack).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct KnowledgePage {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub slug: String,
    pub title: String,
    pub source_url: Option<String>,
    /// Stored zstd-packed when long ([`crate::packed_text`]).
    #[serde(with = "crate::packed_text")]
    pub content_html: String,
    /// Stored zstd-packed when long ([`crate::packed_text`]).
    #[serde(with = "crate::packed_text::option")]
    pub content_text: Option<String>,
    pub author_name: Option<String>,
    pub author_member_id: Option<String>,
    pub knowledge_date: Option<String>,
    /// `manual` by default; sync writes url|api|webhook|api_push.
    pub source_type: String,
    pub source_message_text: Option<String>,
    /// ≤ 16 chars, used in public URLs.
    pub public_id: Option<String>,
    pub is_public: bool,
    pub refresh_frequency: Option<String>,
    pub extracted_knowledge_id: Option<Uuid>,
    pub knowledge_source_id: Option<Uuid>,
    pub external_id: Option<String>,
    pub content_hash: Option<String>,
    pub raw_content_hash: Option<String>,
    pub last_synced_at: Option<Ts>,
    pub fetched_at: Option<Ts>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl KnowledgePage {
    /// `UNIQUE (tenant_id, slug)`
    pub const SLUG_KEY: &'static str = "knowledge_pages_tenant_id_slug_key";
    /// unique partial `(tenant_id, knowledge_source_id, external_id) WHERE both NOT NULL`
    pub const EXTERNAL_KEY: &'static str = "knowledge_pages_tenant_id_source_external_id_key";
    /// unique partial `(tenant_id, public_id) WHERE public_id IS NOT NULL`
    pub const PUBLIC_ID_KEY: &'static str = "knowledge_pages_tenant_id_public_id_key";
    /// partial index `WHERE is_public`
    pub const PUBLIC_IDX: &'static str = "knowledge_pages_is_public_idx";
    /// index `(tenant_id, source_type)`
    pub const SOURCE_TYPE_IDX: &'static str = "knowledge_pages_tenant_id_source_type_idx";
    /// index `(tenant_id, author_member_id)`
    pub const AUTHOR_IDX: &'static str = "knowledge_pages_tenant_id_author_member_id_idx";
    /// index `(tenant_id, knowledge_source_id)`
    pub const SOURCE_IDX: &'static str = "knowledge_pages_tenant_id_knowledge_source_id_idx";
    /// FK `(tenant_id, knowledge_source_id) → knowledge_sources ON DELETE SET NULL`
    pub const SOURCE_FKEY: &'static str = "knowledge_pages_knowledge_source_fkey";
}

impl Record for KnowledgePage {
    const DEF: TableDef = TableDef {
        name: "knowledge_pages",
        scope: Scope::Tenant,
        pkey: "knowledge_pages_pkey",
        indexes: &[
            IndexDef::unique(KnowledgePage::SLUG_KEY),
            IndexDef::unique(KnowledgePage::EXTERNAL_KEY),
            IndexDef::unique(KnowledgePage::PUBLIC_ID_KEY),
            IndexDef::secondary(KnowledgePage::PUBLIC_IDX),
            IndexDef::secondary(KnowledgePage::SOURCE_TYPE_IDX),
            IndexDef::secondary(KnowledgePage::AUTHOR_IDX),
            IndexDef::secondary(KnowledgePage::SOURCE_IDX),
        ],
        fks: &[FkDef {
            name: KnowledgePage::SOURCE_FKEY,
            parent: "knowledge_sources",
            on_delete: OnDelete::SetNull,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.slug)),
            match (self.knowledge_source_id, self.external_id.as_deref()) {
                (Some(s), Some(e)) => Some(key().uuid(s).str(e)),
                _ => None,
            },
            self.public_id.as_deref().map(|p| key().str(p)),
            self.is_public.then(key),
            Some(key().str(&self.source_type)),
            self.author_member_id.as_deref().map(|a| key().str(a)),
            self.knowledge_source_id.map(|s| key().uuid(s)),
        ]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![self.knowledge_source_id.map(|s| key().uuid(s))]
    }
    fn set_null(&mut self, fk: &str) {
        if fk == Self::SOURCE_FKEY {
            self.knowledge_source_id = None;
        }
    }
    fn check(&self) -> StorageResult<()> {
        if self
            .public_id
            .as_ref()
            .is_some_and(|p| p.chars().count() > 16)
        {
            return Err(StorageError::Check {
                column: "knowledge_pages.public_id",
                message: "at most 16 characters (VARCHAR(16))".into(),
            });
        }
        if self.slug.is_empty() {
            return Err(StorageError::Check {
                column: "knowledge_pages.slug",
                message: "must not be empty".into(),
            });
        }
        Ok(())
    }
}

/// `knowledge_chunks` — chunk-and-embed output of a page (§11.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct KnowledgeChunk {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub knowledge_page_id: Uuid,
    pub chunk_index: i32,
    pub chunk_text: String,
    pub embedding: Option<Embedding>,
    /// `{title, slug, public_id, source_type, author_name, section_heading}`
    pub metadata: Json,
    pub created_at: Ts,
}

impl KnowledgeChunk {
    /// `UNIQUE (knowledge_page_id, chunk_index)`
    pub const PAGE_CHUNK_KEY: &'static str = "knowledge_chunks_knowledge_page_id_chunk_index_key";
    /// partial index `WHERE embedding IS NULL` (embedding-audit sweep).
    pub const UNEMBEDDED_IDX: &'static str = "knowledge_chunks_unembedded_idx";
    /// FK `knowledge_page_id → knowledge_pages ON DELETE CASCADE`
    pub const PAGE_FKEY: &'static str = "knowledge_chunks_knowledge_page_id_fkey";
}

impl Record for KnowledgeChunk {
    const DEF: TableDef = TableDef {
        name: "knowledge_chunks",
        scope: Scope::Tenant,
        pkey: "knowledge_chunks_pkey",
        indexes: &[
            IndexDef::unique(KnowledgeChunk::PAGE_CHUNK_KEY),
            IndexDef::secondary(KnowledgeChunk::UNEMBEDDED_IDX),
        ],
        fks: &[FkDef {
            name: KnowledgeChunk::PAGE_FKEY,
            parent: "knowledge_pages",
            on_delete: OnDelete::Cascade,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(
                key()
                    .uuid(self.knowledge_page_id)
                    .i64(self.chunk_index as i64),
            ),
            self.embedding.is_none().then(|| key().ts(self.created_at)),
        ]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.knowledge_page_id))]
    }
}

/// What knowledge search reads of a `knowledge_chunks` row — a
/// [`Projection`] of [`KnowledgeChunk`]: the 6 KB embedding is skipped
/// without a copy and the metadata stays JSON text until a result asks for
/// it ([`KnowledgeChunkHit::metadata`]); neighbour excerpts never do.
#[derive(Clone, Debug, PartialEq)]
pub struct KnowledgeChunkHit {
    pub id: Uuid,
    pub knowledge_page_id: Uuid,
    pub chunk_index: i32,
    pub chunk_text: String,
    /// The stored `metadata` JSON text.
    pub metadata_json: String,
}

/// The chunk metadata knowledge search returns (§11.3's
/// `{title, slug, public_id, source_type, author_name, section_heading}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChunkMetadata {
    pub title: Option<String>,
    pub slug: Option<String>,
    pub public_id: Option<String>,
    pub source_type: Option<String>,
    pub author_name: Option<String>,
    pub section_heading: Option<String>,
}

impl KnowledgeChunkHit {
    /// The metadata fields; each reads as `None` unless it is a string, so
    /// one odd value never blanks the others. Fails only on text that is not
    /// JSON at all.
    pub fn metadata(&self) -> Result<ChunkMetadata, serde_json::Error> {
        let v: serde_json::Value = serde_json::from_str(&self.metadata_json)?;
        let field = |name: &str| v.get(name).and_then(|f| f.as_str()).map(str::to_string);
        Ok(ChunkMetadata {
            title: field("title"),
            slug: field("slug"),
            public_id: field("public_id"),
            source_type: field("source_type"),
            author_name: field("author_name"),
            section_heading: field("section_heading"),
        })
    }
}

/// [`KnowledgeChunk`]'s stored layout, borrowed. bincode is positional:
/// the fields are [`KnowledgeChunk`]'s, in its order
/// (`a_chunk_hit_reads_what_a_chunk_row_stores` fails when they drift).
#[derive(Deserialize)]
struct KnowledgeChunkLayout<'a> {
    id: Uuid,
    #[serde(rename = "tenant_id")]
    _tenant_id: Uuid,
    knowledge_page_id: Uuid,
    chunk_index: i32,
    #[serde(borrow)]
    chunk_text: &'a str,
    #[serde(borrow)]
    embedding: Option<EmbeddingLayout<'a>>,
    #[serde(borrow)]
    metadata: &'a str,
    #[serde(rename = "created_at")]
    _created_at: Ts,
}

/// [`Embedding`]'s stored layout, borrowed (never copied).
#[derive(Deserialize)]
pub(super) struct EmbeddingLayout<'a> {
    #[serde(borrow)]
    model: &'a str,
    #[serde(borrow)]
    f16: &'a [u8],
}

impl EmbeddingLayout<'_> {
    pub(super) fn to_owned(&self) -> Embedding {
        Embedding {
            model: self.model.to_string(),
            f16: self.f16.to_vec(),
        }
    }
}

/// What the vector lane's exact rescoring reads of a `knowledge_chunks`
/// row — a [`Projection`] of [`KnowledgeChunk`]: the embedding alone (the
/// lossless f16 copy; the text and metadata are skipped without a copy).
#[derive(Clone, Debug, PartialEq)]
pub struct KnowledgeChunkVector {
    pub embedding: Option<Embedding>,
}

impl Projection for KnowledgeChunkVector {
    type Of = KnowledgeChunk;
    fn decode(bytes: &[u8]) -> StorageResult<Self> {
        let row: KnowledgeChunkLayout<'_> = crate::codec::decode_row_borrowed(
            KnowledgeChunk::DEF.name,
            KnowledgeChunk::VERSION,
            bytes,
        )?;
        Ok(KnowledgeChunkVector {
            embedding: row.embedding.as_ref().map(EmbeddingLayout::to_owned),
        })
    }
}

impl Projection for KnowledgeChunkHit {
    type Of = KnowledgeChunk;
    fn decode(bytes: &[u8]) -> StorageResult<Self> {
        let row: KnowledgeChunkLayout<'_> = crate::codec::decode_row_borrowed(
            KnowledgeChunk::DEF.name,
            KnowledgeChunk::VERSION,
            bytes,
        )?;
        Ok(KnowledgeChunkHit {
            id: row.id,
            knowledge_page_id: row.knowledge_page_id,
            chunk_index: row.chunk_index,
            chunk_text: row.chunk_text.to_string(),
            metadata_json: row.metadata.to_string(),
        })
    }
}

/// What a page listing reads of a `knowledge_pages` row — a [`Projection`]
/// of [`KnowledgePage`]: the HTML body, the plain text and the source
/// message are skipped without a copy (a page can be megabytes; a listing
/// shows none of it).
#[derive(Clone, Debug, PartialEq)]
pub struct KnowledgePageSummary {
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub source_url: Option<String>,
    pub author_name: Option<String>,
    pub author_member_id: Option<String>,
    pub knowledge_date: Option<String>,
    pub source_type: String,
    pub public_id: Option<String>,
    pub is_public: bool,
    pub created_at: Ts,
    pub updated_at: Ts,
}

/// [`KnowledgePage`]'s stored layout (bincode is positional: its fields in
/// its order; `a_page_summary_reads_what_a_page_row_stores` fails when they
/// drift), the large text columns borrowed and dropped (as bytes: they may
/// be packed, [`crate::packed_text`]).
#[derive(Deserialize)]
struct KnowledgePageLayout<'a> {
    id: Uuid,
    #[serde(rename = "tenant_id")]
    _tenant_id: Uuid,
    slug: String,
    title: String,
    source_url: Option<String>,
    #[serde(borrow, rename = "content_html")]
    _content_html: &'a [u8],
    #[serde(borrow, rename = "content_text")]
    _content_text: Option<&'a [u8]>,
    author_name: Option<String>,
    author_member_id: Option<String>,
    knowledge_date: Option<String>,
    source_type: String,
    #[serde(borrow, rename = "source_message_text")]
    _source_message_text: Option<&'a str>,
    public_id: Option<String>,
    is_public: bool,
    #[serde(rename = "refresh_frequency")]
    _refresh_frequency: Option<String>,
    #[serde(rename = "extracted_knowledge_id")]
    _extracted_knowledge_id: Option<Uuid>,
    #[serde(rename = "knowledge_source_id")]
    _knowledge_source_id: Option<Uuid>,
    #[serde(rename = "external_id")]
    _external_id: Option<String>,
    #[serde(rename = "content_hash")]
    _content_hash: Option<String>,
    #[serde(rename = "raw_content_hash")]
    _raw_content_hash: Option<String>,
    #[serde(rename = "last_synced_at")]
    _last_synced_at: Option<Ts>,
    #[serde(rename = "fetched_at")]
    _fetched_at: Option<Ts>,
    created_at: Ts,
    updated_at: Ts,
}

impl From<&KnowledgePage> for KnowledgePageSummary {
    fn from(p: &KnowledgePage) -> Self {
        KnowledgePageSummary {
            id: p.id,
            slug: p.slug.clone(),
            title: p.title.clone(),
            source_url: p.source_url.clone(),
            author_name: p.author_name.clone(),
            author_member_id: p.author_member_id.clone(),
            knowledge_date: p.knowledge_date.clone(),
            source_type: p.source_type.clone(),
            public_id: p.public_id.clone(),
            is_public: p.is_public,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

impl Projection for KnowledgePageSummary {
    type Of = KnowledgePage;
    fn decode(bytes: &[u8]) -> StorageResult<Self> {
        let r: KnowledgePageLayout<'_> = crate::codec::decode_row_borrowed(
            KnowledgePage::DEF.name,
            KnowledgePage::VERSION,
            bytes,
        )?;
        Ok(KnowledgePageSummary {
            id: r.id,
            slug: r.slug,
            title: r.title,
            source_url: r.source_url,
            author_name: r.author_name,
            author_member_id: r.author_member_id,
            knowledge_date: r.knowledge_date,
            source_type: r.source_type,
            public_id: r.public_id,
            is_public: r.is_public,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// `knowledge_sync_runs` — audit of each sync run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct KnowledgeSyncRun {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub source_id: Uuid,
    pub trigger_type: SyncTrigger,
    pub status: SyncRunStatus,
    pub documents_received: i32,
    pub pages_created: i32,
    pub pages_updated: i32,
    pub pages_unchanged: i32,
    pub pages_deleted: i32,
    pub ai_cleaned: i32,
    pub input_payload: Option<Json>,
    pub metadata: Json,
    pub http_status: Option<i32>,
    pub error: Option<String>,
    pub queue_job_id: Option<String>,
    pub created_at: Ts,
    pub started_at: Option<Ts>,
    pub finished_at: Option<Ts>,
    pub updated_at: Ts,
}

impl KnowledgeSyncRun {
    /// unique partial `(source_id) WHERE status='running'`: one running run per source.
    pub const ONE_RUNNING_KEY: &'static str = "knowledge_sync_runs_one_running_per_source";
    /// index `(tenant_id, source_id, created_at)`
    pub const SOURCE_IDX: &'static str = "knowledge_sync_runs_source_id_created_at_idx";
    /// FK `(tenant_id, source_id) → knowledge_sources ON DELETE CASCADE`
    pub const SOURCE_FKEY: &'static str = "knowledge_sync_runs_source_fkey";
}

impl Record for KnowledgeSyncRun {
    const DEF: TableDef = TableDef {
        name: "knowledge_sync_runs",
        scope: Scope::Tenant,
        pkey: "knowledge_sync_runs_pkey",
        indexes: &[
            IndexDef::unique(KnowledgeSyncRun::ONE_RUNNING_KEY),
            IndexDef::secondary(KnowledgeSyncRun::SOURCE_IDX),
        ],
        fks: &[FkDef {
            name: KnowledgeSyncRun::SOURCE_FKEY,
            parent: "knowledge_sources",
            on_delete: OnDelete::Cascade,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            (self.status == SyncRunStatus::Running).then(|| key().uuid(self.source_id)),
            Some(key().uuid(self.source_id).ts(self.created_at)),
        ]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.source_id))]
    }
}
