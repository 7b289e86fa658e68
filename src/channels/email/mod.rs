//! The email channel (§8.3): what Root does with a mail.
//!
//! Ingress ([`EmailChannel::accept`]) decides the tenant (platform alias or
//! BYO token, [`directory`]), drops duplicates — the same Message-ID within
//! 30 minutes or already in `conversation_logs.external_message_id`, else
//! the same sender + subject + body within 10 minutes — and durably queues
//! one `email-inbound` job; the route answers 202 only after that. The job
//! ([`reply::EmailReply`]) runs the turn once, checkpoints the prepared
//! reply on the job before sending, sends it through the tenant's sender,
//! marks the acceptance, then writes the logs — so a retry never re-runs the
//! tools and never resends accepted mail.

pub mod delegation;
pub mod directory;
pub mod gate;
pub mod reply;
pub mod reply_budget;
pub mod setup;
pub mod sink;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use storage::{ConversationLog, EnqueueMode, EnqueueOutcome, Scan, Store, key};
use uuid::Uuid;

use crate::config::Config;
use crate::email::{InboundEmail, Mailbox, content_identity};
use crate::platform::replay::ReplayCache;
use crate::queue::Queues;
use crate::queue::job::{JobOptions, QueuePayload};
use crate::queue::registry;
use directory::EmailDirectory;

/// Message-ID dedupe window in memory (§8.3 "in-memory 30 min").
pub const MESSAGE_ID_DEDUPE_TTL: Duration = Duration::from_secs(30 * 60);
/// Content dedupe window for mail without a Message-ID (§8.3 "within 10 minutes").
pub const CONTENT_DEDUPE_TTL: Duration = Duration::from_secs(10 * 60);
/// Keys each dedupe cache holds at most.
pub const DEDUPE_CAPACITY: u64 = 100_000;
/// The job id prefix (§8.3).
pub const JOB_ID_PREFIX: &str = "email-inbound-";

/// One mail to answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmailInboundPayload {
    /// The mail, normalized.
    pub mail: InboundEmail,
}

impl QueuePayload for EmailInboundPayload {
    const QUEUE: &'static str = registry::EMAIL_INBOUND;
}

/// The `email-inbound` job id of `mail` for `tenant`: the prefix + SHA-256
/// of the Message-ID (else of the content identity), scoped by tenant so
/// one mail sent to two communities is answered by both.
pub fn job_id(tenant: Uuid, mail: &InboundEmail) -> String {
    let identity = match &mail.message_id {
        Some(id) => id.clone(),
        None => content_identity(mail),
    };
    let digest = Sha256::digest(format!("{tenant}:{identity}").as_bytes());
    format!("{JOB_ID_PREFIX}{}", hex::encode(digest))
}

/// What became of an inbound mail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acceptance {
    /// Durably queued (the job's id).
    Queued(String),
    /// Seen already: nothing queued, nothing will be sent twice.
    Duplicate,
    /// Never answered (security M-2): automatic mail (auto-reply, bounce,
    /// list) or mail from a platform address. The reason is logged.
    Ignored(String),
}

/// Why a mail could not be accepted.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// The queue refused the job: answer 503 so the provider retries.
    #[error("the mail could not be queued: {0}")]
    Unavailable(storage::StorageError),
}

/// The email channel service. Cheap to clone.
#[derive(Clone)]
pub struct EmailChannel {
    queues: Queues,
    store: storage::RedbStore,
    config: Arc<Config>,
    directory: EmailDirectory,
    seen_ids: ReplayCache,
    seen_content: ReplayCache,
    reply_budget: reply_budget::ReplyBudget,
}

impl EmailChannel {
    /// The channel over `queues` and `store`; reply windows on `clock`.
    pub fn new(
        queues: Queues,
        store: storage::RedbStore,
        config: Arc<Config>,
        directory: EmailDirectory,
        clock: Arc<dyn crate::platform::clock::Clock>,
    ) -> EmailChannel {
        EmailChannel {
            reply_budget: reply_budget::ReplyBudget::new(clock),
            queues,
            store,
            config,
            directory,
            seen_ids: ReplayCache::new(MESSAGE_ID_DEDUPE_TTL, DEDUPE_CAPACITY),
            seen_content: ReplayCache::new(CONTENT_DEDUPE_TTL, DEDUPE_CAPACITY),
        }
    }

    /// Aliases and tokens → tenants.
    pub fn directory(&self) -> &EmailDirectory {
        &self.directory
    }

    /// The process's reply windows (M-2), shared by every `email-inbound`
    /// handler built over this state.
    pub fn reply_budget(&self) -> &reply_budget::ReplyBudget {
        &self.reply_budget
    }

    /// The configuration (platform domain, provider settings).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tenant a platform-alias mail is for: the first envelope or
    /// header recipient at `PLATFORM_EMAIL_DOMAIN` whose local part is a
    /// tenant's alias.
    pub async fn tenant_for_recipients(
        &self,
        recipients: &[String],
    ) -> Result<Option<Uuid>, storage::StorageError> {
        let Some(domain) = self.config.platform_email_domain.as_deref() else {
            return Ok(None);
        };
        let domain = domain.trim().to_lowercase();
        for r in recipients {
            let r = r.trim().trim_matches(['<', '>']).to_lowercase();
            let Some((local, at)) = r.rsplit_once('@') else {
                continue;
            };
            if at != domain {
                continue;
            }
            // Plus-addressing (`alias+anything@`) still reaches the alias.
            let alias = local.split('+').next().unwrap_or(local);
            if let Some(t) = self.directory.by_alias(alias).await? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// Why `mail` must not be answered, if so (security M-2): no person
    /// wrote it, or it comes from — or asks replies to go to — an address
    /// at `PLATFORM_EMAIL_DOMAIN` (a tenant's alias, Root's own senders).
    pub fn unanswerable(&self, mail: &InboundEmail) -> Option<String> {
        if let Some(why) = &mail.automatic {
            return Some(format!("automatic mail: {why}"));
        }
        if let Some(domain) = self.config.platform_email_domain.as_deref() {
            let domain = domain.trim().to_lowercase();
            let platform = |m: &Mailbox| {
                !domain.is_empty()
                    && m.email
                        .rsplit_once('@')
                        .is_some_and(|(_, at)| at == domain || at.ends_with(&format!(".{domain}")))
            };
            if platform(&mail.from) {
                return Some("sent from a platform address".into());
            }
            if mail.reply_to.as_ref().is_some_and(platform) {
                return Some("Reply-To names a platform address".into());
            }
        }
        None
    }

    /// Drop mail that must not be answered and duplicates, then queue
    /// `mail` for `tenant` durably (§8.3). A claim whose enqueue failed is
    /// released, so the provider's retry is let in.
    pub async fn accept(
        &self,
        tenant: Uuid,
        mail: InboundEmail,
    ) -> Result<Acceptance, AcceptError> {
        tracing::info!(
            %tenant,
            authenticated = mail.sender_auth.authenticated,
            reason = %mail.sender_auth.reason,
            "inbound mail sender authentication"
        );
        if let Some(reason) = self.unanswerable(&mail) {
            tracing::info!(%tenant, %reason, "inbound mail not answered");
            return Ok(Acceptance::Ignored(reason));
        }
        let (cache, claim) = match &mail.message_id {
            Some(id) => (&self.seen_ids, format!("{tenant}:{id}")),
            None => (
                &self.seen_content,
                format!("{tenant}:{}", content_identity(&mail)),
            ),
        };
        if !cache.first_seen(&claim) {
            tracing::info!(%tenant, "duplicate inbound mail dropped (seen)");
            return Ok(Acceptance::Duplicate);
        }
        if let Some(id) = &mail.message_id {
            match self.already_logged(tenant, id).await {
                Ok(true) => {
                    tracing::info!(%tenant, "duplicate inbound mail dropped (logged)");
                    return Ok(Acceptance::Duplicate);
                }
                Ok(false) => {}
                Err(e) => {
                    cache.forget(&claim);
                    return Err(AcceptError::Unavailable(e));
                }
            }
        }
        let id = job_id(tenant, &mail);
        match self
            .queues
            .enqueue_job(
                &EmailInboundPayload { mail },
                JobOptions {
                    id: Some(id.clone()),
                    tenant_id: Some(tenant),
                    mode: EnqueueMode::Dedupe,
                    ..JobOptions::default()
                },
            )
            .await
        {
            Ok((EnqueueOutcome::Created, _)) => Ok(Acceptance::Queued(id)),
            Ok(_) => Ok(Acceptance::Duplicate),
            Err(e) => {
                cache.forget(&claim);
                Err(AcceptError::Unavailable(e))
            }
        }
    }

    /// Is a message with this Message-ID already in the tenant's logs?
    async fn already_logged(
        &self,
        tenant: Uuid,
        message_id: &str,
    ) -> Result<bool, storage::StorageError> {
        let rows: Vec<ConversationLog> = self
            .store
            .scan(
                Some(tenant),
                Scan::index(ConversationLog::EXTERNAL_ID_IDX, key().str(message_id)).limit(1),
            )
            .await?;
        Ok(!rows.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(id: Option<&str>) -> InboundEmail {
        InboundEmail {
            message_id: id.map(str::to_string),
            in_reply_to: None,
            references: Vec::new(),
            from: Mailbox::new("ada@example.org", None).unwrap(),
            reply_to: None,
            to: Vec::new(),
            cc: Vec::new(),
            subject: "Hi".into(),
            text: "Hello".into(),
            html: None,
            date: None,
            provider_message_id: None,
            sender_auth: crate::email::SenderAuth::default(),
            automatic: None,
        }
    }

    #[test]
    fn job_ids_hash_the_message_id_per_tenant() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let m = mail(Some("<x@y>"));
        let id = job_id(a, &m);
        assert!(id.starts_with("email-inbound-"));
        assert_eq!(id.len(), "email-inbound-".len() + 64);
        assert_eq!(id, job_id(a, &m));
        assert_ne!(id, job_id(b, &m), "per tenant");
        assert_ne!(id, job_id(a, &mail(Some("<z@y>"))));
        // Without a Message-ID: the content identity.
        assert_eq!(job_id(a, &mail(None)), job_id(a, &mail(None)));
        assert_ne!(job_id(a, &mail(None)), id);
    }
}
