//! Usage metering (§3.1): every provider call is written to
//! `llm_token_usage` for the current tenant AND added to the request-scoped
//! collector, so an API response can report `{ llm_calls, tokens, cost_usd }`.
//!
//! The collector is a tokio task-local like the tenant context: a request
//! handler wraps its work in [`collect_usage`]; background work that must not
//! be billed to the requester runs inside [`outside_collection`] (the spec's
//! `exitLlmUsageCollection`). A `tokio::spawn`ed task starts outside any
//! collection, as task-locals do not cross spawns.
//!
//! Metering never fails a call: a row that cannot be written is logged.

use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;
use storage::{LlmTokenUsage, RedbStore, StorageResult};
use uuid::Uuid;

use crate::platform::clock::Clock;
use crate::platform::tenancy;

/// Token counts and cost of one provider call, as the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// `usage.prompt_tokens`
    pub prompt_tokens: u64,
    /// `usage.completion_tokens` (absent for embeddings ⇒ 0)
    pub completion_tokens: u64,
    /// `usage.total_tokens` (absent ⇒ prompt + completion)
    pub total_tokens: u64,
    /// `usage.cost` in USD (OpenRouter reports it; OpenAI does not).
    pub cost_usd: Option<f64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens served
    /// from the provider's prompt cache (cheaper), when reported.
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`: completion
    /// tokens spent on reasoning, when reported.
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// The fields a trace records of this call.
    pub fn for_trace(&self) -> crate::trace::LlmUsage {
        crate::trace::LlmUsage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            total_tokens: self.total_tokens,
            cost_usd: self.cost_usd,
        }
    }

    /// Read a provider `usage` object leniently: a missing or malformed field
    /// counts as absent, so odd metering data never fails the call itself.
    pub fn from_json(usage: &serde_json::Value) -> Usage {
        let count = |field: &str| usage.get(field).and_then(serde_json::Value::as_u64);
        let prompt_tokens = count("prompt_tokens").unwrap_or(0);
        let completion_tokens = count("completion_tokens").unwrap_or(0);
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: count("total_tokens")
                .unwrap_or(prompt_tokens.saturating_add(completion_tokens)),
            cost_usd: usage
                .get("cost")
                .and_then(serde_json::Value::as_f64)
                .filter(|c| c.is_finite()),
            cached_tokens: usage
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(serde_json::Value::as_u64),
            reasoning_tokens: usage
                .pointer("/completion_tokens_details/reasoning_tokens")
                .and_then(serde_json::Value::as_u64),
        }
    }
}

/// What a collection saw: the shape API responses return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct UsageTotals {
    /// Provider calls made.
    pub llm_calls: u64,
    /// Sum of `total_tokens`.
    pub tokens: u64,
    /// Sum of reported costs (calls without a cost add 0).
    pub cost_usd: f64,
}

impl UsageTotals {
    fn add(&mut self, usage: &Usage) {
        self.llm_calls += 1;
        self.tokens = self.tokens.saturating_add(usage.total_tokens);
        self.cost_usd += usage.cost_usd.unwrap_or(0.0);
    }
}

/// One collection; nested collections also count toward their parent,
/// because the outer request did incur the inner work.
struct Collector {
    totals: Mutex<UsageTotals>,
    parent: Option<Arc<Collector>>,
}

tokio::task_local! {
    static COLLECTOR: Option<Arc<Collector>>;
}

fn current_collector() -> Option<Arc<Collector>> {
    COLLECTOR.try_with(|c| c.clone()).ok().flatten()
}

/// Run `fut` and return what its provider calls used (the spec's
/// request-scoped usage collector).
pub async fn collect_usage<F: Future>(fut: F) -> (F::Output, UsageTotals) {
    let collector = Arc::new(Collector {
        totals: Mutex::new(UsageTotals::default()),
        parent: current_collector(),
    });
    let out = COLLECTOR.scope(Some(collector.clone()), fut).await;
    let totals = *collector
        .totals
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (out, totals)
}

/// Run `fut` outside any collection (spec `exitLlmUsageCollection`): its
/// calls are still written to `llm_token_usage`, but not billed to the
/// request that happens to trigger them.
pub async fn outside_collection<F: Future>(fut: F) -> F::Output {
    COLLECTOR.scope(None, fut).await
}

fn add_to_collections(usage: &Usage) {
    let mut next = current_collector();
    while let Some(c) = next {
        c.totals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .add(usage);
        next = c.parent.clone();
    }
}

/// Where usage rows go. Object-safe so clients hold `Arc<dyn UsageSink>`
/// instead of being generic over the store.
#[async_trait]
pub trait UsageSink: Send + Sync + 'static {
    /// Persist one row.
    async fn insert_usage(&self, row: LlmTokenUsage) -> StorageResult<()>;
}

/// Metering rows are relaxed writes: visible at once, durable within
/// [`storage::RELAXED_FLUSH_INTERVAL`], never an fsync on a turn's path.
#[async_trait]
impl UsageSink for RedbStore {
    async fn insert_usage(&self, row: LlmTokenUsage) -> StorageResult<()> {
        self.insert_relaxed(row).await.map(|_| ())
    }
}

/// Sees every metered row as it is recorded (the daily LLM budget keeps
/// its running totals this way instead of re-reading the table).
pub trait UsageObserver: Send + Sync + 'static {
    /// One recorded call (called whether or not the row was stored: the
    /// provider call happened either way). Must not block.
    fn recorded(&self, row: &LlmTokenUsage);
}

/// Records usage into storage and the current collection. Cheap to clone.
#[derive(Clone)]
pub struct UsageRecorder {
    sink: Arc<dyn UsageSink>,
    clock: Arc<dyn Clock>,
    observer: Option<Arc<dyn UsageObserver>>,
}

impl UsageRecorder {
    /// A recorder writing rows through `sink` (e.g. `AppState.store`).
    pub fn new(sink: Arc<dyn UsageSink>, clock: Arc<dyn Clock>) -> Self {
        UsageRecorder {
            sink,
            clock,
            observer: None,
        }
    }

    /// Also tell `observer` about every recorded row.
    pub fn with_observer(mut self, observer: Arc<dyn UsageObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Meter one call: add it to the current collection, and write an
    /// `llm_token_usage` row when a tenant context exists (platform work
    /// without a tenant is only collected). Failures are logged, not returned.
    pub async fn record(&self, purpose: &str, model: &str, usage: &Usage) {
        add_to_collections(usage);
        let Some(tenant) = tenancy::current() else {
            tracing::debug!(purpose, model, "LLM usage outside a tenant scope: no row");
            return;
        };
        let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let row = LlmTokenUsage {
            id: Uuid::new_v4(),
            tenant_id: tenant.id(),
            purpose: purpose.to_string(),
            model: model.to_string(),
            prompt_tokens: tokens(usage.prompt_tokens),
            completion_tokens: tokens(usage.completion_tokens),
            total_tokens: tokens(usage.total_tokens),
            cost_usd: usage.cost_usd,
            created_at: self.clock.now(),
        };
        if let Some(o) = &self.observer {
            o.recorded(&row);
        }
        if let Err(e) = self.sink.insert_usage(row).await {
            tracing::warn!(error = %e, purpose, model, "recording LLM usage failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage(tokens: u64, cost: Option<f64>) -> Usage {
        Usage {
            prompt_tokens: tokens,
            completion_tokens: 0,
            total_tokens: tokens,
            cost_usd: cost,
            ..Usage::default()
        }
    }

    #[test]
    fn openrouter_usage_is_read_with_its_cost() {
        // Shape of a recorded OpenRouter answer (grok_tool_cached_tokens_reasoning/00).
        let u = Usage::from_json(&json!({
            "prompt_tokens":366,"completion_tokens":157,"total_tokens":523,"cost":1.052e-4,
            "is_byok":false,"prompt_tokens_details":{"cached_tokens":310}
        }));
        assert_eq!(
            u,
            Usage {
                prompt_tokens: 366,
                completion_tokens: 157,
                total_tokens: 523,
                cost_usd: Some(0.0001052),
                cached_tokens: Some(310),
                reasoning_tokens: None,
            }
        );
    }

    #[test]
    fn missing_or_malformed_usage_fields_count_as_absent() {
        let u = Usage::from_json(&json!({"prompt_tokens": 12, "cost": "free"}));
        assert_eq!(u, usage(12, None));
        let u = Usage::from_json(&json!({"prompt_tokens": 3, "completion_tokens": 4}));
        assert_eq!(u.total_tokens, 7);
        assert_eq!(Usage::from_json(&json!(null)), Usage::default());
    }

    #[tokio::test]
    async fn nested_collections_roll_up_and_outside_collection_is_not_counted() {
        let (inner, outer) = collect_usage(async {
            add_to_collections(&usage(10, Some(0.5)));
            let ((), inner) = collect_usage(async {
                add_to_collections(&usage(5, None));
            })
            .await;
            outside_collection(async {
                add_to_collections(&usage(1000, Some(9.0)));
            })
            .await;
            inner
        })
        .await;
        assert_eq!(
            inner,
            UsageTotals {
                llm_calls: 1,
                tokens: 5,
                cost_usd: 0.0
            }
        );
        assert_eq!(
            outer,
            UsageTotals {
                llm_calls: 2,
                tokens: 15,
                cost_usd: 0.5
            }
        );
        // Outside any collection nothing is collected and nothing panics.
        add_to_collections(&usage(1, None));
    }

    struct FailingSink;

    #[async_trait]
    impl UsageSink for FailingSink {
        async fn insert_usage(&self, _row: LlmTokenUsage) -> StorageResult<()> {
            Err(storage::StorageError::Backend("disk full".into()))
        }
    }

    #[tokio::test]
    async fn a_failing_store_or_a_missing_tenant_still_collects() {
        let recorder = UsageRecorder::new(
            Arc::new(FailingSink),
            Arc::new(crate::platform::clock::SystemClock),
        );
        let tenant = Arc::new(storage::Tenant::new("acme", "Acme"));
        let ((), totals) = collect_usage(async {
            recorder.record("test", "m", &usage(7, Some(0.25))).await;
            tenancy::scope(tenancy::TenantContext { tenant }, async {
                recorder.record("test", "m", &usage(3, None)).await;
            })
            .await;
        })
        .await;
        assert_eq!(
            totals,
            UsageTotals {
                llm_calls: 2,
                tokens: 10,
                cost_usd: 0.25
            }
        );
    }
}
