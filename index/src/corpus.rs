//! One tenant's index pair for one corpus (knowledge chunks, Slack messages
//! or thread artifacts): the vector lane, the keyword lane, and the map from
//! index keys to the rows they stand for — kept together so the three can
//! never disagree about what a key means.
//!
//! The caller owns durability (its store keeps every vector and an outbox of
//! changes, each with a sequence number). This type tracks two watermarks:
//! - the keyword lane commits with every batch ([`CorpusIndex::commit`]) and
//!   stores the covered sequence in its commit payload;
//! - the vector lane and the key map are written together, less often, as a
//!   *snapshot* ([`CorpusIndex::snapshot`]): saving a 100k × 3072 f16 HNSW
//!   per batch would dominate ingest.
//!
//! After a crash the caller replays its outbox from
//! [`Opened::Loaded::snapshot_seq`]; replaying a change is idempotent
//! (documents are replaced by row id, keys are stable per row).
//!
//! Files in the directory: `CURRENT` (names the format, the live snapshot
//! generation and its sequence; replaced atomically), `vectors-<gen>.usearch`
//! (the HNSW graph over quantised vectors: only what search needs — the
//! lossless vectors stay with the caller), `docs-<gen>.bin`, and `keyword/`
//! (tantivy). A directory of another format (e.g. v1, whose graph held f16
//! vectors) opens as [`Opened::Empty`] and is rebuilt by the caller.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use crate::exact::ExactVectors;
use crate::keyword::{KeywordError, KeywordIndex};
use crate::vector::{Quantization, VectorConfig, VectorError, VectorIndex};

const CURRENT: &str = "CURRENT";
/// Format of the files; bumping it makes every existing index rebuild once.
/// v2: quantised graph vectors, served from a memory-mapped view. The
/// header also names the graph's quantisation ([`current_header`]), so an
/// index saved under another setting rebuilds instead of being misread.
const CURRENT_FORMAT: &str = "root-index corpus v2";

fn current_header(q: Quantization) -> String {
    format!("{CURRENT_FORMAT} {}", q.name())
}
const DOCS_MAGIC: &[u8; 8] = b"RIDOCS01";

/// Errors of a corpus index.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// File-system error.
    #[error("index files: {0}")]
    Io(#[from] std::io::Error),
    /// Vector lane error.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// Keyword lane error.
    #[error(transparent)]
    Keyword(#[from] KeywordError),
    /// The lossless vectors could not be read for rescoring.
    #[error("exact vectors: {0}")]
    Rescore(String),
    /// A file that does not parse.
    #[error("corrupt index file {file}: {reason}")]
    Corrupt {
        /// Which file.
        file: String,
        /// What was wrong.
        reason: String,
    },
}

/// What a key stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocMeta {
    /// The row's 128-bit id (a UUID).
    pub row: u128,
    /// Diversity group: the page of a chunk, the thread of a Slack message.
    pub group: Box<str>,
    /// Position within the group (chunk index) or a time (micros).
    pub ordinal: i64,
    /// Exact-match filter value (a page's `source_type`; empty when unused).
    pub tag: Box<str>,
    /// Whether the row has a vector in the vector lane.
    pub has_vector: bool,
}

/// One document to add or replace.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDoc {
    /// The row's 128-bit id.
    pub row: u128,
    /// See [`DocMeta::group`].
    pub group: String,
    /// See [`DocMeta::ordinal`].
    pub ordinal: i64,
    /// See [`DocMeta::tag`].
    pub tag: String,
    /// Keyword-lane text.
    pub text: String,
    /// Secondary keyword-lane text (e.g. channel and user names).
    pub aux: String,
    /// The row's embedding; `None` keeps it out of the vector lane until
    /// it is embedded.
    pub vector: Option<Vec<f32>>,
}

/// One change to apply.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Add or replace a row's document.
    Upsert(IndexDoc),
    /// Remove a row's document (no-op when absent).
    Remove(u128),
}

/// A search hit: the key, what it stands for, and the lane's score
/// (cosine similarity for the vector lane, BM25 for the keyword lane).
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    /// Index key.
    pub key: u64,
    /// The row behind the key.
    pub meta: DocMeta,
    /// Lane score.
    pub score: f32,
}

/// How [`CorpusIndex::open`] found the directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    /// Files loaded. Replay the outbox after `snapshot_seq`.
    Loaded {
        /// Sequence the vector lane and key map cover.
        snapshot_seq: u64,
        /// Sequence the keyword lane covers (≥ `snapshot_seq`).
        keyword_seq: u64,
    },
    /// Nothing usable on disk (new, missing, corrupt or inconsistent): the
    /// index is empty and must be rebuilt from the store.
    Empty {
        /// Why, for the log.
        reason: String,
    },
}

#[derive(Default)]
struct DocMap {
    next_key: u64,
    by_key: HashMap<u64, DocMeta>,
    by_row: HashMap<u128, u64>,
}

impl DocMap {
    fn encode(&self, seq: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.by_key.len() * 48);
        out.extend_from_slice(DOCS_MAGIC);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&self.next_key.to_le_bytes());
        out.extend_from_slice(&(self.by_key.len() as u64).to_le_bytes());
        for (key, m) in &self.by_key {
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&m.row.to_le_bytes());
            out.extend_from_slice(&m.ordinal.to_le_bytes());
            out.push(u8::from(m.has_vector));
            for s in [&m.group, &m.tag] {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
        out
    }

    fn decode(bytes: &[u8]) -> Result<(u64, DocMap), String> {
        struct Reader<'a>(&'a [u8]);
        impl Reader<'_> {
            fn take(&mut self, n: usize) -> Result<&[u8], String> {
                if self.0.len() < n {
                    return Err("truncated".into());
                }
                let (head, tail) = self.0.split_at(n);
                self.0 = tail;
                Ok(head)
            }
            fn u64(&mut self) -> Result<u64, String> {
                Ok(u64::from_le_bytes(
                    self.take(8)?.try_into().map_err(|_| "u64")?,
                ))
            }
            fn str(&mut self) -> Result<Box<str>, String> {
                let len = u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "u32")?);
                Ok(std::str::from_utf8(self.take(len as usize)?)
                    .map_err(|e| e.to_string())?
                    .into())
            }
        }
        let mut r = Reader(bytes);
        if r.take(8)? != DOCS_MAGIC {
            return Err("bad magic".into());
        }
        let seq = r.u64()?;
        let next_key = r.u64()?;
        let n = r.u64()? as usize;
        let mut map = DocMap {
            next_key,
            by_key: HashMap::with_capacity(n.min(1 << 24)),
            by_row: HashMap::with_capacity(n.min(1 << 24)),
        };
        for _ in 0..n {
            let key = r.u64()?;
            let row = u128::from_le_bytes(r.take(16)?.try_into().map_err(|_| "u128")?);
            let ordinal = r.u64()? as i64;
            let has_vector = r.take(1)?[0] != 0;
            let group = r.str()?;
            let tag = r.str()?;
            if key >= next_key {
                return Err(format!("key {key} ≥ next key {next_key}"));
            }
            map.by_row.insert(row, key);
            map.by_key.insert(
                key,
                DocMeta {
                    row,
                    group,
                    ordinal,
                    tag,
                    has_vector,
                },
            );
        }
        if !r.0.is_empty() {
            return Err("trailing bytes".into());
        }
        Ok((seq, map))
    }
}

/// Vector inserts of one [`CorpusIndex::apply`] batch, applied together.
#[derive(Default)]
struct PendingVectors {
    items: Vec<(u64, Vec<f32>)>,
    keys: HashSet<u64>,
}

/// Most OS threads one batch's vector inserts use.
pub const MAX_INSERT_THREADS: usize = 4;

/// One tenant's index pair for one corpus. Searches run concurrently with
/// one writer; [`apply`](Self::apply), [`commit`](Self::commit),
/// [`snapshot`](Self::snapshot) and [`reset`](Self::reset) are serialised.
pub struct CorpusIndex {
    dir: PathBuf,
    vectors: VectorIndex,
    keyword: KeywordIndex,
    docs: RwLock<DocMap>,
    /// (generation, sequence) of the live snapshot; also serialises writers.
    writer: Mutex<(u64, u64)>,
    /// OS threads a batch's vector inserts use.
    insert_threads: usize,
}

fn insert_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_INSERT_THREADS)
}

impl std::fmt::Debug for CorpusIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorpusIndex")
            .field("dir", &self.dir)
            .field("docs", &self.len())
            .finish()
    }
}

fn corrupt(file: &str, reason: impl Into<String>) -> CorpusError {
    CorpusError::Corrupt {
        file: file.into(),
        reason: reason.into(),
    }
}

fn read_current(dir: &Path, q: Quantization) -> Result<Option<(u64, u64)>, CorpusError> {
    let text = match std::fs::read_to_string(dir.join(CURRENT)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut lines = text.lines();
    if lines.next() != Some(current_header(q).as_str()) {
        return Err(corrupt(CURRENT, "unknown header"));
    }
    let mut field = |name: &str| -> Result<u64, CorpusError> {
        lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| corrupt(CURRENT, format!("missing {name}")))
    };
    Ok(Some((field("gen ")?, field("seq ")?)))
}

/// Write `bytes` to `path` durably: temp file, fsync, rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

impl CorpusIndex {
    /// Open the index in `dir`, creating it when absent. Anything unusable
    /// (corrupt, inconsistent, from another format) is wiped and reported as
    /// [`Opened::Empty`] so the caller rebuilds; only I/O errors that make the
    /// directory itself unusable are errors.
    pub fn open(dir: &Path, cfg: VectorConfig) -> Result<(Self, Opened), CorpusError> {
        std::fs::create_dir_all(dir)?;
        match Self::load(dir, cfg) {
            Ok(Some((index, opened))) => Ok((index, opened)),
            Ok(None) => Ok((
                Self::fresh(dir, cfg)?,
                Opened::Empty {
                    reason: "no index files".into(),
                },
            )),
            Err(e) => {
                let reason = e.to_string();
                Ok((Self::fresh(dir, cfg)?, Opened::Empty { reason }))
            }
        }
    }

    fn fresh(dir: &Path, cfg: VectorConfig) -> Result<Self, CorpusError> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)?;
            } else {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(CorpusIndex {
            dir: dir.to_path_buf(),
            vectors: VectorIndex::new(cfg)?,
            keyword: KeywordIndex::open_or_create(&dir.join("keyword"))?,
            docs: RwLock::new(DocMap::default()),
            writer: Mutex::new((0, 0)),
            insert_threads: insert_threads(),
        })
    }

    fn load(dir: &Path, cfg: VectorConfig) -> Result<Option<(Self, Opened)>, CorpusError> {
        let Some((generation, seq)) = read_current(dir, cfg.quantization)? else {
            return Ok(None);
        };
        let docs_name = format!("docs-{generation}.bin");
        let (docs_seq, docs) = DocMap::decode(&std::fs::read(dir.join(&docs_name))?)
            .map_err(|r| corrupt(&docs_name, r))?;
        if docs_seq != seq {
            return Err(corrupt(&docs_name, "sequence differs from CURRENT"));
        }
        let vectors = VectorIndex::map(&dir.join(format!("vectors-{generation}.usearch")), cfg)?;
        let with_vectors = docs.by_key.values().filter(|m| m.has_vector).count();
        if vectors.len() != with_vectors {
            return Err(corrupt(
                "vectors",
                format!("{} vectors for {with_vectors} documents", vectors.len()),
            ));
        }
        let keyword = KeywordIndex::open_or_create(&dir.join("keyword"))?;
        let keyword_seq = match keyword.payload()? {
            Some(p) => p
                .parse::<u64>()
                .map_err(|_| corrupt("keyword", "bad commit payload"))?,
            None => 0,
        };
        if keyword_seq < seq {
            return Err(corrupt(
                "keyword",
                format!("keyword lane at {keyword_seq} is behind the snapshot at {seq}"),
            ));
        }
        let index = CorpusIndex {
            dir: dir.to_path_buf(),
            vectors,
            keyword,
            docs: RwLock::new(docs),
            writer: Mutex::new((generation, seq)),
            insert_threads: insert_threads(),
        };
        Ok(Some((
            index,
            Opened::Loaded {
                snapshot_seq: seq,
                keyword_seq,
            },
        )))
    }

    /// What the vector lane's graph stores per vector.
    pub fn quantization(&self) -> Quantization {
        self.vectors.quantization()
    }

    /// The directory this index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .by_key
            .len()
    }

    /// Whether the index has no document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of documents in the vector lane.
    pub fn vector_len(&self) -> usize {
        self.vectors.len()
    }

    /// Change the vector lane's `ef_search` (recall/latency trade-off;
    /// benchmarks sweep it on a loaded index).
    pub fn set_expansion_search(&self, ef: usize) {
        self.vectors.set_expansion_search(ef);
    }

    /// Sequence covered by the last snapshot.
    pub fn snapshot_seq(&self) -> u64 {
        self.writer.lock().unwrap_or_else(|p| p.into_inner()).1
    }

    /// Apply changes to both lanes (keyword changes become visible at the
    /// next [`commit`](Self::commit); vector changes immediately). A row keeps
    /// its key across updates.
    ///
    /// Vector inserts are collected and applied in parallel
    /// ([`VectorIndex::upsert_batch_parallel`]) at the end of the batch, or
    /// earlier when a later change touches a key that is still pending, so
    /// the outcome is that of applying the changes one by one.
    pub fn apply(&self, changes: Vec<Change>) -> Result<(), CorpusError> {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let mut pending = PendingVectors::default();
        for change in changes {
            match change {
                Change::Upsert(doc) => self.upsert(doc, &mut pending)?,
                Change::Remove(row) => {
                    let key = self
                        .docs
                        .read()
                        .unwrap_or_else(|p| p.into_inner())
                        .by_row
                        .get(&row)
                        .copied();
                    if key.is_some_and(|k| pending.keys.contains(&k)) {
                        self.flush(&mut pending)?;
                    }
                    self.remove(row)?
                }
            }
        }
        self.flush(&mut pending)
    }

    fn flush(&self, pending: &mut PendingVectors) -> Result<(), CorpusError> {
        if !pending.items.is_empty() {
            self.vectors
                .upsert_batch_parallel(&pending.items, self.insert_threads)?;
            pending.items.clear();
            pending.keys.clear();
        }
        Ok(())
    }

    fn upsert(&self, mut doc: IndexDoc, pending: &mut PendingVectors) -> Result<(), CorpusError> {
        let key = {
            let mut docs = self.docs.write().unwrap_or_else(|p| p.into_inner());
            match docs.by_row.get(&doc.row) {
                Some(k) => *k,
                None => {
                    let k = docs.next_key;
                    docs.next_key += 1;
                    k
                }
            }
        };
        if pending.keys.contains(&key) {
            self.flush(pending)?;
        }
        let has_vector = doc.vector.is_some();
        match doc.vector.take() {
            Some(v) => {
                pending.keys.insert(key);
                pending.items.push((key, v));
            }
            None => self.vectors.remove(key)?,
        }
        self.keyword
            .upsert_row(key, doc.row, &doc.text, &doc.aux, &doc.tag)?;
        let mut docs = self.docs.write().unwrap_or_else(|p| p.into_inner());
        docs.by_row.insert(doc.row, key);
        docs.by_key.insert(
            key,
            DocMeta {
                row: doc.row,
                group: doc.group.into(),
                ordinal: doc.ordinal,
                tag: doc.tag.into(),
                has_vector,
            },
        );
        Ok(())
    }

    fn remove(&self, row: u128) -> Result<(), CorpusError> {
        self.keyword.delete_row(row);
        let key = {
            let mut docs = self.docs.write().unwrap_or_else(|p| p.into_inner());
            let key = docs.by_row.remove(&row);
            if let Some(k) = key {
                docs.by_key.remove(&k);
            }
            key
        };
        if let Some(k) = key {
            self.vectors.remove(k)?;
        }
        Ok(())
    }

    /// Make keyword changes durable and visible; `seq` is the highest
    /// outbox sequence applied so far.
    pub fn commit(&self, seq: u64) -> Result<(), CorpusError> {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.keyword.commit_with_payload(Some(seq.to_string()))?;
        Ok(())
    }

    /// Persist the vector lane and key map as covering `seq` (commit the
    /// keyword lane first: a snapshot must never be ahead of it). Old
    /// generations are deleted once the new one is live.
    pub fn snapshot(&self, seq: u64) -> Result<(), CorpusError> {
        let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (old_gen, _) = *w;
        let generation = old_gen + 1;
        let vectors_path = self.dir.join(format!("vectors-{generation}.usearch"));
        self.vectors.save(&vectors_path)?;
        std::fs::File::open(&vectors_path)?.sync_all()?;
        let encoded = self
            .docs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .encode(seq);
        write_atomic(&self.dir.join(format!("docs-{generation}.bin")), &encoded)?;
        write_atomic(
            &self.dir.join(CURRENT),
            format!(
                "{}\ngen {generation}\nseq {seq}\n",
                current_header(self.vectors.quantization())
            )
            .as_bytes(),
        )?;
        sync_dir(&self.dir)?;
        *w = (generation, seq);
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let stale = (name.starts_with("vectors-") || name.starts_with("docs-"))
                && name != format!("vectors-{generation}.usearch")
                && name != format!("docs-{generation}.bin");
            if stale {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }

    /// Drop every document from both lanes (keys keep counting up, so a key
    /// is never reused for another row).
    pub fn reset(&self) -> Result<(), CorpusError> {
        let _w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        self.keyword.delete_all()?;
        self.vectors.clear()?;
        let mut docs = self.docs.write().unwrap_or_else(|p| p.into_inner());
        docs.by_key.clear();
        docs.by_row.clear();
        Ok(())
    }

    fn hits(&self, raw: Vec<(u64, f32)>) -> Vec<Hit> {
        let docs = self.docs.read().unwrap_or_else(|p| p.into_inner());
        raw.into_iter()
            .filter_map(|(key, score)| {
                docs.by_key.get(&key).map(|meta| Hit {
                    key,
                    meta: meta.clone(),
                    score,
                })
            })
            .collect()
    }

    /// Vector lane: top `k` by cosine similarity, best first.
    pub fn vector_search(&self, query: &[f32], k: usize) -> Result<Vec<Hit>, CorpusError> {
        Ok(self.hits(self.vectors.search(query, k)?))
    }

    /// Vector lane restricted to documents whose tag is in `tags`.
    pub fn vector_search_tagged(
        &self,
        query: &[f32],
        k: usize,
        tags: Option<&[String]>,
    ) -> Result<Vec<Hit>, CorpusError> {
        let Some(tags) = tags else {
            return self.vector_search(query, k);
        };
        let raw = {
            let docs = self.docs.read().unwrap_or_else(|p| p.into_inner());
            self.vectors.filtered_search(query, k, |key| {
                docs.by_key
                    .get(&key)
                    .is_some_and(|m| tags.iter().any(|t| t.as_str() == m.tag.as_ref()))
            })?
        };
        Ok(self.hits(raw))
    }

    /// Vector lane with exact scores: the top `candidates` (at least `k`)
    /// of the (quantised) graph, rescored against the lossless vectors of
    /// `exact`, best first, cut to `k`. Scores are exact cosine similarities
    /// (what floors are written in). A candidate without a lossless vector
    /// (its row deleted or re-embedded since the index saw it) keeps its
    /// graph score, as before quantisation: the caller's row read drops it.
    /// Equal scores keep the graph's order.
    pub fn vector_search_exact(
        &self,
        query: &[f32],
        k: usize,
        candidates: usize,
        tags: Option<&[String]>,
        exact: &dyn ExactVectors,
    ) -> Result<Vec<Hit>, CorpusError> {
        let wide = candidates.max(k);
        let candidates = self.vector_search_tagged(query, wide, tags)?;
        if candidates.is_empty() {
            return Ok(candidates);
        }
        let rows: Vec<u128> = candidates.iter().map(|h| h.meta.row).collect();
        let scores = exact
            .similarities(query, &rows)
            .map_err(CorpusError::Rescore)?;
        if scores.len() != rows.len() {
            return Err(CorpusError::Rescore(format!(
                "{} scores for {} rows",
                scores.len(),
                rows.len()
            )));
        }
        let mut hits: Vec<Hit> = candidates
            .into_iter()
            .zip(scores)
            .map(|(h, s)| Hit {
                score: s.unwrap_or(h.score),
                ..h
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(k);
        Ok(hits)
    }

    /// Whether the vector lane is still served from its memory-mapped file
    /// (no write since it was opened).
    pub fn vectors_mapped(&self) -> bool {
        self.vectors.is_mapped()
    }

    /// Keyword lane, §10.2 semantics: OR of the query's tokens, BM25, best first.
    pub fn keyword_search_any(&self, query: &str, k: usize) -> Result<Vec<Hit>, CorpusError> {
        Ok(self.hits(self.keyword.search_any(query, k)?))
    }

    /// Keyword lane restricted to documents whose tag is in `tags`.
    pub fn keyword_search_any_tagged(
        &self,
        query: &str,
        k: usize,
        tags: Option<&[String]>,
    ) -> Result<Vec<Hit>, CorpusError> {
        Ok(self.hits(self.keyword.search_any_tagged(query, k, tags)?))
    }

    /// Keyword lane, §10.3 semantics: `websearch_to_tsquery`-style, BM25.
    pub fn keyword_search_web(&self, query: &str, k: usize) -> Result<Vec<Hit>, CorpusError> {
        Ok(self.hits(self.keyword.search_websearch(query, k)?))
    }

    /// The key map entry of `row`, if indexed.
    pub fn meta_of_row(&self, row: u128) -> Option<(u64, DocMeta)> {
        let docs = self.docs.read().unwrap_or_else(|p| p.into_inner());
        let key = *docs.by_row.get(&row)?;
        docs.by_key.get(&key).map(|m| (key, m.clone()))
    }

    /// The keyword lane (for corpus-specific queries).
    pub fn keyword(&self) -> &KeywordIndex {
        &self.keyword
    }
}

#[cfg(test)]
#[path = "corpus_test.rs"]
mod tests;
