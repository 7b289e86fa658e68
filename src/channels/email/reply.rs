//! The `email-inbound` job (§8.3, §13: concurrency 4, 5 attempts,
//! exponential 10 s): one mail, answered exactly once.
//!
//! 0. **Budget** (security M-2): at most `email_replies_per_sender_per_hour`
//!    replies to one sender and `email_replies_per_thread_per_day` in one
//!    thread ([`ReplyBudget`]); past either the mail is logged and not
//!    answered, and no turn runs.
//! 1. **Prepare** (first attempt only): the turn runs on the email surface
//!    (public or member sender, the thread's history by its root
//!    Message-ID) — a sender whose `From` nobody authenticated is always a
//!    public sender, may not impersonate, delegate or read a thread's
//!    history, and is answered at `From` alone (security H-1) — the reply is
//!    rendered (text + sanitized HTML) and
//!    threaded (RFC 5322 §3.6.4), and the whole prepared mail — with the
//!    reply's log row — is saved on the job record **before** anything is
//!    sent. A later attempt finds it there and never runs the turn (or its
//!    tools) again.
//! 2. **Send** through the tenant's sender (platform provider or signed BYO
//!    webhook). Acceptance is saved on the job at once. `Retryable` → the
//!    queue retries; `Permanent` / `Config` → failed now (with an admin
//!    notice); `Ambiguous` (no answer after the request went out) → one
//!    resend on the next attempt, then failed — see `docs/decisions.md`.
//! 3. **Record**: the reply's conversation log row (its dedupe key makes a
//!    repeat a no-op) and the `email_logs` row (its id derives from the job
//!    id, so a repeat is a no-op too).

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::json;
use storage::{Channel, ConversationLog, Direction, EmailLog, Json, Store, Tenant};
use uuid::Uuid;

use super::EmailInboundPayload;
use super::delegation::resolve_delegation;
use super::directory::{EmailMode, EmailSetup, email_setup};
use super::gate::{AuthorizationGate, GateMail};
use super::reply_budget::{ReplyBudget, ReplyCharge};
use crate::channels::turn::{
    Delegation, EmailThread, TurnError, TurnRequest, TurnServices, run_channel_turn,
};
use crate::config::Config;
use crate::email::send::email_client;
use crate::email::{
    ByoWebhookSender, EmailSender, InboundEmail, Mailbox, OutgoingEmail, PlatformSender,
    RecipientRules, SendError, render_reply, reply_headers, reply_recipients, strip_quoted_reply,
};
use crate::outbound::OutboundPolicy;
use crate::platform::notify::AdminNotice;
use crate::platform::tenancy;
use crate::platform::tiers::Tier;
use crate::queue::job::TypedJobHandler;
use crate::queue::{HandlerResult, JobContext, JobError};
use crate::tools::ToolGate;

/// The reply when a turn is refused by a limit (the limit's member text is
/// used when there is one).
pub const TURN_FAILED_REPLY: &str =
    "Sorry — I couldn't work on your message just now. Please reply to this email to try again.";

/// What the job record carries between attempts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Prepared {
    /// The mail to send.
    pub outgoing: OutgoingEmail,
    /// The reply's conversation log row, written after acceptance.
    pub outbound_log: Option<ConversationLog>,
    /// Set once a provider took it: `(provider, provider id)`.
    pub accepted: Option<(String, Option<String>)>,
    /// Sends that ended without an answer.
    pub ambiguous_sends: u32,
}

/// The `email-inbound` handler.
#[derive(Clone)]
pub struct EmailReply {
    turns: TurnServices,
    config: Arc<Config>,
    budget: ReplyBudget,
}

impl EmailReply {
    /// A handler running turns through `turns`, charging replies to
    /// `budget` (the process's, `EmailChannel::reply_budget`).
    pub fn new(turns: TurnServices, config: Arc<Config>, budget: ReplyBudget) -> EmailReply {
        EmailReply {
            turns,
            config,
            budget,
        }
    }

    /// Charge this job's reply against the sender's and the thread's
    /// windows (the tenant's `limits.*`, M-2).
    fn charge(&self, tenant: &Tenant, mail: &InboundEmail, job_id: &str) -> Result<(), String> {
        let limits = self.turns.limits.limits_for(tenant);
        self.budget.take(
            &ReplyCharge {
                tenant: tenant.id,
                sender: &mail.from.email,
                thread: thread_root(mail).map(String::as_str),
                job_id,
            },
            limits.email_replies_per_sender_per_hour,
            limits.email_replies_per_thread_per_day,
        )
    }

    /// Run the turn and build the reply.
    async fn prepare(
        &self,
        tenant: &Tenant,
        setup: &EmailSetup,
        mail: &InboundEmail,
    ) -> Result<Prepared, JobError> {
        let body = strip_quoted_reply(&mail.text);
        let body = if body.trim().is_empty() {
            mail.text.trim().to_string()
        } else {
            body
        };
        let auth = &mail.sender_auth;
        let authenticated = auth.authenticated;
        tracing::info!(
            tenant = %tenant.id,
            authenticated,
            reason = %auth.reason,
            "email sender authentication"
        );
        // §8.3: an admin may answer as someone else — an authenticated one.
        let (asker, body) = match impersonation(&body) {
            Some((who, rest))
                if authenticated && self.is_tenant_admin(tenant, &mail.from.email).await =>
            {
                tracing::info!(tenant = %tenant.id, "email impersonation honoured for an admin");
                (who, rest)
            }
            Some(_) => {
                tracing::info!(tenant = %tenant.id, authenticated,
                    "email impersonation prefix ignored: sender is not an authenticated admin");
                (mail.from.email.clone(), body)
            }
            None => (mail.from.email.clone(), body),
        };
        let message = if mail.subject.is_empty() {
            body.clone()
        } else {
            format!("Subject: {}\n\n{body}", mail.subject)
        };
        // The thread is named by its first message's id. An unauthenticated
        // sender's turns live apart (`unverified:`) and read no history: a
        // forged `From` plus a known Message-ID must not replay a member's
        // thread into the model.
        let root = thread_root(mail).cloned();
        let (root, history) = if authenticated {
            (root, None)
        } else {
            (root.map(|r| format!("unverified:{r}")), Some(Vec::new()))
        };
        // Known before the turn: a mail that cannot be answered runs no tools.
        let from = self.own_mailbox(tenant, setup, mail)?;
        let own = Some(from.email.clone());
        let participants: Vec<Mailbox> = mail
            .to
            .iter()
            .chain(&mail.cc)
            .filter(|m| m.email != mail.from.email && Some(&m.email) != own.as_ref())
            .cloned()
            .collect();
        let (sender_name, sender_email) = if asker == mail.from.email {
            (
                mail.from.name.clone().unwrap_or_else(|| asker.clone()),
                asker.clone(),
            )
        } else {
            (asker.clone(), asker.clone())
        };
        // An unauthenticated sender acts for nobody: no delegation, no gate.
        let (delegation, gate) = if authenticated {
            self.acting_for(tenant, &asker, &sender_name, &participants, mail, &body)
                .await?
        } else {
            (None, None)
        };
        let req = TurnRequest {
            channel: Some(Channel::Email),
            message,
            user_name: (asker == mail.from.email)
                .then(|| mail.from.name.clone())
                .flatten(),
            email: Some(asker),
            thread_key: root,
            history,
            external_message_id: mail.message_id.clone(),
            defer_outbound_log: true,
            email_thread: Some(EmailThread {
                sender_name,
                sender_email,
                participants,
                delegation,
                gate,
                sender_auth: auth.clone(),
            }),
            ..TurnRequest::default()
        };
        let (reply, outbound_log, public) = match run_channel_turn(&self.turns, req).await {
            Ok(o) => (o.reply, o.outbound_log, o.tier == Tier::PublicEmail),
            Err(TurnError::Refused(r)) => (r.member_text(), None, false),
            Err(TurnError::Invalid(m)) => {
                return Err(JobError::Permanent(format!("mail not answerable: {m}")));
            }
            Err(e) => return Err(JobError::Retry(format!("email turn failed: {e}"))),
        };
        let reply = if reply.trim().is_empty() {
            TURN_FAILED_REPLY.to_string()
        } else {
            reply
        };
        let (to, cc) = reply_recipients(
            mail,
            &RecipientRules {
                own: std::slice::from_ref(&from.email),
                platform_domain: self.config.platform_email_domain.as_deref(),
                honour_reply_to: authenticated && public,
                reply_all: authenticated,
            },
        );
        if to.is_empty() {
            return Err(JobError::Permanent(
                "the mail names no one to reply to".into(),
            ));
        }
        let threading = reply_headers(mail);
        let (text, html) = render_reply(&reply);
        Ok(Prepared {
            outgoing: OutgoingEmail {
                from,
                to,
                cc,
                subject: threading.subject,
                text,
                html: Some(html),
                in_reply_to: threading.in_reply_to,
                references: threading.references,
            },
            outbound_log,
            accepted: None,
            ambiguous_sends: 0,
        })
    }

    /// §8.3 mentor delegation of an authenticated sender — who the tools
    /// act for — and the authorization gate over it. Manifests first, so a
    /// pending integration can answer who the sender is.
    async fn acting_for(
        &self,
        tenant: &Tenant,
        asker: &str,
        sender_name: &str,
        participants: &[Mailbox],
        mail: &InboundEmail,
        body: &str,
    ) -> Result<(Option<Delegation>, Option<Arc<dyn ToolGate>>), JobError> {
        if let Err(e) = self.turns.integrations.prime().await {
            tracing::warn!(error = %e, "integrations not primed before email delegation");
        }
        let delegation = resolve_delegation(
            &self.turns.identity,
            &self.turns.store,
            self.turns.tools.clock.as_ref(),
            tenant.id,
            asker,
            participants,
        )
        .await
        .map_err(|e| JobError::Retry(format!("email delegation not resolved: {e}")))?;
        let gate = self
            .gate(asker, sender_name, &delegation, participants, mail, body)
            .await;
        Ok((delegation, gate))
    }

    /// The authorization gate of a member's mail (§8.3): a delegate's
    /// mutations are always checked, an owner's after the intent
    /// classifier. Public senders act for no account: no gate.
    async fn gate(
        &self,
        sender: &str,
        sender_name: &str,
        delegation: &Option<Delegation>,
        participants: &[Mailbox],
        mail: &InboundEmail,
        body: &str,
    ) -> Option<Arc<dyn ToolGate>> {
        let account = match delegation {
            Some(d) => d.account.clone(),
            None => {
                let m = self
                    .turns
                    .identity
                    .resolve_email_sender(sender)
                    .await
                    .ok()?;
                if m.principal.is_none() || m.tier.is_reserved() {
                    return None;
                }
                m
            }
        };
        let row = account.principal.as_ref();
        let gate = AuthorizationGate::new(
            self.turns.tools.llm.clone(),
            self.turns.prompts.clone(),
            GateMail {
                sender_name: sender_name.to_string(),
                sender_email: sender.to_string(),
                account_name: row
                    .and_then(|p| p.display_name.clone())
                    .unwrap_or_else(|| sender_name.to_string()),
                account_email: row.and_then(|p| p.email.clone()).unwrap_or_default(),
                delegation_reason: delegation.as_ref().map(|d| d.reason_text.clone()),
                participants: participants
                    .iter()
                    .map(|m| match &m.name {
                        Some(n) => format!("{n} <{}>", m.email),
                        None => m.email.clone(),
                    })
                    .collect(),
                subject: mail.subject.clone(),
                body: body.to_string(),
            },
        );
        Some(Arc::new(gate))
    }

    /// Is `address` one of the tenant's admins: an admin principal (as
    /// identity resolves it) or a dashboard user with role owner / admin?
    async fn is_tenant_admin(&self, tenant: &Tenant, address: &str) -> bool {
        if let Ok(m) = self.turns.identity.resolve_email_sender(address).await
            && m.is_admin
        {
            return true;
        }
        let row: Option<storage::TenantUser> = self
            .turns
            .store
            .find_unique(
                Some(tenant.id),
                storage::TenantUser::EMAIL_KEY,
                storage::key().str(&crate::identity::normalize_email(address)),
            )
            .await
            .ok()
            .flatten();
        row.is_some_and(|u| {
            matches!(
                u.role,
                storage::TenantRole::Owner | storage::TenantRole::Admin
            )
        })
    }

    /// The address Root writes from: the platform alias, or for BYO the
    /// address the mail was sent to (the tenant's own).
    fn own_mailbox(
        &self,
        tenant: &Tenant,
        setup: &EmailSetup,
        mail: &InboundEmail,
    ) -> Result<Mailbox, JobError> {
        let address = match setup.mode {
            EmailMode::PlatformAlias => setup.platform_address(&self.config),
            EmailMode::ByoWebhook => mail.to.first().map(|m| m.email.clone()),
        }
        .ok_or_else(|| {
            JobError::Permanent("no address to reply from (PLATFORM_EMAIL_DOMAIN unset?)".into())
        })?;
        Mailbox::new(&address, Some(&tenant.agent_name))
            .ok_or_else(|| JobError::Permanent(format!("bad reply-from address {address:?}")))
    }

    async fn notify_admins(&self, tenant: &Tenant, title: &str, body: String) {
        self.turns
            .admin_sink
            .notify(AdminNotice {
                kind: "email.send_failed".into(),
                title: format!("{}: {title}", tenant.display_name),
                body,
            })
            .await;
    }

    /// Write the reply's logs (both writes are idempotent).
    async fn record(&self, tenant: &Tenant, job_id: &str, p: &Prepared) -> Result<(), JobError> {
        let store = &self.turns.store;
        if let Some(row) = &p.outbound_log {
            let mut row = row.clone();
            row.metadata.0["email"] = json!({
                "provider": p.accepted.as_ref().map(|a| a.0.clone()),
                "provider_message_id": p.accepted.as_ref().and_then(|a| a.1.clone()),
            });
            match store.insert(row).await {
                // Reply mentions (§6) once the reply is on its way.
                Ok(row) => self.turns.mentions.spawn_scan(row, None),
                Err(storage::StorageError::Conflict { .. }) => {}
                Err(e) => return Err(JobError::Retry(format!("reply log not written: {e}"))),
            }
        }
        let out = &p.outgoing;
        let log = EmailLog {
            id: derived_id(job_id),
            tenant_id: tenant.id,
            direction: Direction::Outbound,
            to_email: out.to.first().map(|m| m.email.clone()).unwrap_or_default(),
            cc_emails: out.cc.iter().map(|m| m.email.clone()).collect(),
            subject: Some(out.subject.clone()),
            body_text: Some(out.text.clone()),
            message_id: p.accepted.as_ref().and_then(|a| a.1.clone()),
            status: "sent".into(),
            metadata: Json(json!({
                "provider": p.accepted.as_ref().map(|a| a.0.clone()),
                "in_reply_to": out.in_reply_to,
            })),
            created_at: self.turns.tools.clock.now(),
            ..EmailLog::default()
        };
        match store.insert(log).await {
            Ok(_) | Err(storage::StorageError::Conflict { .. }) => Ok(()),
            Err(e) => Err(JobError::Retry(format!("email log not written: {e}"))),
        }
    }
}

#[async_trait]
impl TypedJobHandler for EmailReply {
    type Payload = EmailInboundPayload;

    async fn run(&self, p: EmailInboundPayload, ctx: &mut JobContext) -> HandlerResult {
        let tenant = tenancy::current()
            .ok_or_else(|| JobError::Permanent("email job without a tenant".into()))?
            .tenant;
        let setup = email_setup(&self.turns.store, &tenant)
            .await
            .map_err(|e| JobError::Retry(e.to_string()))?
            .ok_or_else(|| JobError::Permanent("the tenant has no email channel".into()))?;
        let job_id = ctx.job().id.clone();
        let mut prepared: Prepared = match ctx.checkpoint() {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| JobError::Permanent(format!("unreadable checkpoint: {e}")))?,
            None => {
                if let Err(reason) = self.charge(&tenant, &p.mail, &job_id) {
                    tracing::warn!(tenant = %tenant.id, %reason,
                        "email not answered: reply limit reached (a mail loop?)");
                    return Ok(Some(json!({"suppressed": reason})));
                }
                let prepared = self.prepare(&tenant, &setup, &p.mail).await?;
                save(ctx, &prepared).await?;
                prepared
            }
        };
        if prepared.accepted.is_none() {
            let sent = match tenant_sender(&self.config, &self.turns.tools.clock, &setup) {
                Ok(sender) => sender.send(&prepared.outgoing).await,
                Err(e) => Err(e),
            };
            match sent {
                Ok(a) => {
                    prepared.accepted = Some((a.provider.to_string(), a.provider_id));
                    save(ctx, &prepared).await?;
                }
                Err(SendError::Retryable(m)) => return Err(JobError::Retry(m)),
                Err(SendError::Ambiguous(m)) if prepared.ambiguous_sends == 0 => {
                    prepared.ambiguous_sends += 1;
                    save(ctx, &prepared).await?;
                    tracing::warn!(tenant = %tenant.id, error = %m,
                        "email send unanswered; resending once on the next attempt");
                    return Err(JobError::Retry(m));
                }
                Err(e) => {
                    tracing::error!(tenant = %tenant.id, error = %e, "email reply not sent");
                    self.notify_admins(
                        &tenant,
                        "an email reply could not be sent",
                        format!(
                            "To {}: {e}",
                            prepared
                                .outgoing
                                .to
                                .first()
                                .map(|m| m.email.as_str())
                                .unwrap_or("?")
                        ),
                    )
                    .await;
                    return Err(JobError::Permanent(e.to_string()));
                }
            }
        }
        self.record(&tenant, &job_id, &prepared).await?;
        Ok(Some(json!({
            "provider": prepared.accepted.as_ref().map(|a| a.0.clone()),
            "to": prepared.outgoing.to.iter().map(|m| m.email.clone()).collect::<Vec<_>>(),
        })))
    }
}

/// The thread's root: its first message's id (References, else
/// In-Reply-To, else its own Message-ID).
fn thread_root(mail: &InboundEmail) -> Option<&String> {
    mail.references
        .first()
        .or(mail.in_reply_to.as_ref())
        .or(mail.message_id.as_ref())
}

/// §8.3 admin impersonation: a body whose first line is
/// `Impersonating: <address>` or `On behalf of: <address>` (any case;
/// `Name <address>` too)
/// → the address and the rest of the body.
pub fn impersonation(body: &str) -> Option<(String, String)> {
    let trimmed = body.trim_start();
    let (first, rest) = trimmed.split_once('\n').unwrap_or((trimmed, ""));
    let lower = first.trim().to_lowercase();
    let value = ["impersonating:", "on behalf of:"]
        .iter()
        .find_map(|p| lower.strip_prefix(p))?
        .trim();
    let address = match (value.rfind('<'), value.rfind('>')) {
        (Some(a), Some(b)) if a < b => &value[a + 1..b],
        _ => value,
    }
    .trim();
    let at = address.find('@')?;
    if at == 0 || at + 1 >= address.len() || address.contains(char::is_whitespace) {
        return None;
    }
    Some((address.to_string(), rest.trim().to_string()))
}

/// A stable row id for the job's `email_logs` row (a repeat write conflicts).
fn derived_id(job_id: &str) -> Uuid {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(format!("email_logs:{job_id}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    Uuid::from_bytes(b)
}

/// The tenant's sender: the platform provider (Primitive, falling back to
/// Postmark) or its signed BYO webhook.
pub fn tenant_sender(
    config: &Config,
    clock: &Arc<dyn crate::platform::clock::Clock>,
    setup: &EmailSetup,
) -> Result<Box<dyn EmailSender>, SendError> {
    match setup.mode {
        EmailMode::PlatformAlias => {
            let s = PlatformSender::from_config(config)?;
            if !s.is_configured() {
                return Err(SendError::Config(
                    "no email provider: set PRIMITIVE_API_URL + PRIMITIVE_API_KEY or POSTMARK_SERVER_TOKEN"
                        .into(),
                ));
            }
            Ok(Box::new(s))
        }
        EmailMode::ByoWebhook => {
            let (Some(url), Some(secret)) =
                (&setup.outbound_webhook_url, &setup.outbound_signing_secret)
            else {
                return Err(SendError::Config(
                    "the email channel has no outbound_webhook_url / outbound_signing_secret"
                        .into(),
                ));
            };
            let http = email_client(OutboundPolicy::from_config(config))?;
            Ok(Box::new(ByoWebhookSender::new(
                http,
                url,
                secret.clone(),
                clock.clone(),
            )))
        }
    }
}

async fn save(ctx: &mut JobContext, p: &Prepared) -> Result<(), JobError> {
    let v = serde_json::to_value(p)
        .map_err(|e| JobError::Permanent(format!("checkpoint not serializable: {e}")))?;
    ctx.save_checkpoint(v).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impersonation_prefixes_name_an_address_on_the_first_line() {
        assert_eq!(
            impersonation("Impersonating: jane@example.org\nWhat is my plan?"),
            Some(("jane@example.org".into(), "What is my plan?".into()))
        );
        assert_eq!(
            impersonation("  on behalf of: Jane Roe <Jane@Example.org>\n\nHi"),
            Some(("jane@example.org".into(), "Hi".into()))
        );
        assert_eq!(
            impersonation("Hello\nImpersonating: jane@example.org"),
            None
        );
        assert_eq!(impersonation("Impersonating: nobody"), None);
        assert_eq!(impersonation("Impersonating: a b@c"), None);
    }
}
