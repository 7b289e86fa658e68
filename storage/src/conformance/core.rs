//! Checks of the platform rows: migrations (idempotent, root tenant seeded),
//! tenant slugs, dev shadows paired with their live tenant, and API keys
//! (hash unique platform-wide, revocation).

use uuid::Uuid;

use super::{FullStore, conflict, two_tenants};
use crate::codec::{Json, Ts};
use crate::enums::*;
use crate::schema::*;

/// Migration 1 seeds root; a second run applies nothing and changes nothing.
pub async fn migrations_are_idempotent_and_seed_the_root_tenant<S: FullStore>(s: S) {
    let first = s.migrate().await.unwrap();
    assert_eq!(first.len(), crate::latest_version() as usize);
    assert_eq!(first[0].version, 1);
    let root = s
        .tenant_by_slug("root")
        .await
        .unwrap()
        .expect("root tenant seeded");
    assert_eq!(root.id, ROOT_TENANT_ID);
    assert_eq!(root.id.to_string(), "11111111-1111-4111-8111-111111111111");
    assert_eq!(root.agent_name, "Root");
    assert_eq!(root.environment, Environment::Live);
    assert_eq!(root.status, TenantStatus::Active);
    assert_eq!(root.timezone, "America/Los_Angeles");
    let second = s.migrate().await.unwrap();
    assert!(second.is_empty(), "second migrate applied {second:?}");
    assert_eq!(s.applied_migrations().await.unwrap().len(), first.len());
    assert_eq!(s.list_tenants().await.unwrap().len(), 1);
}

/// `tenants.slug` is UNIQUE.
pub async fn tenant_slugs_are_unique_platform_wide<S: FullStore>(s: S) {
    two_tenants(&s).await;
    let err = s
        .create_tenant(Tenant::new("alpha", "Again"))
        .await
        .unwrap_err();
    assert_eq!(conflict(err), Tenant::SLUG_KEY);
}

/// §1.1: `<slug>--dev`, `environment='dev'`, `live_tenant_id`, one shadow per live, identity mirrored.
pub async fn a_dev_shadow_pairs_with_its_live_tenant<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let shadow = s.ensure_dev_shadow(a).await.unwrap();
    assert_eq!(shadow.slug, "alpha--dev");
    assert_eq!(shadow.environment, Environment::Dev);
    assert_eq!(shadow.live_tenant_id, Some(a));
    assert_eq!(
        s.ensure_dev_shadow(a).await.unwrap().id,
        shadow.id,
        "idempotent"
    );
    assert_eq!(s.dev_shadow_of(a).await.unwrap().unwrap().id, shadow.id);
    let mut second = Tenant::new("alpha-dev2", "x");
    second.environment = Environment::Dev;
    second.live_tenant_id = Some(a);
    assert_eq!(
        conflict(s.create_tenant(second).await.unwrap_err()),
        Tenant::LIVE_TENANT_KEY
    );
    assert!(
        s.ensure_dev_shadow(shadow.id).await.is_err(),
        "a shadow has no shadow"
    );
    // Agent identity is mirrored across the pair when saved.
    let mut live = s.tenant_by_id(a).await.unwrap().unwrap();
    live.agent_name = "Ada".into();
    live.settings = Json(serde_json::json!({"persona": "kind", "limits": {"x": 1}}));
    s.save_tenant(live).await.unwrap();
    let shadow = s.tenant_by_id(shadow.id).await.unwrap().unwrap();
    assert_eq!(shadow.agent_name, "Ada");
    assert_eq!(shadow.settings.0["persona"], "kind");
    assert!(
        shadow.settings.0.get("limits").is_none(),
        "only identity is mirrored"
    );
}

/// `token_hash UNIQUE` holds across tenants; lookup by hash finds the key; revocation sets `revoked_at`.
pub async fn api_key_hashes_are_unique_platform_wide_and_revocable<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let k = TenantApiKey {
        id: Uuid::new_v4(),
        tenant_id: a,
        name: "ci".into(),
        token_prefix: "rpk_live_0123abcd".into(),
        token_hash: "deadbeef".into(),
        environment: Environment::Live,
        revoked_at: None,
        created_at: Ts::now(),
    };
    s.insert(k.clone()).await.unwrap();
    let dup = TenantApiKey {
        id: Uuid::new_v4(),
        tenant_id: b,
        ..k.clone()
    };
    assert_eq!(
        conflict(s.insert(dup).await.unwrap_err()),
        TenantApiKey::TOKEN_HASH_KEY
    );
    let found = s.api_key_by_hash("deadbeef").await.unwrap().unwrap();
    assert_eq!((found.id, found.tenant_id), (k.id, a));
    assert!(s.api_key_by_hash("cafe").await.unwrap().is_none());
    assert!(s.revoke_api_key(a, k.id).await.unwrap());
    assert!(
        s.api_key_by_hash("deadbeef")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_some()
    );
    assert!(
        !s.revoke_api_key(b, k.id).await.unwrap(),
        "another tenant cannot revoke it"
    );
}
