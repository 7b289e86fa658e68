//! The data `/foundations` renders from the code rather than from prose:
//! every queue of `queue::registry::QUEUES` (§13) and the named constants
//! the walkthrough cites, each shown under its code name so a reader can
//! grep for it and the page cannot drift from what runs.

use std::time::Duration;

use crate::agent::constants::{
    LLM_CALL_RETRY_DELAYS_MS, MAX_PLANNING_ROUNDS, MAX_TOOL_CALLS_PER_BATCH,
    TOOL_RESULT_SERIALIZED_CAP,
};
use crate::ai::embeddings::EMBEDDING_DIMENSIONS;
use crate::channels::conversation::HISTORY_LIMIT;
use crate::identity::TIER_CACHE_TTL;
use crate::integrations::client::INVOKE_ATTEMPTS;
use crate::integrations::endpoints::{DEFAULT_TOOL_TIMEOUT, EndpointKey, Method};
use crate::integrations::registry::MANIFEST_CACHE_TTL;
use crate::integrations::signing::MAX_SKEW_SECS;
use crate::queue::registry::{QUEUES, RateLimit};
use crate::retrieval::params::{
    CHUNK_OVERLAP_CHARS, CHUNK_TARGET_CHARS, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_M,
    KNOWLEDGE_DEFAULT_LIMIT, KNOWLEDGE_KEYWORD_LANE_LIMIT, KNOWLEDGE_MAX_CHUNKS_PER_PAGE,
    KNOWLEDGE_RERANK_KEEP, KNOWLEDGE_RERANK_WINDOW, KNOWLEDGE_VECTOR_FLOOR,
    KNOWLEDGE_VECTOR_LANE_MIN, RRF_K, SLACK_TEXT_LANE_LIMIT, SLACK_VECTOR_LANE_LIMIT,
};

/// One queue of §13 as the page lists it.
pub struct QueueRow {
    /// The queue's name (stable once deployed).
    pub name: &'static str,
    /// Jobs running at once.
    pub concurrency: usize,
    /// Attempts per job.
    pub attempts: u32,
    /// Backoff base, readable (`—` without retries).
    pub backoff: String,
    /// `every 60 s`, or `on demand` for a queue fed by events.
    pub schedule: String,
    /// The limiter its jobs pass, if any.
    pub limit: &'static str,
}

/// Every queue of the registry, in its order.
pub fn queues() -> Vec<QueueRow> {
    QUEUES
        .iter()
        .map(|q| QueueRow {
            name: q.name,
            concurrency: q.concurrency,
            attempts: q.attempts,
            backoff: if q.attempts > 1 {
                duration(Duration::from_millis(q.backoff_ms))
            } else {
                "—".into()
            },
            schedule: match q.repeat {
                Some(r) => format!(
                    "every {}",
                    duration(Duration::from_secs(r.every_secs.unsigned_abs()))
                ),
                None => "on demand".into(),
            },
            limit: match q.rate_limit {
                Some(RateLimit::SlackIngest) => "Slack ingest rate (global and per community)",
                Some(RateLimit::KnowledgeSyncPerTenant) => "syncs at once per community",
                None => "",
            },
        })
        .collect()
}

/// `90 s`, `5 min`, `6 h`: the largest unit that divides evenly.
fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    let secs = d.as_secs();
    if !ms.is_multiple_of(1000) {
        format!("{ms} ms")
    } else if secs != 0 && secs.is_multiple_of(3600) {
        format!("{} h", secs / 3600)
    } else if secs != 0 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

/// One root-int/1 endpoint a backend implements.
pub struct EndpointRow {
    /// The key of `endpoint_paths`.
    pub key: &'static str,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The default path.
    pub path: &'static str,
    /// The bound of one call.
    pub timeout: String,
}

/// The six endpoints, in the spec's order.
pub fn endpoints() -> Vec<EndpointRow> {
    EndpointKey::ALL
        .into_iter()
        .map(|k| EndpointRow {
            key: k.as_str(),
            method: match k.method() {
                Method::Get => "GET",
                Method::Post => "POST",
            },
            path: k.default_path(),
            timeout: duration(k.timeout()),
        })
        .collect()
}

/// A named constant as the page shows it.
pub struct ConstRow {
    /// Where it lives.
    pub group: &'static str,
    /// Its code name (grep for it).
    pub name: &'static str,
    /// Its value, as the code has it.
    pub value: String,
    /// What it governs.
    pub meaning: &'static str,
}

/// The constants the walkthrough cites, grouped by the step they belong to.
pub fn constants() -> Vec<ConstRow> {
    let row = |group, name, value: String, meaning| ConstRow {
        group,
        name,
        value,
        meaning,
    };
    vec![
        row(
            "channels",
            "HISTORY_LIMIT",
            HISTORY_LIMIT.to_string(),
            "earlier messages of the thread loaded as the turn's history",
        ),
        row(
            "identity",
            "TIER_CACHE_TTL",
            duration(TIER_CACHE_TTL),
            "how long a resolved member tier is cached",
        ),
        row(
            "agent",
            "MAX_PLANNING_ROUNDS",
            MAX_PLANNING_ROUNDS.to_string(),
            "planning rounds with tools before the answer round (when the caller sets none)",
        ),
        row(
            "agent",
            "MAX_TOOL_CALLS_PER_BATCH",
            MAX_TOOL_CALLS_PER_BATCH.to_string(),
            "tool calls of one batch that run, in parallel",
        ),
        row(
            "agent",
            "TOOL_RESULT_SERIALIZED_CAP",
            TOOL_RESULT_SERIALIZED_CAP.to_string(),
            "characters of a tool result before it is deep-truncated",
        ),
        row(
            "agent",
            "LLM_CALL_RETRY_DELAYS_MS",
            format!("{LLM_CALL_RETRY_DELAYS_MS:?}"),
            "waits (ms) before the second and third attempt of a model call",
        ),
        row(
            "retrieval",
            "RRF_K",
            RRF_K.to_string(),
            "k of reciprocal rank fusion: each lane adds weight / (k + rank)",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_KEYWORD_LANE_LIMIT",
            KNOWLEDGE_KEYWORD_LANE_LIMIT.to_string(),
            "candidates of the BM25 (keyword) lane of a knowledge search",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_VECTOR_LANE_MIN",
            KNOWLEDGE_VECTOR_LANE_MIN.to_string(),
            "the vector lane fetches max(limit, this) candidates",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_VECTOR_FLOOR",
            KNOWLEDGE_VECTOR_FLOOR.to_string(),
            "cosine similarity below which a vector hit is dropped (the default embedding model)",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_DEFAULT_LIMIT",
            KNOWLEDGE_DEFAULT_LIMIT.to_string(),
            "results of a knowledge search when the caller sets no limit",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_MAX_CHUNKS_PER_PAGE",
            KNOWLEDGE_MAX_CHUNKS_PER_PAGE.to_string(),
            "chunks of one page kept after fusion",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_RERANK_WINDOW",
            KNOWLEDGE_RERANK_WINDOW.to_string(),
            "fused chunks the model reranks",
        ),
        row(
            "retrieval",
            "KNOWLEDGE_RERANK_KEEP",
            KNOWLEDGE_RERANK_KEEP.to_string(),
            "chunks kept after a successful rerank",
        ),
        row(
            "retrieval",
            "SLACK_TEXT_LANE_LIMIT",
            SLACK_TEXT_LANE_LIMIT.to_string(),
            "candidates of the text lane of a Slack search",
        ),
        row(
            "retrieval",
            "SLACK_VECTOR_LANE_LIMIT",
            SLACK_VECTOR_LANE_LIMIT.to_string(),
            "candidates of the vector lane of a Slack search",
        ),
        row(
            "storage",
            "CHUNK_TARGET_CHARS",
            CHUNK_TARGET_CHARS.to_string(),
            "target length of a knowledge chunk (characters)",
        ),
        row(
            "storage",
            "CHUNK_OVERLAP_CHARS",
            CHUNK_OVERLAP_CHARS.to_string(),
            "text shared by consecutive chunks of one section",
        ),
        row(
            "storage",
            "EMBEDDING_DIMENSIONS",
            EMBEDDING_DIMENSIONS.to_string(),
            "length of every embedding (stored as f16 in the HNSW index)",
        ),
        row(
            "storage",
            "HNSW_M",
            HNSW_M.to_string(),
            "HNSW edges per node",
        ),
        row(
            "storage",
            "HNSW_EF_CONSTRUCTION",
            HNSW_EF_CONSTRUCTION.to_string(),
            "HNSW ef_construction",
        ),
        row(
            "storage",
            "HNSW_EF_SEARCH",
            HNSW_EF_SEARCH.to_string(),
            "HNSW ef_search",
        ),
        row(
            "root-int/1",
            "MAX_SKEW_SECS",
            MAX_SKEW_SECS.to_string(),
            "seconds of clock skew a backend tolerates on a signed request",
        ),
        row(
            "root-int/1",
            "INVOKE_ATTEMPTS",
            INVOKE_ATTEMPTS.to_string(),
            "attempts of a tool call (retried on network errors and 502/503/504 only)",
        ),
        row(
            "root-int/1",
            "DEFAULT_TOOL_TIMEOUT",
            duration(DEFAULT_TOOL_TIMEOUT),
            "bound of a tool call when the manifest gives no timeout_ms",
        ),
        row(
            "root-int/1",
            "MANIFEST_CACHE_TTL",
            duration(MANIFEST_CACHE_TTL),
            "how long a fetched manifest is used before the next fetch",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_largest_even_unit() {
        assert_eq!(duration(Duration::from_millis(300)), "300 ms");
        assert_eq!(duration(Duration::from_secs(45)), "45 s");
        assert_eq!(duration(Duration::from_secs(300)), "5 min");
        assert_eq!(duration(Duration::from_secs(6 * 3600)), "6 h");
        assert_eq!(duration(Duration::ZERO), "0 s");
    }

    #[test]
    fn every_constant_the_walkthrough_cites_is_listed() {
        let page = include_str!("../../../templates/dashboard/foundations.html");
        let listed: Vec<_> = constants().iter().map(|k| k.name).collect();
        let cited: Vec<&str> = page
            .split("self.c(\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(cited.len() > 10, "{cited:?}");
        for name in cited {
            assert!(listed.contains(&name), "{name} is cited but not listed");
        }
    }

    #[test]
    fn every_queue_is_listed_once_in_registry_order() {
        let names: Vec<_> = queues().iter().map(|q| q.name).collect();
        let expected: Vec<_> = QUEUES.iter().map(|q| q.name).collect();
        assert_eq!(names, expected);
    }
}
