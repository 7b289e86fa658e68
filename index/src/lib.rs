//! Root's retrieval engine (spec §10, §11.3). No HTTP and no redb types:
//! documents in, ids and scores out.
//!
//! - [`chunker`] — the HTML-aware chunker of §11.3 (sections, breadcrumbs,
//!   atomic blocks, 1500/200/2250).
//! - [`keyword`] — the BM25 keyword lane (tantivy) analysed like PostgreSQL's
//!   `english` configuration.
//! - [`vector`] — the HNSW vector lane (usearch, cosine, i8 or f16 graph
//!   vectors, 3072 dims).
//! - [`exact`] — exact rescoring of vector candidates against the caller's
//!   lossless f16 copy.
//! - [`rrf`] — reciprocal rank fusion (k = 60, ranks only) and per-source caps.
//! - [`corpus`] — one tenant's index pair for one corpus: both lanes, the
//!   key map, commit and snapshot watermarks, crash-safe files.
//! - [`rerank`] — the `Reranker` contract and the fail-open rules of §10.1.
#![warn(missing_docs)]

pub mod chunker;
pub mod corpus;
pub mod exact;
pub mod keyword;
pub mod rerank;
pub mod rrf;
pub mod vector;
