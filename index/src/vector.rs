//! The vector lane: one usearch HNSW index per tenant per corpus. The index
//! holds what the graph walk needs: one sign bit per dimension
//! ([`Quantization::B1`], Root's setting: 384 bytes per 3072-d vector,
//! walked by Hamming distance), i8 vectors quantised here with one scale per
//! vector (cosine ignores a vector's length, so each vector uses the whole
//! `-127..=127` range), or f16. The lossless copy of every vector lives with
//! the caller (redb); [`CorpusIndex::vector_search_exact`](crate::corpus::CorpusIndex::vector_search_exact)
//! rescores a wider candidate list against it.
//!
//! Scores are cosine *similarity* (`1 − distance`), the quantity the spec's
//! floors are written in (e.g. the knowledge lane's 0.32); a sign-bit graph
//! reports the angle its Hamming distance estimates (`cos(π · d / dims)`,
//! the random-hyperplane estimate). Keys are `u64`;
//! mapping row ids to keys is the caller's business.
//!
//! Concurrency: usearch allows concurrent `add`/`search`/`remove` on one
//! index; only growing its capacity must be exclusive, so that takes the
//! write side of an `RwLock` and grows geometrically (a capacity change per
//! insert would dominate ingest).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind, b1x8};

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
    /// One sign bit per dimension, Hamming distance (1/16 of f16's bytes;
    /// scores estimate the angle and are meant to be rescored from a
    /// candidate list a few times wider than the answer).
    B1,
}

impl Quantization {
    /// A short name for file headers and reports (`f16`, `i8`, `b1`).
    pub fn name(self) -> &'static str {
        match self {
            Quantization::F16 => "f16",
            Quantization::I8 => "i8",
            Quantization::B1 => "b1",
        }
    }
}

impl std::str::FromStr for Quantization {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [Quantization::F16, Quantization::I8, Quantization::B1]
            .into_iter()
            .find(|q| q.name() == s)
            .ok_or_else(|| format!("unknown quantisation {s:?} (f16, i8 or b1)"))
    }
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

/// `v` as sign bits packed eight per byte (bit `i % 8` of byte `i / 8` is
/// set when component `i` is positive), the layout usearch's `b1x8` walks.
/// Hamming distance between two such codes estimates the angle between the
/// vectors (random-hyperplane LSH; the embedding's own axes serve as the
/// hyperplanes). A NaN component reads as not positive.
pub fn sign_bits(v: &[f32]) -> Vec<u8> {
    let mut bits = vec![0u8; v.len().div_ceil(8)];
    for (i, x) in v.iter().enumerate() {
        if *x > 0.0 {
            bits[i / 8] |= 1 << (i % 8);
        }
    }
    bits
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
        metric: match cfg.quantization {
            Quantization::F16 | Quantization::I8 => MetricKind::Cos,
            Quantization::B1 => MetricKind::Hamming,
        },
        quantization: match cfg.quantization {
            Quantization::F16 => ScalarKind::F16,
            Quantization::I8 => ScalarKind::I8,
            Quantization::B1 => ScalarKind::B1,
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

    /// What the graph stores per vector.
    pub fn quantization(&self) -> Quantization {
        self.cfg.quantization
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
            Quantization::B1 => index.add(key, b1x8::from_u8s(&sign_bits(v))),
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
        let _context = self.contexts.enter();
        let m = match self.cfg.quantization {
            Quantization::F16 => index.filtered_search(query, k, keep),
            Quantization::I8 => index.filtered_search(&quantize_i8(query), k, keep),
            Quantization::B1 => index.filtered_search(b1x8::from_u8s(&sign_bits(query)), k, keep),
        }
        .map_err(us)?;
        Ok(self.scored(m))
    }

    /// usearch's matches as `(key, cosine similarity)`.
    fn scored(&self, m: usearch::ffi::Matches) -> Vec<(u64, f32)> {
        let to_score = |d: f32| match self.cfg.quantization {
            Quantization::F16 | Quantization::I8 => 1.0 - d,
            Quantization::B1 => {
                (std::f32::consts::PI * d / self.cfg.dimensions.max(1) as f32).cos()
            }
        };
        m.keys
            .into_iter()
            .zip(m.distances)
            .map(|(key, d)| (key, to_score(d)))
            .collect()
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
            (Quantization::B1, true) => index.exact_search(b1x8::from_u8s(&sign_bits(query)), k),
            (Quantization::B1, false) => index.search(b1x8::from_u8s(&sign_bits(query)), k),
        }
        .map_err(us)?;
        Ok(self.scored(m))
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

/// Deterministic noise in `-0.5..0.5` (xorshift64) for this crate's tests.
#[cfg(test)]
pub(crate) fn test_noise(seed: u64) -> impl FnMut() -> f32 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

#[cfg(test)]
#[path = "vector_test.rs"]
mod tests;
