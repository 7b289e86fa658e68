//! Knowledge sources and sync (spec §11): a community's knowledge that
//! lives elsewhere — its website, a member-portal API, a CMS that calls
//! webhooks, a script that pushes documents — kept in step with the
//! knowledge base, every run audited in `knowledge_sync_runs`.
//!
//! - [`sources`] — registering sources (§2.5 columns and CHECKs, write-only
//!   secrets, the per-tenant limits); [`views`] — what the API shows of them.
//! - [`push`] — documents from outside: `POST /kb/sync`, webhook callbacks.
//! - [`fetch`] — getting documents: web pages (Readability), API pulls
//!   (auth, JSONPath mapping), webhook triggers; all through the guarded
//!   outbound client.
//! - [`document`] — §11.2 steps 2, 4, 6: normalisation and the two hashes.
//! - [`ai`] — §11.2 step 3: web distillation and fact-preserving cleanup.
//! - [`apply`] — steps 5–8: documents → pages (unchanged ones cost
//!   nothing), `replace_missing`.
//! - [`runs`] — the run lifecycle and the `knowledge-source-sync` job.
//! - [`scheduler`] — the `knowledge-source-scheduler` tick.
//! - [`slack_extraction`] — the hourly `slack-knowledge-extraction`: good
//!   Slack answers become pages their authors own.

pub mod ai;
pub mod apply;
pub mod document;
pub mod fetch;
pub mod push;
pub mod runs;
pub mod scheduler;
pub mod slack_extraction;
pub mod sources;
pub mod views;

use std::sync::Arc;

use serde_json::Value;
use storage::RedbStore;

use crate::ai::chat::ChatClient;
use crate::config::Limits;
use crate::platform::clock::Clock;
use crate::platform::settings::tenant_count_limit;
use crate::queue::Queues;
use crate::retrieval::Retrieval;
use fetch::Fetcher;

/// A tenant's knowledge-sync limits (§15.3): the `ROOT_…` defaults with the
/// tenant's `settings.limits` overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncLimits {
    /// `max_knowledge_sources_per_tenant` (100).
    pub max_sources: u32,
    /// `min_knowledge_sync_interval_minutes` (5).
    pub min_interval_minutes: u32,
    /// `knowledge_sync_per_tenant_cap` (2 syncs at once).
    pub per_tenant_cap: u32,
}

impl SyncLimits {
    /// `defaults` with `settings.limits` applied (non-positive or malformed
    /// overrides are ignored).
    pub fn for_tenant(defaults: &Limits, settings: &Value) -> SyncLimits {
        let count = |name: &str, default: u32| tenant_count_limit(settings, name, default);
        SyncLimits {
            max_sources: count(
                "max_knowledge_sources_per_tenant",
                defaults.max_knowledge_sources_per_tenant,
            ),
            min_interval_minutes: count(
                "min_knowledge_sync_interval_minutes",
                defaults.min_knowledge_sync_interval_minutes,
            ),
            per_tenant_cap: count(
                "knowledge_sync_per_tenant_cap",
                defaults.knowledge_sync_per_tenant_cap,
            ),
        }
    }

    /// The scheduling interval actually used (§11.2 scheduler): clamped to
    /// `[max(5, tenant min), 43200]` minutes.
    pub fn clamp_interval(&self, minutes: i32) -> i32 {
        let floor = self.min_interval_minutes.clamp(5, 43_200) as i32;
        minutes.clamp(floor, 43_200)
    }
}

struct Inner {
    store: RedbStore,
    retrieval: Retrieval,
    llm: ChatClient,
    fetcher: Fetcher,
    queues: Queues,
    clock: Arc<dyn Clock>,
    limits: Limits,
}

/// The knowledge sync service: sources, runs, the two queue handlers.
/// Cheap to clone.
#[derive(Clone)]
pub struct KnowledgeSync {
    inner: Arc<Inner>,
}

impl KnowledgeSync {
    /// A service over these parts.
    pub fn new(
        store: RedbStore,
        retrieval: Retrieval,
        llm: ChatClient,
        fetcher: Fetcher,
        queues: Queues,
        clock: Arc<dyn Clock>,
        limits: Limits,
    ) -> KnowledgeSync {
        KnowledgeSync {
            inner: Arc::new(Inner {
                store,
                retrieval,
                llm,
                fetcher,
                queues,
                clock,
                limits,
            }),
        }
    }

    /// The limits of a tenant with these settings.
    pub fn limits_for(&self, settings: &Value) -> SyncLimits {
        SyncLimits::for_tenant(&self.inner.limits, settings)
    }

    /// The fetcher (its callback URL names where webhook sources push).
    pub fn fetcher(&self) -> &Fetcher {
        &self.inner.fetcher
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defaults() -> Limits {
        Limits {
            max_knowledge_sources_per_tenant: 100,
            min_knowledge_sync_interval_minutes: 5,
            knowledge_sync_per_tenant_cap: 2,
            slack_ingest_per_tenant_per_minute: 30,
            slack_ingest_global_per_minute: 60,
        }
    }

    #[test]
    fn tenant_overrides_apply_and_intervals_are_clamped() {
        let l = SyncLimits::for_tenant(&defaults(), &json!({}));
        assert_eq!(
            (l.max_sources, l.min_interval_minutes, l.per_tenant_cap),
            (100, 5, 2)
        );
        assert_eq!(l.clamp_interval(1), 5);
        assert_eq!(l.clamp_interval(60), 60);
        assert_eq!(l.clamp_interval(100_000), 43_200);
        let l = SyncLimits::for_tenant(
            &defaults(),
            &json!({"limits": {"min_knowledge_sync_interval_minutes": 30,
                               "knowledge_sync_per_tenant_cap": 1,
                               "max_knowledge_sources_per_tenant": 0}}),
        );
        assert_eq!(
            (l.max_sources, l.min_interval_minutes, l.per_tenant_cap),
            (100, 30, 1)
        );
        assert_eq!(l.clamp_interval(5), 30);
    }
}
