//! Every tenant's Slack workspace as a service (§8.2 "cache Slack clients
//! per tenant"): resolve the tenant's credentials, hand out its cached
//! [`SlackApi`] (rebuilt when the credentials change — the cache compares
//! their fingerprint), remember the bot's user id, and open DMs. The
//! channel handler, the Slack-only tools, admin messaging and later the
//! follow-up deliveries all reach Slack through it.

use std::sync::Arc;
use std::time::Duration;

use storage::{RedbStore, Tenant};
use uuid::Uuid;

use super::api::{Params, SlackApi, SlackError};
use super::credentials::{SlackCredentials, resolve};
use crate::config::Config;
use crate::platform::tenancy;

/// One tenant's client and what is known of its bot.
#[derive(Clone)]
struct Entry {
    fingerprint: String,
    api: SlackApi,
    bot_user_id: Option<String>,
}

/// The per-tenant Slack clients. Cheap to clone.
#[derive(Clone)]
pub struct Workspaces {
    store: RedbStore,
    config: Arc<Config>,
    http: reqwest::Client,
    cache: moka::sync::Cache<Uuid, Entry>,
    /// Resolved credentials per tenant: every inbound event needs its
    /// tenant's signing secret, and resolving reads up to two tables.
    credentials: moka::sync::Cache<Uuid, Option<SlackCredentials>>,
    time_unit: Duration,
}

/// How long resolved credentials are trusted without a re-read. A change
/// through `SlackSetup` in this process is seen at once ([`Workspaces::forget`]);
/// one made by another process within this time.
pub const CREDENTIALS_TTL: Duration = Duration::from_secs(30);

impl Workspaces {
    /// Clients against `SLACK_API_BASE_URL`.
    pub fn new(store: RedbStore, config: Arc<Config>) -> reqwest::Result<Workspaces> {
        Ok(Workspaces {
            store,
            config,
            http: SlackApi::http_client()?,
            cache: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_idle(Duration::from_secs(3600))
                .build(),
            credentials: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(CREDENTIALS_TTL)
                .build(),
            time_unit: Duration::from_secs(1),
        })
    }

    /// Scale the clients' waits (`Retry-After`, backoff, pacing) — tests.
    pub fn with_time_unit(mut self, unit: Duration) -> Workspaces {
        self.time_unit = unit;
        self.cache.invalidate_all();
        self
    }

    /// The HTTP client the Slack calls share (file uploads post with it).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// What one pacing second lasts (1 s; tests shrink it).
    pub fn time_unit(&self) -> Duration {
        self.time_unit
    }

    /// The cached client for `tenant` under `creds`.
    pub fn api(&self, tenant: Uuid, creds: &SlackCredentials) -> SlackApi {
        let fp = creds.fingerprint();
        if let Some(e) = self.cache.get(&tenant)
            && e.fingerprint == fp
        {
            return e.api;
        }
        let api = SlackApi::new(
            self.http.clone(),
            &self.config.slack_api_base_url,
            creds.bot_token.clone(),
        )
        .with_time_unit(self.time_unit);
        self.cache.insert(
            tenant,
            Entry {
                fingerprint: fp,
                api: api.clone(),
                bot_user_id: None,
            },
        );
        api
    }

    /// `tenant`'s credentials (channel row → `tenant_credentials` → env
    /// for root), cached [`CREDENTIALS_TTL`]; `None` without Slack.
    pub async fn credentials(
        &self,
        tenant: &Tenant,
    ) -> Result<Option<SlackCredentials>, storage::StorageError> {
        if let Some(found) = self.credentials.get(&tenant.id) {
            return Ok(found);
        }
        let found = resolve(&self.store, &self.config, tenant).await?;
        self.credentials.insert(tenant.id, found.clone());
        Ok(found)
    }

    /// Forget `tenant`'s credentials and client after they changed.
    pub fn forget(&self, tenant: Uuid) {
        self.credentials.invalidate(&tenant);
        self.cache.invalidate(&tenant);
    }

    /// `tenant`'s credentials and client; `None` without Slack.
    pub async fn for_tenant(
        &self,
        tenant: &Tenant,
    ) -> Result<Option<(SlackApi, SlackCredentials)>, storage::StorageError> {
        let creds = self.credentials(tenant).await?;
        Ok(creds.map(|c| (self.api(tenant.id, &c), c)))
    }

    /// The client of the tenant in scope; `None` without Slack.
    pub async fn current(&self) -> Result<Option<SlackApi>, anyhow::Error> {
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        Ok(self.for_tenant(&ctx.tenant).await?.map(|(api, _)| api))
    }

    /// The bot's user id: `known` (from an event), else `auth.test`, cached.
    pub async fn bot_user_id(
        &self,
        tenant: Uuid,
        api: &SlackApi,
        known: Option<&str>,
    ) -> Result<String, SlackError> {
        if let Some(id) = known {
            return Ok(id.to_string());
        }
        if let Some(id) = self.cache.get(&tenant).and_then(|e| e.bot_user_id) {
            return Ok(id);
        }
        let who = api.auth_test().await?;
        if let Some(mut e) = self.cache.get(&tenant) {
            e.bot_user_id = Some(who.user_id.clone());
            self.cache.insert(tenant, e);
        }
        Ok(who.user_id)
    }
}

/// `conversations.open` with one user: the DM channel id to post in.
pub async fn open_dm(api: &SlackApi, user: &str) -> Result<String, SlackError> {
    let v = api
        .call("conversations.open", Params::form([("users", user)]))
        .await?;
    v["channel"]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| SlackError::InvalidResponse {
            method: "conversations.open".into(),
            message: "no channel id".into(),
        })
}
