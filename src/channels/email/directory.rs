//! Which tenant a mail is for (§8.3): a tenant's email channel row
//! (`tenant_channels` type `email`: `config {mode, alias?,
//! outbound_webhook_url?}`, `secrets {inbound_token?,
//! outbound_signing_secret?}`), and the directory that maps platform
//! aliases (`<alias>@PLATFORM_EMAIL_DOMAIN`) and BYO inbound tokens to
//! tenants. The directory is one snapshot rebuilt at most every
//! [`DIRECTORY_TTL`] (and at once after a change in this process), so a
//! flood of unknown recipients or tokens never scans the tenants.
//!
//! Tokens are looked up by their SHA-256: the map never compares a
//! presented token with a stored one byte by byte, so the lookup time
//! says nothing about how much of a token was right.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use storage::{
    ChannelStatus, ChannelType, ROOT_TENANT_ID, RedbStore, StorageResult, Store, Tenant,
    TenantChannel, TenantStatus, TenantStore, Ts, key,
};
use uuid::Uuid;

use crate::config::{Config, Secret};
use crate::platform::clock::Clock;

/// How long the alias / token snapshot is trusted.
pub const DIRECTORY_TTL: Duration = Duration::from_secs(60);

/// `tenant_channels.config.mode` of an email channel (§8.3).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EmailMode {
    /// `<alias>@PLATFORM_EMAIL_DOMAIN`, the platform's provider both ways.
    PlatformAlias,
    /// The tenant's own domain: it forwards in, Root posts replies to its webhook.
    ByoWebhook,
}

/// A tenant's email channel as configured.
#[derive(Clone, Debug)]
pub struct EmailSetup {
    /// The tenant.
    pub tenant_id: Uuid,
    /// The mode.
    pub mode: EmailMode,
    /// The platform alias (lowercase; the tenant's slug unless configured).
    pub alias: String,
    /// BYO: where replies are posted.
    pub outbound_webhook_url: Option<String>,
    /// BYO: the token in the inbound URL.
    pub inbound_token: Option<Secret>,
    /// BYO: the key replies are signed with (§7.1 scheme).
    pub outbound_signing_secret: Option<Secret>,
}

impl EmailSetup {
    /// The platform address (`alias@domain`), when the domain is set.
    pub fn platform_address(&self, config: &Config) -> Option<String> {
        config
            .platform_email_domain
            .as_deref()
            .map(|d| format!("{}@{}", self.alias, d.trim().to_lowercase()))
    }

    /// From the tenant's channel row (`None`: no usable email channel).
    pub fn from_row(tenant: &Tenant, row: &TenantChannel) -> Option<EmailSetup> {
        if row.channel_type != ChannelType::Email || row.status != ChannelStatus::Active {
            return None;
        }
        let config = &row.config.0;
        let secrets = &row.secrets.expose().0;
        let mode: EmailMode = serde_json::from_value(config["mode"].clone()).ok()?;
        let text = |v: &serde_json::Value| {
            v.as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        Some(EmailSetup {
            tenant_id: tenant.id,
            mode,
            alias: text(&config["alias"])
                .unwrap_or_else(|| tenant.slug.clone())
                .to_lowercase(),
            outbound_webhook_url: text(&config["outbound_webhook_url"]),
            inbound_token: text(&secrets["inbound_token"]).map(Secret::new),
            outbound_signing_secret: text(&secrets["outbound_signing_secret"]).map(Secret::new),
        })
    }

    /// The root tenant without an email row: a platform alias named after
    /// its slug, so a fresh install with `PLATFORM_EMAIL_DOMAIN` answers mail.
    pub fn root_default(tenant: &Tenant) -> EmailSetup {
        EmailSetup {
            tenant_id: tenant.id,
            mode: EmailMode::PlatformAlias,
            alias: tenant.slug.to_lowercase(),
            outbound_webhook_url: None,
            inbound_token: None,
            outbound_signing_secret: None,
        }
    }
}

/// `tenant`'s email channel: its row, else the root tenant's default.
pub async fn email_setup(store: &RedbStore, tenant: &Tenant) -> StorageResult<Option<EmailSetup>> {
    let row: Option<TenantChannel> = store
        .find_unique(
            Some(tenant.id),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Email.as_str()),
        )
        .await?;
    Ok(match row {
        Some(r) => EmailSetup::from_row(tenant, &r),
        None if tenant.id == ROOT_TENANT_ID => Some(EmailSetup::root_default(tenant)),
        None => None,
    })
}

/// SHA-256 hex of an inbound token (the directory's key).
pub fn token_key(token: &str) -> String {
    hex::encode(Sha256::digest(token.trim().as_bytes()))
}

/// A snapshot and when it was taken.
type Stamped = Option<(Ts, Arc<Snapshot>)>;

#[derive(Default)]
struct Snapshot {
    aliases: HashMap<String, Uuid>,
    tokens: HashMap<String, Uuid>,
}

/// Aliases and tokens → tenants. Cheap to clone.
#[derive(Clone)]
pub struct EmailDirectory {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    snapshot: Arc<Mutex<Stamped>>,
}

impl EmailDirectory {
    /// A directory over `store`, timed by `clock`.
    pub fn new(store: RedbStore, clock: Arc<dyn Clock>) -> EmailDirectory {
        EmailDirectory {
            store,
            clock,
            snapshot: Arc::new(Mutex::new(None)),
        }
    }

    /// Forget the snapshot (a channel changed).
    pub fn invalidate(&self) {
        *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn current(&self) -> StorageResult<Arc<Snapshot>> {
        let now = self.clock.now();
        if let Some((at, snap)) = &*self.snapshot.lock().unwrap_or_else(|p| p.into_inner())
            && now.micros() - at.micros() < DIRECTORY_TTL.as_micros() as i64
        {
            return Ok(snap.clone());
        }
        let mut snap = Snapshot::default();
        for tenant in self.store.list_tenants().await? {
            if tenant.status != TenantStatus::Active {
                continue;
            }
            let Some(setup) = email_setup(&self.store, &tenant).await? else {
                continue;
            };
            match setup.mode {
                EmailMode::PlatformAlias => {
                    snap.aliases.entry(setup.alias.clone()).or_insert(tenant.id);
                }
                EmailMode::ByoWebhook => {
                    if let Some(t) = &setup.inbound_token {
                        snap.tokens.insert(token_key(t.expose()), tenant.id);
                    }
                }
            }
        }
        let snap = Arc::new(snap);
        *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = Some((now, snap.clone()));
        Ok(snap)
    }

    /// The tenant whose platform alias is `local_part`.
    pub async fn by_alias(&self, local_part: &str) -> StorageResult<Option<Uuid>> {
        Ok(self
            .current()
            .await?
            .aliases
            .get(&local_part.trim().to_lowercase())
            .copied())
    }

    /// The BYO tenant whose inbound token is `token`.
    pub async fn by_token(&self, token: &str) -> StorageResult<Option<Uuid>> {
        Ok(self.current().await?.tokens.get(&token_key(token)).copied())
    }
}
