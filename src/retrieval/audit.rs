//! The `embedding-audit` repeatable (§11.3, §10.4; every 5 min): for every
//! tenant, embed chunks, Slack messages and thread artifacts whose embedding
//! is NULL (artifacts 20 per batch, the spec's number; chunks and messages
//! one provider batch of 100), and re-embed rows whose vector was made by a
//! different model than the configured one (a model change), walking each
//! corpus with a cursor kept in `platform_settings` until done.
//!
//! Rows are re-read inside the write transaction and only updated when the
//! text they were embedded from is unchanged, so a concurrent edit is never
//! overwritten with a stale vector.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use storage::{
    Embedding, IndexCorpus, Json, KnowledgeChunk, PlatformSetting, ProcessedSlackMessage, Scan,
    SlackThreadArtifact, Store, TenantStore, key,
};
use uuid::Uuid;

use super::Retrieval;
pub use super::params::{
    AUDIT_ARTIFACT_BATCH, AUDIT_BATCH, AUDIT_MAX_BATCHES, AUDIT_MODEL_SWEEP_ROWS,
};
use crate::platform::tenancy::{self, TenantContext};
use crate::queue::job::{EmbeddingAuditTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext};

/// Embedding purpose recorded for audit work.
pub const PURPOSE_EMBEDDING_AUDIT: &str = "embedding_audit";

/// What one run did, per tenant (for logs and tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// Chunks embedded.
    pub chunks: usize,
    /// Messages embedded.
    pub messages: usize,
    /// Artifacts embedded.
    pub artifacts: usize,
}

impl AuditReport {
    fn total(&self) -> usize {
        self.chunks + self.messages + self.artifacts
    }
}

/// One row the audit may (re-)embed: its id and the text embedded (re-checked
/// in the write transaction).
struct Pending {
    id: Uuid,
    input: String,
}

fn chunk_input(c: &KnowledgeChunk) -> String {
    let title = c
        .metadata
        .0
        .get("title")
        .and_then(|t| t.as_str())
        .unwrap_or("");
    format!("{title}\n\n{}", c.chunk_text)
}

fn stale(e: &Option<Embedding>, model: &str) -> bool {
    e.as_ref().is_none_or(|e| e.model != model)
}

impl Retrieval {
    /// One audit pass over the current tenant.
    pub async fn audit_embeddings(&self) -> Result<AuditReport, super::IngestError> {
        let tenant = tenancy::current_tenant_id()?;
        let model = self.embedder.model().to_string();
        let mut report = AuditReport::default();
        for corpus in IndexCorpus::ALL {
            let batch = match corpus {
                IndexCorpus::SlackArtifacts => AUDIT_ARTIFACT_BATCH,
                _ => AUDIT_BATCH,
            };
            for _ in 0..AUDIT_MAX_BATCHES {
                let mut pending = self.unembedded(tenant, corpus, batch).await?;
                if pending.len() < batch {
                    let more = self
                        .model_sweep(tenant, corpus, &model, batch - pending.len())
                        .await?;
                    pending.extend(more);
                }
                if pending.is_empty() {
                    break;
                }
                let inputs: Vec<String> = pending.iter().map(|p| p.input.clone()).collect();
                let vectors = self.embed_or_none(&inputs, PURPOSE_EMBEDDING_AUDIT).await;
                if vectors.iter().all(Option::is_none) {
                    // Provider down: stop this tenant for this run.
                    return Ok(report);
                }
                let n = self.store_vectors(tenant, corpus, pending, vectors).await?;
                match corpus {
                    IndexCorpus::Knowledge => report.chunks += n,
                    IndexCorpus::SlackMessages => report.messages += n,
                    IndexCorpus::SlackArtifacts => report.artifacts += n,
                }
                if n == 0 {
                    break;
                }
            }
        }
        if report.total() > 0 {
            tracing::info!(%tenant, ?report, "embedding audit");
        }
        Ok(report)
    }

    async fn unembedded(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        limit: usize,
    ) -> Result<Vec<Pending>, super::IngestError> {
        Ok(match corpus {
            IndexCorpus::Knowledge => self
                .store
                .scan::<KnowledgeChunk>(
                    Some(tenant),
                    Scan::index(KnowledgeChunk::UNEMBEDDED_IDX, key()).limit(limit),
                )
                .await?
                .iter()
                .map(|c| Pending {
                    id: c.id,
                    input: chunk_input(c),
                })
                .collect(),
            IndexCorpus::SlackMessages => self
                .store
                .scan::<ProcessedSlackMessage>(
                    Some(tenant),
                    Scan::index(ProcessedSlackMessage::UNEMBEDDED_IDX, key()).limit(limit),
                )
                .await?
                .into_iter()
                .filter(|m| m.withdrawn_at.is_none())
                .map(|m| Pending {
                    id: m.id,
                    input: m.message_text,
                })
                .collect(),
            IndexCorpus::SlackArtifacts => self
                .store
                .scan::<SlackThreadArtifact>(
                    Some(tenant),
                    Scan::index(SlackThreadArtifact::UNEMBEDDED_IDX, key()).limit(limit),
                )
                .await?
                .into_iter()
                .map(|a| Pending {
                    id: a.id,
                    input: a.document_text,
                })
                .collect(),
        })
    }

    /// Rows whose vector came from another model, walking the corpus in pk
    /// order from a cursor persisted in `platform_settings` as
    /// `{model, cursor, done}`; a model change restarts the walk, a finished
    /// pass idles until the next change.
    async fn model_sweep(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        model: &str,
        want: usize,
    ) -> Result<Vec<Pending>, super::IngestError> {
        let setting_key = format!("embedding_audit:{tenant}:{}", corpus.dir_name());
        let state: Option<PlatformSetting> = self.store.get(None, key().str(&setting_key)).await?;
        let field = |name: &str| state.as_ref().and_then(|s| s.value.0.get(name).cloned());
        let same_model =
            field("model").and_then(|v| v.as_str().map(str::to_string)) == Some(model.to_string());
        if same_model && field("done").and_then(|v| v.as_bool()) == Some(true) {
            return Ok(Vec::new());
        }
        let cursor = if same_model {
            field("cursor")
                .and_then(|v| v.as_str().map(str::to_string))
                .and_then(|c| Uuid::parse_str(&c).ok())
        } else {
            None
        };
        let scan = Scan::all()
            .between(cursor.map(|id| key().uuid(id).raw(&[0])), None)
            .limit(AUDIT_MODEL_SWEEP_ROWS);
        // (id, is stale, input) in pk order.
        let examined: Vec<(Uuid, bool, String)> = match corpus {
            IndexCorpus::Knowledge => self
                .store
                .scan::<KnowledgeChunk>(Some(tenant), scan)
                .await?
                .iter()
                .map(|c| {
                    let s = c.embedding.is_some() && stale(&c.embedding, model);
                    (c.id, s, if s { chunk_input(c) } else { String::new() })
                })
                .collect(),
            IndexCorpus::SlackMessages => self
                .store
                .scan::<ProcessedSlackMessage>(Some(tenant), scan)
                .await?
                .into_iter()
                .map(|m| {
                    let s = m.withdrawn_at.is_none()
                        && m.embedding.is_some()
                        && stale(&m.embedding, model);
                    (m.id, s, m.message_text)
                })
                .collect(),
            IndexCorpus::SlackArtifacts => self
                .store
                .scan::<SlackThreadArtifact>(Some(tenant), scan)
                .await?
                .into_iter()
                .map(|a| {
                    let s = a.embedding.is_some() && stale(&a.embedding, model);
                    (a.id, s, a.document_text)
                })
                .collect(),
        };
        let full_page = examined.len() == AUDIT_MODEL_SWEEP_ROWS;
        let mut rows = Vec::new();
        let mut covered = cursor;
        let mut stopped_early = false;
        for (id, is_stale, input) in examined {
            if rows.len() == want {
                stopped_early = true;
                break;
            }
            covered = Some(id);
            if is_stale {
                rows.push(Pending { id, input });
            }
        }
        let done = !stopped_early && !full_page;
        let value = json!({
            "model": model,
            "cursor": if done { None } else { covered.map(|u| u.to_string()) },
            "done": done,
        });
        let row = PlatformSetting {
            key: setting_key,
            value: Json(value),
            updated_at: self.clock.now(),
        };
        if state.is_some() {
            self.store.update(row).await?;
        } else {
            self.store.insert(row).await?;
        }
        Ok(rows)
    }

    async fn store_vectors(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        pending: Vec<Pending>,
        vectors: Vec<Option<Embedding>>,
    ) -> Result<usize, super::IngestError> {
        let (n, _) = self
            .store
            .transact(move |tx| {
                let mut n = 0;
                for (p, v) in pending.into_iter().zip(vectors) {
                    let Some(v) = v else { continue };
                    let pk = key().uuid(p.id);
                    let updated = match corpus {
                        IndexCorpus::Knowledge => {
                            match tx.get::<KnowledgeChunk>(Some(tenant), pk)? {
                                Some(mut c) if chunk_input(&c) == p.input => {
                                    c.embedding = Some(v);
                                    tx.update(&c)?;
                                    true
                                }
                                _ => false,
                            }
                        }
                        IndexCorpus::SlackMessages => {
                            match tx.get::<ProcessedSlackMessage>(Some(tenant), pk)? {
                                Some(mut m) if m.message_text == p.input => {
                                    m.embedding = Some(v);
                                    tx.update(&m)?;
                                    true
                                }
                                _ => false,
                            }
                        }
                        IndexCorpus::SlackArtifacts => {
                            match tx.get::<SlackThreadArtifact>(Some(tenant), pk)? {
                                Some(mut a) if a.document_text == p.input => {
                                    a.embedding = Some(v);
                                    tx.update(&a)?;
                                    true
                                }
                                _ => false,
                            }
                        }
                    };
                    if updated {
                        tx.index_change(tenant, corpus, p.id)?;
                        n += 1;
                    }
                }
                Ok(n)
            })
            .await?;
        if n > 0 {
            self.registry.notify(tenant, corpus).await?;
        }
        Ok(n)
    }
}

/// The `embedding-audit` handler: one pass over every active tenant.
pub struct EmbeddingAudit {
    retrieval: Retrieval,
    store: storage::RedbStore,
}

impl EmbeddingAudit {
    /// A handler over `retrieval`.
    pub fn new(retrieval: Retrieval) -> Self {
        let store = retrieval.store.clone();
        EmbeddingAudit { retrieval, store }
    }
}

#[async_trait]
impl TypedJobHandler for EmbeddingAudit {
    type Payload = EmbeddingAuditTick;

    async fn run(&self, _tick: EmbeddingAuditTick, _ctx: &mut JobContext) -> HandlerResult {
        let tenants = self
            .store
            .list_tenants()
            .await
            .map_err(|e| crate::queue::JobError::Retry(e.to_string()))?;
        for t in tenants {
            let ctx = TenantContext {
                tenant: Arc::new(t),
            };
            let id = ctx.id();
            if let Err(e) = tenancy::scope(ctx, self.retrieval.audit_embeddings()).await {
                // One tenant's failure must not starve the others.
                tracing::warn!(tenant = %id, error = %e, "embedding audit failed for tenant");
            }
        }
        Ok(None)
    }
}
