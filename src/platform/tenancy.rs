//! Tenancy (§1): a 30-second tenant cache and the request/job-scoped tenant
//! context.
//!
//! The context is a tokio task-local set once per request (by the API-key
//! middleware) or per job (by the worker, from the job payload). Services
//! call [`current`] instead of taking `tenant_id` parameters, so a service
//! cannot be handed the wrong tenant by a caller.

use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;
use storage::{RedbStore, StorageResult, Tenant, TenantStore};
use uuid::Uuid;

/// How long a tenant row is served from memory (§1: 30 s).
pub const TENANT_CACHE_TTL: Duration = Duration::from_secs(30);

/// The tenant a request or job acts for.
#[derive(Clone, Debug)]
pub struct TenantContext {
    /// The tenant row (live or dev shadow) everything in this scope reads and writes.
    pub tenant: Arc<Tenant>,
}

impl TenantContext {
    /// The tenant's id.
    pub fn id(&self) -> Uuid {
        self.tenant.id
    }
}

tokio::task_local! {
    static CURRENT: TenantContext;
}

/// Why `slug` cannot name a new community, or `None` when it can: 1–64
/// characters of a-z, 0-9 and '-' (the `tenants.slug` check), not ending in
/// `--dev` (reserved for dev shadows). `root tenant create` and `/platform`
/// share it.
pub fn slug_problem(slug: &str) -> Option<String> {
    let ok = !slug.is_empty()
        && slug.len() <= 64
        && slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        return Some(format!(
            "{slug:?}: a slug is 1-64 characters of a-z, 0-9 and '-'"
        ));
    }
    if slug.ends_with("--dev") {
        return Some(format!(
            "{slug:?}: slugs ending in --dev are reserved for dev shadows"
        ));
    }
    None
}

/// Whether `tenant` may serve members now: its own row and, for a dev
/// shadow, its live tenant's row are `active`, read fresh from `store` (a
/// suspension must not wait out the 30 s cache; security review L-2). A
/// vanished row counts as not active.
pub async fn is_serving(store: &RedbStore, tenant: &Tenant) -> StorageResult<bool> {
    let active = |t: Option<Tenant>| t.is_some_and(|t| t.status == storage::TenantStatus::Active);
    let row = store.tenant_by_id(tenant.id).await?;
    let live = row.as_ref().and_then(|t| t.live_tenant_id);
    if !active(row) {
        return Ok(false);
    }
    match live {
        Some(live) => Ok(active(store.tenant_by_id(live).await?)),
        None => Ok(true),
    }
}

/// Run `fut` with `ctx` as the current tenant.
pub async fn scope<F: std::future::Future>(ctx: TenantContext, fut: F) -> F::Output {
    CURRENT.scope(ctx, fut).await
}

/// The current tenant context, if the caller runs inside [`scope`].
pub fn current() -> Option<TenantContext> {
    CURRENT.try_with(|c| c.clone()).ok()
}

/// The current tenant's id, or an error naming the missing scope (a bug:
/// every request/job path establishes the context before calling services).
pub fn current_tenant_id() -> Result<Uuid, NoTenantContext> {
    CURRENT.try_with(|c| c.id()).map_err(|_| NoTenantContext)
}

/// A service was called outside a tenant scope.
#[derive(Debug, thiserror::Error)]
#[error("no tenant context: this code must run inside tenancy::scope")]
pub struct NoTenantContext;

/// Tenant rows by id and by slug, each cached for [`TENANT_CACHE_TTL`].
#[derive(Clone)]
pub struct TenantCache {
    store: RedbStore,
    by_id: Cache<Uuid, Arc<Tenant>>,
    by_slug: Cache<String, Arc<Tenant>>,
    /// Live tenant id → its dev shadow (or none): every Slack event asks.
    shadows: Cache<Uuid, Option<Arc<Tenant>>>,
}

impl TenantCache {
    /// A cache over `store` with the spec's 30 s TTL.
    pub fn new(store: RedbStore) -> Self {
        Self::with_ttl(store, TENANT_CACHE_TTL)
    }

    /// A cache with a custom TTL (tests).
    pub fn with_ttl(store: RedbStore, ttl: Duration) -> Self {
        TenantCache {
            store,
            by_id: Cache::builder()
                .time_to_live(ttl)
                .max_capacity(10_000)
                .build(),
            by_slug: Cache::builder()
                .time_to_live(ttl)
                .max_capacity(10_000)
                .build(),
            shadows: Cache::builder()
                .time_to_live(ttl)
                .max_capacity(10_000)
                .build(),
        }
    }

    /// Tenant by id (cached).
    pub async fn by_id(&self, id: Uuid) -> StorageResult<Option<Arc<Tenant>>> {
        if let Some(t) = self.by_id.get(&id) {
            return Ok(Some(t));
        }
        let found = self.store.tenant_by_id(id).await?.map(Arc::new);
        if let Some(t) = &found {
            self.remember(t.clone());
        }
        Ok(found)
    }

    /// Tenant by slug (cached).
    pub async fn by_slug(&self, slug: &str) -> StorageResult<Option<Arc<Tenant>>> {
        if let Some(t) = self.by_slug.get(slug) {
            return Ok(Some(t));
        }
        let found = self.store.tenant_by_slug(slug).await?.map(Arc::new);
        if let Some(t) = &found {
            self.remember(t.clone());
        }
        Ok(found)
    }

    /// The dev shadow of the live tenant `live_id`, if any (cached).
    pub async fn dev_shadow_of(&self, live_id: Uuid) -> StorageResult<Option<Arc<Tenant>>> {
        if let Some(found) = self.shadows.get(&live_id) {
            return Ok(found);
        }
        let found = self.store.dev_shadow_of(live_id).await?.map(Arc::new);
        self.shadows.insert(live_id, found.clone());
        Ok(found)
    }

    /// Forget a tenant after it changed (saves through the dashboard call
    /// this), and the shadow link of its pair.
    pub fn invalidate(&self, tenant: &Tenant) {
        self.by_id.invalidate(&tenant.id);
        self.by_slug.invalidate(&tenant.slug);
        self.shadows.invalidate(&tenant.id);
        if let Some(live) = tenant.live_tenant_id {
            self.shadows.invalidate(&live);
        }
    }

    fn remember(&self, t: Arc<Tenant>) {
        self.by_slug.insert(t.slug.clone(), t.clone());
        self.by_id.insert(t.id, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::MigrationStore;

    #[tokio::test]
    async fn context_is_visible_inside_the_scope_only() {
        assert!(current().is_none());
        assert!(current_tenant_id().is_err());
        let t = Arc::new(Tenant::new("acme", "Acme"));
        let id = t.id;
        let seen = scope(TenantContext { tenant: t }, async {
            // Survives awaits and nested calls within the task.
            tokio::task::yield_now().await;
            current_tenant_id().unwrap()
        })
        .await;
        assert_eq!(seen, id);
        assert!(current().is_none());
    }

    #[tokio::test]
    async fn the_cache_serves_stale_rows_until_invalidated_or_expired() {
        let store = RedbStore::open_in_memory().unwrap();
        store.migrate().await.unwrap();
        let cache = TenantCache::with_ttl(store.clone(), Duration::from_millis(200));
        let root = cache.by_slug("root").await.unwrap().unwrap();
        let mut changed = (*root).clone();
        changed.agent_name = "Changed".into();
        store.save_tenant(changed.clone()).await.unwrap();
        assert_eq!(
            cache.by_id(root.id).await.unwrap().unwrap().agent_name,
            "Root",
            "cached"
        );
        cache.invalidate(&changed);
        assert_eq!(
            cache.by_id(root.id).await.unwrap().unwrap().agent_name,
            "Changed"
        );
        assert!(cache.by_slug("nope").await.unwrap().is_none());
    }
}
