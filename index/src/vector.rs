//! The vector lane: one usearch HNSW index per tenant per corpus, cosine
//! metric. The index holds what the graph walk needs: i8 vectors
//! ([`Quantization::I8`], Root's setting) quantised here with one scale per
//! vector (cosine ignores a vector's length, so each vector uses the whole
//! `-127..=127` range), or f16. The lossless copy of every vector lives with
//! the caller (redb); [`CorpusIndex::vector_search_exact`](crate::corpus::CorpusIndex::vector_search_exact)
//! rescores a wider candidate list against it.
//!
//! Scores are cosine *similarity* (`1 − distance`), the quantity the spec's
//! floors are written in (e.g. the knowledge lane's 0.32). Keys are `u64`;
//! mapping row ids to keys is the caller's business.
//!
//! Concurrency: usearch allows concurrent `add`/`search`/`remove` on one
//! index; only growing its capacity must be exclusive, so that takes the
//! write side of an `RwLock` and grows geometrically (a capacity change per
//! insert would dominate ingest).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Embedding dimensions (spec §3.2: `text-embedding-3-large`, 3072).
pub const DIMENSIONS: usize = 3072;

/// HNSW parameters, chosen by the caller (Root's values and their
/// measurements are in `root::retrieval::params`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorConfig {
    /// Vector length.
    pub dimensions: usize,
    /// HNSW `M` (edges per node).
    pub connectivity: usize,
    /// `ef_construction`.
    pub expansion_add: usize,
    /// `ef_search`.
    pub expansion_search: usize,
    /// Concurrent callers usearch reserves thread contexts for.
    pub threads: usize,
    /// Scalar type of the vectors the graph stores and walks over.
    pub quantization: Quantization,
}

/// What the HNSW graph stores per vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantization {
    /// IEEE half floats (2 bytes per dimension; scores are exact up to f16).
    F16,
    /// Signed bytes, one scale per vector (1 byte per dimension; scores are
    /// approximate and meant to be rescored).
    I8,
}

#[cfg(test)]
impl VectorConfig {
    /// A configuration for this crate's tests: `dimensions` long vectors,
    /// HNSW M 16, ef_construction 128, ef_search 40.
    pub(crate) fn for_tests(dimensions: usize) -> Self {
        VectorConfig {
            dimensions,
            connectivity: 16,
            expansion_add: 128,
            expansion_search: 40,
            threads: 64,
            quantization: Quantization::I8,
        }
    }
}

/// Errors of the vector lane.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// usearch refused an operation (I/O, corrupt file, …).
    #[error("vector index: {0}")]
    Usearch(String),
    /// A vector of the wrong length.
    #[error("vector has {got} dimensions, the index expects {expected}")]
    Dimensions {
        /// Index dimensions.
        expected: usize,
        /// Given length.
        got: usize,
    },
    /// A write on a memory-mapped (read-only) view.
    #[error("the vector index is a read-only view")]
    ReadOnly,
}

fn us(e: impl std::fmt::Display) -> VectorError {
    VectorError::Usearch(e.to_string())
}

/// One HNSW index.
pub struct VectorIndex {
    inner: RwLock<Index>,
    cfg: VectorConfig,
    read_only: bool,
    /// The file a memory-mapped view serves from, until the first write
    /// loads it into memory ([`VectorIndex::map`]).
    mapped: Mutex<Option<PathBuf>>,
    contexts: ContextGate,
}

/// Bounds concurrent usearch calls to the thread contexts the index reserved
/// (`VectorConfig::threads`): usearch fails a search or insert that finds
/// no free context ("Reserve capacity ahead of searches!"), so a burst of
/// more concurrent callers waits here for one instead.
#[derive(Debug)]
struct ContextGate {
    free: Mutex<usize>,
    freed: std::sync::Condvar,
}

struct ContextGuard<'a>(&'a ContextGate);

impl ContextGate {
    fn new(contexts: usize) -> Self {
        ContextGate {
            free: Mutex::new(contexts.max(1)),
            freed: std::sync::Condvar::new(),
        }
    }

    fn enter(&self) -> ContextGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        ContextGuard(self)
    }
}

impl Drop for ContextGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// `v` as i8 with one scale per vector: the largest magnitude maps to 127,
/// the rest are rounded to the nearest step. A NaN component reads as 0; a
/// zero vector (or one with an infinite component) becomes all zeros.
pub fn quantize_i8(v: &[f32]) -> Vec<i8> {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max.is_finite() && max > 0.0) {
        return vec![0; v.len()];
    }
    let scale = 127.0 / max;
    v.iter()
        .map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8)
        .collect()
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("cfg", &self.cfg)
            .field("len", &self.len())
            .finish()
    }
}

fn options(cfg: &VectorConfig) -> IndexOptions {
    IndexOptions {
        dimensions: cfg.dimensions,
        metric: MetricKind::Cos,
        quantization: match cfg.quantization {
            Quantization::F16 => ScalarKind::F16,
            Quantization::I8 => ScalarKind::I8,
        },
        connectivity: cfg.connectivity,
        expansion_add: cfg.expansion_add,
        expansion_search: cfg.expansion_search,
        multi: false,
    }
}

impl VectorIndex {
    /// An empty in-memory index.
    pub fn new(cfg: VectorConfig) -> Result<Self, VectorError> {
        let index = Index::new(&options(&cfg)).map_err(us)?;
        index
            .reserve_capacity_and_threads(64, cfg.threads)
            .map_err(us)?;
        Ok(VectorIndex {
            inner: RwLock::new(index),
            contexts: ContextGate::new(cfg.threads),
            cfg,
            read_only: false,
            mapped: Mutex::new(None),
        })
    }

    /// Load a saved index fully into memory (writable).
    pub fn load(path: &Path, cfg: VectorConfig) -> Result<Self, VectorError> {
        Ok(VectorIndex {
            inner: RwLock::new(Self::load_index(path, &cfg)?),
            contexts: ContextGate::new(cfg.threads),
            cfg,
            read_only: false,
            mapped: Mutex::new(None),
        })
    }

    fn load_index(path: &Path, cfg: &VectorConfig) -> Result<Index, VectorError> {
        let index = Index::new(&options(cfg)).map_err(us)?;
        index.load(&path.to_string_lossy()).map_err(us)?;
        if index.dimensions() != cfg.dimensions {
            return Err(VectorError::Dimensions {
                expected: cfg.dimensions,
                got: index.dimensions(),
            });
        }
        let cap = index.size().max(64).next_power_of_two();
        index
            .reserve_capacity_and_threads(cap, cfg.threads)
            .map_err(us)?;
        index.change_expansion_search(cfg.expansion_search);
        Ok(index)
    }

    fn view_index(path: &Path, cfg: &VectorConfig) -> Result<Index, VectorError> {
        let index = Index::new(&options(cfg)).map_err(us)?;
        index.view(&path.to_string_lossy()).map_err(us)?;
        if index.dimensions() != cfg.dimensions {
            return Err(VectorError::Dimensions {
                expected: cfg.dimensions,
                got: index.dimensions(),
            });
        }
        // A view gets only as many search contexts as the CPU has cores;
        // a search beyond them fails ("Reserve capacity ahead of
        // searches!"). Reserving on a view copies node pointers, not the
        // mapped vectors.
        index
            .reserve_capacity_and_threads(index.size(), cfg.threads)
            .map_err(us)?;
        index.change_expansion_search(cfg.expansion_search);
        Ok(index)
    }

    /// Serve a saved index from a memory-mapped view (no load at open;
    /// pages come from the page cache on demand, and only the pages a
    /// search touches become resident). The first write loads the file into
    /// memory and continues on that copy, so the index stays writable.
    pub fn map(path: &Path, cfg: VectorConfig) -> Result<Self, VectorError> {
        Ok(VectorIndex {
            inner: RwLock::new(Self::view_index(path, &cfg)?),
            contexts: ContextGate::new(cfg.threads),
            cfg,
            read_only: false,
            mapped: Mutex::new(Some(path.to_path_buf())),
        })
    }

    /// Replace a memory-mapped view by a loaded, writable copy of its file
    /// (no-op otherwise).
    fn ensure_loaded(&self) -> Result<(), VectorError> {
        if self.read_only {
            return Err(VectorError::ReadOnly);
        }
        let mut mapped = self.mapped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(path) = mapped.as_ref() {
            let loaded = Self::load_index(path, &self.cfg)?;
            *self.inner.write().unwrap_or_else(|p| p.into_inner()) = loaded;
            *mapped = None;
        }
        Ok(())
    }

    /// Whether the index is still served from a memory-mapped file.
    pub fn is_mapped(&self) -> bool {
        self.mapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Memory-map a saved index (read-only; no load time, pages on demand).
    pub fn view(path: &Path, cfg: VectorConfig) -> Result<Self, VectorError> {
        Ok(VectorIndex {
            inner: RwLock::new(Self::view_index(path, &cfg)?),
            contexts: ContextGate::new(cfg.threads),
            cfg,
            read_only: true,
            mapped: Mutex::new(None),
        })
    }

    /// Save to `path` (write to a temp file, then rename: a crash never
    /// leaves a half-written index behind).
    pub fn save(&self, path: &Path) -> Result<(), VectorError> {
        self.ensure_loaded()?;
        let tmp = path.with_extension("tmp");
        {
            let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
            index.save(&tmp.to_string_lossy()).map_err(us)?;
        }
        std::fs::rename(&tmp, path).map_err(us)
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(|p| p.into_inner()).size()
    }

    /// Whether the index holds no vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: u64) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(key)
    }

    fn check(&self, v: &[f32]) -> Result<(), VectorError> {
        if v.len() != self.cfg.dimensions {
            return Err(VectorError::Dimensions {
                expected: self.cfg.dimensions,
                got: v.len(),
            });
        }
        Ok(())
    }

    /// Insert or replace the vector of `key`.
    pub fn upsert(&self, key: u64, v: &[f32]) -> Result<(), VectorError> {
        self.upsert_batch(std::iter::once((key, v)))
    }

    /// Insert or replace many vectors (one capacity check for the batch).
    pub fn upsert_batch<'a>(
        &self,
        items: impl IntoIterator<Item = (u64, &'a [f32])>,
    ) -> Result<(), VectorError> {
        self.ensure_loaded()?;
        let items: Vec<(u64, &[f32])> = items.into_iter().collect();
        for (_, v) in &items {
            self.check(v)?;
        }
        self.reserve_for(items.len())?;
        let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
        for (key, v) in items {
            self.replace(&index, key, v)?;
        }
        Ok(())
    }

    /// Like [`upsert_batch`](Self::upsert_batch), spread over `threads` OS
    /// threads (usearch inserts concurrently; each insert takes a free
    /// thread context). Keys must be distinct within the batch. HNSW
    /// insertion dominates ingest (one graph search per vector), so this is
    /// what lets a bulk load use every core.
    pub fn upsert_batch_parallel(
        &self,
        items: &[(u64, Vec<f32>)],
        threads: usize,
    ) -> Result<(), VectorError> {
        if threads <= 1 || items.len() < 2 {
            return self.upsert_batch(items.iter().map(|(k, v)| (*k, v.as_slice())));
        }
        self.ensure_loaded()?;
        for (_, v) in items {
            self.check(v)?;
        }
        self.reserve_for(items.len())?;
        let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads.min(items.len()))
                .map(|_| {
                    s.spawn(|| {
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some((key, v)) = items.get(i) else {
                                return Ok(());
                            };
                            self.replace(&index, *key, v)?;
                        }
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(us("vector insert thread panicked")))
            })
        })
    }

    fn replace(&self, index: &Index, key: u64, v: &[f32]) -> Result<(), VectorError> {
        let _context = self.contexts.enter();
        if index.contains(key) {
            index.remove(key).map_err(us)?;
        }
        match self.cfg.quantization {
            Quantization::F16 => index.add(key, v),
            Quantization::I8 => index.add(key, &quantize_i8(v)),
        }
        .map_err(us)
    }

    /// Grow the capacity (geometrically) so `extra` more vectors fit.
    fn reserve_for(&self, extra: usize) -> Result<(), VectorError> {
        let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if index.size() + extra > index.capacity() {
            drop(index);
            let index = self.inner.write().unwrap_or_else(|p| p.into_inner());
            let need = index.size() + extra;
            if need > index.capacity() {
                let cap = need.next_power_of_two().max(64);
                index
                    .reserve_capacity_and_threads(cap, self.cfg.threads)
                    .map_err(us)?;
            }
        }
        Ok(())
    }

    /// Remove `key` (no-op when absent).
    pub fn remove(&self, key: u64) -> Result<(), VectorError> {
        if !self.contains(key) {
            return if self.read_only {
                Err(VectorError::ReadOnly)
            } else {
                Ok(())
            };
        }
        self.ensure_loaded()?;
        let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if index.contains(key) {
            index.remove(key).map_err(us)?;
        }
        Ok(())
    }

    /// Approximate top `k` by cosine similarity, best first.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        self.search_with(query, k, false)
    }

    /// Approximate top `k` among the keys `keep` accepts, best first (the
    /// filter runs inside the graph walk, so `k` results come back whenever
    /// `k` keys qualify).
    pub fn filtered_search(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(u64) -> bool,
    ) -> Result<Vec<(u64, f32)>, VectorError> {
        self.check(query)?;
        let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if k == 0 || index.size() == 0 {
            return Ok(Vec::new());
        }
        let m = match self.cfg.quantization {
            Quantization::F16 => index.filtered_search(query, k, keep),
            Quantization::I8 => index.filtered_search(&quantize_i8(query), k, keep),
        }
        .map_err(us)?;
        Ok(m.keys
            .into_iter()
            .zip(m.distances)
            .map(|(key, d)| (key, 1.0 - d))
            .collect())
    }

    /// Exact (brute-force) top `k` — the reference for recall measurements.
    pub fn exact_search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        self.search_with(query, k, true)
    }

    fn search_with(
        &self,
        query: &[f32],
        k: usize,
        exact: bool,
    ) -> Result<Vec<(u64, f32)>, VectorError> {
        self.check(query)?;
        let index = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if k == 0 || index.size() == 0 {
            return Ok(Vec::new());
        }
        let _context = self.contexts.enter();
        let m = match (self.cfg.quantization, exact) {
            (Quantization::F16, true) => index.exact_search(query, k),
            (Quantization::F16, false) => index.search(query, k),
            (Quantization::I8, true) => index.exact_search(&quantize_i8(query), k),
            (Quantization::I8, false) => index.search(&quantize_i8(query), k),
        }
        .map_err(us)?;
        Ok(m.keys
            .into_iter()
            .zip(m.distances)
            .map(|(key, d)| (key, 1.0 - d))
            .collect())
    }

    /// Drop every vector (a rebuild starts from here).
    pub fn clear(&self) -> Result<(), VectorError> {
        if self.read_only {
            return Err(VectorError::ReadOnly);
        }
        *self.mapped.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let fresh = Index::new(&options(&self.cfg)).map_err(us)?;
        fresh
            .reserve_capacity_and_threads(64, self.cfg.threads)
            .map_err(us)?;
        *self.inner.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        Ok(())
    }

    /// Change `ef_search` (recall/latency trade-off).
    pub fn set_expansion_search(&self, ef: usize) {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .change_expansion_search(ef);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(dims: usize) -> VectorConfig {
        VectorConfig::for_tests(dims)
    }

    fn unit(dims: usize, hot: usize) -> Vec<f32> {
        let mut v = vec![0.0; dims];
        v[hot % dims] = 1.0;
        v
    }

    #[test]
    fn cosine_similarity_orders_results_and_upsert_replaces() {
        let idx = VectorIndex::new(cfg(8)).unwrap();
        idx.upsert(1, &unit(8, 0)).unwrap();
        idx.upsert(2, &unit(8, 1)).unwrap();
        let mut mixed = unit(8, 0);
        mixed[1] = 1.0;
        idx.upsert(3, &mixed).unwrap();
        let hits = idx.search(&unit(8, 0), 3).unwrap();
        assert_eq!(hits[0].0, 1);
        assert!(
            (hits[0].1 - 1.0).abs() < 1e-3,
            "identical vector: similarity 1"
        );
        assert_eq!(hits[1].0, 3);
        assert!((hits[1].1 - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-2);
        assert!(hits[2].1.abs() < 1e-3, "orthogonal: similarity 0");
        idx.upsert(1, &unit(8, 5)).unwrap();
        assert_eq!(idx.len(), 3);
        assert_ne!(idx.search(&unit(8, 0), 1).unwrap()[0].0, 1, "replaced");
        idx.remove(1).unwrap();
        idx.remove(99).unwrap();
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn parallel_batches_insert_and_replace_every_key() {
        let idx = VectorIndex::new(cfg(16)).unwrap();
        let vec_of = |i: u64| {
            let mut v = vec![0.01; 16];
            v[(i % 16) as usize] = 1.0 + i as f32 / 100.0;
            v
        };
        let items: Vec<(u64, Vec<f32>)> = (0..300).map(|i| (i, vec_of(i))).collect();
        idx.upsert_batch_parallel(&items, 3).unwrap();
        assert_eq!(idx.len(), 300);
        // Replace ten keys with the one vector pointing the other way.
        let again: Vec<(u64, Vec<f32>)> = (100..110).map(|i| (i, vec![-1.0; 16])).collect();
        idx.upsert_batch_parallel(&again, 3).unwrap();
        assert_eq!(idx.len(), 300, "replaced, not duplicated");
        let mut keys: Vec<u64> = idx
            .exact_search(&[-1.0; 16], 10)
            .unwrap()
            .into_iter()
            .inspect(|(_, sim)| assert!((sim - 1.0).abs() < 1e-3))
            .map(|(k, _)| k)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, (100..110).collect::<Vec<u64>>());
        assert!(matches!(
            idx.upsert_batch_parallel(&[(1, vec![1.0; 3]), (2, vec![1.0; 16])], 2),
            Err(VectorError::Dimensions { .. })
        ));
    }

    #[test]
    fn wrong_dimensions_are_an_error_not_a_panic() {
        let idx = VectorIndex::new(cfg(8)).unwrap();
        assert!(matches!(
            idx.upsert(1, &[1.0; 7]),
            Err(VectorError::Dimensions {
                expected: 8,
                got: 7
            })
        ));
        assert!(idx.search(&[1.0; 9], 1).is_err());
        assert!(idx.search(&[1.0; 8], 1).unwrap().is_empty(), "empty index");
    }

    #[test]
    fn capacity_grows_geometrically_past_the_first_reservation() {
        let idx = VectorIndex::new(cfg(16)).unwrap();
        for i in 0..500u64 {
            let mut v = vec![0.01; 16];
            v[(i % 16) as usize] = 1.0 + i as f32 / 100.0;
            idx.upsert(i, &v).unwrap();
        }
        assert_eq!(idx.len(), 500);
        assert!(idx.contains(499));
    }

    #[test]
    fn saved_indexes_load_and_view_with_the_same_answers() {
        let dir = std::env::temp_dir().join(format!("vec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("knowledge.usearch");
        let idx = VectorIndex::new(cfg(8)).unwrap();
        for i in 0..8 {
            idx.upsert(i as u64 + 10, &unit(8, i)).unwrap();
        }
        idx.save(&path).unwrap();
        let loaded = VectorIndex::load(&path, cfg(8)).unwrap();
        assert_eq!(loaded.search(&unit(8, 3), 1).unwrap()[0].0, 13);
        loaded.upsert(99, &unit(8, 3)).unwrap();
        let viewed = VectorIndex::view(&path, cfg(8)).unwrap();
        assert_eq!(viewed.search(&unit(8, 4), 1).unwrap()[0].0, 14);
        assert!(matches!(
            viewed.upsert(1, &unit(8, 1)),
            Err(VectorError::ReadOnly)
        ));
        assert!(VectorIndex::load(&dir.join("missing.usearch"), cfg(8)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn i8_quantisation_keeps_cosine_and_uses_the_whole_range() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let v: Vec<f32> = (0..DIMENSIONS).map(|_| next() * 0.03).collect();
        let q = quantize_i8(&v);
        assert_eq!(q.iter().map(|x| x.unsigned_abs()).max(), Some(127));
        let dot: f32 = v.iter().zip(&q).map(|(a, b)| a * f32::from(*b)).sum();
        let nv = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        let nq = q.iter().map(|x| f32::from(*x).powi(2)).sum::<f32>().sqrt();
        assert!(dot / (nv * nq) > 0.999, "cosine {}", dot / (nv * nq));
        assert_eq!(quantize_i8(&[0.0; 4]), vec![0; 4]);
        assert_eq!(
            quantize_i8(&[f32::NAN, 1.0]),
            vec![0, 127],
            "NaN reads as 0"
        );
    }

    /// More concurrent callers than the index has thread contexts wait for
    /// one instead of failing ("Reserve capacity ahead of searches!").
    #[test]
    fn callers_beyond_the_reserved_contexts_wait_instead_of_failing() {
        let cfg = VectorConfig {
            threads: 2,
            ..cfg(8)
        };
        let idx = VectorIndex::new(cfg).unwrap();
        for i in 0..8 {
            idx.upsert(i as u64, &unit(8, i)).unwrap();
        }
        let start = std::sync::Barrier::new(16);
        std::thread::scope(|s| {
            for t in 0..16 {
                let (idx, start) = (&idx, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..300 {
                        let hot = (t + i) % 8;
                        assert_eq!(idx.search(&unit(8, hot), 1).unwrap()[0].0, hot as u64);
                    }
                });
            }
        });
    }

    #[test]
    fn a_mapped_index_searches_concurrently_and_loads_on_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let idx = VectorIndex::new(cfg(8)).unwrap();
        for i in 0..8 {
            idx.upsert(i as u64, &unit(8, i)).unwrap();
        }
        idx.save(&path).unwrap();
        let mapped = VectorIndex::map(&path, cfg(8)).unwrap();
        assert!(mapped.is_mapped());
        // More concurrent searches than the machine has cores: a view must
        // have a search context for each (cfg.threads), not one per core.
        let start = std::sync::Barrier::new(16);
        std::thread::scope(|s| {
            for t in 0..16 {
                let m = &mapped;
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    for i in 0..300 {
                        let hot = (t + i) % 8;
                        assert_eq!(m.search(&unit(8, hot), 1).unwrap()[0].0, hot as u64);
                    }
                });
            }
        });
        mapped.upsert(3, &unit(8, 5)).unwrap();
        assert!(!mapped.is_mapped());
        assert_eq!(mapped.len(), 8);
        let hits = mapped.search(&unit(8, 5), 2).unwrap();
        let mut keys: Vec<u64> = hits.iter().map(|h| h.0).collect();
        keys.sort();
        assert_eq!(keys, vec![3, 5]);
    }
}
