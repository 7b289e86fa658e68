//! §11.2 steps 2–8 for one run's documents: normalise, skip what did not
//! change, run the AI step and sanitize what did, upsert (chunk + embed
//! through the one ingest path), then `replace_missing`.
//!
//! Cost rules: a document whose `raw_content_hash` matches its page costs
//! no model call and no write of its own (unchanged pages get their sync
//! timestamps in one transaction for the whole run); a document whose
//! final `content_hash` matches costs the AI step but no re-embed. Changed
//! documents go through at most [`APPLY_CONCURRENCY`] at a time (results
//! kept in document order).
//!
//! Pages are matched by `(knowledge_source_id, external_id)` and keep the
//! slug they were created with (links stay stable when a title changes); a
//! new page whose slug another page holds gets a short stable suffix.

use std::collections::{HashMap, HashSet};

use futures_util::StreamExt;
use serde::Serialize;
use storage::{KnowledgePage, KnowledgeSource, Scan, SourceKind, StorageError, Store, Ts, key};

use super::KnowledgeSync;
use super::ai::run_step;
use super::document::{AiStep, FinalDocument, Normalized, content_hash, normalize, unique_slug};
use super::fetch::RawDocument;
use crate::platform::tenancy::current_tenant_id;
use crate::retrieval::{IngestError, PageUpsert};

/// Changed documents processed at once (AI step + embedding calls).
pub const APPLY_CONCURRENCY: usize = 4;
/// Slugs listed per outcome in a run's metadata (the diff an admin sees).
pub const DIFF_MAX_SLUGS: usize = 100;
/// Document errors listed in a run's metadata.
pub const MAX_LISTED_ERRORS: usize = 50;

/// `knowledge_pages.source_type` of a kind's pages (§11.1).
pub fn page_source_type(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::WebPage => "url",
        SourceKind::ApiPull => "api",
        SourceKind::Webhook => "webhook",
        SourceKind::ApiPush => "api_push",
    }
}

/// How one run applies its documents.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// The AI step (web: distill; others: cleanup when asked).
    pub ai: AiStep,
    /// Delete this source's pages missing from the documents (§11.2 step 8).
    pub replace_missing: bool,
    /// The source had more documents than one run takes: never delete.
    pub truncated: bool,
    /// When the documents were fetched (or pushed).
    pub fetched_at: Ts,
}

/// Slugs per outcome (capped at [`DIFF_MAX_SLUGS`] each).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// New pages.
    pub created: Vec<String>,
    /// Re-indexed pages.
    pub updated: Vec<String>,
    /// Pages removed by replace_missing.
    pub deleted: Vec<String>,
    /// Pages that did not change.
    pub unchanged: Vec<String>,
}

/// A document that could not become a page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DocumentError {
    /// Position in the run's documents.
    pub index: usize,
    /// Its external id, when it had one.
    pub external_id: Option<String>,
    /// Why.
    pub error: String,
}

/// What applying a run's documents did (the run's counters and metadata).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// Documents in the run.
    pub documents_received: usize,
    /// Counters of `knowledge_sync_runs`.
    pub pages_created: usize,
    /// Updated pages.
    pub pages_updated: usize,
    /// Unchanged pages.
    pub pages_unchanged: usize,
    /// Deleted pages.
    pub pages_deleted: usize,
    /// Documents the AI step rewrote.
    pub ai_cleaned: usize,
    /// AI steps that failed (the document was kept as fetched and is
    /// cleaned again next run).
    pub ai_failed: usize,
    /// Which slugs.
    pub diff: Diff,
    /// Documents that did not become pages.
    pub errors: Vec<DocumentError>,
    /// Why replace_missing did not run, when asked and skipped.
    pub replace_missing_skipped: Option<String>,
    /// The index outbox sequence covering every change of the run.
    #[serde(skip)]
    pub index_seq: Option<u64>,
}

fn push_capped(list: &mut Vec<String>, slug: &str) {
    if list.len() < DIFF_MAX_SLUGS {
        list.push(slug.to_string());
    }
}

/// One changed document on its way to a page.
struct Pending {
    index: usize,
    doc: Normalized,
    existing: Option<KnowledgePage>,
    slug: String,
}

/// What the AI step did for one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AiMark {
    NotRun,
    Cleaned,
    Failed,
}

/// What the pipeline did with one changed document.
enum Outcome {
    Created(String, Option<u64>),
    Updated(String, Option<u64>),
    /// Same final content: only the sync fields (and raw hash) change.
    Unchanged(Box<KnowledgePage>),
    Failed(DocumentError),
}

impl KnowledgeSync {
    /// Apply `docs` to `source`'s pages. Storage failures end the run with
    /// an error (the job retries); a bad document is listed and skipped.
    pub async fn apply(
        &self,
        source: &KnowledgeSource,
        docs: Vec<RawDocument>,
        opts: &ApplyOptions,
    ) -> Result<Applied, StorageError> {
        let tenant = current_tenant_id().map_err(|e| StorageError::Backend(e.to_string()))?;
        let store = &self.inner.store;
        let existing: Vec<KnowledgePage> = store
            .scan(
                Some(tenant),
                Scan::index(KnowledgePage::SOURCE_IDX, key().uuid(source.id)),
            )
            .await?;
        let mut by_external: HashMap<String, KnowledgePage> = HashMap::new();
        let mut orphans = Vec::new();
        for p in existing {
            match p.external_id.clone() {
                Some(e) => {
                    by_external.insert(e, p);
                }
                None => orphans.push(p),
            }
        }
        let mut applied = Applied {
            documents_received: docs.len(),
            ..Applied::default()
        };
        let error = |applied: &mut Applied, e: DocumentError| {
            if applied.errors.len() < MAX_LISTED_ERRORS {
                applied.errors.push(e);
            }
        };

        // Step 2 + the raw-hash check, in one pass.
        let mut incoming: HashSet<String> = HashSet::new();
        let mut all_ids_given = true;
        let mut unchanged: Vec<KnowledgePage> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        for (index, raw) in docs.iter().enumerate() {
            let doc = match normalize(raw, &opts.ai) {
                Ok(d) => d,
                Err(e) => {
                    all_ids_given &= raw.external_id.is_some();
                    if let Some(id) = raw.external_id.as_deref().map(str::trim) {
                        incoming.insert(id.to_string());
                    }
                    error(
                        &mut applied,
                        DocumentError {
                            index,
                            external_id: raw.external_id.clone(),
                            error: e,
                        },
                    );
                    continue;
                }
            };
            all_ids_given &= doc.external_id_given;
            if !incoming.insert(doc.external_id.clone()) {
                error(
                    &mut applied,
                    DocumentError {
                        index,
                        external_id: Some(doc.external_id.clone()),
                        error: "a second document with this external_id in the same run".into(),
                    },
                );
                continue;
            }
            let existing = by_external.get(&doc.external_id).cloned();
            if let Some(page) = &existing
                && page.raw_content_hash.as_deref() == Some(doc.raw_content_hash.as_str())
            {
                unchanged.push(page.clone());
                continue;
            }
            let slug = existing
                .as_ref()
                .map_or_else(|| doc.slug.clone(), |p| p.slug.clone());
            pending.push(Pending {
                index,
                doc,
                existing,
                slug,
            });
        }

        // New pages: slugs free of every other page (one read for all).
        let new_slugs: Vec<String> = pending
            .iter()
            .filter(|p| p.existing.is_none())
            .map(|p| p.slug.clone())
            .collect();
        let holders: Vec<Option<KnowledgePage>> = store
            .find_unique_many(
                Some(tenant),
                KnowledgePage::SLUG_KEY,
                new_slugs.iter().map(|s| key().str(s)).collect(),
            )
            .await?;
        let mut taken: HashSet<String> = holders.into_iter().flatten().map(|p| p.slug).collect();
        taken.extend(by_external.values().map(|p| p.slug.clone()));
        for p in pending.iter_mut().filter(|p| p.existing.is_none()) {
            let identity = format!("{}:{}", source.id, p.doc.external_id);
            let slug = unique_slug(&p.slug, &identity, |s| taken.contains(s));
            taken.insert(slug.clone());
            p.slug = slug;
        }

        // Steps 3, 5, 6, 7 for the changed documents.
        let outcomes: Vec<Result<(Outcome, AiMark), StorageError>> =
            futures_util::stream::iter(pending)
                .map(|p| self.apply_one(source, p, opts))
                .buffered(APPLY_CONCURRENCY)
                .collect()
                .await;
        for o in outcomes {
            let (outcome, ai) = o?;
            match ai {
                AiMark::Cleaned => applied.ai_cleaned += 1,
                AiMark::Failed => applied.ai_failed += 1,
                AiMark::NotRun => {}
            }
            match outcome {
                Outcome::Created(slug, seq) => {
                    applied.index_seq = applied.index_seq.max(seq);
                    applied.pages_created += 1;
                    push_capped(&mut applied.diff.created, &slug);
                }
                Outcome::Updated(slug, seq) => {
                    applied.index_seq = applied.index_seq.max(seq);
                    applied.pages_updated += 1;
                    push_capped(&mut applied.diff.updated, &slug);
                }
                Outcome::Unchanged(page) => unchanged.push(*page),
                Outcome::Failed(e) => error(&mut applied, e),
            }
        }

        // Unchanged pages: their sync fields, one transaction for the run.
        applied.pages_unchanged = unchanged.len();
        for p in &unchanged {
            push_capped(&mut applied.diff.unchanged, &p.slug);
        }
        if !unchanged.is_empty() {
            let now = self.inner.clock.now();
            let fetched_at = opts.fetched_at;
            store
                .transact(move |tx| {
                    for seen in &unchanged {
                        let Some(mut page) =
                            tx.get::<KnowledgePage>(Some(tenant), key().uuid(seen.id))?
                        else {
                            continue;
                        };
                        page.last_synced_at = Some(now);
                        page.fetched_at = Some(fetched_at);
                        page.raw_content_hash = seen.raw_content_hash.clone();
                        tx.update(&page)?;
                    }
                    Ok(())
                })
                .await?;
        }

        // Step 8.
        if opts.replace_missing {
            let skip = if opts.truncated {
                Some("the source had more documents than one run takes")
            } else if !all_ids_given {
                Some("not every document carried an external_id")
            } else if docs.is_empty() {
                Some("the run had no documents")
            } else {
                None
            };
            match skip {
                Some(why) => applied.replace_missing_skipped = Some(why.to_string()),
                None => {
                    let gone: Vec<KnowledgePage> = by_external
                        .into_values()
                        .filter(|p| p.external_id.as_ref().is_none_or(|e| !incoming.contains(e)))
                        .chain(orphans)
                        .collect();
                    for p in &gone {
                        push_capped(&mut applied.diff.deleted, &p.slug);
                    }
                    applied.pages_deleted = gone.len();
                    let seq = self
                        .inner
                        .retrieval
                        .delete_pages(gone.into_iter().map(|p| p.id).collect())
                        .await
                        .map_err(ingest_to_storage)?;
                    applied.index_seq = applied.index_seq.max(seq);
                }
            }
        }
        // A succeeded run means searchable pages (bounded; the rows are
        // durable either way and the index catches up on its own).
        if let Err(e) = self
            .inner
            .retrieval
            .wait_searchable(storage::IndexCorpus::Knowledge, applied.index_seq)
            .await
        {
            tracing::warn!(source = %source.id, error = %e, "synced pages stored; index still catching up");
        }
        Ok(applied)
    }
}

impl KnowledgeSync {
    /// Steps 3, 5, 6, 7 for one document whose raw hash changed.
    async fn apply_one(
        &self,
        source: &KnowledgeSource,
        p: Pending,
        opts: &ApplyOptions,
    ) -> Result<(Outcome, AiMark), StorageError> {
        let Pending {
            index,
            doc,
            existing,
            slug,
        } = p;
        let fail = |error: String| {
            Outcome::Failed(DocumentError {
                index,
                external_id: Some(doc.external_id.clone()),
                error,
            })
        };
        // Step 3 (fails open: the document as fetched, cleaned next run).
        let (html, ai, raw_hash) = match run_step(
            &self.inner.llm,
            &opts.ai,
            &doc.title,
            doc.source_url.as_deref(),
            &doc.content_html,
        )
        .await
        {
            Ok(html) if opts.ai == AiStep::None => {
                (html, AiMark::NotRun, Some(doc.raw_content_hash.clone()))
            }
            Ok(html) => (html, AiMark::Cleaned, Some(doc.raw_content_hash.clone())),
            Err(e) => {
                tracing::warn!(source = %source.id, error = %e,
                    "knowledge AI step failed; the document is kept as fetched");
                (doc.content_html.clone(), AiMark::Failed, None)
            }
        };
        // Step 5 (off the async threads: ammonia parses the whole page).
        let html = match tokio::task::spawn_blocking(move || {
            crate::retrieval::sanitize::sanitize_page_html(&html)
        })
        .await
        {
            Ok(h) => h,
            Err(e) => return Ok((fail(format!("could not sanitize the document: {e}")), ai)),
        };
        // Step 6.
        let hash = content_hash(FinalDocument {
            slug: &slug,
            title: &doc.title,
            content_html: &html,
            source_url: doc.source_url.as_deref(),
            author_name: doc.author_name.as_deref(),
            knowledge_date: doc.knowledge_date.as_deref(),
        });
        if let Some(page) = &existing
            && page.content_hash.as_deref() == Some(hash.as_str())
        {
            let mut page = page.clone();
            page.raw_content_hash = raw_hash;
            return Ok((Outcome::Unchanged(Box::new(page)), ai));
        }
        // Step 7.
        let created = existing.is_none();
        let now = self.inner.clock.now();
        let write = self
            .inner
            .retrieval
            .upsert_page(PageUpsert {
                slug: slug.clone(),
                title: doc.title.clone(),
                content_html: html,
                source_type: page_source_type(source.source_kind).to_string(),
                source_url: doc.source_url.clone(),
                author_name: doc.author_name.clone(),
                knowledge_date: doc.knowledge_date.clone(),
                is_public: existing.as_ref().is_some_and(|p| p.is_public),
                public_id: existing.as_ref().and_then(|p| p.public_id.clone()),
                knowledge_source_id: Some(source.id),
                external_id: Some(doc.external_id.clone()),
                content_hash: Some(hash),
                raw_content_hash: raw_hash,
                last_synced_at: Some(now),
                fetched_at: Some(opts.fetched_at),
                ..PageUpsert::default()
            })
            .await;
        match write {
            Ok(w) if created => Ok((Outcome::Created(slug, w.index_seq), ai)),
            Ok(w) => Ok((Outcome::Updated(slug, w.index_seq), ai)),
            Err(IngestError::Invalid(m)) => Ok((fail(m), ai)),
            Err(e) => Err(ingest_to_storage(e)),
        }
    }
}

/// An ingest failure other than a bad document, as the storage error that
/// ends the run (the job retries it).
fn ingest_to_storage(e: IngestError) -> StorageError {
    match e {
        IngestError::Storage(s) => s,
        other => StorageError::Backend(other.to_string()),
    }
}

/// The AI step a run uses: web pages are always distilled; other kinds are
/// cleaned when `ai_cleanup` (after the run's option overrides) is on.
pub fn ai_step(kind: SourceKind, ai_cleanup: bool, instructions: Option<String>) -> AiStep {
    match kind {
        SourceKind::WebPage => AiStep::Distill,
        _ if ai_cleanup => AiStep::Cleanup { instructions },
        _ => AiStep::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_their_page_source_types_and_ai_steps() {
        assert_eq!(page_source_type(SourceKind::WebPage), "url");
        assert_eq!(page_source_type(SourceKind::ApiPull), "api");
        assert_eq!(page_source_type(SourceKind::Webhook), "webhook");
        assert_eq!(page_source_type(SourceKind::ApiPush), "api_push");
        assert_eq!(ai_step(SourceKind::WebPage, false, None), AiStep::Distill);
        assert_eq!(ai_step(SourceKind::ApiPush, false, None), AiStep::None);
        assert_eq!(
            ai_step(SourceKind::ApiPull, true, Some("x".into())),
            AiStep::Cleanup {
                instructions: Some("x".into())
            }
        );
    }
}
