//! Mentor delegation (§8.3): who an email sender acts for. In order:
//!
//! 1. **`acts_for`** — the sender's identity answer names an account
//!    (`historical_cc`, `hosted_office_hours_invite`, …): the integration
//!    vouches, and an `email_delegations` row records it.
//! 2. **Stored delegation** (`email_delegations`, written when an account
//!    owner copies someone on a mail to Root): the account is on this
//!    mail's To / Cc (`cc`), or — for a sender with no member account of
//!    their own — it is the only account they may act for
//!    (`historical_cc`).
//! 3. **CC** — a sender with no member account of their own copies exactly
//!    one member on the mail: they act for that member for this mail only
//!    (`cc`; no row is written).
//!
//! Otherwise the sender is themselves (an account owner or a public
//! sender). An owner's mail records a row for each person they copy (at
//! most [`MAX_RECORDED_DELEGATES`]), which is what makes a later mail from
//! that person "historical CC". Whatever the path, every mutation a
//! delegate asks for passes the authorization gate (`gate.rs`).

use std::collections::HashSet;

use futures_util::future::join_all;
use storage::{EmailDelegation, Principal, RedbStore, Scan, StorageError, Store, key};
use uuid::Uuid;

use crate::channels::turn::Delegation;
use crate::email::Mailbox;
use crate::identity::{Identity, Member, normalize_email};
use crate::platform::clock::Clock;

/// An owner's mail records at most this many copied people as delegates.
pub const MAX_RECORDED_DELEGATES: usize = 10;
/// Stored delegations read per sender.
const MAX_DELEGATIONS_READ: usize = 32;

/// `reason` when the account is copied on the mail.
pub const REASON_CC: &str = "cc";
/// `reason` when the account copied the sender on an earlier mail.
pub const REASON_HISTORICAL_CC: &str = "historical_cc";

/// The reason in plain words, for the prompt and the gate.
pub fn reason_text(reason: &str, account: &str) -> String {
    match reason {
        REASON_CC => format!("{account} is copied on this email"),
        REASON_HISTORICAL_CC => {
            format!("{account} copied you on an earlier email to the assistant")
        }
        "hosted_office_hours_invite" => {
            format!("you were invited to office hours that {account} hosts")
        }
        other => format!("the community's records link you to {account} ({other})"),
    }
}

/// Is this a member account someone may act for (a principal with a
/// non-reserved tier)?
fn is_member(m: &Member) -> bool {
    m.principal.is_some() && !m.tier.is_reserved()
}

/// Who `sender` acts for on this mail, if anyone. `participants` are the
/// mail's other To / Cc addresses (Root's own left out). Also records the
/// delegations the mail establishes.
pub async fn resolve_delegation(
    identity: &Identity,
    store: &RedbStore,
    clock: &dyn Clock,
    tenant: Uuid,
    sender_email: &str,
    participants: &[Mailbox],
) -> anyhow::Result<Option<Delegation>> {
    let sender_email = normalize_email(sender_email);
    let sender = identity.resolve_email_sender(&sender_email).await?;
    // 1. The integration names the account.
    if let Some(a) = &sender.acts_for {
        let account = identity.resolve_account(&a.principal).await?;
        if account.principal_ref != sender.principal_ref && is_member(&account) {
            record(store, clock, tenant, &sender_email, &account).await;
            return Ok(Some(delegation(account, &a.reason)));
        }
    }
    let on_mail: HashSet<&str> = participants.iter().map(|m| m.email.as_str()).collect();
    let own_account = is_member(&sender);
    // 2. Stored delegations of this sender.
    let rows: Vec<EmailDelegation> = store
        .scan(
            Some(tenant),
            Scan::index(EmailDelegation::DELEGATE_KEY, key().str(&sender_email))
                .limit(MAX_DELEGATIONS_READ),
        )
        .await?;
    if !rows.is_empty() {
        let accounts: Vec<Principal> = store
            .get_many::<Principal>(
                Some(tenant),
                rows.iter().map(|r| key().uuid(r.principal_id)).collect(),
            )
            .await?
            .into_iter()
            .flatten()
            .filter(|p| p.ref_ != sender.principal_ref)
            .collect();
        let copied = accounts.iter().find(|p| {
            p.email
                .as_deref()
                .is_some_and(|e| on_mail.contains(normalize_email(e).as_str()))
        });
        let chosen = match copied {
            Some(p) => Some((p, REASON_CC)),
            None if !own_account && accounts.len() == 1 => {
                Some((&accounts[0], REASON_HISTORICAL_CC))
            }
            None => None,
        };
        if let Some((p, reason)) = chosen
            && let Some(account) = fresh(identity, p).await?
        {
            return Ok(Some(delegation(account, reason)));
        }
    }
    // 3. A sender without an account of their own copies one member.
    if !own_account {
        let resolved = join_all(
            participants
                .iter()
                .take(MAX_RECORDED_DELEGATES)
                .map(|m| identity.resolve_email_sender(&m.email)),
        )
        .await;
        let mut members = Vec::new();
        for r in resolved {
            let r = r?;
            if is_member(&r) {
                members.push(r);
            }
        }
        if members.len() == 1 {
            return Ok(members.pop().map(|m| delegation(m, REASON_CC)));
        }
        if members.len() > 1 {
            tracing::info!(
                event = "email.delegation_ambiguous",
                "several members copied: the sender acts for no one"
            );
        }
        return Ok(None);
    }
    // The owner writes: the people they copy may act for them later.
    for m in participants.iter().take(MAX_RECORDED_DELEGATES) {
        if m.email != sender_email {
            record(store, clock, tenant, &m.email, &sender).await;
        }
    }
    Ok(None)
}

/// The stored account as identity sees it now (its tier may have changed).
async fn fresh(identity: &Identity, p: &Principal) -> anyhow::Result<Option<Member>> {
    let Some(email) = p.email.as_deref() else {
        return Ok(None);
    };
    let m = identity.resolve_email_sender(email).await?;
    Ok(is_member(&m).then_some(m))
}

fn delegation(account: Member, reason: &str) -> Delegation {
    let name = account
        .principal
        .as_ref()
        .and_then(|p| p.display_name.clone())
        .unwrap_or_else(|| account.principal_ref.clone());
    Delegation {
        reason_text: reason_text(reason, &name),
        reason: reason.to_string(),
        account,
    }
}

/// Write `delegate → account` (a repeat is a no-op; a failure is logged —
/// the reply does not depend on it).
async fn record(
    store: &RedbStore,
    clock: &dyn Clock,
    tenant: Uuid,
    delegate: &str,
    account: &Member,
) {
    let Some(principal) = &account.principal else {
        return;
    };
    let row = EmailDelegation {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        delegate_email: normalize_email(delegate),
        principal_id: principal.id,
        created_at: clock.now(),
    };
    match store.insert(row).await {
        Ok(_) => tracing::info!(
            event = "email.delegation_recorded",
            "email delegation recorded"
        ),
        Err(StorageError::Conflict { .. }) => {}
        Err(e) => tracing::warn!(error = %e, "email delegation not recorded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_plain_words() {
        assert_eq!(reason_text("cc", "Maria"), "Maria is copied on this email");
        assert_eq!(
            reason_text("historical_cc", "Maria"),
            "Maria copied you on an earlier email to the assistant"
        );
        assert_eq!(
            reason_text("hosted_office_hours_invite", "Maria"),
            "you were invited to office hours that Maria hosts"
        );
        assert!(reason_text("board_assistant", "Maria").contains("(board_assistant)"));
    }
}
