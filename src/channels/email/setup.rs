//! Configuring a tenant's email channel without the dashboard (§8.3):
//! `root tenant channel email <slug> --mode …` and `PUT
//! /api/v1/channels/email`. Upserts the `tenant_channels` email row:
//!
//! - `platform_alias`: the alias (the tenant's slug unless given; lowercase
//!   letters, digits, `.`, `-`, `_`; not another tenant's) → the address
//!   `<alias>@PLATFORM_EMAIL_DOMAIN`.
//! - `byo_webhook`: the outbound webhook URL (required), the inbound token
//!   (generated once, kept on later changes) → the inbound URL
//!   `$PLATFORM_BASE_URL/channels/email/inbound/<token>`, and the outbound
//!   signing secret (given, kept, or generated).
//!
//! Generated secrets are answered once, when they are made; later calls say
//! they are unchanged.

use rand::RngCore;
use serde_json::json;
use storage::{
    ChannelStatus, ChannelType, Json, Redacted, RedbStore, Store, Tenant, TenantChannel,
    TenantStore, key,
};
use uuid::Uuid;

use super::directory::{EmailDirectory, EmailMode, EmailSetup, email_setup};
use crate::config::{Config, Secret};
use crate::platform::clock::Clock;

/// What to configure.
#[derive(Clone, Debug)]
pub struct EmailChannelInput {
    /// The mode.
    pub mode: EmailMode,
    /// Platform alias (default: the tenant's slug).
    pub alias: Option<String>,
    /// BYO: where replies are posted.
    pub outbound_webhook_url: Option<String>,
    /// BYO: the reply signing key (default: kept, or generated).
    pub outbound_signing_secret: Option<Secret>,
}

/// What is configured now.
#[derive(Clone, Debug)]
pub struct EmailConfigured {
    /// The mode.
    pub mode: EmailMode,
    /// Platform alias mode: the address members write to.
    pub address: Option<String>,
    /// BYO: the forwarding URL — only when its token was generated now.
    pub inbound_url: Option<Secret>,
    /// BYO: the signing secret — only when it was generated now.
    pub generated_signing_secret: Option<Secret>,
    /// `false` when an existing row was replaced.
    pub created: bool,
}

/// Why the channel was not configured.
#[derive(Debug, thiserror::Error)]
pub enum EmailSetupError {
    /// Bad input (the message says what).
    #[error("{0}")]
    Invalid(String),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

fn valid_alias(a: &str) -> bool {
    !a.is_empty()
        && a.len() <= 64
        && a.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-_".contains(c))
        && !a.starts_with('.')
        && !a.ends_with('.')
}

/// Configure `tenant`'s email channel.
pub async fn configure(
    store: &RedbStore,
    config: &Config,
    clock: &dyn Clock,
    directory: Option<&EmailDirectory>,
    tenant: &Tenant,
    input: EmailChannelInput,
) -> Result<EmailConfigured, EmailSetupError> {
    let existing: Option<TenantChannel> = store
        .find_unique(
            Some(tenant.id),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Email.as_str()),
        )
        .await?;
    let old = existing
        .as_ref()
        .and_then(|r| EmailSetup::from_row(tenant, r));
    let mut out = EmailConfigured {
        mode: input.mode,
        address: None,
        inbound_url: None,
        generated_signing_secret: None,
        created: existing.is_none(),
    };
    let (cfg, secrets) = match input.mode {
        EmailMode::PlatformAlias => {
            let alias = input
                .alias
                .as_deref()
                .map(|a| a.trim().to_lowercase())
                .unwrap_or_else(|| tenant.slug.to_lowercase());
            if !valid_alias(&alias) {
                return Err(EmailSetupError::Invalid(format!(
                    "alias {alias:?}: use lowercase letters, digits, '.', '-' or '_' (at most 64)"
                )));
            }
            if let Some(other) = alias_owner(store, &alias, tenant.id).await? {
                return Err(EmailSetupError::Invalid(format!(
                    "alias {alias:?} is already the address of tenant {other}"
                )));
            }
            out.address = config
                .platform_email_domain
                .as_deref()
                .map(|d| format!("{alias}@{}", d.trim().to_lowercase()));
            (json!({"mode": "platform_alias", "alias": alias}), json!({}))
        }
        EmailMode::ByoWebhook => {
            let url = input
                .outbound_webhook_url
                .as_deref()
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .ok_or_else(|| {
                    EmailSetupError::Invalid("byo_webhook needs --outbound-webhook-url".into())
                })?;
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| EmailSetupError::Invalid(format!("outbound webhook URL: {e}")))?;
            if !matches!(parsed.scheme(), "https" | "http") {
                return Err(EmailSetupError::Invalid(
                    "the outbound webhook URL must be http(s)".into(),
                ));
            }
            let token = match old.as_ref().and_then(|o| o.inbound_token.clone()) {
                Some(t) => t,
                None => {
                    let t = Secret::new(random_hex(24));
                    out.inbound_url = Some(Secret::new(format!(
                        "{}/channels/email/inbound/{}",
                        config.platform_base_url.trim_end_matches('/'),
                        t.expose()
                    )));
                    t
                }
            };
            let signing = match (
                input.outbound_signing_secret,
                old.as_ref().and_then(|o| o.outbound_signing_secret.clone()),
            ) {
                (Some(given), _) if !given.expose().trim().is_empty() => given,
                (_, Some(kept)) => kept,
                _ => {
                    let s = Secret::new(random_hex(32));
                    out.generated_signing_secret = Some(s.clone());
                    s
                }
            };
            (
                json!({"mode": "byo_webhook", "outbound_webhook_url": parsed.as_str()}),
                json!({"inbound_token": token.expose(),
                       "outbound_signing_secret": signing.expose()}),
            )
        }
    };
    let now = clock.now();
    match existing {
        Some(mut row) => {
            row.config = Json(cfg);
            row.secrets = Redacted::new(Json(secrets));
            row.status = ChannelStatus::Active;
            row.updated_at = now;
            store.update(row).await?;
        }
        None => {
            store
                .insert(TenantChannel {
                    id: Uuid::new_v4(),
                    tenant_id: tenant.id,
                    channel_type: ChannelType::Email,
                    config: Json(cfg),
                    secrets: Redacted::new(Json(secrets)),
                    status: ChannelStatus::Active,
                    created_at: now,
                    updated_at: now,
                })
                .await?;
        }
    }
    if let Some(d) = directory {
        d.invalidate();
    }
    Ok(out)
}

/// The slug of another tenant whose platform alias is `alias`.
async fn alias_owner(
    store: &RedbStore,
    alias: &str,
    me: Uuid,
) -> Result<Option<String>, storage::StorageError> {
    for t in store.list_tenants().await? {
        if t.id == me {
            continue;
        }
        if let Some(s) = email_setup(store, &t).await?
            && s.mode == EmailMode::PlatformAlias
            && s.alias == alias
        {
            return Ok(Some(t.slug));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_plain_lowercase_local_parts() {
        for ok in ["acme", "acme-dev", "a.b_c", "x1"] {
            assert!(valid_alias(ok), "{ok}");
        }
        for bad in ["", "Acme", "a b", "a@b", ".a", "a.", &"a".repeat(65)] {
            assert!(!valid_alias(bad), "{bad}");
        }
    }
}
