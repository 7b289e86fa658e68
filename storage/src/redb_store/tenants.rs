//! The tenant and API-key aggregates of `RedbStore`: `TenantStore` (dev
//! shadows and the agent identity mirrored across a live/dev pair, per-table
//! row counts) and `ApiKeyStore`. Separate because they are the store's
//! domain-specific operations, not the generic row machinery.

use async_trait::async_trait;
use redb::{ReadableTable, WriteTransaction};
use uuid::Uuid;

use super::RedbStore;
use super::reads::open_read;
use crate::codec::Ts;
use crate::error::{StorageError, StorageResult};
use crate::key::{Key, key};
use crate::schema::{Tenant, TenantApiKey};
use crate::store::{ApiKeyStore, Store, TenantStore};
use crate::table::{self, Scan, Scope, raw_table};

/// Fields of the agent identity mirrored across a live/dev pair (§1.1).
const MIRRORED_SETTINGS: &[&str] = &["persona", "agent_character"];

fn mirror_identity(from: &Tenant, to: &mut Tenant) {
    to.agent_name = from.agent_name.clone();
    let src = from.settings.0.as_object();
    if !to.settings.0.is_object() {
        to.settings = crate::codec::Json::empty_object();
    }
    if let Some(dst) = to.settings.0.as_object_mut() {
        for k in MIRRORED_SETTINGS {
            match src.and_then(|s| s.get(*k)) {
                Some(v) => {
                    dst.insert((*k).to_string(), v.clone());
                }
                None => {
                    dst.remove(*k);
                }
            }
        }
    }
    to.updated_at = Ts::now();
}

fn tenant_pk(id: Uuid) -> Vec<u8> {
    key().uuid(id).0
}

fn shadow_in_write(w: &WriteTransaction, live_id: Uuid) -> StorageResult<Option<Tenant>> {
    let pk = {
        let ix = w.open_table(raw_table(Tenant::LIVE_TENANT_KEY))?;
        let found = ix.get(key().uuid(live_id).as_bytes())?;
        found.map(|g| g.value().to_vec())
    };
    match pk {
        Some(pk) => table::get_in_write::<Tenant>(w, &pk),
        None => Ok(None),
    }
}

#[async_trait]
impl TenantStore for RedbStore {
    async fn create_tenant(&self, tenant: Tenant) -> StorageResult<Tenant> {
        self.insert(tenant).await
    }

    async fn tenant_by_slug(&self, slug: &str) -> StorageResult<Option<Tenant>> {
        self.find_unique::<Tenant>(None, Tenant::SLUG_KEY, key().str(slug))
            .await
    }

    async fn tenant_by_id(&self, id: Uuid) -> StorageResult<Option<Tenant>> {
        self.get::<Tenant>(None, key().uuid(id)).await
    }

    async fn dev_shadow_of(&self, live_id: Uuid) -> StorageResult<Option<Tenant>> {
        self.find_unique::<Tenant>(None, Tenant::LIVE_TENANT_KEY, key().uuid(live_id))
            .await
    }

    async fn ensure_dev_shadow(&self, live_id: Uuid) -> StorageResult<Tenant> {
        self.write(move |w| {
            let live = table::get_in_write::<Tenant>(w, &tenant_pk(live_id))?
                .ok_or(StorageError::NotFound { table: "tenants" })?;
            if live.live_tenant_id.is_some() {
                return Err(StorageError::Check {
                    column: "tenants.live_tenant_id",
                    message: format!("{} is itself a dev shadow", live.slug),
                });
            }
            if let Some(existing) = shadow_in_write(w, live_id)? {
                return Ok(existing);
            }
            let mut shadow = Tenant::new(live.dev_slug(), format!("{} (dev)", live.display_name));
            shadow.environment = crate::enums::Environment::Dev;
            shadow.live_tenant_id = Some(live.id);
            shadow.timezone = live.timezone.clone();
            shadow.status = live.status;
            mirror_identity(&live, &mut shadow);
            table::insert(w, &shadow)?;
            Ok(shadow)
        })
        .await
    }

    async fn save_tenant(&self, tenant: Tenant) -> StorageResult<Tenant> {
        self.write(move |w| {
            table::update(w, &tenant)?;
            let pair = match tenant.live_tenant_id {
                Some(live) => table::get_in_write::<Tenant>(w, &tenant_pk(live))?,
                None => shadow_in_write(w, tenant.id)?,
            };
            if let Some(mut pair) = pair {
                mirror_identity(&tenant, &mut pair);
                table::update(w, &pair)?;
            }
            Ok(tenant)
        })
        .await
    }

    async fn list_tenants(&self) -> StorageResult<Vec<Tenant>> {
        self.scan::<Tenant>(None, Scan::index(Tenant::SLUG_KEY, Key::default()))
            .await
    }

    async fn delete_tenant(&self, id: Uuid) -> StorageResult<bool> {
        self.delete::<Tenant>(None, key().uuid(id)).await
    }

    async fn tenant_row_counts(&self, tenant: Uuid) -> StorageResult<Vec<(&'static str, u64)>> {
        self.read(move |r| {
            let prefix = Key(tenant.as_bytes().to_vec());
            let end = prefix.prefix_end();
            let mut out = Vec::new();
            for t in crate::schema::all_tables() {
                let def = t.def();
                if def.scope != Scope::Tenant {
                    continue;
                }
                let mut n = 0u64;
                if let Some(tbl) = open_read(r, def.name)? {
                    let range = match &end {
                        Some(end) => tbl.range::<&[u8]>(prefix.as_bytes()..end.as_slice())?,
                        None => tbl.range::<&[u8]>(prefix.as_bytes()..)?,
                    };
                    for item in range {
                        item?;
                        n += 1;
                    }
                }
                out.push((def.name, n));
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl ApiKeyStore for RedbStore {
    async fn api_key_by_hash(&self, token_hash: &str) -> StorageResult<Option<TenantApiKey>> {
        self.find_unique::<TenantApiKey>(None, TenantApiKey::TOKEN_HASH_KEY, key().str(token_hash))
            .await
    }

    async fn revoke_api_key(&self, tenant: Uuid, id: Uuid) -> StorageResult<bool> {
        self.write(move |w| {
            let pk = table::full_pk::<TenantApiKey>(Some(tenant), &key().uuid(id))?;
            let Some(mut k) = table::get_in_write::<TenantApiKey>(w, &pk)? else {
                return Ok(false);
            };
            if k.revoked_at.is_none() {
                k.revoked_at = Some(Ts::now());
                table::update(w, &k)?;
            }
            Ok(true)
        })
        .await
    }
}
