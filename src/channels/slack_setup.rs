//! Setting a tenant's Slack app credentials without the dashboard (§8.2):
//! the one service behind `root tenant channel slack …` and
//! `PUT /api/v1/channels/slack`. The bot token is checked with Slack's
//! `auth.test` first — a token Slack refuses is an error naming Slack's code
//! and nothing is stored — then the tenant's `tenant_channels` row of type
//! `slack` is upserted (`secrets {bot_token, signing_secret}`,
//! `config {team_id}`, status active) and a `channel-join-sweep` is queued
//! for the tenant (§13: "on install/credential events").
//!
//! The next event already uses the new credentials: `SlackChannel` caches
//! clients by credential fingerprint. Secrets never appear in errors, logs
//! or answers; the answer is the workspace and the bot user only.

use std::sync::Arc;

use storage::{
    ChannelStatus, ChannelType, EnqueueMode, Json, Redacted, RedbStore, StorageError, Store,
    TenantChannel, key,
};
use uuid::Uuid;

use crate::config::{Config, Secret};
use crate::platform::clock::Clock;
use crate::platform::tenancy::{self, NoTenantContext};
use crate::queue::Queues;
use crate::queue::job::{ChannelJoinSweepTick, JobOptions};
use crate::slack::teams::TeamDirectory;
use crate::slack::{SlackApi, SlackError, Workspaces};

/// The prefix of a Slack bot token (user tokens `xoxp-` are refused).
pub const BOT_TOKEN_PREFIX: &str = "xoxb-";
/// Longest bot token accepted (Slack's are far shorter).
pub const MAX_TOKEN_CHARS: usize = 512;
/// Longest signing secret accepted.
pub const MAX_SECRET_CHARS: usize = 256;
/// Longest workspace id accepted.
pub const MAX_TEAM_ID_CHARS: usize = 32;

/// What an operator gives.
#[derive(Clone, Debug)]
pub struct SlackAppInput {
    /// `xoxb-…`.
    pub bot_token: Secret,
    /// The app's signing secret.
    pub signing_secret: Secret,
    /// The workspace id; `None` = the one `auth.test` names.
    pub team_id: Option<String>,
}

/// What was stored (never the secrets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlackInstall {
    /// The workspace the channel row now names.
    pub team_id: String,
    /// The bot's user id, from `auth.test`.
    pub bot_user_id: String,
    /// The row's status (always active after a set).
    pub status: ChannelStatus,
    /// Whether the row was created (else replaced).
    pub created: bool,
    /// Whether the join sweep was queued (a queue failure does not undo
    /// the credentials; the 6-hourly sweep catches up).
    pub join_sweep_queued: bool,
}

/// Why credentials were not set. No variant carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The input is malformed (says which field, never its value).
    #[error("{0}")]
    Invalid(String),
    /// Slack refused the token (`invalid_auth`, `token_revoked`, …).
    #[error("Slack rejected the bot token: {code}")]
    Rejected {
        /// Slack's error code.
        code: String,
    },
    /// Slack could not be asked (network, 5xx, rate limit, bad answer).
    #[error("could not check the bot token with Slack: {0}")]
    Unavailable(SlackError),
    /// Storing failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Called outside a tenant scope (a bug).
    #[error(transparent)]
    NoTenant(#[from] NoTenantContext),
}

/// The credential-setting service. Cheap to clone.
#[derive(Clone)]
pub struct SlackSetup {
    store: RedbStore,
    queues: Queues,
    clock: Arc<dyn Clock>,
    http: reqwest::Client,
    api_base: String,
    teams: Option<TeamDirectory>,
    workspaces: Option<Workspaces>,
}

impl SlackSetup {
    /// The service over `SLACK_API_BASE_URL`.
    pub fn new(
        store: RedbStore,
        queues: Queues,
        clock: Arc<dyn Clock>,
        config: &Config,
    ) -> anyhow::Result<SlackSetup> {
        Ok(SlackSetup {
            store,
            queues,
            clock,
            http: SlackApi::http_client()?,
            api_base: config.slack_api_base_url.clone(),
            teams: None,
            workspaces: None,
        })
    }

    /// Forget `teams`' workspace routing after a change (the legacy
    /// `/slack/events` route sees a new workspace at once).
    pub fn with_team_directory(mut self, teams: TeamDirectory) -> SlackSetup {
        self.teams = Some(teams);
        self
    }

    /// Drop `workspaces`' cached credentials and client of a tenant whose
    /// credentials change (the next event verifies with the new secret).
    pub fn with_workspaces(mut self, workspaces: Workspaces) -> SlackSetup {
        self.workspaces = Some(workspaces);
        self
    }

    /// Validate `input` with `auth.test`, then store it as the current
    /// tenant's Slack channel and queue a join sweep for the tenant.
    pub async fn set_credentials(&self, input: SlackAppInput) -> Result<SlackInstall, SetupError> {
        let tenant = tenancy::current_tenant_id()?;
        let input = validate(input)?;
        let api = SlackApi::new(self.http.clone(), &self.api_base, input.bot_token.clone());
        let who = api.auth_test().await.map_err(|e| match e {
            SlackError::Api { code, .. } => SetupError::Rejected { code },
            other => SetupError::Unavailable(other),
        })?;
        if let Some(given) = &input.team_id
            && given != &who.team_id
        {
            tracing::info!(%tenant, given = %given, token_team = %who.team_id,
                "slack team id given differs from auth.test's; keeping the given one");
        }
        let team_id = input.team_id.clone().unwrap_or(who.team_id);
        let created = self.upsert(tenant, &input, &team_id).await?;
        if let Some(teams) = &self.teams {
            teams.invalidate();
        }
        if let Some(w) = &self.workspaces {
            w.forget(tenant);
        }
        let join_sweep_queued = match self.queue_join_sweep(tenant).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(%tenant, error = %e, "channel join sweep not queued");
                false
            }
        };
        tracing::info!(%tenant, %team_id, bot_user = %who.user_id, created,
            "slack credentials set");
        Ok(SlackInstall {
            team_id,
            bot_user_id: who.user_id,
            status: ChannelStatus::Active,
            created,
            join_sweep_queued,
        })
    }

    /// Insert or replace the slack row; other keys of `config` / `secrets`
    /// are kept. `true` when created.
    async fn upsert(
        &self,
        tenant: Uuid,
        input: &SlackAppInput,
        team_id: &str,
    ) -> Result<bool, StorageError> {
        let now = self.clock.now();
        let existing: Option<TenantChannel> = self
            .store
            .find_unique(
                Some(tenant),
                TenantChannel::TYPE_KEY,
                key().str(ChannelType::Slack.as_str()),
            )
            .await?;
        let set = |secrets: &mut serde_json::Value, config: &mut serde_json::Value| {
            if !secrets.is_object() {
                *secrets = serde_json::Value::Object(Default::default());
            }
            if !config.is_object() {
                *config = serde_json::Value::Object(Default::default());
            }
            secrets["bot_token"] = input.bot_token.expose().into();
            secrets["signing_secret"] = input.signing_secret.expose().into();
            config["team_id"] = team_id.into();
        };
        match existing {
            Some(mut row) => {
                let mut secrets = std::mem::take(&mut row.secrets).into_inner();
                set(&mut secrets.0, &mut row.config.0);
                row.secrets = Redacted::new(secrets);
                row.status = ChannelStatus::Active;
                row.updated_at = now;
                self.store.update(row).await?;
                Ok(false)
            }
            None => {
                let (mut secrets, mut config) = (Json::empty_object(), Json::empty_object());
                set(&mut secrets.0, &mut config.0);
                self.store
                    .insert(TenantChannel {
                        id: Uuid::new_v4(),
                        tenant_id: tenant,
                        channel_type: ChannelType::Slack,
                        config,
                        secrets: Redacted::new(secrets),
                        status: ChannelStatus::Active,
                        created_at: now,
                        updated_at: now,
                    })
                    .await?;
                Ok(true)
            }
        }
    }

    /// One `channel-join-sweep` job for `tenant` (coalesced per tenant:
    /// two changes in a row run the sweep once more, not twice).
    async fn queue_join_sweep(&self, tenant: Uuid) -> Result<(), StorageError> {
        let tick = ChannelJoinSweepTick {
            scheduled_for: self.clock.now(),
        };
        self.queues
            .enqueue_job(
                &tick,
                JobOptions {
                    id: Some(join_sweep_job_id(tenant)),
                    tenant_id: Some(tenant),
                    delay_ms: 0,
                    mode: EnqueueMode::Coalesce,
                },
            )
            .await?;
        Ok(())
    }
}

/// The id of a tenant's on-change join sweep.
pub fn join_sweep_job_id(tenant: Uuid) -> String {
    format!(
        "{}:tenant:{tenant}",
        crate::queue::registry::CHANNEL_JOIN_SWEEP
    )
}

fn clean(value: &str, field: &str, max: usize) -> Result<String, SetupError> {
    let v = value.trim();
    if v.is_empty() {
        return Err(SetupError::Invalid(format!("{field} is required")));
    }
    if v.chars().count() > max {
        return Err(SetupError::Invalid(format!(
            "{field} is longer than {max} characters"
        )));
    }
    if v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(SetupError::Invalid(format!(
            "{field} must not contain spaces or control characters"
        )));
    }
    Ok(v.to_string())
}

/// Trimmed, bounded, printable inputs; the token must be a bot token.
fn validate(input: SlackAppInput) -> Result<SlackAppInput, SetupError> {
    let token = clean(input.bot_token.expose(), "bot_token", MAX_TOKEN_CHARS)?;
    if !token.starts_with(BOT_TOKEN_PREFIX) {
        return Err(SetupError::Invalid(format!(
            "bot_token must be a bot token (it starts with {BOT_TOKEN_PREFIX})"
        )));
    }
    let secret = clean(
        input.signing_secret.expose(),
        "signing_secret",
        MAX_SECRET_CHARS,
    )?;
    let team_id = match input.team_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => {
            let t = clean(t, "team_id", MAX_TEAM_ID_CHARS)?;
            if !t.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(SetupError::Invalid(
                    "team_id must be a Slack workspace id (letters and digits, e.g. T0123ABCD)"
                        .into(),
                ));
            }
            Some(t)
        }
    };
    Ok(SlackAppInput {
        bot_token: Secret::new(token),
        signing_secret: Secret::new(secret),
        team_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(token: &str, secret: &str, team: Option<&str>) -> SlackAppInput {
        SlackAppInput {
            bot_token: Secret::new(token),
            signing_secret: Secret::new(secret),
            team_id: team.map(str::to_string),
        }
    }

    #[test]
    fn validation_names_the_field_never_the_value() {
        for (i, field) in [
            (input("", "s", None), "bot_token is required"),
            (input("xoxp-user-token", "s", None), "bot token"),
            (input("xoxb-zq zq", "s", None), "bot_token must not"),
            (input("xoxb-1", " ", None), "signing_secret is required"),
            (input("xoxb-1", "s", Some("T-1;")), "team_id"),
        ] {
            let err = validate(i).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
            assert!(!err.contains("xoxp-user") && !err.contains("zq"), "{err}");
        }
        let ok = validate(input(" xoxb-1 ", " sec ", Some(" "))).unwrap();
        assert_eq!(ok.bot_token.expose(), "xoxb-1");
        assert_eq!(ok.signing_secret.expose(), "sec");
        assert_eq!(ok.team_id, None);
    }
}
