//! Knowledge search (§10.2), every constant named:
//! vector lane (cosine, floor per model — 0.32 for `text-embedding-3-large`,
//! limit `max(limit, 30)`) + keyword lane (OR of tokens ≥ 2 chars, BM25,
//! limit 20, never floored) → RRF k = 60, equal weights, ties in the vector
//! lane's order → at most 3 chunks per page → optional rerank of the first
//! 20 (keep `min(limit, 12)` if it succeeded) → neighbour expansion
//! (`chunk_index ± 1`, skipping chunks already present, 600 chars, at most
//! 10 neighbours).

use std::collections::HashSet;

use index::corpus::Hit;
use index::rerank::{rerank_fail_open, truncate_chars};
use index::rrf::{Lane, cap_per_source, fuse};
use serde::Serialize;
use storage::{IndexCorpus, KnowledgeChunk, KnowledgeChunkHit, key};
use uuid::Uuid;

use super::exact::StoredVectors;
use super::params::{
    DEFAULT_LANE_WEIGHT, KNOWLEDGE_MAX_CHUNKS_PER_PAGE, KNOWLEDGE_RERANK_KEEP,
    KNOWLEDGE_RERANK_WINDOW, RRF_K,
};
pub use super::params::{
    KNOWLEDGE_CONTEXT_EXPANSION_LIMIT, KNOWLEDGE_DEFAULT_LIMIT, KNOWLEDGE_KEYWORD_LANE_LIMIT,
    KNOWLEDGE_MAX_LIMIT, KNOWLEDGE_NEIGHBOR_EXCERPT_CHARS, KNOWLEDGE_VECTOR_LANE_MIN,
};
use super::{Retrieval, SearchError};
use crate::platform::tenancy::current_tenant_id;

/// Embedding usage purpose of the query vector.
pub const PURPOSE_KB_SEARCH: &str = "kb_search";

/// What the agent reads when nothing matched: absence of results is not
/// absence of the answer.
pub const KNOWLEDGE_EMPTY_GUIDANCE: &str = "No knowledge base entries matched this search. \
That does not mean the information does not exist: try again with fewer, more specific key terms \
or a synonym, or search Slack history, before telling the member you could not find it.";

/// A knowledge search request.
#[derive(Clone, Debug, Default)]
pub struct KnowledgeQuery {
    /// The member's words.
    pub query: String,
    /// Caller limit (default 25).
    pub limit: Option<usize>,
    /// Restrict to these page source types (tier scope); `None` = all.
    pub source_types: Option<Vec<String>>,
    /// Allow the LLM rerank (still subject to `SEARCH_LLM_RERANK`).
    pub rerank: bool,
    /// A query vector computed by the caller (benchmarks, eval); `None`
    /// embeds `query` with the configured embedder.
    pub vector: Option<Vec<f32>>,
}

/// A neighbouring chunk attached for context.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Neighbor {
    /// Its position in the page.
    pub chunk_index: i32,
    /// Its text, cut to 600 characters.
    pub text: String,
}

/// One result chunk.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct KnowledgeResult {
    /// Page id.
    pub page_id: Uuid,
    /// Chunk id.
    pub chunk_id: Uuid,
    /// Page slug.
    pub slug: String,
    /// Page title.
    pub title: String,
    /// Public id (for `/kb/:tenant/:publicId` links).
    pub public_id: Option<String>,
    /// Page source type.
    pub source_type: String,
    /// Author display name.
    pub author_name: Option<String>,
    /// Breadcrumb of the chunk's section.
    pub section_heading: Option<String>,
    /// Position in the page.
    pub chunk_index: i32,
    /// The chunk text.
    pub text: String,
    /// Fused RRF score.
    pub score: f64,
    /// Rerank score when the rerank was applied (−1 = unscored).
    pub rerank_score: Option<f64>,
    /// Cosine similarity when the vector lane found it.
    pub similarity: Option<f32>,
    /// 1-based rank in the vector lane.
    pub vector_rank: Option<usize>,
    /// 1-based rank in the keyword lane.
    pub keyword_rank: Option<usize>,
    /// Neighbouring chunks (`chunk_index ± 1`) not already in the results.
    pub neighbors: Vec<Neighbor>,
}

/// The outcome of a knowledge search.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct KnowledgeSearch {
    /// Results, best first.
    pub results: Vec<KnowledgeResult>,
    /// Guidance for the agent when there are no results.
    pub guidance: Option<String>,
    /// Whether the LLM rerank reordered the results.
    pub reranked: bool,
    /// Whether the vector lane ran (false when the query could not be embedded).
    pub vector_lane: bool,
}

struct Candidate {
    hit: Hit,
    score: f64,
    similarity: Option<f32>,
    vector_rank: Option<usize>,
    keyword_rank: Option<usize>,
    row: Option<KnowledgeChunkHit>,
}

impl Retrieval {
    /// Search the tenant's knowledge base (§10.2).
    pub async fn search_knowledge(
        &self,
        q: KnowledgeQuery,
    ) -> Result<KnowledgeSearch, SearchError> {
        let tenant = current_tenant_id()?;
        // Cut before the lanes, the query embedding and the rerank prompt.
        let query = crate::limits::caps::cut_chars(
            q.query.trim(),
            crate::limits::caps::MAX_SEARCH_QUERY_CHARS,
        )
        .trim_end()
        .to_string();
        if query.is_empty() {
            return Err(SearchError::Invalid("query must not be empty".into()));
        }
        let limit = q.limit.unwrap_or(KNOWLEDGE_DEFAULT_LIMIT);
        if limit == 0 || limit > KNOWLEDGE_MAX_LIMIT {
            return Err(SearchError::Invalid(format!(
                "limit must be between 1 and {KNOWLEDGE_MAX_LIMIT}"
            )));
        }
        let started = std::time::Instant::now();
        let handle = self.registry.get(tenant, IndexCorpus::Knowledge).await?;
        let qvec = match q.vector {
            Some(v) => Some(v),
            None => self.query_vector(&query, PURPOSE_KB_SEARCH).await,
        };
        let vector_lane = qvec.is_some();
        let will_rerank = self.reranker.is_some() && self.rerank_enabled && q.rerank;
        // Lanes, fusion and the result rows (plus their neighbours when the
        // fused order is final) in one blocking section.
        let job = Retrieve {
            index: handle.index.clone(),
            store: self.store.clone(),
            tenant,
            model: self.registry.model().to_string(),
            query: query.clone(),
            vector: qvec,
            floor: self.floors.floor_for(self.embedder.model()),
            limit,
            source_types: q.source_types.clone(),
            with_neighbors: !will_rerank,
        };
        let Retrieved {
            candidates,
            neighbors,
            stages,
        } = super::run_blocking_here(move |rt| job.run(rt)).await?;
        let retrieved_at = started.elapsed();

        let outcome = rerank_fail_open(
            self.reranker.as_deref(),
            self.rerank_enabled && q.rerank,
            &query,
            candidates,
            KNOWLEDGE_RERANK_WINDOW,
            |c| c.hit.key.to_string(),
            |c| c.row.as_ref().map_or("", |r| r.chunk_text.as_str()),
        )
        .await;
        let reranked = outcome.applied();
        let keep = if reranked {
            limit.min(KNOWLEDGE_RERANK_KEEP)
        } else {
            limit
        };
        let mut results: Vec<KnowledgeResult> = outcome
            .items
            .into_iter()
            .zip(outcome.scores)
            .take(keep)
            .filter_map(|(c, rerank_score)| {
                let row = c.row?;
                let meta = row.metadata().unwrap_or_else(|e| {
                    tracing::warn!(chunk = %row.id, error = %e, "chunk metadata is not JSON; result returned without it");
                    Default::default()
                });
                Some(KnowledgeResult {
                    page_id: row.knowledge_page_id,
                    chunk_id: row.id,
                    slug: meta.slug.unwrap_or_default(),
                    title: meta.title.unwrap_or_default(),
                    public_id: meta.public_id,
                    source_type: meta.source_type.unwrap_or_default(),
                    author_name: meta.author_name,
                    section_heading: meta.section_heading,
                    chunk_index: row.chunk_index,
                    text: row.chunk_text,
                    score: c.score,
                    rerank_score,
                    similarity: c.similarity,
                    vector_rank: c.vector_rank,
                    keyword_rank: c.keyword_rank,
                    neighbors: Vec::new(),
                })
            })
            .collect();
        let neighbors = match neighbors {
            Some(n) => n,
            None => {
                let kept: Vec<(Uuid, i32)> =
                    results.iter().map(|r| (r.page_id, r.chunk_index)).collect();
                self.store
                    .snapshot(move |s| neighbor_rows(s, tenant, &kept))
                    .await?
            }
        };
        attach_neighbors(&mut results, neighbors);
        tracing::debug!(
            lanes_us = stages.lanes.as_micros() as u64,
            fuse_us = (stages.fused - stages.lanes).as_micros() as u64,
            rows_us = (stages.rows - stages.fused).as_micros() as u64,
            retrieved_us = retrieved_at.as_micros() as u64,
            total_us = started.elapsed().as_micros() as u64,
            "knowledge search stages"
        );
        let guidance = results
            .is_empty()
            .then(|| KNOWLEDGE_EMPTY_GUIDANCE.to_string());
        Ok(KnowledgeSearch {
            results,
            guidance,
            reranked,
            vector_lane,
        })
    }
}

/// The blocking half of a knowledge search: both lanes, RRF + cap, and the
/// rows of every candidate that can reach the output or the rerank window.
struct Retrieve {
    index: std::sync::Arc<index::corpus::CorpusIndex>,
    store: storage::RedbStore,
    tenant: Uuid,
    /// The embedding model the vector lane indexes.
    model: String,
    query: String,
    vector: Option<Vec<f32>>,
    floor: f32,
    limit: usize,
    source_types: Option<Vec<String>>,
    /// Read the neighbours in the same snapshot (no rerank will reorder).
    with_neighbors: bool,
}

/// Elapsed time at the end of each stage (the debug stage event).
struct Stages {
    lanes: std::time::Duration,
    fused: std::time::Duration,
    rows: std::time::Duration,
}

struct Retrieved {
    candidates: Vec<Candidate>,
    neighbors: Option<Vec<(usize, KnowledgeChunkHit)>>,
    stages: Stages,
}

impl Retrieve {
    /// Runs on the blocking pool. The keyword lane goes to a second blocking
    /// thread while this one walks the HNSW graph: one query costs the slower
    /// lane, not their sum.
    fn run(self, rt: &tokio::runtime::Handle) -> Result<Retrieved, SearchError> {
        let started = std::time::Instant::now();
        let keyword = {
            let index = self.index.clone();
            let text = self.query.clone();
            let tags = self.source_types.clone();
            rt.spawn_blocking(move || {
                index.keyword_search_any_tagged(
                    &text,
                    KNOWLEDGE_KEYWORD_LANE_LIMIT,
                    tags.as_deref(),
                )
            })
        };
        let vector_hits: Vec<Hit> = match &self.vector {
            Some(v) => StoredVectors::new(
                &self.store,
                self.tenant,
                IndexCorpus::Knowledge,
                &self.model,
            )
            .search(
                &self.index,
                v,
                self.limit.max(KNOWLEDGE_VECTOR_LANE_MIN),
                self.source_types.as_deref(),
            )?
            .into_iter()
            .filter(|h| h.score >= self.floor)
            .collect(),
            None => Vec::new(),
        };
        let keyword_hits = rt
            .block_on(keyword)
            .map_err(|e| SearchError::Task(e.to_string()))??;
        let lanes = started.elapsed();

        let similarity: std::collections::HashMap<u64, f32> =
            vector_hits.iter().map(|h| (h.key, h.score)).collect();
        let fused = fuse(
            RRF_K,
            vec![
                Lane::new(
                    DEFAULT_LANE_WEIGHT,
                    vector_hits.into_iter().map(|h| (h.key, h)).collect(),
                ),
                Lane::new(
                    DEFAULT_LANE_WEIGHT,
                    keyword_hits.into_iter().map(|h| (h.key, h)).collect(),
                ),
            ],
        )
        .map_err(|e| SearchError::Task(e.to_string()))?;
        let capped = cap_per_source(fused, KNOWLEDGE_MAX_CHUNKS_PER_PAGE, |f| {
            f.payload.meta.group.clone()
        });
        // Rows for everything that can reach the output or the rerank window.
        let head = capped.len().min(self.limit.max(KNOWLEDGE_RERANK_WINDOW));
        let mut pending = capped.into_iter().map(|f| Candidate {
            similarity: similarity.get(&f.id).copied(),
            vector_rank: f.lane_ranks.first().copied().flatten(),
            keyword_rank: f.lane_ranks.get(1).copied().flatten(),
            score: f.score,
            hit: f.payload,
            row: None,
        });
        let fused = started.elapsed();

        let (tenant, limit) = (self.tenant, self.limit);
        let (candidates, neighbors) = self.store.snapshot_blocking(|s| {
            // A row deleted after the index answered is simply gone; the
            // next fused candidates take its place (usually one round).
            let mut candidates: Vec<Candidate> = Vec::with_capacity(head);
            while candidates.len() < head {
                let batch: Vec<Candidate> =
                    pending.by_ref().take(head - candidates.len()).collect();
                if batch.is_empty() {
                    break;
                }
                let pks: Vec<storage::Key> = batch
                    .iter()
                    .map(|c| key().uuid(Uuid::from_u128(c.hit.meta.row)))
                    .collect();
                let rows: Vec<Option<KnowledgeChunkHit>> =
                    s.get_many_projected(Some(tenant), &pks)?;
                candidates.extend(
                    batch
                        .into_iter()
                        .zip(rows)
                        .filter_map(|(c, row)| row.map(|r| Candidate { row: Some(r), ..c })),
                );
            }
            let neighbors = if self.with_neighbors {
                let kept: Vec<(Uuid, i32)> = candidates
                    .iter()
                    .filter_map(|c| c.row.as_ref())
                    .take(limit)
                    .map(|r| (r.knowledge_page_id, r.chunk_index))
                    .collect();
                Some(neighbor_rows(s, tenant, &kept)?)
            } else {
                None
            };
            Ok((candidates, neighbors))
        })?;
        Ok(Retrieved {
            candidates,
            neighbors,
            stages: Stages {
                lanes,
                fused,
                rows: started.elapsed(),
            },
        })
    }
}

/// The neighbours (`chunk_index ± 1` of the same page, skipping chunks
/// already among the results) of `kept`, in result order, up to
/// [`KNOWLEDGE_CONTEXT_EXPANSION_LIMIT`]; each with the index of the result
/// it belongs to.
fn neighbor_rows(
    s: &storage::Snapshot<'_>,
    tenant: Uuid,
    kept: &[(Uuid, i32)],
) -> Result<Vec<(usize, KnowledgeChunkHit)>, storage::StorageError> {
    let mut present: HashSet<(Uuid, i32)> = kept.iter().copied().collect();
    let mut wanted: Vec<(usize, Uuid, i32)> = Vec::new();
    for (i, (page, index)) in kept.iter().enumerate() {
        for idx in [index - 1, index + 1] {
            if idx >= 0 && present.insert((*page, idx)) {
                wanted.push((i, *page, idx));
            }
        }
    }
    // The first KNOWLEDGE_CONTEXT_EXPANSION_LIMIT neighbours that exist, in
    // `wanted` order. Read a few more keys than still needed per round (page
    // edges have no neighbour) instead of all of them: with 20 results there
    // are up to 40 candidates for 10 places.
    let mut found: Vec<(usize, KnowledgeChunkHit)> = Vec::new();
    let mut next = 0;
    while found.len() < KNOWLEDGE_CONTEXT_EXPANSION_LIMIT && next < wanted.len() {
        let need = KNOWLEDGE_CONTEXT_EXPANSION_LIMIT - found.len();
        let end = (next + need + need / 2 + 1).min(wanted.len());
        let keys: Vec<storage::Key> = wanted[next..end]
            .iter()
            .map(|(_, page, idx)| key().uuid(*page).i64(i64::from(*idx)))
            .collect();
        let rows: Vec<Option<KnowledgeChunkHit>> =
            s.find_unique_many_projected(Some(tenant), KnowledgeChunk::PAGE_CHUNK_KEY, &keys)?;
        found.extend(
            wanted[next..end]
                .iter()
                .zip(rows)
                .filter_map(|((i, _, _), row)| Some((*i, row?))),
        );
        next = end;
    }
    found.truncate(KNOWLEDGE_CONTEXT_EXPANSION_LIMIT);
    Ok(found)
}

/// Attach neighbour excerpts (600 chars) to their results, in index order.
fn attach_neighbors(results: &mut [KnowledgeResult], found: Vec<(usize, KnowledgeChunkHit)>) {
    for (i, row) in found {
        if let Some(r) = results.get_mut(i) {
            r.neighbors.push(Neighbor {
                chunk_index: row.chunk_index,
                text: truncate_chars(&row.chunk_text, KNOWLEDGE_NEIGHBOR_EXCERPT_CHARS).to_string(),
            });
        }
    }
    for r in results.iter_mut() {
        r.neighbors.sort_by_key(|n| n.chunk_index);
    }
}
