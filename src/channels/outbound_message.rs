//! `POST /api/v1/messages` (§12.2): the community's own systems send a
//! message through Root's channels — `{channel: slack|email, target, text,
//! subject?, thread_ts?}`.
//!
//! Slack targets: a user id (`U…`/`W…`, a DM from the bot), a conversation
//! id (`C…`/`G…`/`D…`, a post, threaded under `thread_ts` when given), or an
//! email address resolved through the principal's Slack binding (the
//! `principals` row with that address and a Slack id). Email targets: an
//! address, sent by the tenant's email channel. The text is Markdown
//! (rendered as mrkdwn for Slack). Nothing here is a member exchange, so
//! nothing is written to `conversation_logs`; each send is logged (tenant,
//! channel, kind — never the text).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use storage::{RedbStore, Tenant};

use super::email::sink::mail_from_tenant;
use crate::config::Config;
use crate::email::Mailbox;
use crate::identity::{Identity, PrincipalLookup};
use crate::platform::clock::Clock;
use crate::slack::mrkdwn::to_mrkdwn;
use crate::slack::workspaces::{Workspaces, open_dm};
use crate::slack::{OutgoingMessage, SlackError};

/// Longest message text accepted (Slack's practical limit for one post).
pub const MAX_MESSAGE_CHARS: usize = 4_000;
/// Longest email subject accepted.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// Which channel a message goes out on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageChannel {
    /// A Slack DM or post.
    Slack,
    /// An email.
    Email,
}

/// Body of `POST /messages`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutboundMessage {
    /// `slack` or `email`.
    pub channel: MessageChannel,
    /// Slack: a user id, a conversation id or an email address; email: an address.
    pub target: String,
    /// Markdown text.
    pub text: String,
    /// Email subject (default "Message from" + the community name).
    #[serde(default)]
    pub subject: Option<String>,
    /// Slack only: the parent message to thread under.
    #[serde(default)]
    pub thread_ts: Option<String>,
}

/// How the message went out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SentMessage {
    /// `slack_dm`, `slack_channel` or `email`.
    pub kind: &'static str,
    /// Slack: the conversation posted to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// Slack: the message's ts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Email: the address written to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// Why a message was not sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// A field is wrong (`field`, message).
    #[error("{1}")]
    Invalid(&'static str, String),
    /// The target names nobody Root can reach.
    #[error("{0}")]
    UnknownTarget(String),
    /// The channel is not set up for this community.
    #[error("{0}")]
    NotConfigured(String),
    /// Slack or the email provider refused or failed.
    #[error("{0}")]
    Upstream(String),
    /// Storage or another internal failure.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

fn is_slack_user(t: &str) -> bool {
    (t.starts_with('U') || t.starts_with('W'))
        && t.len() >= 3
        && t.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

fn is_slack_conversation(t: &str) -> bool {
    (t.starts_with('C') || t.starts_with('G') || t.starts_with('D'))
        && t.len() >= 3
        && t.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

fn upstream(e: SlackError) -> SendError {
    SendError::Upstream(format!("Slack refused the message: {e}"))
}

/// Sends API messages. Cheap to clone.
#[derive(Clone)]
pub struct OutboundMessages {
    store: RedbStore,
    config: Arc<Config>,
    clock: Arc<dyn Clock>,
    slack: Workspaces,
    identity: Identity,
}

impl OutboundMessages {
    /// A sender over the tenants' Slack workspaces, email channels and principals.
    pub fn new(
        store: RedbStore,
        config: Arc<Config>,
        clock: Arc<dyn Clock>,
        slack: Workspaces,
        identity: Identity,
    ) -> Self {
        OutboundMessages {
            store,
            config,
            clock,
            slack,
            identity,
        }
    }

    /// Validate and send `m` for `tenant` (in its scope).
    pub async fn send(
        &self,
        tenant: &Tenant,
        m: OutboundMessage,
    ) -> Result<SentMessage, SendError> {
        let text = m.text.trim();
        if text.is_empty() {
            return Err(SendError::Invalid("text", "must not be empty".into()));
        }
        let chars = text.chars().count();
        if chars > MAX_MESSAGE_CHARS {
            return Err(SendError::Invalid(
                "text",
                format!("is {chars} characters long; at most {MAX_MESSAGE_CHARS}"),
            ));
        }
        let target = m.target.trim();
        if target.is_empty() {
            return Err(SendError::Invalid("target", "must not be empty".into()));
        }
        let sent = match m.channel {
            MessageChannel::Slack => {
                if m.subject.is_some() {
                    return Err(SendError::Invalid(
                        "subject",
                        "only email messages have a subject".into(),
                    ));
                }
                self.slack(tenant, target, text, m.thread_ts).await?
            }
            MessageChannel::Email => {
                if m.thread_ts.is_some() {
                    return Err(SendError::Invalid(
                        "thread_ts",
                        "only Slack messages are threaded".into(),
                    ));
                }
                self.email(tenant, target, text, m.subject).await?
            }
        };
        tracing::info!(tenant = %tenant.id, kind = sent.kind, "API message sent");
        Ok(sent)
    }

    async fn slack(
        &self,
        tenant: &Tenant,
        target: &str,
        text: &str,
        thread_ts: Option<String>,
    ) -> Result<SentMessage, SendError> {
        let user = if is_slack_user(target) {
            Some(target.to_string())
        } else if target.contains('@') {
            let p = self
                .identity
                .find_principal(&PrincipalLookup::Email(target.to_string()))
                .await?;
            match p.and_then(|p| p.slack_user_id) {
                Some(id) => Some(id),
                None => {
                    return Err(SendError::UnknownTarget(format!(
                        "no member with email {target:?} has a Slack account known to Root"
                    )));
                }
            }
        } else if is_slack_conversation(target) {
            None
        } else {
            return Err(SendError::Invalid(
                "target",
                format!(
                    "{target:?} is not a Slack user id (U…), conversation id (C…, G…, D…) or email address"
                ),
            ));
        };
        let Some((api, _)) = self
            .slack
            .for_tenant(tenant)
            .await
            .map_err(|e| SendError::Internal(e.into()))?
        else {
            return Err(SendError::NotConfigured(
                "Slack is not set up for this community".into(),
            ));
        };
        let (channel, kind) = match &user {
            Some(u) => (open_dm(&api, u).await.map_err(upstream)?, "slack_dm"),
            None => (target.to_string(), "slack_channel"),
        };
        let ts = api
            .post_message(&OutgoingMessage {
                channel: channel.clone(),
                text: to_mrkdwn(text),
                thread_ts: thread_ts.filter(|t| !t.trim().is_empty()),
                ..OutgoingMessage::default()
            })
            .await
            .map_err(upstream)?;
        Ok(SentMessage {
            kind,
            channel_id: Some(channel),
            ts: Some(ts),
            email: None,
        })
    }

    async fn email(
        &self,
        tenant: &Tenant,
        target: &str,
        text: &str,
        subject: Option<String>,
    ) -> Result<SentMessage, SendError> {
        let to = Mailbox::new(target, None).ok_or_else(|| {
            SendError::Invalid("target", format!("{target:?} is not an email address"))
        })?;
        let subject = match subject.map(|s| s.trim().to_string()) {
            Some(s) if s.chars().count() > MAX_SUBJECT_CHARS => {
                return Err(SendError::Invalid(
                    "subject",
                    format!("is longer than {MAX_SUBJECT_CHARS} characters"),
                ));
            }
            Some(s) if !s.is_empty() => s,
            _ => format!("Message from {}", tenant.display_name),
        };
        let email = to.email.clone();
        match mail_from_tenant(
            &self.store,
            &self.config,
            &self.clock,
            tenant,
            vec![to],
            subject,
            text,
        )
        .await
        {
            Ok(true) => Ok(SentMessage {
                kind: "email",
                channel_id: None,
                ts: None,
                email: Some(email),
            }),
            Ok(false) => Err(SendError::NotConfigured(
                "the email channel is not set up for this community".into(),
            )),
            Err(e) => Err(SendError::Upstream(format!(
                "the email could not be sent: {e}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_targets_are_told_apart_by_shape() {
        assert!(is_slack_user("U043H11ES4V") && is_slack_user("W0ADA"));
        assert!(!is_slack_user("C043H11ES4V") && !is_slack_user("ada@example.org"));
        assert!(is_slack_conversation("C0GENERAL1") && is_slack_conversation("D0DM1"));
        assert!(!is_slack_conversation("general") && !is_slack_conversation("c0lower"));
    }
}
