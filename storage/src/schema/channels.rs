//! §2.3 Channels & assets.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::tenant_row;
use crate::codec::{Json, Redacted, Ts};
use crate::enums::*;
use crate::key::{Key, key};
use crate::table::{IndexDef, Record, Scope, TableDef};

/// `tenant_channels` — per-tenant channel config and secrets (slack, email, web).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct TenantChannel {
    pub id: Uuid,
    pub tenant_id: Uuid,
    #[serde(rename = "type")]
    pub channel_type: ChannelType,
    pub config: Json,
    /// Redacted in `Debug`; stored as the plain JSON.
    pub secrets: Redacted<Json>,
    pub status: ChannelStatus,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl TenantChannel {
    /// `UNIQUE (tenant_id, type)`
    pub const TYPE_KEY: &'static str = "tenant_channels_tenant_id_type_key";
}

impl Record for TenantChannel {
    const DEF: TableDef = TableDef {
        name: "tenant_channels",
        scope: Scope::Tenant,
        pkey: "tenant_channels_pkey",
        indexes: &[IndexDef::unique(TenantChannel::TYPE_KEY)],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["secrets"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(self.channel_type.as_str()))]
    }
}

/// `tenant_assets` — per-tenant binary assets (the logo).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct TenantAsset {
    pub id: Uuid,
    pub tenant_id: Uuid,
    /// Asset kind, e.g. `logo`.
    pub kind: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
    pub updated_at: Ts,
}

impl TenantAsset {
    /// `UNIQUE (tenant_id, kind)`
    pub const KIND_KEY: &'static str = "tenant_assets_tenant_id_kind_key";
}

impl Record for TenantAsset {
    const DEF: TableDef = TableDef {
        name: "tenant_assets",
        scope: Scope::Tenant,
        pkey: "tenant_assets_pkey",
        indexes: &[IndexDef::unique(TenantAsset::KIND_KEY)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.kind))]
    }
}
