//! Magic links: issued only to allowlisted addresses, mailed through the
//! platform's providers (or printed by `root auth link` when none is
//! configured), consumed once into a session.

use storage::{DashboardLoginLink, Scan, Store, key};
use uuid::Uuid;

use super::{DashboardAuth, LOGIN_LINK_TTL_MINUTES, new_token, normalize_email, token_hash};
use crate::email::inbound::Mailbox;
use crate::email::send::{EmailSender, OutgoingEmail};

/// Why a link did not sign anyone in.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// No such link (forged, mistyped).
    #[error("this sign-in link is not valid")]
    Unknown,
    /// The link was used already.
    #[error("this sign-in link was already used")]
    Used,
    /// The link is older than 15 minutes.
    #[error("this sign-in link has expired")]
    Expired,
    /// The address is no longer allowed to sign in.
    #[error("this address may not sign in")]
    NotAllowed,
    /// Storage failure.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// What happened to a sign-in request (the browser is told the same thing
/// whether or not the address is allowlisted).
#[derive(Debug, PartialEq, Eq)]
pub enum LinkDelivery {
    /// Mailed.
    Sent,
    /// The address may not sign in: nothing was issued.
    NotAllowed,
    /// No mail provider or `PLATFORM_EMAIL_DOMAIN`: an operator prints links
    /// with `root auth link`.
    MailNotConfigured,
    /// The provider refused or failed (logged).
    SendFailed,
}

/// What the login form may tell the browser: the same for every address.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkRequest {
    /// A link is issued and mailed in the background if the address may
    /// sign in.
    Accepted,
    /// No mail provider or `PLATFORM_EMAIL_DOMAIN` (true for every address).
    MailNotConfigured,
}

impl DashboardAuth {
    /// The login form's submit: answer at once, and look `email` up, issue
    /// and mail its link from a spawned task, so an allowlisted and an
    /// unknown address answer after the same work (security finding L-5).
    /// Not a queue job: its payload would keep the raw link at rest. A mail
    /// that cannot be sent is logged at WARN (never with the link); the
    /// person asks again.
    pub fn request_link_detached(&self, email: &str) -> LinkRequest {
        if !self.mail_configured() {
            return LinkRequest::MailNotConfigured;
        }
        let auth = self.clone();
        let email = email.to_string();
        tokio::spawn(async move {
            match auth.request_link(&email).await {
                Ok(LinkDelivery::Sent) => {
                    tracing::info!(email = %email, "dashboard sign-in link mailed");
                }
                Ok(LinkDelivery::NotAllowed) => tracing::info!(
                    email = %email,
                    "dashboard sign-in requested by an address that may not sign in"
                ),
                // `request_link` logged the provider's refusal at WARN.
                Ok(LinkDelivery::SendFailed) => {}
                Ok(LinkDelivery::MailNotConfigured) => tracing::warn!(
                    email = %email,
                    "dashboard sign-in link not mailed: mail is no longer configured"
                ),
                Err(e) => tracing::warn!(
                    email = %email,
                    error = %e,
                    "dashboard sign-in link could not be issued"
                ),
            }
        });
        LinkRequest::Accepted
    }

    /// Issue a link for `email` and return its URL, or `None` when the
    /// address may not sign in. Used by `root auth link` and by
    /// [`request_link`](Self::request_link).
    pub async fn issue_link(&self, email: &str) -> anyhow::Result<Option<String>> {
        let Some(email) = normalize_email(email) else {
            return Ok(None);
        };
        if !self.may_sign_in(&email).await? {
            return Ok(None);
        }
        self.prune_sign_in_rows().await;
        let raw = new_token();
        let now = self.clock.now();
        self.store
            .insert(DashboardLoginLink {
                id: Uuid::new_v4(),
                email,
                token_hash: token_hash(&raw),
                expires_at: now.plus_micros(LOGIN_LINK_TTL_MINUTES * 60_000_000),
                used_at: None,
                created_at: now,
            })
            .await?;
        Ok(Some(self.callback_url(&raw)))
    }

    /// `/auth/callback?token=…` on the public address.
    fn callback_url(&self, raw: &str) -> String {
        format!(
            "{}/auth/callback?token={raw}",
            self.config.platform_base_url.trim_end_matches('/')
        )
    }

    /// Whether links can be mailed (a provider and a sender domain).
    pub fn mail_configured(&self) -> bool {
        self.mail.is_configured() && self.config.platform_email_domain.is_some()
    }

    /// Issue and mail a link to `email`, waiting for the provider (signup
    /// and team invitations, which reveal nothing; the login form uses
    /// [`request_link_detached`](Self::request_link_detached)).
    pub async fn request_link(&self, email: &str) -> anyhow::Result<LinkDelivery> {
        if !self.mail_configured() {
            return Ok(LinkDelivery::MailNotConfigured);
        }
        let Some(url) = self.issue_link(email).await? else {
            return Ok(LinkDelivery::NotAllowed);
        };
        let domain = self.config.platform_email_domain.as_deref().unwrap_or("");
        let to = normalize_email(email).unwrap_or_default();
        let mail = OutgoingEmail {
            from: Mailbox {
                email: format!("login@{domain}"),
                name: Some("Root".into()),
            },
            to: vec![Mailbox {
                email: to.clone(),
                name: None,
            }],
            cc: Vec::new(),
            subject: "Your Root sign-in link".into(),
            text: format!(
                "Sign in to the Root dashboard:\n\n{url}\n\nThe link works once, for \
                 {LOGIN_LINK_TTL_MINUTES} minutes. If you did not ask for it, ignore this mail."
            ),
            html: None,
            in_reply_to: None,
            references: Vec::new(),
        };
        match self.mail.send(&mail).await {
            Ok(_) => Ok(LinkDelivery::Sent),
            Err(e) => {
                tracing::warn!(email = %to, error = %e, "dashboard sign-in link could not be mailed");
                Ok(LinkDelivery::SendFailed)
            }
        }
    }

    /// Use the link `raw` once and open a session: the session cookie's raw
    /// value.
    pub async fn consume_link(&self, raw: &str) -> Result<String, LoginError> {
        let hash = token_hash(raw);
        let now = self.clock.now();
        let (outcome, _) = self
            .store
            .transact(move |tx| {
                let found: Vec<DashboardLoginLink> = tx.scan(
                    None,
                    Scan::index(DashboardLoginLink::TOKEN_HASH_KEY, key().str(&hash)).limit(1),
                )?;
                let Some(mut link) = found.into_iter().next() else {
                    return Ok(Err(LoginError::Unknown));
                };
                if link.used_at.is_some() {
                    return Ok(Err(LoginError::Used));
                }
                if link.expires_at <= now {
                    return Ok(Err(LoginError::Expired));
                }
                link.used_at = Some(now);
                let email = link.email.clone();
                tx.update(&link)?;
                Ok(Ok(email))
            })
            .await
            .map_err(anyhow::Error::from)?;
        let email = outcome?;
        // The allowlist may have changed since the link was issued.
        if !self.may_sign_in(&email).await? {
            return Err(LoginError::NotAllowed);
        }
        Ok(self.open_session(&email).await?)
    }
}
