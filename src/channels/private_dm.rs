//! Private delivery to one member (§13 follow-ups, §4.6 action alerts):
//! a Slack DM from the tenant's bot; where the tenant has no Slack
//! channel, an email when the member has an address and the tenant's email
//! channel is set up; otherwise nothing is sent and the caller records why.
//! Never a channel post: what Root scheduled for a member is theirs alone.

use std::sync::Arc;

use storage::{RedbStore, Tenant};

use super::email::sink::mail_from_tenant;
use crate::config::Config;
use crate::email::Mailbox;
use crate::platform::clock::Clock;
use crate::slack::mrkdwn::to_mrkdwn;
use crate::slack::workspaces::Workspaces;
use crate::tools::core::slack::send_dm;

/// Who gets a private message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipient {
    /// Their Slack user id (preferred).
    pub slack_user_id: Option<String>,
    /// Their email address (Slack-less tenants, email-only members).
    pub email: Option<String>,
}

/// How a message went out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivered {
    /// A Slack DM (the message's `ts`).
    SlackDm { ts: String },
    /// An email through the tenant's sender.
    Email,
}

impl Delivered {
    /// `slack_dm` / `email`, for run records.
    pub fn kind(&self) -> &'static str {
        match self {
            Delivered::SlackDm { .. } => "slack_dm",
            Delivered::Email => "email",
        }
    }
}

/// Sends private messages for jobs and hooks. Cheap to clone.
#[derive(Clone)]
pub struct PrivateDm {
    store: RedbStore,
    config: Arc<Config>,
    clock: Arc<dyn Clock>,
    slack: Workspaces,
}

impl PrivateDm {
    /// A sender over the tenants' Slack workspaces and email channels.
    pub fn new(
        store: RedbStore,
        config: Arc<Config>,
        clock: Arc<dyn Clock>,
        slack: Workspaces,
    ) -> Self {
        PrivateDm {
            store,
            config,
            clock,
            slack,
        }
    }

    /// Send `text` (Markdown) to `to`. `Err` says, for the run record, why
    /// nothing reached the member.
    pub async fn send(
        &self,
        tenant: &Tenant,
        to: &Recipient,
        subject: &str,
        text: &str,
    ) -> Result<Delivered, String> {
        let slack = self
            .slack
            .for_tenant(tenant)
            .await
            .map_err(|e| format!("Slack credentials could not be read: {e}"))?;
        match (slack, to.slack_user_id.as_deref(), to.email.as_deref()) {
            (Some((api, _)), Some(user), _) => send_dm(&api, user, &to_mrkdwn(text))
                .await
                .map(|ts| Delivered::SlackDm { ts })
                .map_err(|e| format!("the Slack DM failed: {e}")),
            (_, _, Some(address)) => self.mail(tenant, address, subject, text).await,
            (Some(_), None, None) => {
                Err("the member has no Slack account or email address known to Root".into())
            }
            (None, _, None) => Err(
                "Slack is not set up for this community and the member has no email address".into(),
            ),
        }
    }

    async fn mail(
        &self,
        tenant: &Tenant,
        address: &str,
        subject: &str,
        text: &str,
    ) -> Result<Delivered, String> {
        let to = Mailbox::new(address, None)
            .ok_or_else(|| format!("{address:?} is not an email address"))?;
        match mail_from_tenant(
            &self.store,
            &self.config,
            &self.clock,
            tenant,
            vec![to],
            subject.to_string(),
            text,
        )
        .await
        {
            Ok(true) => Ok(Delivered::Email),
            Ok(false) => {
                Err("neither Slack nor the email channel is set up for this community".into())
            }
            Err(e) => Err(format!("the email could not be sent: {e}")),
        }
    }
}
