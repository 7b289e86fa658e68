//! Embeddings (§3.2): one 3072-dim, L2-normalised vector per text.
//!
//! [`OpenAiEmbedder`] calls an OpenAI-compatible `/embeddings` endpoint
//! (OpenRouter by default) in batches of [`EMBEDDING_BATCH_SIZE`], with
//! retries for transient failures and usage metered per batch. With no
//! provider configured, [`HashingEmbedder`] keeps retrieval working offline
//! (GUIDE §4). Every vector is stored next to [`Embedder::model`], so
//! switching embedders is detected and re-embedded by the audit sweep
//! rather than mixing geometries. No caching (§3.2).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::http::{AiError, AiHttp, DEFAULT_CONNECT_TIMEOUT, Endpoint, Timeouts};
use super::usage::{Usage, UsageRecorder};
use crate::config::Config;
use crate::trace::{self, SpanKind};

/// Spec §3.2 model (override: `EMBEDDING_MODEL`).
pub const EMBEDDING_MODEL: &str = crate::config::DEFAULT_EMBEDDING_MODEL;
/// Spec §3.2: requested explicitly as `dimensions: 3072`.
pub const EMBEDDING_DIMENSIONS: usize = 3072;
/// Spec §3.2: at most 100 inputs per request.
pub const EMBEDDING_BATCH_SIZE: usize = 100;
/// Largest embeddings answer: a full batch is 100 × 3072 floats as JSON
/// text (≈ 5–7 MB); four times that is still bounded.
pub const MAX_EMBEDDINGS_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// Bound of one embeddings request, body included.
pub const EMBEDDING_TIMEOUT: Duration = Duration::from_secs(30);
/// Waits before the 2nd and 3rd attempt of a batch after a retryable error.
pub const EMBEDDING_RETRY_DELAYS: [Duration; 2] =
    [Duration::from_millis(500), Duration::from_secs(2)];
/// Model id of [`HashingEmbedder`] vectors.
pub const HASHING_MODEL: &str = "root/hashing-v1";

// The vector lane is built for exactly these vectors.
const _: () = assert!(EMBEDDING_DIMENSIONS == index::vector::DIMENSIONS);

/// Turns texts into vectors for the vector lane.
#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    /// Model id recorded next to every vector (e.g. "openai/text-embedding-3-large").
    fn model(&self) -> &str;
    /// One 3072-dim, L2-normalised vector per input, same order.
    async fn embed(&self, inputs: &[String], purpose: &str) -> Result<Vec<Vec<f32>>, AiError>;
}

/// The embedder the configuration asks for: the provider when a key
/// (`EMBEDDING_API_KEY` / `OPENROUTER_API_KEY`) or an explicit
/// `EMBEDDING_BASE_URL` is set, else the offline [`HashingEmbedder`].
/// Logs which one (never the key).
pub fn embedder_from_config(
    config: &Config,
    usage: UsageRecorder,
) -> Result<Arc<dyn Embedder>, AiError> {
    let openai = OpenAiEmbedder::from_config(config, usage)?;
    let endpoint = openai.http.endpoint();
    if endpoint.api_key.is_some() || endpoint.key_optional {
        tracing::info!(
            model = %openai.model,
            base_url = %endpoint.base_url,
            api_key = endpoint.api_key.is_some(),
            "embeddings: OpenAI-compatible API"
        );
        Ok(Arc::new(openai))
    } else {
        tracing::info!(
            model = HASHING_MODEL,
            "embeddings: built-in hashing embedder (no OPENROUTER_API_KEY, \
             EMBEDDING_API_KEY or EMBEDDING_BASE_URL)"
        );
        Ok(Arc::new(HashingEmbedder))
    }
}

/// Client of an OpenAI-compatible `POST {base}/embeddings`.
#[derive(Clone)]
pub struct OpenAiEmbedder {
    http: AiHttp,
    model: String,
    usage: UsageRecorder,
    timeout: Duration,
    retry_delays: Vec<Duration>,
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
    dimensions: usize,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
    #[serde(default)]
    usage: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// An embedder over `http` with the default timeout and retries.
    pub fn new(http: AiHttp, model: impl Into<String>, usage: UsageRecorder) -> Self {
        OpenAiEmbedder {
            http,
            model: model.into(),
            usage,
            timeout: EMBEDDING_TIMEOUT,
            retry_delays: EMBEDDING_RETRY_DELAYS.to_vec(),
        }
    }

    /// From `EMBEDDING_*`, falling back to `OPENROUTER_*`. The OpenRouter key
    /// is only sent to the OpenRouter base URL: a different
    /// `EMBEDDING_BASE_URL` gets `EMBEDDING_API_KEY` or no key at all.
    pub fn from_config(config: &Config, usage: UsageRecorder) -> Result<Self, AiError> {
        let emb = &config.embedding;
        let base_url = emb
            .base_url
            .clone()
            .unwrap_or_else(|| config.llm.base_url.clone());
        let same_host_as_llm = base_url == config.llm.base_url;
        let api_key = emb.api_key.clone().or_else(|| {
            same_host_as_llm
                .then(|| config.llm.api_key.clone())
                .flatten()
        });
        let endpoint = Endpoint {
            base_url,
            api_key,
            referer: config.llm.referer.clone(),
            title: config.llm.title.clone(),
            key_optional: emb.base_url.is_some(),
        };
        let timeouts = Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            total: EMBEDDING_TIMEOUT,
        };
        Ok(Self::new(
            AiHttp::new(endpoint, timeouts)?,
            emb.model.clone(),
            usage,
        ))
    }

    /// Bound each request by `timeout` instead of [`EMBEDDING_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Retry a retryable failure once per delay (instead of [`EMBEDDING_RETRY_DELAYS`]).
    pub fn with_retry_delays(mut self, delays: Vec<Duration>) -> Self {
        self.retry_delays = delays;
        self
    }

    /// One provider request, traced as an `embedding_batch` LLM span (§3.3).
    async fn embed_batch(&self, batch: &[String], purpose: &str) -> Result<Vec<Vec<f32>>, AiError> {
        if !trace::active() {
            return self.embed_batch_once(batch, purpose).await;
        }
        let input = json!({ "purpose": purpose, "model": self.model, "inputs": batch.len() });
        trace::span("embedding_batch", SpanKind::Llm, input, async {
            let result = self.embed_batch_once(batch, purpose).await;
            match &result {
                Ok(vectors) => trace::set_span_output(json!({ "vectors": vectors.len() })),
                Err(e) => trace::set_span_error(&e.to_string()),
            }
            result
        })
        .await
    }

    async fn embed_batch_once(
        &self,
        batch: &[String],
        purpose: &str,
    ) -> Result<Vec<Vec<f32>>, AiError> {
        let request = EmbeddingsRequest {
            model: &self.model,
            input: batch,
            dimensions: EMBEDDING_DIMENSIONS,
        };
        let mut retries = self.retry_delays.iter();
        let response: EmbeddingsResponse = loop {
            match self
                .http
                .post_json(
                    "embeddings",
                    &request,
                    Some(self.timeout),
                    MAX_EMBEDDINGS_RESPONSE_BYTES,
                )
                .await
            {
                Ok(r) => break r,
                Err(e) if e.is_retryable() => match retries.next() {
                    Some(delay) => {
                        tracing::warn!(error = %e, ?delay, model = %self.model, "embeddings request failed; retrying");
                        tokio::time::sleep(*delay).await;
                    }
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            }
        };
        // Metered before validation: a malformed answer was still billed.
        let usage = response
            .usage
            .as_ref()
            .map(Usage::from_json)
            .unwrap_or_default();
        self.usage.record(purpose, &self.model, &usage).await;
        trace::record_llm_usage(&self.model, usage.for_trace());
        in_input_order(response.data, batch.len(), &self.model)
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    /// Batches go out one after another: simple back-pressure on the
    /// provider's rate limits, and a failure stops the remaining batches.
    async fn embed(&self, inputs: &[String], purpose: &str) -> Result<Vec<Vec<f32>>, AiError> {
        let mut out = Vec::with_capacity(inputs.len());
        for batch in inputs.chunks(EMBEDDING_BATCH_SIZE) {
            out.extend(self.embed_batch(batch, purpose).await?);
        }
        Ok(out)
    }
}

/// Place each returned vector at its `index` (providers may answer out of
/// order), checking count, indexes and dimensions, and normalise it.
fn in_input_order(
    data: Vec<EmbeddingItem>,
    expected: usize,
    model: &str,
) -> Result<Vec<Vec<f32>>, AiError> {
    let invalid = |msg: String| Err(AiError::InvalidResponse(msg));
    if data.len() != expected {
        return invalid(format!("{} embeddings for {expected} inputs", data.len()));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.into_iter().enumerate() {
        let i = item.index.unwrap_or(position);
        let Some(slot) = slots.get_mut(i) else {
            return invalid(format!("embedding index {i} out of range 0..{expected}"));
        };
        if slot.is_some() {
            return invalid(format!("embedding index {i} returned twice"));
        }
        if item.embedding.len() != EMBEDDING_DIMENSIONS {
            return invalid(format!(
                "embedding {i} has {} dimensions, expected {EMBEDDING_DIMENSIONS} (model {model})",
                item.embedding.len()
            ));
        }
        let Some(v) = l2_normalised(item.embedding) else {
            return invalid(format!("embedding {i} is zero or not finite"));
        };
        *slot = Some(v);
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| AiError::InvalidResponse(format!("embedding {i} missing"))))
        .collect()
}

/// `v / |v|`, or `None` for a zero or non-finite vector.
fn l2_normalised(mut v: Vec<f32>) -> Option<Vec<f32>> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    for x in &mut v {
        *x = (f64::from(*x) / norm) as f32;
    }
    Some(v)
}

/// Offline embedder: signed feature hashing (Weinberger et al. 2009) of
/// lower-cased words and of each word's character 3- and 4-grams into 3072
/// dims. Words carry the meaning; n-grams let "embedding" meet "embeddings".
/// Deterministic across runs, machines and releases (FNV-1a, not `std`'s
/// hasher). Not metered: no provider call, no cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct HashingEmbedder;

/// Weight of a whole-word feature.
const WORD_WEIGHT: f32 = 1.0;
/// Total L2 weight of one word's n-grams (spread evenly over them), lower
/// than the word's so an exact word match dominates a shared fragment.
const NGRAM_WEIGHT: f32 = 0.7;

impl HashingEmbedder {
    /// The vector of one text (synchronous; [`Embedder::embed`] runs it on
    /// the blocking pool).
    pub fn embed_text(text: &str) -> Vec<f32> {
        let mut v = vec![0f32; EMBEDDING_DIMENSIONS];
        let mut chars: Vec<char> = Vec::new();
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if word.is_empty() {
                continue;
            }
            let word = word.to_lowercase();
            add_feature(
                &mut v,
                fnv1a(fnv1a(FNV_OFFSET, b"w\0"), word.as_bytes()),
                WORD_WEIGHT,
            );
            chars.clear();
            chars.push('<');
            chars.extend(word.chars());
            chars.push('>');
            let grams = (3..=4usize)
                .map(|n| chars.len().saturating_sub(n - 1))
                .sum::<usize>();
            if grams == 0 {
                continue;
            }
            let weight = NGRAM_WEIGHT / (grams as f32).sqrt();
            for n in 3..=4 {
                for gram in chars.windows(n) {
                    let mut h = fnv1a(FNV_OFFSET, b"g\0");
                    let mut buf = [0u8; 4];
                    for c in gram {
                        h = fnv1a(h, c.encode_utf8(&mut buf).as_bytes());
                    }
                    add_feature(&mut v, h, weight);
                }
            }
        }
        l2_normalised(v).unwrap_or_else(|| {
            // No features (empty or punctuation-only text): a fixed unit
            // vector, never NaN.
            let mut unit = vec![0f32; EMBEDDING_DIMENSIONS];
            unit[0] = 1.0;
            unit
        })
    }
}

#[async_trait]
impl Embedder for HashingEmbedder {
    fn model(&self) -> &str {
        HASHING_MODEL
    }

    async fn embed(&self, inputs: &[String], _purpose: &str) -> Result<Vec<Vec<f32>>, AiError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let inputs = inputs.to_vec();
        tokio::task::spawn_blocking(move || inputs.iter().map(|t| Self::embed_text(t)).collect())
            .await
            .map_err(|e| AiError::InvalidResponse(format!("hashing embedder aborted: {e}")))
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64, continuing from `state` (stable by definition).
fn fnv1a(mut state: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        state ^= u64::from(*b);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// Add `±weight` at the feature's slot. FNV's low bits are weak, so the hash
/// goes through the splitmix64 finaliser before choosing slot and sign.
fn add_feature(v: &mut [f32], hash: u64, weight: f32) {
    let mut z = hash;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let slot = ((z >> 1) % EMBEDDING_DIMENSIONS as u64) as usize;
    v[slot] += if z & 1 == 0 { weight } else { -weight };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[tokio::test]
    async fn hashing_vectors_are_deterministic_unit_length_and_3072_dims() {
        let texts = vec![
            "How do I reset my password?".to_string(),
            "Événements à Zürich: 2026 meetup!".to_string(),
        ];
        let a = HashingEmbedder.embed(&texts, "test").await.unwrap();
        let b = HashingEmbedder.embed(&texts, "test").await.unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        for v in &a {
            assert_eq!(v.len(), EMBEDDING_DIMENSIONS);
            assert!((norm(v) - 1.0).abs() < 1e-5, "{}", norm(v));
        }
        assert_eq!(HashingEmbedder.model(), "root/hashing-v1");
        // Pinned value: the hash must stay stable across releases, because
        // stored vectors are compared with fresh query vectors.
        let v = HashingEmbedder::embed_text("hello");
        let top = v
            .iter()
            .enumerate()
            .max_by(|x, y| x.1.abs().total_cmp(&y.1.abs()))
            .map(|(i, x)| (i, *x > 0.0));
        assert_eq!(top, Some(HELLO_WORD_SLOT));
    }

    /// Slot and sign of the word feature of "hello" (the heaviest feature).
    const HELLO_WORD_SLOT: (usize, bool) = (1634, false);

    #[test]
    fn texts_sharing_words_are_closer_than_unrelated_texts() {
        let q = HashingEmbedder::embed_text("How do I reset my password?");
        let similar = HashingEmbedder::embed_text("Password reset instructions for members");
        let unrelated =
            HashingEmbedder::embed_text("The quarterly gala dinner menu features salmon");
        assert!(cosine(&q, &similar) > cosine(&q, &unrelated) + 0.1);
        // Morphological variants meet through their n-grams.
        let a = HashingEmbedder::embed_text("embedding");
        let b = HashingEmbedder::embed_text("embeddings");
        let c = HashingEmbedder::embed_text("calendar");
        assert!(cosine(&a, &b) > 0.2 && cosine(&a, &b) > cosine(&a, &c) + 0.2);
        // Case and punctuation do not matter.
        let x = HashingEmbedder::embed_text("Reset, PASSWORD!");
        let y = HashingEmbedder::embed_text("reset password");
        assert!((cosine(&x, &y) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn empty_text_is_a_fixed_unit_vector() {
        for text in ["", "   ", "?!…"] {
            let v = HashingEmbedder::embed_text(text);
            assert_eq!(v.len(), EMBEDDING_DIMENSIONS);
            assert!(v.iter().all(|x| x.is_finite()));
            assert!((norm(&v) - 1.0).abs() < 1e-6);
            assert_eq!(v, HashingEmbedder::embed_text(""));
        }
    }

    #[test]
    fn responses_are_reordered_by_index_and_checked() {
        let item = |index, first: f32| EmbeddingItem {
            index: Some(index),
            embedding: {
                let mut v = vec![0.0; EMBEDDING_DIMENSIONS];
                v[0] = first;
                v[1] = 1.0;
                v
            },
        };
        let out = in_input_order(vec![item(1, 2.0), item(0, 0.0)], 2, "m").unwrap();
        assert_eq!(out[0][1], 1.0);
        assert!((out[1][0] - 2.0 / 5f32.sqrt()).abs() < 1e-6, "normalised");
        let err = |r: Result<Vec<Vec<f32>>, AiError>| r.unwrap_err().to_string();
        assert!(err(in_input_order(vec![item(0, 1.0)], 2, "m")).contains("1 embeddings for 2"));
        assert!(err(in_input_order(vec![item(0, 1.0), item(0, 1.0)], 2, "m")).contains("twice"));
        assert!(err(in_input_order(vec![item(5, 1.0)], 1, "m")).contains("out of range"));
        let short = EmbeddingItem {
            index: Some(0),
            embedding: vec![1.0; 1536],
        };
        let e = in_input_order(vec![short], 1, "m").unwrap_err();
        assert!(
            e.to_string().contains("1536 dimensions, expected 3072"),
            "{e}"
        );
        assert!(!e.is_retryable());
        let zero = EmbeddingItem {
            index: None,
            embedding: vec![0.0; EMBEDDING_DIMENSIONS],
        };
        assert!(err(in_input_order(vec![zero], 1, "m")).contains("zero"));
    }
}
