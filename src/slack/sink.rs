//! The Slack notification sink (§15.2): escalations, requests, missing-tool
//! requests and mistake reports go to the tenant's configured Slack channel
//! (`settings.notifications.slack_channel`) and/or admin DMs
//! (`settings.notifications.slack_admin_user_ids`). The `human_interventions`
//! row is stored before any sink runs; this one is best effort (errors are
//! logged by the fan-out, never shown to the member). A tenant without Slack
//! or without either setting gets nothing here.

use async_trait::async_trait;
use serde_json::Value;
use storage::{HumanIntervention, InterventionCategory};

use super::OutgoingMessage;
use super::mrkdwn::escape;
use super::workspaces::{Workspaces, open_dm};
use crate::platform::notify::InterventionSink;
use crate::platform::tenancy;

/// `settings.notifications.slack_channel`: the channel id notices go to.
pub const SETTING_CHANNEL: &str = "slack_channel";
/// `settings.notifications.slack_admin_user_ids`: admins DMed with notices.
pub const SETTING_ADMIN_USERS: &str = "slack_admin_user_ids";
/// Admin DMs per notice at most (a wide fan-out belongs in a channel).
pub const MAX_ADMIN_DMS: usize = 10;

/// Posts interventions to the tenant's Slack.
#[derive(Clone)]
pub struct SlackSink {
    workspaces: Workspaces,
}

impl SlackSink {
    /// A sink over `workspaces`.
    pub fn new(workspaces: Workspaces) -> Self {
        SlackSink { workspaces }
    }
}

/// The notice as admins read it (plain mrkdwn-safe text).
pub fn notice_text(row: &HumanIntervention) -> String {
    let kind = match row.category {
        InterventionCategory::Escalation => "Escalation",
        InterventionCategory::Request => "Request",
        InterventionCategory::MissingTool => "Missing tool request",
        InterventionCategory::MistakeReport => "Mistake report",
        InterventionCategory::SystemFailure => "System failure",
    };
    let mut text = format!("*{kind}:* {}", escape(&row.title));
    if let Some(d) = row.details.as_deref().filter(|d| !d.trim().is_empty()) {
        text.push_str(&format!("\n{}", escape(d.trim())));
    }
    let who = row.metadata.0["user_name"]
        .as_str()
        .or_else(|| row.metadata.0["principal_ref"].as_str());
    if let Some(who) = who {
        text.push_str(&format!("\nFrom: {} (via {})", escape(who), row.channel));
    }
    text.push_str(&format!("\nIntervention id: {}", row.id));
    text
}

#[async_trait]
impl InterventionSink for SlackSink {
    fn name(&self) -> &'static str {
        "slack"
    }

    async fn deliver(&self, row: &HumanIntervention) -> anyhow::Result<()> {
        if row.category == InterventionCategory::SystemFailure {
            return Ok(());
        }
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        let notifications = &ctx.tenant.settings.0["notifications"];
        let channel = notifications[SETTING_CHANNEL]
            .as_str()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        let admins: Vec<&str> = notifications[SETTING_ADMIN_USERS]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .take(MAX_ADMIN_DMS)
                    .collect()
            })
            .unwrap_or_default();
        if channel.is_none() && admins.is_empty() {
            return Ok(());
        }
        let Some((api, _)) = self.workspaces.for_tenant(&ctx.tenant).await? else {
            return Ok(());
        };
        let text = notice_text(row);
        let mut errors = Vec::new();
        if let Some(channel) = channel {
            let msg = OutgoingMessage {
                channel: channel.to_string(),
                text: text.clone(),
                ..OutgoingMessage::default()
            };
            if let Err(e) = api.post_message(&msg).await {
                errors.push(format!("channel {channel}: {e}"));
            }
        }
        for admin in admins {
            let sent = match open_dm(&api, admin).await {
                Ok(dm) => api
                    .post_message(&OutgoingMessage {
                        channel: dm,
                        text: text.clone(),
                        ..OutgoingMessage::default()
                    })
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                errors.push(format!("dm {admin}: {e}"));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(anyhow::anyhow!(errors.join("; ")))
        }
    }
}
