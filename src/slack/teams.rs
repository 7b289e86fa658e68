//! Which tenants a Slack workspace (`team_id`) belongs to, for the legacy
//! `POST /slack/events` route (§8.2), which names no tenant. The map is
//! built from every tenant's resolved credentials (`config.team_id`, the
//! `slack_team_id` credential) in one pass and kept for [`TEAM_MAP_TTL_SECS`]:
//! requests in between — unknown teams included — never scan the tenants.
//! A credential change through `SlackSetup` invalidates it at once.
//!
//! Candidates come live first, then dev shadows; the caller still verifies
//! the request's signature against each candidate's secret in that order
//! (the body's `team_id` is unverified and only narrows the search).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use storage::{RedbStore, StorageResult, TenantStore, Ts};
use tokio::sync::Mutex;
use uuid::Uuid;

use super::credentials::resolve;
use crate::config::Config;
use crate::platform::clock::Clock;

/// How long a built map answers before it is rebuilt.
pub const TEAM_MAP_TTL_SECS: i64 = 60;

type TeamMap = HashMap<String, Vec<Uuid>>;
/// A built map: when, for which generation, and the map.
type Built = Option<(Ts, u64, Arc<TeamMap>)>;

/// The cached `team_id → tenant ids` map. Cheap to clone.
#[derive(Clone)]
pub struct TeamDirectory {
    store: RedbStore,
    config: Arc<Config>,
    clock: Arc<dyn Clock>,
    /// (built at, generation built for, the map).
    built: Arc<Mutex<Built>>,
    /// Bumped by [`TeamDirectory::invalidate`].
    generation: Arc<AtomicU64>,
}

impl TeamDirectory {
    /// An empty directory (built on first use).
    pub fn new(store: RedbStore, config: Arc<Config>, clock: Arc<dyn Clock>) -> TeamDirectory {
        TeamDirectory {
            store,
            config,
            clock,
            built: Arc::new(Mutex::new(None)),
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The tenants whose Slack credentials name `team_id`, live first;
    /// empty for an unknown workspace.
    pub async fn tenants_of(&self, team_id: &str) -> StorageResult<Vec<Uuid>> {
        let map = self.map().await?;
        Ok(map.get(team_id).cloned().unwrap_or_default())
    }

    /// Drop the map (the next lookup rebuilds it).
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The current map, rebuilt when missing or older than the TTL (one
    /// rebuild at a time: concurrent lookups wait for it).
    async fn map(&self) -> StorageResult<Arc<TeamMap>> {
        let mut guard = self.built.lock().await;
        let now = self.clock.now();
        let generation = self.generation.load(Ordering::SeqCst);
        if let Some((at, built_for, map)) = guard.as_ref()
            && *built_for == generation
            && now.micros() - at.micros() < TEAM_MAP_TTL_SECS * 1_000_000
        {
            return Ok(map.clone());
        }
        let map = Arc::new(self.build().await?);
        *guard = Some((now, generation, map.clone()));
        Ok(map)
    }

    async fn build(&self) -> StorageResult<TeamMap> {
        let mut tenants = self.store.list_tenants().await?;
        // Live rows first, then shadows; by slug within each for stable order.
        tenants.sort_by(|a, b| {
            (a.live_tenant_id.is_some(), &a.slug).cmp(&(b.live_tenant_id.is_some(), &b.slug))
        });
        let mut map = TeamMap::new();
        for t in &tenants {
            if let Some(creds) = resolve(&self.store, &self.config, t).await?
                && let Some(team) = creds.team_id
            {
                map.entry(team).or_default().push(t.id);
            }
        }
        Ok(map)
    }
}
