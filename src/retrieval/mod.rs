//! Retrieval (spec §10, §11.3, GUIDE §4): the per-tenant search indexes kept
//! consistent with redb through the index outbox, the ingest paths that
//! write rows and outbox entries together, and the knowledge and Slack
//! search services.

pub mod audit;
pub mod contributions;
pub mod distill;
pub mod docs;
pub mod exact;
pub mod ingest;
pub mod knowledge;
pub mod params;
pub mod registry;
pub mod rerank;
pub mod sanitize;
pub mod slack;

use std::collections::HashMap;
use std::sync::Arc;

use index::rerank::Reranker;
use storage::{IndexCorpus, RedbStore};

use crate::ai::embeddings::Embedder;
use crate::platform::clock::{Clock, SystemClock};

pub use exact::StoredVectors;
pub use ingest::{IngestError, PageUpsert, PageWrite};
pub use knowledge::{KnowledgeQuery, KnowledgeResult, KnowledgeSearch};
pub use params::{HASHING_VECTOR_FLOOR, KNOWLEDGE_VECTOR_FLOOR, SPEC_EMBEDDING_MODEL};
pub use registry::{CorpusHandle, IndexError, IndexRegistry};

/// Errors of the search services.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// Bad request (the message says what).
    #[error("{0}")]
    Invalid(String),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The index files failed.
    #[error(transparent)]
    Corpus(#[from] index::corpus::CorpusError),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    /// A blocking task failed.
    #[error("search task failed: {0}")]
    Task(String),
    /// Called outside a tenant scope (a bug).
    #[error(transparent)]
    NoTenant(#[from] crate::platform::tenancy::NoTenantContext),
}

/// The knowledge vector floor per embedding model: cosine scales differ
/// between models, so 0.32 (the spec's value for `text-embedding-3-large`)
/// is one entry of a table, not a global.
#[derive(Clone, Debug)]
pub struct VectorFloors {
    floors: HashMap<String, f32>,
    default: f32,
}

impl Default for VectorFloors {
    fn default() -> Self {
        let mut floors = HashMap::new();
        floors.insert(SPEC_EMBEDDING_MODEL.to_string(), KNOWLEDGE_VECTOR_FLOOR);
        floors.insert(
            crate::ai::embeddings::HASHING_MODEL.to_string(),
            HASHING_VECTOR_FLOOR,
        );
        VectorFloors {
            floors,
            default: KNOWLEDGE_VECTOR_FLOOR,
        }
    }
}

impl VectorFloors {
    /// Set the floor of `model`.
    pub fn with(mut self, model: &str, floor: f32) -> Self {
        self.floors.insert(model.to_string(), floor);
        self
    }

    /// The floor for `model` (the spec's 0.32 when the model is not listed).
    pub fn floor_for(&self, model: &str) -> f32 {
        self.floors.get(model).copied().unwrap_or(self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic in a search's blocking half is an error for that search on
    /// both paths (in place on a worker, or on the blocking pool).
    async fn a_panicking_search_is_an_error() {
        let ok = run_blocking_here(|_| Ok(7)).await.unwrap();
        assert_eq!(ok, 7);
        let err = run_blocking_here::<(), _>(|_| panic!("lane exploded"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, SearchError::Task(m) if m.contains("lane exploded")),
            "{err}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panic_in_place_on_a_worker_is_a_task_error() {
        a_panicking_search_is_an_error().await;
    }

    #[tokio::test]
    async fn a_panic_on_the_blocking_pool_is_a_task_error() {
        a_panicking_search_is_an_error().await;
    }

    #[test]
    fn the_spec_floor_is_0_32_and_other_models_can_differ() {
        let f = VectorFloors::default();
        assert_eq!(f.floor_for("openai/text-embedding-3-large"), 0.32);
        assert_eq!(f.floor_for("some/unknown-model"), 0.32);
        assert_eq!(f.floor_for("root/hashing-v1"), 0.5);
        let f = f.with("local/minilm", 0.2);
        assert_eq!(f.floor_for("local/minilm"), 0.2);
    }
}

/// The retrieval service: ingest and search over one store and its indexes.
#[derive(Clone)]
pub struct Retrieval {
    pub(crate) store: RedbStore,
    pub(crate) registry: IndexRegistry,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) reranker: Option<Arc<dyn Reranker>>,
    pub(crate) rerank_enabled: bool,
    pub(crate) floors: VectorFloors,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Retrieval {
    /// A service over `store` and `registry`, embedding with `embedder`.
    pub fn new(store: RedbStore, registry: IndexRegistry, embedder: Arc<dyn Embedder>) -> Self {
        Retrieval {
            store,
            registry,
            embedder,
            reranker: None,
            rerank_enabled: true,
            floors: VectorFloors::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// Stamp rows with `clock` (the app's one clock) instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Plug in the LLM reranker; `enabled` is `SEARCH_LLM_RERANK`.
    pub fn with_reranker(mut self, reranker: Option<Arc<dyn Reranker>>, enabled: bool) -> Self {
        self.reranker = reranker;
        self.rerank_enabled = enabled;
        self
    }

    /// Replace the per-model vector floors.
    pub fn with_floors(mut self, floors: VectorFloors) -> Self {
        self.floors = floors;
        self
    }

    /// The open index of `tenant`'s `corpus` and the lossless vectors its
    /// vector lane rescores against.
    pub(crate) async fn index_and_vectors(
        &self,
        tenant: uuid::Uuid,
        corpus: IndexCorpus,
    ) -> Result<(Arc<index::corpus::CorpusIndex>, StoredVectors), IndexError> {
        let index = self.registry.get(tenant, corpus).await?.index.clone();
        let vectors = StoredVectors::new(&self.store, tenant, corpus, self.registry.model());
        Ok((index, vectors))
    }

    /// The index registry.
    pub fn registry(&self) -> &IndexRegistry {
        &self.registry
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Embed a query; `None` (logged) when the embedder fails, so the
    /// keyword lanes still answer.
    pub(crate) async fn query_vector(&self, query: &str, purpose: &str) -> Option<Vec<f32>> {
        match self.embedder.embed(&[query.to_string()], purpose).await {
            Ok(mut v) if v.len() == 1 => v.pop(),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(purpose, error = %e, "query embedding failed; vector lane skipped");
                None
            }
        }
    }
}

/// Run the blocking half of a search. On the multi-threaded runtime it runs
/// right here in [`tokio::task::block_in_place`] (this worker's other tasks
/// move to another worker): no hand-off to a blocking-pool thread and no
/// wake-up back, ~0.2 ms of a ~2 ms query on a 2-vCPU VM
/// (`docs/benchmarks/retrieval.md`). Other futures of the *same* task (an
/// agent's tool batch joins its calls in one task) wait for it, ~2 ms.
/// A current-thread runtime (tests) cannot do that and takes the blocking
/// pool. Either way a panic inside becomes [`SearchError::Task`], never an
/// unwound request.
pub(crate) async fn run_blocking_here<T, F>(f: F) -> Result<T, SearchError>
where
    T: Send + 'static,
    F: FnOnce(&tokio::runtime::Handle) -> Result<T, SearchError> + Send + 'static,
{
    let rt = tokio::runtime::Handle::current();
    if rt.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread {
        tokio::task::block_in_place(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&rt))).unwrap_or_else(
                |panic| {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!(panic = %what, "search panicked");
                    Err(SearchError::Task(format!("search panicked: {what}")))
                },
            )
        })
    } else {
        tokio::task::spawn_blocking(move || f(&rt))
            .await
            .map_err(|e| SearchError::Task(e.to_string()))?
    }
}
