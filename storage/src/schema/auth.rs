//! §2.2 Auth & keys: platform admins, tenant users, API keys, platform settings.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{lower, tenant_row};
use crate::codec::{Json, Ts};
use crate::enums::*;
use crate::key::{Key, key};
use crate::table::{IndexDef, Record, Scope, TableDef};

/// `platform_admins` — email allowlist for super-admins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct PlatformAdmin {
    pub id: Uuid,
    pub email: String,
    pub created_at: Ts,
}

impl PlatformAdmin {
    /// `UNIQUE (lower(email))`
    pub const EMAIL_KEY: &'static str = "platform_admins_email_key";
}

impl Record for PlatformAdmin {
    const DEF: TableDef = TableDef {
        name: "platform_admins",
        scope: Scope::Global,
        pkey: "platform_admins_pkey",
        indexes: &[IndexDef::unique(PlatformAdmin::EMAIL_KEY)],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&lower(&self.email)))]
    }
}

/// `tenant_users` — dashboard users of a tenant (the login allowlist).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct TenantUser {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub email: String,
    pub role: TenantRole,
    pub created_at: Ts,
}

impl TenantUser {
    /// `UNIQUE (tenant_id, lower(email))`
    pub const EMAIL_KEY: &'static str = "tenant_users_tenant_id_email_key";
}

impl Record for TenantUser {
    const DEF: TableDef = TableDef {
        name: "tenant_users",
        scope: Scope::Tenant,
        pkey: "tenant_users_pkey",
        indexes: &[IndexDef::unique(TenantUser::EMAIL_KEY)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&lower(&self.email)))]
    }
}

/// `tenant_api_keys` — bearer keys for `/api/v1` (§12.1). Only the SHA-256
/// hex of the raw key is stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct TenantApiKey {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub name: String,
    pub token_prefix: String,
    pub token_hash: String,
    pub environment: Environment,
    pub revoked_at: Option<Ts>,
    pub created_at: Ts,
}

impl TenantApiKey {
    /// `token_hash UNIQUE` — platform-wide: a key is looked up before its tenant is known.
    pub const TOKEN_HASH_KEY: &'static str = "tenant_api_keys_token_hash_key";
}

impl Record for TenantApiKey {
    const DEF: TableDef = TableDef {
        name: "tenant_api_keys",
        scope: Scope::Tenant,
        pkey: "tenant_api_keys_pkey",
        indexes: &[IndexDef::global_unique(TenantApiKey::TOKEN_HASH_KEY)],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["token_hash"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.token_hash))]
    }
}

/// `platform_api_keys` — bearer keys of the platform-admin API
/// (`/api/v1/platform/*`). Each belongs to a `platform_admins` email (checked
/// again at every request); only the SHA-256 hex of the raw key is stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct PlatformApiKey {
    pub id: Uuid,
    /// Lower-cased `platform_admins` email the key acts for.
    pub email: String,
    pub name: String,
    pub token_prefix: String,
    pub token_hash: String,
    pub revoked_at: Option<Ts>,
    pub created_at: Ts,
}

impl PlatformApiKey {
    /// `UNIQUE (token_hash)`
    pub const TOKEN_HASH_KEY: &'static str = "platform_api_keys_token_hash_key";
}

impl Record for PlatformApiKey {
    const DEF: TableDef = TableDef {
        name: "platform_api_keys",
        scope: Scope::Global,
        pkey: "platform_api_keys_pkey",
        indexes: &[IndexDef::unique(PlatformApiKey::TOKEN_HASH_KEY)],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["token_hash"];
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.token_hash))]
    }
}

/// `platform_settings` — platform-wide key/value settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct PlatformSetting {
    pub key: String,
    pub value: Json,
    pub updated_at: Ts,
}

impl Record for PlatformSetting {
    const DEF: TableDef = TableDef {
        name: "platform_settings",
        scope: Scope::Global,
        pkey: "platform_settings_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().str(&self.key)
    }
}

/// `dashboard_login_links` — single-use magic links of the dashboard sign-in
/// (§14.1; the embedded stand-in for the reference's IdP). Only the SHA-256
/// hex of the token is stored; `used_at` makes it single-use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct DashboardLoginLink {
    pub id: Uuid,
    /// Lower-cased address the link was sent to.
    pub email: String,
    pub token_hash: String,
    pub expires_at: Ts,
    pub used_at: Option<Ts>,
    pub created_at: Ts,
}

impl DashboardLoginLink {
    /// `UNIQUE (token_hash)`
    pub const TOKEN_HASH_KEY: &'static str = "dashboard_login_links_token_hash_key";
    /// `(expires_at)`: the expired links, oldest first (retention).
    pub const EXPIRES_IDX: &'static str = "dashboard_login_links_expires_at_idx";
}

impl Record for DashboardLoginLink {
    const DEF: TableDef = TableDef {
        name: "dashboard_login_links",
        scope: Scope::Global,
        pkey: "dashboard_login_links_pkey",
        indexes: &[
            IndexDef::unique(DashboardLoginLink::TOKEN_HASH_KEY),
            IndexDef::secondary(DashboardLoginLink::EXPIRES_IDX),
        ],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["token_hash"];
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.token_hash)),
            Some(key().ts(self.expires_at)),
        ]
    }
}

/// `dashboard_sessions` — the server side of the `root_session` cookie
/// (§14.1): revocable, 30 days. Only the SHA-256 hex of the cookie is stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct DashboardSession {
    pub id: Uuid,
    /// Lower-cased address of the signed-in user.
    pub email: String,
    pub session_hash: String,
    /// The tenant the dashboard shows (live row or its dev shadow).
    pub tenant_id: Option<Uuid>,
    pub expires_at: Ts,
    pub revoked_at: Option<Ts>,
    pub created_at: Ts,
}

impl DashboardSession {
    /// `UNIQUE (session_hash)`
    pub const SESSION_KEY: &'static str = "dashboard_sessions_session_hash_key";
    /// `(least(revoked_at, expires_at))`: when the session stopped signing
    /// anyone in, oldest first (retention).
    pub const ENDS_IDX: &'static str = "dashboard_sessions_ends_at_idx";

    /// When the session stops (or stopped) signing anyone in: its revocation
    /// or its expiry, whichever is first.
    pub fn ends_at(&self) -> Ts {
        match self.revoked_at {
            Some(r) if r < self.expires_at => r,
            _ => self.expires_at,
        }
    }
}

impl Record for DashboardSession {
    const DEF: TableDef = TableDef {
        name: "dashboard_sessions",
        scope: Scope::Global,
        pkey: "dashboard_sessions_pkey",
        indexes: &[
            IndexDef::unique(DashboardSession::SESSION_KEY),
            IndexDef::secondary(DashboardSession::ENDS_IDX),
        ],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["session_hash"];
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.session_hash)),
            Some(key().ts(self.ends_at())),
        ]
    }
}
