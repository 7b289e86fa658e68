//! §2.6 Community builds & ops, plus the migration tracker.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::tenant_row;
use crate::codec::{Json, Redacted, Ts};
use crate::enums::*;
use crate::key::{Key, key};
use crate::table::{FkDef, IndexDef, OnDelete, Record, Scope, TableDef};

/// `community_build_listings` — the platform-wide marketplace catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct CommunityBuildListing {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub module_source: String,
    pub config_schema: Json,
    /// Tool declarations (JSON array).
    pub tools: Json,
    pub version: String,
    pub author: Option<String>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl CommunityBuildListing {
    /// `UNIQUE (slug)`
    pub const SLUG_KEY: &'static str = "community_build_listings_slug_key";
}

impl Record for CommunityBuildListing {
    const DEF: TableDef = TableDef {
        name: "community_build_listings",
        scope: Scope::Global,
        pkey: "community_build_listings_pkey",
        indexes: &[IndexDef::unique(CommunityBuildListing::SLUG_KEY)],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.slug))]
    }
}

/// `community_build_installs` — a listing cloned into a tenant with its config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct CommunityBuildInstall {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub listing_id: Uuid,
    /// Snapshot of the listing's module source at install time.
    pub module_source: String,
    pub tools: Json,
    /// Holds the listing's `writeOnly` secrets; redacted in `Debug`, stored
    /// as the plain JSON.
    pub config: Redacted<Json>,
    pub enabled: bool,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl CommunityBuildInstall {
    /// `UNIQUE (tenant_id, listing_id)`
    pub const LISTING_KEY: &'static str = "community_build_installs_tenant_id_listing_id_key";
}

impl Record for CommunityBuildInstall {
    const DEF: TableDef = TableDef {
        name: "community_build_installs",
        scope: Scope::Tenant,
        pkey: "community_build_installs_pkey",
        indexes: &[IndexDef::unique(CommunityBuildInstall::LISTING_KEY)],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["config"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.listing_id))]
    }
}

/// `community_build_tool_runs` — audit of sandboxed tool runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct CommunityBuildToolRun {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub install_id: Uuid,
    pub tool_name: String,
    pub principal_id: Option<Uuid>,
    pub duration_ms: i64,
    pub success: bool,
    pub error: Option<String>,
    /// Collected `{type:"log"|"progress"}` lines.
    pub logs: Json,
    pub created_at: Ts,
}

impl CommunityBuildToolRun {
    /// index `(tenant_id, install_id, created_at)`
    pub const INSTALL_IDX: &'static str = "community_build_tool_runs_install_id_idx";
    /// FK `install_id → community_build_installs ON DELETE CASCADE`
    pub const INSTALL_FKEY: &'static str = "community_build_tool_runs_install_id_fkey";
}

impl Record for CommunityBuildToolRun {
    const DEF: TableDef = TableDef {
        name: "community_build_tool_runs",
        scope: Scope::Tenant,
        pkey: "community_build_tool_runs_pkey",
        indexes: &[IndexDef::secondary(CommunityBuildToolRun::INSTALL_IDX)],
        fks: &[FkDef {
            name: CommunityBuildToolRun::INSTALL_FKEY,
            parent: "community_build_installs",
            on_delete: OnDelete::Cascade,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.install_id).ts(self.created_at))]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.install_id))]
    }
}

/// `queue_job_events` — finished jobs, for queue metrics (pruned after 30 days).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct QueueJobEvent {
    /// BIGINT identity.
    pub id: u64,
    pub queue: String,
    pub job_id: String,
    pub status: JobEventStatus,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub created_at: Ts,
}

impl QueueJobEvent {
    /// index `(queue, created_at)`
    pub const QUEUE_IDX: &'static str = "queue_job_events_queue_created_at_idx";
    /// index `(created_at)` (pruning).
    pub const CREATED_AT_IDX: &'static str = "queue_job_events_created_at_idx";
}

impl Record for QueueJobEvent {
    const DEF: TableDef = TableDef {
        name: "queue_job_events",
        scope: Scope::Global,
        pkey: "queue_job_events_pkey",
        indexes: &[
            IndexDef::secondary(QueueJobEvent::QUEUE_IDX),
            IndexDef::secondary(QueueJobEvent::CREATED_AT_IDX),
        ],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().u64(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.queue).ts(self.created_at)),
            Some(key().ts(self.created_at)),
        ]
    }
}

/// `schema_migrations` — applied migrations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SchemaMigration {
    pub version: u32,
    pub name: String,
    pub applied_at: Ts,
}

impl Record for SchemaMigration {
    const DEF: TableDef = TableDef {
        name: "schema_migrations",
        scope: Scope::Global,
        pkey: "schema_migrations_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().u64(self.version as u64)
    }
}
