//! The vector lanes' exact rescoring source: the f16 embeddings in redb, the
//! one lossless copy of every vector. The HNSW graph holds sign bits only
//! (what its walk needs); [`StoredVectors::search`] takes a wider candidate list from
//! it and orders the candidates by their exact cosine against these.
//!
//! A candidate whose row is gone, whose embedding is missing or from another
//! model, or (Slack) whose message was withdrawn since the index answered
//! keeps its graph score, as before quantisation: the row read after fusion
//! drops it, and the index drops it at its next batch.

use index::corpus::{CorpusError, CorpusIndex, Hit};
use index::exact::{ExactScorer, ExactVectors};
use storage::{
    Embedding, IndexCorpus, KnowledgeChunkVector, RedbStore, SlackMessageVector,
    SlackThreadArtifact, key,
};
use uuid::Uuid;

use super::params::rescore_candidates;

/// One tenant's stored vectors of one corpus, read in one redb snapshot per
/// candidate list.
pub struct StoredVectors {
    store: RedbStore,
    tenant: Uuid,
    corpus: IndexCorpus,
    /// The embedding model the lane indexes; other models' vectors do not count.
    model: String,
}

impl StoredVectors {
    /// `tenant`'s vectors of `corpus` in `store`, made by `model`.
    pub fn new(store: &RedbStore, tenant: Uuid, corpus: IndexCorpus, model: &str) -> Self {
        StoredVectors {
            store: store.clone(),
            tenant,
            corpus,
            model: model.to_string(),
        }
    }
}

impl ExactVectors for StoredVectors {
    fn similarities(&self, query: &[f32], rows: &[u128]) -> Result<Vec<Option<f32>>, String> {
        let pks: Vec<storage::Key> = rows
            .iter()
            .map(|r| key().uuid(Uuid::from_u128(*r)))
            .collect();
        let tenant = Some(self.tenant);
        let mut scorer = ExactScorer::new(query);
        let mut score = |e: Option<&Embedding>| {
            e.filter(|e| e.model == self.model)
                .and_then(|e| scorer.cosine_f16_le(&e.f16))
        };
        self.store
            .snapshot_blocking(|s| {
                Ok(match self.corpus {
                    IndexCorpus::Knowledge => s
                        .get_many_projected::<KnowledgeChunkVector>(tenant, &pks)?
                        .iter()
                        .map(|r| score(r.as_ref().and_then(|r| r.embedding.as_ref())))
                        .collect(),
                    IndexCorpus::SlackMessages => s
                        .get_many_projected::<SlackMessageVector>(tenant, &pks)?
                        .iter()
                        .map(|r| {
                            score(
                                r.as_ref()
                                    .filter(|m| m.withdrawn_at.is_none())
                                    .and_then(|m| m.embedding.as_ref()),
                            )
                        })
                        .collect(),
                    IndexCorpus::SlackArtifacts => s
                        .get_many::<SlackThreadArtifact>(tenant, &pks)?
                        .iter()
                        .map(|r| score(r.as_ref().and_then(|a| a.embedding.as_ref())))
                        .collect(),
                })
            })
            .map_err(|e| e.to_string())
    }
}

impl StoredVectors {
    /// The vector lane: top `k` by exact cosine similarity (the sign-bit
    /// graph's top [`rescore_candidates`] rescored against the f16
    /// embeddings in redb), best first, optionally restricted to `tags`.
    pub fn search(
        &self,
        index: &CorpusIndex,
        query: &[f32],
        k: usize,
        tags: Option<&[String]>,
    ) -> Result<Vec<Hit>, CorpusError> {
        let candidates = rescore_candidates(index.quantization(), k);
        index.vector_search_exact(query, k, candidates, tags, self)
    }
}
