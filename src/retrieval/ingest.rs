//! Ingest paths other modules call: knowledge pages (chunk + embed + both
//! lanes), Slack messages (index / withdraw) and thread artifacts. Each
//! writes its rows **and** their index outbox entries in one redb
//! transaction, then wakes the tenant's index writer; embedding happens
//! before the transaction (never inside it). When embedding fails the rows
//! are still written with a NULL embedding — keyword search works at once
//! and the embedding-audit sweep fills the vector later: no data is lost to
//! an LLM outage.

use std::time::Duration;

use index::chunker::{Chunk, PageInput, chunk_page};
use storage::{
    Embedding, IndexCorpus, Json, KnowledgeChunk, KnowledgePage, ProcessedSlackMessage, Scan,
    SlackThreadArtifact, StorageError, Store, Tx, key,
};
use uuid::Uuid;

use super::{IndexError, Retrieval};
use crate::platform::tenancy::{NoTenantContext, current_tenant_id};

/// `input` with its `content_html` sanitised (§11.2 step 5) on the
/// blocking pool (a 2 MiB page takes milliseconds to parse).
async fn sanitized(mut input: PageUpsert) -> Result<PageUpsert, IngestError> {
    let html = std::mem::take(&mut input.content_html);
    input.content_html =
        tokio::task::spawn_blocking(move || super::sanitize::sanitize_page_html(&html))
            .await
            .map_err(|e| IngestError::Invalid(format!("could not sanitise the page: {e}")))?;
    Ok(input)
}

/// Largest `content_html` accepted for one page. The HTML parser is linear
/// in size but slow on pathological nesting; a real KB page is far smaller.
pub const MAX_PAGE_HTML_BYTES: usize = 2 * 1024 * 1024;

/// How long a write waits for its changes to become searchable when the
/// caller asks for read-your-writes.
pub const INDEX_WAIT: Duration = Duration::from_secs(30);

/// Purpose strings recorded with embedding usage.
pub const PURPOSE_KB_INDEX: &str = "kb_index";
/// Purpose for Slack message embeddings.
pub const PURPOSE_SLACK_INDEX: &str = "slack_index";
/// Purpose for thread artifact embeddings.
pub const PURPOSE_ARTIFACT_INDEX: &str = "slack_artifact_index";

/// `source_type` of pages members save through `save_knowledge_entry`.
pub const MEMBER_ENTRY_SOURCE_TYPE: &str = "member_entry";
/// `source_type` the Slack knowledge extraction writes (§2.5: "its own type").
pub const SLACK_EXTRACTION_SOURCE_TYPE: &str = "slack_extraction";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A knowledge entry's text as page HTML (member entries, Slack
/// extractions): blank-line-separated paragraphs, escaped, plus
/// "Category: …" when given.
pub fn entry_html(content: &str, category: Option<&str>) -> String {
    let paragraphs: String = content
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .map(|p| format!("<p>{}</p>", escape(p.trim())))
        .collect();
    let category = category
        .filter(|c| !c.trim().is_empty())
        .map(|c| format!("<p>Category: {}</p>", escape(c.trim())))
        .unwrap_or_default();
    format!("{paragraphs}{category}")
}

/// Errors of the ingest paths.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The input breaks a rule (the message says which).
    #[error("{0}")]
    Invalid(String),
    /// Storage failed (conflicts included).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The index could not be reached.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Called outside a tenant scope (a bug).
    #[error(transparent)]
    NoTenant(#[from] NoTenantContext),
}

/// A knowledge page to create or replace (matched by slug).
#[derive(Clone, Debug, Default)]
pub struct PageUpsert {
    /// Unique per tenant, ≤ 100 chars.
    pub slug: String,
    /// Page title.
    pub title: String,
    /// Sanitised HTML (or plain text).
    pub content_html: String,
    /// `manual`, `url`, `api`, `webhook`, `api_push`, or an extraction type.
    pub source_type: String,
    /// Optional fields of `knowledge_pages`.
    pub source_url: Option<String>,
    /// Author display name.
    pub author_name: Option<String>,
    /// Author principal ref.
    pub author_member_id: Option<String>,
    /// Knowledge date (free text, e.g. an ISO date).
    pub knowledge_date: Option<String>,
    /// Public pages get bare `/kb/:tenant/:publicId` links.
    pub is_public: bool,
    /// Short public id (≤ 16 chars); generated for public pages when absent.
    pub public_id: Option<String>,
    /// Owning knowledge source.
    pub knowledge_source_id: Option<Uuid>,
    /// Id in the source system.
    pub external_id: Option<String>,
    /// Sync bookkeeping (§11.2 steps 4, 6): SHA-256 of the final document.
    pub content_hash: Option<String>,
    /// SHA-256 of the raw document + AI version (a hit skips the AI step).
    pub raw_content_hash: Option<String>,
    /// When a sync last saw the document.
    pub last_synced_at: Option<storage::Ts>,
    /// When the source was fetched.
    pub fetched_at: Option<storage::Ts>,
    /// The Slack extraction the page came from; `None` keeps what the page
    /// has (an edit never unlinks it).
    pub extracted_knowledge_id: Option<Uuid>,
    /// The message text an extracted page was drawn from; `None` keeps it.
    pub source_message_text: Option<String>,
}

/// What a page write did.
#[derive(Clone, Debug)]
pub struct PageWrite {
    /// The stored page.
    pub page: KnowledgePage,
    /// Whether it was new.
    pub created: bool,
    /// Chunks written (0 when the text was unchanged or too short).
    pub chunks: usize,
    /// Chunks stored without a vector (embedding unavailable).
    pub unembedded: usize,
    /// Outbox sequence to wait for before the change is searchable.
    pub index_seq: Option<u64>,
}

fn content_text(chunks: &[Chunk]) -> String {
    chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn new_public_id() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut rng = rand::rng();
    (0..12)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

impl Retrieval {
    /// Embed `inputs`, or `None` for each when the embedder fails (logged).
    pub(crate) async fn embed_or_none(
        &self,
        inputs: &[String],
        purpose: &str,
    ) -> Vec<Option<Embedding>> {
        if inputs.is_empty() {
            return Vec::new();
        }
        match self.embedder.embed(inputs, purpose).await {
            Ok(vectors) if vectors.len() == inputs.len() => vectors
                .iter()
                .map(|v| Some(Embedding::from_f32(self.embedder.model(), v)))
                .collect(),
            Ok(vectors) => {
                tracing::warn!(
                    purpose,
                    expected = inputs.len(),
                    got = vectors.len(),
                    "embedder returned a wrong count; rows stay unembedded"
                );
                inputs.iter().map(|_| None).collect()
            }
            Err(e) => {
                tracing::warn!(purpose, error = %e, "embedding failed; rows stay unembedded for the audit sweep");
                inputs.iter().map(|_| None).collect()
            }
        }
    }

    /// Create or replace a page by slug, re-chunking and re-embedding only
    /// when something the chunks are made of changed.
    pub async fn upsert_page(&self, input: PageUpsert) -> Result<PageWrite, IngestError> {
        validate_page(&input)?;
        let input = sanitized(input).await?;
        let tenant = current_tenant_id()?;
        let existing: Option<KnowledgePage> = self
            .store
            .find_unique(
                Some(tenant),
                KnowledgePage::SLUG_KEY,
                key().str(&input.slug),
            )
            .await?;
        let now = self.clock.now();
        let mut page = existing.clone().unwrap_or_else(|| KnowledgePage {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            created_at: now,
            ..Default::default()
        });
        page.slug = input.slug;
        page.title = input.title;
        page.content_html = input.content_html;
        page.source_type = input.source_type;
        page.source_url = input.source_url;
        page.author_name = input.author_name;
        page.author_member_id = input.author_member_id;
        page.knowledge_date = input.knowledge_date;
        page.is_public = input.is_public;
        page.public_id = match (input.public_id, &existing) {
            (Some(p), _) => Some(p),
            (None, Some(old)) => old.public_id.clone(),
            (None, None) => Some(new_public_id()),
        };
        page.knowledge_source_id = input.knowledge_source_id;
        page.external_id = input.external_id;
        page.content_hash = input.content_hash;
        page.raw_content_hash = input.raw_content_hash;
        page.last_synced_at = input.last_synced_at;
        page.fetched_at = input.fetched_at;
        if input.extracted_knowledge_id.is_some() {
            page.extracted_knowledge_id = input.extracted_knowledge_id;
        }
        if input.source_message_text.is_some() {
            page.source_message_text = input.source_message_text;
        }
        page.updated_at = now;

        let chunk_input = PageInput {
            title: page.title.clone(),
            slug: page.slug.clone(),
            public_id: page.public_id.clone(),
            source_type: page.source_type.clone(),
            author_name: page.author_name.clone(),
            content_html: page.content_html.clone(),
        };
        let unchanged = existing.as_ref().is_some_and(|old| {
            old.title == page.title
                && old.content_html == page.content_html
                && old.slug == page.slug
                && old.public_id == page.public_id
                && old.source_type == page.source_type
                && old.author_name == page.author_name
        });
        if unchanged {
            let (page, _) = self
                .store
                .transact(move |tx| {
                    tx.update(&page)?;
                    Ok(page)
                })
                .await?;
            return Ok(PageWrite {
                page,
                created: false,
                chunks: 0,
                unembedded: 0,
                index_seq: None,
            });
        }
        let chunks =
            tokio::task::spawn_blocking(move || chunk_page(&chunk_input, &super::params::CHUNKER))
                .await
                .map_err(|e| IngestError::Invalid(format!("could not chunk the page: {e}")))?;
        page.content_text = Some(content_text(&chunks));
        let inputs: Vec<String> = chunks.iter().map(Chunk::embed_input).collect();
        let vectors = self.embed_or_none(&inputs, PURPOSE_KB_INDEX).await;
        let rows: Vec<(i32, String, serde_json::Value, Option<Embedding>)> = chunks
            .iter()
            .zip(vectors)
            .map(|(c, e)| (c.chunk_index, c.text.clone(), c.metadata(), e))
            .collect();
        self.write_page(tenant, page, existing.is_none(), rows)
            .await
    }

    /// Store a page with chunks the caller already cut and embedded (bulk
    /// loads, benchmarks, eval corpora): no chunker, no embedding call.
    /// Vectors must have 3072 dimensions.
    pub async fn upsert_page_chunks(
        &self,
        input: PageUpsert,
        chunks: Vec<(String, Option<Vec<f32>>)>,
    ) -> Result<PageWrite, IngestError> {
        validate_page(&input)?;
        let input = sanitized(input).await?;
        let tenant = current_tenant_id()?;
        if let Some(bad) = chunks.iter().find_map(|(_, v)| {
            v.as_ref()
                .filter(|v| v.len() != index::vector::DIMENSIONS)
                .map(Vec::len)
        }) {
            return Err(IngestError::Invalid(format!(
                "chunk vectors must have {} dimensions, got {bad}",
                index::vector::DIMENSIONS
            )));
        }
        let existing: Option<KnowledgePage> = self
            .store
            .find_unique(
                Some(tenant),
                KnowledgePage::SLUG_KEY,
                key().str(&input.slug),
            )
            .await?;
        let now = self.clock.now();
        let page = KnowledgePage {
            id: existing.as_ref().map_or_else(Uuid::new_v4, |p| p.id),
            tenant_id: tenant,
            slug: input.slug,
            title: input.title,
            content_text: Some(
                chunks
                    .iter()
                    .map(|(t, _)| t.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n"),
            ),
            content_html: input.content_html,
            source_type: input.source_type,
            source_url: input.source_url,
            author_name: input.author_name,
            author_member_id: input.author_member_id,
            knowledge_date: input.knowledge_date,
            is_public: input.is_public,
            public_id: input
                .public_id
                .or_else(|| existing.as_ref().and_then(|p| p.public_id.clone()))
                .or_else(|| Some(new_public_id())),
            knowledge_source_id: input.knowledge_source_id,
            external_id: input.external_id,
            content_hash: input.content_hash,
            raw_content_hash: input.raw_content_hash,
            last_synced_at: input.last_synced_at,
            fetched_at: input.fetched_at,
            created_at: existing.as_ref().map_or(now, |p| p.created_at),
            updated_at: now,
            ..Default::default()
        };
        let model = self.embedder.model().to_string();
        let rows = chunks
            .into_iter()
            .enumerate()
            .map(|(i, (text, v))| {
                let metadata = serde_json::json!({
                    "title": page.title,
                    "slug": page.slug,
                    "public_id": page.public_id,
                    "source_type": page.source_type,
                    "author_name": page.author_name,
                    "section_heading": null,
                });
                let e = v.map(|v| Embedding::from_f32(model.as_str(), &v));
                (i as i32, text, metadata, e)
            })
            .collect();
        self.write_page(tenant, page, existing.is_none(), rows)
            .await
    }

    /// Replace a page's chunks in one transaction with their outbox entries.
    async fn write_page(
        &self,
        tenant: Uuid,
        page: KnowledgePage,
        created: bool,
        chunks: Vec<(i32, String, serde_json::Value, Option<Embedding>)>,
    ) -> Result<PageWrite, IngestError> {
        let now = page.updated_at;
        let unembedded = chunks.iter().filter(|c| c.3.is_none()).count();
        let rows: Vec<KnowledgeChunk> = chunks
            .into_iter()
            .map(
                |(chunk_index, chunk_text, metadata, embedding)| KnowledgeChunk {
                    id: Uuid::new_v4(),
                    tenant_id: tenant,
                    knowledge_page_id: page.id,
                    chunk_index,
                    chunk_text,
                    embedding,
                    metadata: Json(metadata),
                    created_at: now,
                },
            )
            .collect();
        let n = rows.len();
        let (page, seq) = self
            .store
            .transact(move |tx| {
                if created {
                    tx.insert(&page)?;
                } else {
                    tx.update(&page)?;
                }
                remove_chunks(tx, tenant, page.id)?;
                for c in &rows {
                    tx.insert(c)?;
                    tx.index_change(tenant, IndexCorpus::Knowledge, c.id)?;
                }
                Ok(page)
            })
            .await?;
        self.registry.notify(tenant, IndexCorpus::Knowledge).await?;
        Ok(PageWrite {
            page,
            created,
            chunks: n,
            unembedded,
            index_seq: seq,
        })
    }

    /// Delete a page (its chunks cascade; their index entries follow).
    /// Returns the outbox sequence to wait for, `None` when absent.
    pub async fn delete_page(&self, slug: &str) -> Result<Option<u64>, IngestError> {
        let tenant = current_tenant_id()?;
        let Some(page) = self
            .store
            .find_unique::<KnowledgePage>(Some(tenant), KnowledgePage::SLUG_KEY, key().str(slug))
            .await?
        else {
            return Ok(None);
        };
        let (_, seq) = self
            .store
            .transact(move |tx| {
                remove_chunks(tx, tenant, page.id)?;
                tx.delete::<KnowledgePage>(Some(tenant), key().uuid(page.id))?;
                Ok(())
            })
            .await?;
        self.registry.notify(tenant, IndexCorpus::Knowledge).await?;
        Ok(Some(seq.unwrap_or(0)))
    }

    /// Delete pages by id in one transaction (their chunks and index
    /// entries follow). Returns the outbox sequence to wait for.
    pub async fn delete_pages(&self, ids: Vec<Uuid>) -> Result<Option<u64>, IngestError> {
        let tenant = current_tenant_id()?;
        if ids.is_empty() {
            return Ok(None);
        }
        let (_, seq) = self
            .store
            .transact(move |tx| {
                for id in &ids {
                    remove_chunks(tx, tenant, *id)?;
                    tx.delete::<KnowledgePage>(Some(tenant), key().uuid(*id))?;
                }
                Ok(())
            })
            .await?;
        self.registry.notify(tenant, IndexCorpus::Knowledge).await?;
        Ok(seq)
    }

    /// Index (insert or replace, matched by channel + ts) a Slack message.
    /// Withdrawn messages leave the index.
    pub async fn index_slack_message(
        &self,
        mut msg: ProcessedSlackMessage,
    ) -> Result<(ProcessedSlackMessage, Option<u64>), IngestError> {
        let tenant = current_tenant_id()?;
        msg.tenant_id = tenant;
        let existing: Option<ProcessedSlackMessage> = self
            .store
            .find_unique(
                Some(tenant),
                ProcessedSlackMessage::MESSAGE_KEY,
                key().str(&msg.channel_id).str(&msg.message_ts),
            )
            .await?;
        if let Some(old) = &existing {
            msg.id = old.id;
            msg.created_at = old.created_at;
            if old.message_text == msg.message_text && msg.embedding.is_none() {
                msg.embedding = old.embedding.clone();
            }
        }
        if msg.embedding.is_none() && msg.withdrawn_at.is_none() {
            msg.embedding = self
                .embed_or_none(std::slice::from_ref(&msg.message_text), PURPOSE_SLACK_INDEX)
                .await
                .pop()
                .flatten();
        }
        let id = msg.id;
        self.write_indexed(
            tenant,
            IndexCorpus::SlackMessages,
            id,
            existing.is_some(),
            msg,
        )
        .await
    }

    /// Mark a message withdrawn (deleted in Slack): it is never returned again.
    pub async fn withdraw_slack_message(
        &self,
        channel_id: &str,
        message_ts: &str,
    ) -> Result<Option<u64>, IngestError> {
        let tenant = current_tenant_id()?;
        let key = key().str(channel_id).str(message_ts);
        let now = self.clock.now();
        let (seq, _) = self
            .store
            .transact(move |tx| {
                let found: Vec<ProcessedSlackMessage> = tx.scan(
                    Some(tenant),
                    Scan::index(ProcessedSlackMessage::MESSAGE_KEY, key).limit(1),
                )?;
                let Some(mut m) = found.into_iter().next() else {
                    return Ok(None);
                };
                if m.withdrawn_at.is_none() {
                    m.withdrawn_at = Some(now);
                    tx.update(&m)?;
                }
                Ok(Some(tx.index_change(
                    tenant,
                    IndexCorpus::SlackMessages,
                    m.id,
                )?))
            })
            .await?;
        if seq.is_some() {
            self.registry
                .notify(tenant, IndexCorpus::SlackMessages)
                .await?;
        }
        Ok(seq)
    }

    /// Insert or replace a thread artifact (matched by channel, thread, kind
    /// and burst). A changed `document_text` clears the embedding (§10.4);
    /// the caller may pass a fresh one, otherwise it is embedded here or by
    /// the audit sweep.
    pub async fn upsert_artifact(
        &self,
        mut a: SlackThreadArtifact,
    ) -> Result<(SlackThreadArtifact, Option<u64>), IngestError> {
        let tenant = current_tenant_id()?;
        a.tenant_id = tenant;
        let existing: Option<SlackThreadArtifact> = self
            .store
            .find_unique(
                Some(tenant),
                SlackThreadArtifact::ARTIFACT_KEY,
                key()
                    .str(&a.channel_id)
                    .str(&a.thread_ts)
                    .str(a.kind.as_str())
                    .str(a.burst_ts.as_deref().unwrap_or("")),
            )
            .await?;
        if let Some(old) = &existing {
            a.id = old.id;
            a.created_at = old.created_at;
            if old.document_text == a.document_text && a.embedding.is_none() {
                a.embedding = old.embedding.clone();
            }
        }
        if a.embedding.is_none() {
            a.embedding = self
                .embed_or_none(
                    std::slice::from_ref(&a.document_text),
                    PURPOSE_ARTIFACT_INDEX,
                )
                .await
                .pop()
                .flatten();
        }
        a.updated_at = self.clock.now();
        let id = a.id;
        self.write_indexed(
            tenant,
            IndexCorpus::SlackArtifacts,
            id,
            existing.is_some(),
            a,
        )
        .await
    }

    /// Insert (or, when `update`, replace) one indexed row together with its
    /// outbox entry, then wake the corpus' index writer.
    async fn write_indexed<R: storage::Record>(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        id: Uuid,
        update: bool,
        row: R,
    ) -> Result<(R, Option<u64>), IngestError> {
        let (row, seq) = self
            .store
            .transact(move |tx| {
                if update {
                    tx.update(&row)?;
                } else {
                    tx.insert(&row)?;
                }
                tx.index_change(tenant, corpus, id)?;
                Ok(row)
            })
            .await?;
        self.registry.notify(tenant, corpus).await?;
        Ok((row, seq))
    }

    /// Delete an artifact by id (stale bursts on re-distill).
    pub async fn delete_artifact(&self, id: Uuid) -> Result<(), IngestError> {
        let tenant = current_tenant_id()?;
        self.store
            .transact(move |tx| {
                if tx.delete::<SlackThreadArtifact>(Some(tenant), key().uuid(id))? {
                    tx.index_change(tenant, IndexCorpus::SlackArtifacts, id)?;
                }
                Ok(())
            })
            .await?;
        self.registry
            .notify(tenant, IndexCorpus::SlackArtifacts)
            .await?;
        Ok(())
    }

    /// Wait until the change `seq` of `corpus` is searchable.
    pub async fn wait_searchable(
        &self,
        corpus: IndexCorpus,
        seq: Option<u64>,
    ) -> Result<(), IngestError> {
        let tenant = current_tenant_id()?;
        if let Some(seq) = seq {
            self.registry
                .wait_applied(tenant, corpus, seq, INDEX_WAIT)
                .await?;
        }
        Ok(())
    }
}

/// Delete a page's chunks inside `tx`, recording each for the index.
fn remove_chunks(tx: &mut Tx<'_>, tenant: Uuid, page: Uuid) -> Result<(), StorageError> {
    let old: Vec<KnowledgeChunk> = tx.scan(
        Some(tenant),
        Scan::index(KnowledgeChunk::PAGE_CHUNK_KEY, key().uuid(page)),
    )?;
    for c in old {
        tx.delete::<KnowledgeChunk>(Some(tenant), key().uuid(c.id))?;
        tx.index_change(tenant, IndexCorpus::Knowledge, c.id)?;
    }
    Ok(())
}

/// A URL-safe slug of `text`: lower-case ASCII letters and digits, every
/// other run of characters one `-`, at most `max_chars` (no dash at either
/// end). May be empty (nothing sluggable in `text`).
pub fn slugify(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let cut: String = out.chars().take(max_chars).collect();
    cut.trim_end_matches('-').to_string()
}

/// Page rules checked before any work (clear 400s at the API).
pub fn validate_page(p: &PageUpsert) -> Result<(), IngestError> {
    let bad = |m: &str| Err(IngestError::Invalid(m.to_string()));
    if p.slug.trim().is_empty() {
        return bad("slug must not be empty");
    }
    if p.slug.chars().count() > 100 {
        return bad("slug must be at most 100 characters");
    }
    if p.slug.chars().any(char::is_whitespace) {
        return bad("slug must not contain whitespace");
    }
    if p.title.trim().is_empty() {
        return bad("title must not be empty");
    }
    if p.source_type.trim().is_empty() {
        return bad("source_type must not be empty");
    }
    if p.content_html.len() > MAX_PAGE_HTML_BYTES {
        return Err(IngestError::Invalid(format!(
            "content_html must be at most {MAX_PAGE_HTML_BYTES} bytes"
        )));
    }
    if p.public_id
        .as_ref()
        .is_some_and(|id| id.chars().count() > 16)
    {
        return bad("public_id must be at most 16 characters");
    }
    Ok(())
}
