//! The store traits the application talks to. They carry no redb types, so a
//! second backend (PostgreSQL with the spec's original schema) can implement
//! them and run the same conformance suite (`conformance/`).
//!
//! Tenant arguments: tenant-scoped tables require `Some(tenant_id)`; the
//! key of every such row starts with the tenant id, which is what makes a
//! cross-tenant read impossible through these methods. Global indexes
//! (`IndexDef::global`) are the only exception and exist for lookups that
//! precede tenant resolution (API key by hash) or platform sweeps.

use async_trait::async_trait;
use uuid::Uuid;

use crate::error::StorageResult;
use crate::key::Key;
use crate::schema::{SchemaMigration, Tenant, TenantApiKey};
use crate::table::{Record, Scan};

/// Generic row operations over every table of spec §2.
#[async_trait]
pub trait Store: Clone + Send + Sync + 'static {
    /// Insert a new row; `Conflict` on duplicate pk/unique, `ForeignKey` on a missing parent.
    async fn insert<R: Record>(&self, row: R) -> StorageResult<R>;
    /// Insert many rows in one durable transaction (all or nothing).
    async fn insert_many<R: Record>(&self, rows: Vec<R>) -> StorageResult<usize>;
    /// Replace an existing row (matched by pk); indexes follow.
    async fn update<R: Record>(&self, row: R) -> StorageResult<R>;
    /// Delete by local pk, running FK cascades; `false` when absent.
    async fn delete<R: Record>(&self, tenant: Option<Uuid>, pk: Key) -> StorageResult<bool>;
    /// Read by local pk.
    async fn get<R: Record>(&self, tenant: Option<Uuid>, pk: Key) -> StorageResult<Option<R>>;
    /// Read many rows by local pk in one read transaction (same order,
    /// `None` where absent).
    async fn get_many<R: Record>(
        &self,
        tenant: Option<Uuid>,
        pks: Vec<Key>,
    ) -> StorageResult<Vec<Option<R>>>;
    /// Read many rows through one UNIQUE constraint in one read transaction.
    async fn find_unique_many<R: Record>(
        &self,
        tenant: Option<Uuid>,
        constraint: &'static str,
        keys: Vec<Key>,
    ) -> StorageResult<Vec<Option<R>>>;
    /// Read through a UNIQUE constraint.
    async fn find_unique<R: Record>(
        &self,
        tenant: Option<Uuid>,
        constraint: &'static str,
        key: Key,
    ) -> StorageResult<Option<R>>;
    /// Range scan over the primary key or an index.
    async fn scan<R: Record>(&self, tenant: Option<Uuid>, scan: Scan) -> StorageResult<Vec<R>>;
    /// Number of rows of `R` in the scope.
    async fn count<R: Record>(&self, tenant: Option<Uuid>) -> StorageResult<u64>;
    /// Cheap liveness probe (a read transaction).
    async fn ping(&self) -> StorageResult<()>;
}

/// Tenants and their dev shadows (§1, §1.1).
#[async_trait]
pub trait TenantStore: Send + Sync {
    /// Create a tenant row.
    async fn create_tenant(&self, tenant: Tenant) -> StorageResult<Tenant>;
    /// Look up by slug.
    async fn tenant_by_slug(&self, slug: &str) -> StorageResult<Option<Tenant>>;
    /// Look up by id.
    async fn tenant_by_id(&self, id: Uuid) -> StorageResult<Option<Tenant>>;
    /// The dev shadow of a live tenant, if any.
    async fn dev_shadow_of(&self, live_id: Uuid) -> StorageResult<Option<Tenant>>;
    /// Return the dev shadow of `live_id`, creating `<slug>--dev` atomically
    /// when absent (agent identity copied from the live row).
    async fn ensure_dev_shadow(&self, live_id: Uuid) -> StorageResult<Tenant>;
    /// Save a tenant; agent identity (agent_name, settings.persona,
    /// settings.agent_character) is mirrored to its pair in the same commit.
    async fn save_tenant(&self, tenant: Tenant) -> StorageResult<Tenant>;
    /// Every tenant row, slug order.
    async fn list_tenants(&self) -> StorageResult<Vec<Tenant>>;
    /// Delete a tenant and every row it owns (its shadow too).
    async fn delete_tenant(&self, id: Uuid) -> StorageResult<bool>;
    /// Rows per tenant-scoped table owned by `tenant` (every table, zeros included).
    async fn tenant_row_counts(&self, tenant: Uuid) -> StorageResult<Vec<(&'static str, u64)>>;
}

/// API keys (§12.1).
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    /// Find a key by the SHA-256 hex of the raw token (platform-wide).
    async fn api_key_by_hash(&self, token_hash: &str) -> StorageResult<Option<TenantApiKey>>;
    /// Set `revoked_at`; `false` when the key does not exist.
    async fn revoke_api_key(&self, tenant: Uuid, id: Uuid) -> StorageResult<bool>;
}

/// Schema migrations.
#[async_trait]
pub trait MigrationStore: Send + Sync {
    /// Apply pending migrations in order; returns the ones applied now.
    /// Refuses a file written by a newer binary (`NewerSchema`).
    async fn migrate(&self) -> StorageResult<Vec<SchemaMigration>>;
    /// Migrations recorded in `schema_migrations`.
    async fn applied_migrations(&self) -> StorageResult<Vec<SchemaMigration>>;
}
