//! Where a tenant's Slack app credentials come from (§8.2), in order: the
//! `tenant_channels` row of type `slack` (`secrets {bot_token,
//! signing_secret}`, `config {team_id}`), then `tenant_credentials`
//! (`slack_bot_token`, `slack_signing_secret`, optional `slack_team_id`),
//! then — for the live root tenant only — `SLACK_BOT_TOKEN` /
//! `SLACK_SIGNING_SECRET`. A disabled channel row means Slack is off for
//! the tenant (no fallback).

use serde_json::Value;
use storage::{
    ChannelStatus, ChannelType, ROOT_TENANT_ID, RedbStore, StorageResult, Store, Tenant,
    TenantChannel, TenantCredential, key,
};

use crate::config::{Config, Secret};

/// `tenant_credentials.kind` of the bot token.
pub const CREDENTIAL_BOT_TOKEN: &str = "slack_bot_token";
/// `tenant_credentials.kind` of the signing secret.
pub const CREDENTIAL_SIGNING_SECRET: &str = "slack_signing_secret";
/// `tenant_credentials.kind` of the workspace id (legacy routing).
pub const CREDENTIAL_TEAM_ID: &str = "slack_team_id";

/// Which store the credentials came from (for logs; never the values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialSource {
    /// `tenant_channels.secrets`.
    Channel,
    /// `tenant_credentials`.
    Credentials,
    /// `SLACK_BOT_TOKEN` / `SLACK_SIGNING_SECRET` (root tenant).
    Environment,
}

/// One tenant's Slack app.
#[derive(Clone, Debug)]
pub struct SlackCredentials {
    /// `xoxb-…`.
    pub bot_token: Secret,
    /// Verifies inbound events.
    pub signing_secret: Secret,
    /// The workspace, when known (routes the legacy `/slack/events`).
    pub team_id: Option<String>,
    /// Where they came from.
    pub source: CredentialSource,
}

impl SlackCredentials {
    /// A fingerprint that changes when any credential changes (client
    /// caches compare it; it is a hash, never the values).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(self.bot_token.expose().as_bytes());
        h.update([0]);
        h.update(self.signing_secret.expose().as_bytes());
        h.update([0]);
        h.update(self.team_id.as_deref().unwrap_or("").as_bytes());
        hex::encode(&h.finalize()[..8])
    }
}

fn text(v: &Value, k: &str) -> Option<String> {
    v[k].as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Resolve `tenant`'s Slack credentials; `None` when it has none.
pub async fn resolve(
    store: &RedbStore,
    config: &Config,
    tenant: &Tenant,
) -> StorageResult<Option<SlackCredentials>> {
    let channel: Option<TenantChannel> = store
        .find_unique(
            Some(tenant.id),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Slack.as_str()),
        )
        .await?;
    if let Some(ch) = &channel {
        if ch.status == ChannelStatus::Disabled {
            return Ok(None);
        }
        let secrets = &ch.secrets.expose().0;
        if let (Some(token), Some(secret)) =
            (text(secrets, "bot_token"), text(secrets, "signing_secret"))
        {
            return Ok(Some(SlackCredentials {
                bot_token: Secret::new(token),
                signing_secret: Secret::new(secret),
                team_id: text(&ch.config.0, "team_id"),
                source: CredentialSource::Channel,
            }));
        }
    }
    let kinds = [
        CREDENTIAL_BOT_TOKEN,
        CREDENTIAL_SIGNING_SECRET,
        CREDENTIAL_TEAM_ID,
    ];
    let rows: Vec<Option<TenantCredential>> = store
        .find_unique_many(
            Some(tenant.id),
            TenantCredential::KIND_KEY,
            kinds.iter().map(|k| key().str(k)).collect(),
        )
        .await?;
    let value = |i: usize| {
        rows.get(i)
            .and_then(|r| r.as_ref())
            .map(|r| r.value.expose().trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let (Some(token), Some(secret)) = (value(0), value(1)) {
        return Ok(Some(SlackCredentials {
            bot_token: Secret::new(token),
            signing_secret: Secret::new(secret),
            team_id: value(2)
                .or_else(|| channel.as_ref().and_then(|c| text(&c.config.0, "team_id"))),
            source: CredentialSource::Credentials,
        }));
    }
    if tenant.id == ROOT_TENANT_ID
        && let (Some(token), Some(secret)) = (&config.slack_bot_token, &config.slack_signing_secret)
    {
        return Ok(Some(SlackCredentials {
            bot_token: token.clone(),
            signing_secret: secret.clone(),
            team_id: channel.as_ref().and_then(|c| text(&c.config.0, "team_id")),
            source: CredentialSource::Environment,
        }));
    }
    Ok(None)
}
