//! The email notification sink (§15.2): escalations, requests, missing-tool
//! requests and mistake reports go by mail to the tenant's
//! `settings.admin_emails`, through the tenant's own sender (the platform
//! provider or its BYO webhook). The `human_interventions` row is stored
//! before any sink runs; this one is best effort (the fan-out logs a
//! failure; the member never sees it). No addresses, no email channel, or
//! no sender configured: nothing is sent here.

use std::sync::Arc;

use async_trait::async_trait;
use storage::{HumanIntervention, InterventionCategory, RedbStore};

use super::directory::{EmailMode, email_setup};
use super::reply::tenant_sender;
use crate::config::Config;
use crate::email::{Mailbox, OutgoingEmail, render_reply};
use crate::platform::clock::Clock;
use crate::platform::notify::InterventionSink;
use crate::platform::tenancy;

/// `settings.admin_emails`: who gets notices.
pub const SETTING_ADMIN_EMAILS: &str = "admin_emails";
/// Recipients per notice at most.
pub const MAX_ADMIN_EMAILS: usize = 10;

/// Mails interventions to the tenant's admins.
#[derive(Clone)]
pub struct EmailSink {
    store: RedbStore,
    config: Arc<Config>,
    clock: Arc<dyn Clock>,
}

impl EmailSink {
    /// A sink over the tenants' email channels.
    pub fn new(store: RedbStore, config: Arc<Config>, clock: Arc<dyn Clock>) -> Self {
        EmailSink {
            store,
            config,
            clock,
        }
    }
}

/// Subject and Markdown body of the notice.
pub fn notice(row: &HumanIntervention, community: &str) -> (String, String) {
    let kind = match row.category {
        InterventionCategory::Escalation => "Escalation",
        InterventionCategory::Request => "Request",
        InterventionCategory::MissingTool => "Missing tool request",
        InterventionCategory::MistakeReport => "Mistake report",
        InterventionCategory::SystemFailure => "System failure",
    };
    let subject = format!("[{community}] {kind}: {}", row.title.trim());
    let mut body = format!("**{kind}:** {}", row.title.trim());
    if let Some(d) = row.details.as_deref().filter(|d| !d.trim().is_empty()) {
        body.push_str(&format!("\n\n{}", d.trim()));
    }
    let who = row.metadata.0["user_name"]
        .as_str()
        .or_else(|| row.metadata.0["principal_ref"].as_str());
    if let Some(who) = who {
        body.push_str(&format!("\n\nFrom: {who} (via {})", row.channel));
    }
    body.push_str(&format!("\n\nIntervention id: {}", row.id));
    (subject, body)
}

#[async_trait]
impl InterventionSink for EmailSink {
    fn name(&self) -> &'static str {
        "email"
    }

    async fn deliver(&self, row: &HumanIntervention) -> anyhow::Result<()> {
        if row.category == InterventionCategory::SystemFailure {
            return Ok(());
        }
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        let tenant = &ctx.tenant;
        let to: Vec<Mailbox> = tenant.settings.0[SETTING_ADMIN_EMAILS]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .filter_map(|e| Mailbox::new(e, None))
            .take(MAX_ADMIN_EMAILS)
            .collect();
        if to.is_empty() {
            return Ok(());
        }
        let (subject, body) = notice(row, &tenant.display_name);
        mail_from_tenant(
            &self.store,
            &self.config,
            &self.clock,
            tenant,
            to,
            subject,
            &body,
        )
        .await?;
        Ok(())
    }
}

/// Mail `body` (Markdown-ish text, rendered to text + HTML) to `to` through
/// the tenant's own sender. `Ok(false)`: the tenant has no email channel,
/// nothing was sent.
pub async fn mail_from_tenant(
    store: &RedbStore,
    config: &Config,
    clock: &Arc<dyn Clock>,
    tenant: &storage::Tenant,
    to: Vec<Mailbox>,
    subject: String,
    body: &str,
) -> anyhow::Result<bool> {
    let Some(setup) = email_setup(store, tenant).await? else {
        return Ok(false);
    };
    // The webhook ignores `from`; the platform providers need a real one.
    let from_address = match (setup.platform_address(config), setup.mode) {
        (Some(a), _) => a,
        (None, EmailMode::ByoWebhook) => format!("{}@localhost", setup.alias),
        (None, EmailMode::PlatformAlias) => {
            anyhow::bail!("PLATFORM_EMAIL_DOMAIN is not set: no address to send from")
        }
    };
    let from = Mailbox::new(&from_address, Some(&tenant.agent_name))
        .ok_or_else(|| anyhow::anyhow!("bad sender address"))?;
    let (text, html) = render_reply(body);
    let mail = OutgoingEmail {
        from,
        to,
        cc: Vec::new(),
        subject,
        text,
        html: Some(html),
        in_reply_to: None,
        references: Vec::new(),
    };
    let sender = tenant_sender(config, clock, &setup)?;
    sender.send(&mail).await?;
    Ok(true)
}
