//! The `channel-join-sweep` queue (§13: every 6 h, and right after a
//! tenant's Slack credentials are set): the bot joins every public channel
//! it is not in yet, so ingest sees them.
//!
//! One handler serves both triggers. The scheduler's tick carries no tenant
//! and sweeps every active tenant that has Slack credentials; the job
//! `SlackSetup` queues names its tenant in `Job.tenant_id` (the runtime runs
//! it inside that tenant's scope) and sweeps that tenant only. Per tenant:
//! `conversations.list` (`types=public_channel`, `exclude_archived=true`,
//! every page), then `conversations.join` for each channel whose
//! `is_member` is false. `already_in_channel` counts as success; one
//! channel's failure is logged and the sweep goes on; a rate limit Slack
//! keeps up past the client's retries ends this tenant's sweep (the next one
//! continues). A tenant without credentials is skipped.
//!
//! The tenant's join settings (§13 "honor invite settings") are honoured:
//! `runtime.slack_auto_join_channels = false` means Root only sees the
//! channels people invite it to (the sweep joins nothing), and
//! `slack.join_excluded_channels` (ids or names) are never joined.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use storage::{RedbStore, Tenant, TenantStatus, TenantStore};

use crate::platform::tenancy::{self, TenantContext};
use crate::queue::job::{ChannelJoinSweepTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext, JobError};
use crate::slack::{Joined, SlackError, Workspaces};

/// What one tenant's sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct JoinReport {
    /// Public channels listed.
    pub channels: usize,
    /// Joined now.
    pub joined: usize,
    /// Not a member per the list, but Slack said already in.
    pub already: usize,
    /// Joins that failed (logged).
    pub failed: usize,
    /// Channels left for the next sweep after a rate limit.
    pub deferred: usize,
    /// Not joined: the tenant excluded them.
    pub excluded: usize,
    /// The tenant turned automatic joins off (invitations only).
    pub invite_only: bool,
}

/// `settings.runtime.slack_auto_join_channels` (default true).
pub const SETTING_AUTO_JOIN: &str = "slack_auto_join_channels";
/// `settings.slack.join_excluded_channels`: channel ids or names never joined.
pub const SETTING_EXCLUDED: &str = "join_excluded_channels";

/// The tenant's join settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinSettings {
    /// Automatic joins off: invitations only.
    pub invite_only: bool,
    /// Channel ids and names (lowercase, no `#`) never joined.
    pub excluded: Vec<String>,
}

impl JoinSettings {
    /// From `tenants.settings`.
    pub fn from_settings(settings: &serde_json::Value) -> JoinSettings {
        JoinSettings {
            invite_only: settings["runtime"][SETTING_AUTO_JOIN].as_bool() == Some(false),
            excluded: settings["slack"][SETTING_EXCLUDED]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str())
                        .map(|c| c.trim().trim_start_matches('#').to_lowercase())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn excludes(&self, c: &crate::slack::SlackConversation) -> bool {
        let id = c.id.to_lowercase();
        let name = c.name.as_deref().unwrap_or_default().to_lowercase();
        self.excluded
            .iter()
            .any(|e| *e == id || (!name.is_empty() && *e == name))
    }
}

/// Why a tenant's sweep could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// Listing channels failed.
    #[error(transparent)]
    Slack(#[from] SlackError),
    /// Reading credentials failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
}

/// The `channel-join-sweep` handler. Cheap to clone.
#[derive(Clone)]
pub struct ChannelJoinSweep {
    store: RedbStore,
    workspaces: Workspaces,
}

impl ChannelJoinSweep {
    /// The sweep over the tenants' cached workspace clients.
    pub fn new(store: RedbStore, workspaces: Workspaces) -> ChannelJoinSweep {
        ChannelJoinSweep { store, workspaces }
    }

    /// Sweep `tenant`; `None` when it has no Slack credentials.
    pub async fn sweep_tenant(&self, tenant: &Tenant) -> Result<Option<JoinReport>, SweepError> {
        let Some((api, _)) = self.workspaces.for_tenant(tenant).await? else {
            tracing::debug!(tenant = %tenant.id, "channel join sweep: no slack credentials");
            return Ok(None);
        };
        let settings = JoinSettings::from_settings(&tenant.settings.0);
        if settings.invite_only {
            tracing::info!(tenant = %tenant.id, "channel join sweep: invitations only");
            return Ok(Some(JoinReport {
                invite_only: true,
                ..JoinReport::default()
            }));
        }
        let channels = api.conversations_list("public_channel", true).await?;
        let mut report = JoinReport {
            channels: channels.len(),
            ..JoinReport::default()
        };
        let (excluded, todo): (Vec<_>, Vec<_>) = channels
            .iter()
            .filter(|c| !c.is_member && !c.is_archived)
            .partition(|c| settings.excludes(c));
        report.excluded = excluded.len();
        for (i, channel) in todo.iter().enumerate() {
            match api.conversations_join(&channel.id).await {
                Ok(Joined::Joined) => report.joined += 1,
                Ok(Joined::Already) => report.already += 1,
                Err(SlackError::RateLimited { .. }) => {
                    report.deferred = todo.len() - i;
                    tracing::warn!(tenant = %tenant.id, deferred = report.deferred,
                        "channel join sweep rate limited; the rest waits for the next sweep");
                    break;
                }
                Err(e) => {
                    report.failed += 1;
                    tracing::warn!(tenant = %tenant.id, channel = %channel.id, error = %e,
                        "channel join failed");
                }
            }
        }
        tracing::info!(tenant = %tenant.id, ?report, "channel join sweep");
        Ok(Some(report))
    }
}

/// Slack's refusals (`invalid_auth`, `missing_scope`, …) do not heal on a
/// retry; network trouble and rate limits may.
fn job_error(e: SweepError) -> JobError {
    match e {
        SweepError::Slack(SlackError::Api { .. }) => JobError::Permanent(e.to_string()),
        other => JobError::Retry(other.to_string()),
    }
}

#[async_trait]
impl TypedJobHandler for ChannelJoinSweep {
    type Payload = ChannelJoinSweepTick;

    async fn run(&self, _tick: ChannelJoinSweepTick, _ctx: &mut JobContext) -> HandlerResult {
        // A job naming a tenant runs in its scope: that tenant only.
        if let Some(ctx) = tenancy::current() {
            if ctx.tenant.status != TenantStatus::Active {
                return Ok(None);
            }
            let report = self.sweep_tenant(&ctx.tenant).await.map_err(job_error)?;
            return Ok(serde_json::to_value(report).ok());
        }
        let tenants = self
            .store
            .list_tenants()
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?;
        let (mut swept, mut failed) = (0usize, 0usize);
        for t in tenants {
            if t.status != TenantStatus::Active {
                continue;
            }
            let ctx = TenantContext {
                tenant: Arc::new(t),
            };
            let tenant = ctx.tenant.clone();
            match tenancy::scope(ctx, self.sweep_tenant(&tenant)).await {
                Ok(Some(_)) => swept += 1,
                Ok(None) => {}
                Err(e) => {
                    // One tenant's failure must not starve the others.
                    failed += 1;
                    tracing::warn!(tenant = %tenant.id, error = %e, "channel join sweep failed");
                }
            }
        }
        Ok(Some(
            serde_json::json!({"tenants_swept": swept, "tenants_failed": failed}),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slack::SlackConversation;

    fn conv(id: &str, name: &str) -> SlackConversation {
        SlackConversation {
            id: id.into(),
            name: Some(name.into()),
            is_member: false,
            is_archived: false,
        }
    }

    #[test]
    fn join_settings_exclude_by_id_or_name_and_default_to_joining() {
        let none = JoinSettings::from_settings(&serde_json::json!({}));
        assert_eq!(none, JoinSettings::default());
        let s = JoinSettings::from_settings(&serde_json::json!({
            "runtime": {"slack_auto_join_channels": false},
            "slack": {"join_excluded_channels": ["C0123ABC", "#Random", 7]},
        }));
        assert!(s.invite_only);
        assert!(s.excludes(&conv("C0123ABC", "general")));
        assert!(s.excludes(&conv("C999", "random")));
        assert!(!s.excludes(&conv("C999", "general")));
        assert!(
            !JoinSettings::from_settings(
                &serde_json::json!({"runtime": {"slack_auto_join_channels": true}})
            )
            .invite_only
        );
    }
}
