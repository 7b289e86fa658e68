//! Tenants and API keys for tests: the shared two-tenant fixture (`acme` and
//! `other` over one store, on a manual clock) that several modules used to
//! copy, and the one-line helpers to create a tenant or mint a key.

use std::sync::Arc;

use root::app::open_store;
use root::config::Config;
use root::platform::api_keys::{self, KeyKind};
use root::platform::clock::ManualClock;
use root::platform::tenancy::TenantContext;
use storage::{RedbStore, Tenant, TenantStore, Ts};

use super::app::test_config;

/// Set `path` = `value` (through the settings validator) in tenant
/// `slug`'s settings, save it, and drop the app's cached copy.
pub async fn set_setting(
    state: &root::app::AppState,
    slug: &str,
    path: &str,
    value: serde_json::Value,
) {
    use storage::Store;
    let mut tenant = state.store.tenant_by_slug(slug).await.unwrap().unwrap();
    let mut settings = tenant.settings.0.clone();
    root::platform::settings::apply_setting(&mut settings, path, &value).unwrap();
    tenant.settings = storage::Json(settings);
    state.store.update(tenant.clone()).await.unwrap();
    state.tenants.invalidate(&tenant);
}

/// Where the fixture's manual clock starts: 2026-03-17T21:05:00Z.
pub const T0_SECS: i64 = 1_773_781_500;

/// The tenant context of a stored tenant row.
pub fn ctx(tenant: Tenant) -> TenantContext {
    TenantContext {
        tenant: Arc::new(tenant),
    }
}

/// Create tenant `slug` (display name `name`) and return its context.
pub async fn create_tenant(store: &RedbStore, slug: &str, name: &str) -> TenantContext {
    ctx(store.create_tenant(Tenant::new(slug, name)).await.unwrap())
}

/// Mint an API key of `kind` for tenant `slug` (the tenant must exist) and
/// return the raw token.
pub async fn mint_key(store: &RedbStore, slug: &str, kind: KeyKind) -> String {
    api_keys::mint_for_slug(store, slug, "test", kind)
        .await
        .unwrap()
        .1
        .raw
}

/// Two tenants, `acme` ("Acme") and `other` ("Other"), in a store over a
/// temp data dir, with a manual clock at [`T0_SECS`].
pub struct TwoTenants {
    pub config: Config,
    pub store: RedbStore,
    pub clock: ManualClock,
    pub acme: TenantContext,
    pub other: TenantContext,
    /// Keeps the data dir alive.
    pub _dir: tempfile::TempDir,
}

impl TwoTenants {
    pub async fn new() -> TwoTenants {
        Self::with(&[]).await
    }

    /// The same with configuration overrides.
    pub async fn with(extra: &[(&str, &str)]) -> TwoTenants {
        let dir = tempfile::tempdir().unwrap();
        let config = test_config(&dir.path().join("data"), extra);
        let store = open_store(&config).await.unwrap();
        let acme = create_tenant(&store, "acme", "Acme").await;
        let other = create_tenant(&store, "other", "Other").await;
        TwoTenants {
            config,
            store,
            clock: ManualClock::new(Ts::from_secs(T0_SECS)),
            acme,
            other,
            _dir: dir,
        }
    }
}
