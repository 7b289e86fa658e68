//! Every retrieval setting in one place: the numbers of spec §10 (hybrid
//! retrieval) and §11.3 (chunking), the HNSW parameters, and the batch sizes
//! of the index and audit work. One named, documented `pub const` each,
//! named after the spec where the spec names it.
//!
//! The `index` crate holds mechanics only and takes these values as
//! arguments (`fuse(RRF_K, …)`, [`CHUNKER`], [`vector_config`], lane limits
//! and windows), so changing a setting touches this file alone. Env-var
//! names live in `crate::config`.

use std::time::Duration;

use index::chunker::ChunkerParams;
use index::vector::{DIMENSIONS, Quantization, VectorConfig};

// ─────────────────────── §10.1 shared machinery ───────────────────────

/// `RRF_K` (§10.1: "RRF_K = 60", the value from Cormack et al.). It damps
/// the advantage of the very top ranks, so a document that is merely good in
/// two lanes can beat one that is first in a single lane.
pub const RRF_K: f64 = 60.0;

/// Weight of a lane that the spec fuses "equal-weight": both knowledge lanes
/// (§10.2), and the Slack text and vector lanes (§10.3).
pub const DEFAULT_LANE_WEIGHT: f64 = 1.0;

/// Sampling temperature of the rerank call (§10.1 "temperature 0"):
/// scoring should be repeatable.
pub const RERANK_TEMPERATURE: f64 = 0.0;

/// `max_tokens` of the rerank call (§10.1 "max_tokens 4000").
pub const RERANK_MAX_TOKENS: u32 = 4000;

// ─────────────────────── §10.2 knowledge search ───────────────────────

/// The spec's embedding model (§3.2), the one [`KNOWLEDGE_VECTOR_FLOOR`] is
/// written for.
pub const SPEC_EMBEDDING_MODEL: &str = "openai/text-embedding-3-large";

/// The knowledge vector relevance floor (§10.2 "vector relevance floor
/// 0.32"), written for [`SPEC_EMBEDDING_MODEL`]; the floor of any model not
/// listed in `VectorFloors`.
pub const KNOWLEDGE_VECTOR_FLOOR: f32 = 0.32;

/// The floor for the offline hashing embedder: its vectors only agree on
/// shared words and n-grams, so low similarities are noise. Measured on the
/// golden KB set (`root eval-retrieval`, no rerank): floors 0.1–0.4 make the
/// fused list worse than the keyword lane alone (hit@5 0.72–0.82 vs 0.84);
/// 0.5 keeps only strong lexical agreement and fused edges past it (0.846).
pub const HASHING_VECTOR_FLOOR: f32 = 0.5;

/// Default caller limit (§10.2 "default caller limit 25").
pub const KNOWLEDGE_DEFAULT_LIMIT: usize = 25;

/// Largest caller limit accepted (the vector lane fetches `max(limit, 30)`).
pub const KNOWLEDGE_MAX_LIMIT: usize = 100;

/// Vector lane limit floor: `max(limit, KNOWLEDGE_VECTOR_LANE_MIN)` (§10.2
/// "vector lane limit max(callerLimit, 30)").
pub const KNOWLEDGE_VECTOR_LANE_MIN: usize = 30;

/// Keyword lane limit (§10.2 "keyword lane limit 20").
pub const KNOWLEDGE_KEYWORD_LANE_LIMIT: usize = 20;

/// Knowledge search keeps at most this many chunks per page after fusion
/// (§10.2 "max chunks per page 3"), so one long page cannot fill the results.
pub const KNOWLEDGE_MAX_CHUNKS_PER_PAGE: usize = 3;

/// Knowledge search reranks the first 20 fused chunks (§10.2 "rerank window 20").
pub const KNOWLEDGE_RERANK_WINDOW: usize = 20;

/// After a successful rerank, knowledge search keeps `min(limit, 12)` chunks
/// (§10.2 "rerank keep 12").
pub const KNOWLEDGE_RERANK_KEEP: usize = 12;

/// At most this many neighbour chunks are attached per search (§10.2
/// "context expansion limit 10").
pub const KNOWLEDGE_CONTEXT_EXPANSION_LIMIT: usize = 10;

/// Neighbour excerpts are cut to this many characters (§10.2 "neighbor
/// excerpt 600 chars").
pub const KNOWLEDGE_NEIGHBOR_EXCERPT_CHARS: usize = 600;

// ───────────────────────── §10.3 Slack search ─────────────────────────

/// Vector lane limit of the message search (§10.3 "top 100 by cosine").
pub const SLACK_VECTOR_LANE_LIMIT: usize = 100;
/// Text lane limit of the message search (§10.3 "Text lane: top 100").
pub const SLACK_TEXT_LANE_LIMIT: usize = 100;
/// Candidates fetched per keyword query before the text-lane scoring.
pub const SLACK_TEXT_CANDIDATES: usize = 100;
/// Weight of the full-text rank in the text-lane score (§10.3 "× 4").
pub const SLACK_TS_RANK_WEIGHT: f64 = 4.0;
/// Bonus when the message text contains the whole query (§10.3 "+ 1.25").
pub const SLACK_FULLTEXT_LIKE_BONUS: f64 = 1.25;
/// Bonus when the channel name contains the query (§10.3 "+ 0.35").
pub const SLACK_CHANNEL_LIKE_BONUS: f64 = 0.35;
/// Bonus when the user name contains the query (§10.3 "+ 0.35").
pub const SLACK_USER_LIKE_BONUS: f64 = 0.35;
/// Bonus when the alphanumeric-normalised text contains the normalised
/// query (§10.3 "+ 0.9").
pub const SLACK_NORMALIZED_LIKE_BONUS: f64 = 0.9;
/// The normalised query must have at least this many chars for that bonus
/// (§10.3 "≥4 chars").
pub const SLACK_NORMALIZED_MIN_CHARS: usize = 4;
/// Bonus per query term the text contains (§10.3 "+ 0.18 per matched term").
pub const SLACK_TERM_BONUS: f64 = 0.18;
/// At most this many terms earn the per-term bonus (§10.3 "≤8 terms").
pub const SLACK_MAX_BONUS_TERMS: usize = 8;

/// Weight of the Slack recency lane (§10.3 "Recency lane: … weight 0.4").
/// Recency is a weak prior: it nudges fresh messages up without letting an
/// irrelevant new message outrank a relevant old one.
pub const SLACK_RECENCY_LANE_WEIGHT: f64 = 0.4;

/// Artifact vector lane: `max(limit, SLACK_ARTIFACT_VECTOR_MIN)` (§10.3
/// "vector (max(limit,30))").
pub const SLACK_ARTIFACT_VECTOR_MIN: usize = 30;
/// Artifact lane limit after fusion (§10.3 "lane limit 15").
pub const SLACK_ARTIFACT_LANE_LIMIT: usize = 15;

/// Relevance of a match resolved from a permalink in the query (§10.3
/// "relevance_score = 1_000_000").
pub const SLACK_PERMALINK_SCORE: f64 = 1_000_000.0;
/// The Slack outer combiner keeps at most this many results per thread
/// (§10.3 "cap 2 per thread"; thread key `channel_id:(thread_ts || message_ts)`).
pub const SLACK_MAX_PER_THREAD: usize = 2;
/// Slack search reranks the first 30 combined results (§10.3 "rerank window 30").
pub const SLACK_RERANK_WINDOW: usize = 30;
/// Parent text attached to replies is cut to this many chars (§10.3 "≤500 chars").
pub const SLACK_PARENT_TEXT_CHARS: usize = 500;
/// Only the first this-many reply matches get their parent's text (§10.3
/// "the top 10 reply matches").
pub const SLACK_PARENT_TEXT_TOP: usize = 10;
/// Most results a Slack search returns (§10.3 "Max results 50").
pub const SLACK_MAX_RESULTS: usize = 50;

/// `who_knows` default number of people (§5.1), for the tool and the service.
pub const WHO_KNOWS_DEFAULT_LIMIT: usize = 5;
/// Largest `who_knows` limit the tool accepts.
pub const WHO_KNOWS_MAX_LIMIT: usize = 20;
/// Evidence links per person.
pub const WHO_KNOWS_EVIDENCE: usize = 3;

/// Matches a `search_slack_messages` result carries at most (§5.1 "cap 25
/// matches").
pub const SLACK_TOOL_MAX_MATCHES: usize = 25;
/// Characters of a match's text in the tool result at most (§5.1 "each
/// text ≤1200 chars").
pub const SLACK_TOOL_MAX_TEXT_CHARS: usize = 1200;

// ──────────────────────── §10.4 thread distillation ────────────────────────

/// The `slack-thread-distill` debounce (§10.4 "10 min delay"): every new
/// reply resets it, so a thread is distilled once it has gone quiet.
pub const DISTILL_DEBOUNCE: Duration = Duration::from_secs(10 * 60);
/// Threads with fewer messages are not distilled (§10.4 "<2 messages").
pub const DISTILL_MIN_MESSAGES: usize = 2;
/// …nor threads with less text in total (§10.4 "<150 chars total").
pub const DISTILL_MIN_CHARS: usize = 150;
/// The transcript sent to the model keeps head and tail within this many
/// characters (§10.4 "Transcript cap 24 000 chars").
pub const DISTILL_TRANSCRIPT_CHARS: usize = 24_000;
/// Topics kept from the model's answer (§10.4 "topics (≤6)").
pub const DISTILL_MAX_TOPICS: usize = 6;
/// A burst is a run of one author's consecutive messages of at least this
/// many characters (§10.4 "≥200 chars").
pub const BURST_MIN_CHARS: usize = 200;
/// Bursts kept per thread (§10.4 "≤8 per thread").
pub const BURST_MAX_PER_THREAD: usize = 8;
/// Below this many indexed messages every term counts as rare (§10.4
/// "corpus <200 docs → everything is rare").
pub const RARE_TERM_MIN_CORPUS: u64 = 200;
/// A term is rare when its document frequency is below
/// `max(RARE_TERM_DF_FLOOR, ⌊total / RARE_TERM_DF_DIVISOR⌋)` (§10.4).
pub const RARE_TERM_DF_FLOOR: u64 = 5;
/// See [`RARE_TERM_DF_FLOOR`].
pub const RARE_TERM_DF_DIVISOR: u64 = 50;
/// Tokens of a burst probed for rarity, longest first (§10.4 "probe up to
/// 6 longest tokens").
pub const RARE_TERM_PROBES: usize = 6;

// ───────────────────────── §11.3 chunking ─────────────────────────

/// Target length of a chunk's text, breadcrumb included (§11.3 "Target
/// chunk 1500 chars").
pub const CHUNK_TARGET_CHARS: usize = 1500;

/// Text shared by consecutive chunks of one section (§11.3 "overlap 200").
pub const CHUNK_OVERLAP_CHARS: usize = 200;

/// Hard ceiling on a chunk's text: a chunk that would exceed 1500 × 1.5
/// chars is force-split on sentence boundaries (§11.3).
pub const SENTENCE_SPLIT_ABOVE_CHARS: usize = CHUNK_TARGET_CHARS * 3 / 2;

/// Pages with fewer chars of text than this produce no chunks (§11.3 "Skip
/// pages with <20 chars of text"): a near-empty page only adds noise.
pub const MIN_PAGE_TEXT_CHARS: usize = 20;

/// The chunker settings of §11.3, as `index::chunker::chunk_page` takes them.
pub const CHUNKER: ChunkerParams = ChunkerParams {
    target_chars: CHUNK_TARGET_CHARS,
    overlap_chars: CHUNK_OVERLAP_CHARS,
    split_above_chars: SENTENCE_SPLIT_ABOVE_CHARS,
    min_page_text_chars: MIN_PAGE_TEXT_CHARS,
};

// ───────────────────────── HNSW (vector lane) ─────────────────────────

/// HNSW `M` (edges per node).
pub const HNSW_M: usize = 16;

/// HNSW `ef_construction`.
pub const HNSW_EF_CONSTRUCTION: usize = 128;

/// HNSW `ef_search`. Measured with `index/examples/hnsw_recall.rs` (real
/// MiniLM vectors of the shared golden KB corpus at 3072 dims, and a 20k
/// clustered synthetic corpus) and `root bench retrieval` (100k real-text
/// chunks of the pgvector anchor corpus): 40 gives recall@10 ≥ 0.99 on the
/// golden set and 0.987–0.990 at 100k (64: 0.992, 128 buys nothing
/// measurable), above the 0.95 target and pgvector's 0.975 at ef 40, for
/// ~20 % less vector-lane time than 64.
pub const HNSW_EF_SEARCH: usize = 40;

/// Concurrent callers usearch reserves thread contexts for.
pub const HNSW_THREADS: usize = 64;

/// What the HNSW graph stores per vector: one sign bit per dimension
/// (384 bytes per 3072-d vector, 1/16 of f16), walked by Hamming distance.
/// The lossless f16 vector stays in redb only; the lanes rescore a wider
/// candidate list against it ([`rescore_candidates`]). Against the i8 graph
/// it replaced (issue 23, `docs/benchmarks/retrieval.md`), at 100k anchor
/// chunks: graph file 307 → 51 MiB, ingest 1,702 → 3,043–3,374 chunks/s
/// (Hamming over 384 bytes instead of a 3072-byte dot product per HNSW
/// step), serving RSS 545 → 287 MiB, recall@10 after rescoring 0.996.
pub const HNSW_QUANTIZATION: Quantization = Quantization::B1;

/// The vector lanes rescore `k ×` this many candidates of the sign-bit
/// graph, and at least [`VECTOR_RESCORE_MIN_CANDIDATES`].
pub const VECTOR_RESCORE_OVERSAMPLE: usize = 2;

/// The fewest sign-bit graph candidates a vector lane rescores: Hamming
/// distance orders a neighbourhood coarsely, so the exact top 10 needs a
/// list of ~60 to be found (recall@10 vs exact at 100k anchor chunks,
/// usearch's own b1 index: 30 candidates → 0.982, 60 → 0.996, 100 → 0.999;
/// issue 23).
pub const VECTOR_RESCORE_MIN_CANDIDATES: usize = 64;

/// How many graph candidates a vector lane answering `k` rescores: the
/// sign-bit graph's list is widened ([`VECTOR_RESCORE_OVERSAMPLE`],
/// [`VECTOR_RESCORE_MIN_CANDIDATES`]); an i8 or f16 graph's own top `k` is
/// already close to exact (i8 at 100k: recall@10 0.9978 after rescoring its
/// top 30, session 16), so those rescore `k` (benchmarks compare them with
/// `root bench retrieval --quantization`).
pub fn rescore_candidates(graph: Quantization, k: usize) -> usize {
    match graph {
        Quantization::B1 => k
            .saturating_mul(VECTOR_RESCORE_OVERSAMPLE)
            .max(VECTOR_RESCORE_MIN_CANDIDATES),
        Quantization::I8 | Quantization::F16 => k,
    }
}

/// The vector lane configuration every index is opened with.
pub fn vector_config() -> VectorConfig {
    VectorConfig {
        dimensions: DIMENSIONS,
        connectivity: HNSW_M,
        expansion_add: HNSW_EF_CONSTRUCTION,
        expansion_search: HNSW_EF_SEARCH,
        threads: HNSW_THREADS,
        quantization: HNSW_QUANTIZATION,
    }
}

// ─────────────────────── index upkeep batch sizes ───────────────────────

/// Outbox entries applied per batch.
pub const APPLY_BATCH: usize = 512;
/// Rows read per page while rebuilding an index.
pub const REBUILD_PAGE: usize = 500;
/// Longest time unsnapshotted vector changes wait (they are safe in the
/// outbox meanwhile; this bounds replay work after a crash).
pub const SNAPSHOT_INTERVAL: Duration = Duration::from_secs(60);
/// Snapshot early after this many changes.
pub const SNAPSHOT_EVERY_CHANGES: usize = 20_000;

/// Artifacts embedded per batch by the embedding audit (§10.4).
pub const AUDIT_ARTIFACT_BATCH: usize = 20;
/// Chunks / messages embedded per batch by the audit (one provider request).
pub const AUDIT_BATCH: usize = 100;
/// Audit batches per corpus per tenant per run (bounds one run's work; the
/// next run continues).
pub const AUDIT_MAX_BATCHES: usize = 5;
/// Rows examined per run per corpus by the model-change sweep.
pub const AUDIT_MODEL_SWEEP_ROWS: usize = 500;

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value as the spec writes it: a change here is a spec deviation.
    #[test]
    fn every_spec_constant_has_the_spec_value() {
        // §10.1
        assert_eq!(RRF_K, 60.0);
        assert_eq!(DEFAULT_LANE_WEIGHT, 1.0);
        assert_eq!(RERANK_TEMPERATURE, 0.0);
        assert_eq!(RERANK_MAX_TOKENS, 4000);
        // §10.2
        assert_eq!(SPEC_EMBEDDING_MODEL, "openai/text-embedding-3-large");
        assert_eq!(KNOWLEDGE_VECTOR_FLOOR, 0.32);
        assert_eq!(KNOWLEDGE_DEFAULT_LIMIT, 25);
        assert_eq!(KNOWLEDGE_VECTOR_LANE_MIN, 30);
        assert_eq!(KNOWLEDGE_KEYWORD_LANE_LIMIT, 20);
        assert_eq!(KNOWLEDGE_MAX_CHUNKS_PER_PAGE, 3);
        assert_eq!((KNOWLEDGE_RERANK_WINDOW, KNOWLEDGE_RERANK_KEEP), (20, 12));
        assert_eq!(KNOWLEDGE_CONTEXT_EXPANSION_LIMIT, 10);
        assert_eq!(KNOWLEDGE_NEIGHBOR_EXCERPT_CHARS, 600);
        // §10.3
        assert_eq!((SLACK_VECTOR_LANE_LIMIT, SLACK_TEXT_LANE_LIMIT), (100, 100));
        assert_eq!(SLACK_TS_RANK_WEIGHT, 4.0);
        assert_eq!(SLACK_FULLTEXT_LIKE_BONUS, 1.25);
        assert_eq!(
            (SLACK_CHANNEL_LIKE_BONUS, SLACK_USER_LIKE_BONUS),
            (0.35, 0.35)
        );
        assert_eq!(SLACK_NORMALIZED_LIKE_BONUS, 0.9);
        assert_eq!(SLACK_NORMALIZED_MIN_CHARS, 4);
        assert_eq!((SLACK_TERM_BONUS, SLACK_MAX_BONUS_TERMS), (0.18, 8));
        assert_eq!(SLACK_RECENCY_LANE_WEIGHT, 0.4);
        assert_eq!(SLACK_ARTIFACT_VECTOR_MIN, 30);
        assert_eq!(SLACK_ARTIFACT_LANE_LIMIT, 15);
        assert_eq!(SLACK_PERMALINK_SCORE, 1_000_000.0);
        assert_eq!(SLACK_MAX_PER_THREAD, 2);
        assert_eq!(SLACK_RERANK_WINDOW, 30);
        assert_eq!((SLACK_PARENT_TEXT_CHARS, SLACK_PARENT_TEXT_TOP), (500, 10));
        assert_eq!(SLACK_MAX_RESULTS, 50);
        // §10.4
        assert_eq!(DISTILL_DEBOUNCE, Duration::from_secs(600));
        assert_eq!((DISTILL_MIN_MESSAGES, DISTILL_MIN_CHARS), (2, 150));
        assert_eq!(DISTILL_TRANSCRIPT_CHARS, 24_000);
        assert_eq!(DISTILL_MAX_TOPICS, 6);
        assert_eq!((BURST_MIN_CHARS, BURST_MAX_PER_THREAD), (200, 8));
        assert_eq!(RARE_TERM_MIN_CORPUS, 200);
        assert_eq!((RARE_TERM_DF_FLOOR, RARE_TERM_DF_DIVISOR), (5, 50));
        assert_eq!(RARE_TERM_PROBES, 6);
        assert_eq!(AUDIT_ARTIFACT_BATCH, 20);
        // §5.1 tool caps
        assert_eq!(WHO_KNOWS_DEFAULT_LIMIT, 5);
        assert_eq!(
            (SLACK_TOOL_MAX_MATCHES, SLACK_TOOL_MAX_TEXT_CHARS),
            (25, 1200)
        );
        // §11.3
        assert_eq!(CHUNK_TARGET_CHARS, 1500);
        assert_eq!(CHUNK_OVERLAP_CHARS, 200);
        assert_eq!(SENTENCE_SPLIT_ABOVE_CHARS, 2250);
        assert_eq!(MIN_PAGE_TEXT_CHARS, 20);
        assert_eq!(
            CHUNKER,
            ChunkerParams {
                target_chars: 1500,
                overlap_chars: 200,
                split_above_chars: 2250,
                min_page_text_chars: 20,
            }
        );
        // HNSW
        let v = vector_config();
        assert_eq!(
            (v.connectivity, v.expansion_add, v.expansion_search),
            (16, 128, 40)
        );
        assert_eq!(v.dimensions, 3072);
    }
}
