//! Who a channel turn is for (§8.1 identity order) and what the tool layer
//! and the prompt may know of them: the resolved member, the admin rights
//! their surface and origin allow, their memory.

use storage::{Principal, Store, TenantRole, TenantUser, key};
use uuid::Uuid;

use super::turn::{ANONYMOUS_REF, TurnError, TurnOrigin, TurnRequest, TurnServices};
use crate::identity::{Member, TierSource};
use crate::limits::caps::{MAX_DISPLAY_NAME_CHARS, cut_chars};
use crate::platform::tiers::Tier;
use crate::tools::TurnPrincipal;
use crate::tools::gating::Surface;

/// Who the turn is for, and the handle its thread key uses.
pub(super) struct Caller {
    pub(super) member: Member,
    pub(super) handle: String,
}

/// The member's conversation memory (§6), read fresh (the identity cache
/// may hold an older principal row). A failed read costs the turn only the
/// memory section.
pub(super) async fn member_memory(
    state: &TurnServices,
    tenant: Uuid,
    principal: Option<Uuid>,
) -> Option<String> {
    let id = principal?;
    match state
        .store
        .get::<Principal>(Some(tenant), key().uuid(id))
        .await
    {
        Ok(row) => row.and_then(|p| p.conversation_memory),
        Err(e) => {
            tracing::warn!(error = %e, "conversation memory not read; turn runs without it");
            None
        }
    }
}

/// §8.1 identity order.
pub(super) async fn resolve_caller(
    state: &TurnServices,
    tenant: Uuid,
    req: &TurnRequest,
) -> Result<Caller, TurnError> {
    let clean = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    // (1) API callers with a stable user id.
    if let Some(stable) = clean(&req.stable_user_id) {
        let row: Option<Principal> = state
            .store
            .find_unique(Some(tenant), Principal::REF_KEY, key().str(&stable))
            .await
            .map_err(anyhow::Error::from)?;
        if let Some(p) = row {
            return Ok(Caller {
                member: Member {
                    principal_ref: p.ref_.clone(),
                    tier: Tier::parse_or_unresolved(&p.tier),
                    is_admin: p.is_admin,
                    principal: Some(p),
                    source: TierSource::Integration,
                    acts_for: None,
                },
                handle: stable,
            });
        }
        if clean(&req.email).is_none() && clean(&req.slack_user_id).is_none() {
            return Ok(Caller {
                member: unresolved(stable.clone()),
                handle: stable,
            });
        }
    }
    // (2) Email: a sender nobody authenticated is nobody in particular
    // (the public email surface, whoever `From` names); a delegate runs as
    // the account the channel resolved; anyone else through the
    // integration, then access-policy trust.
    if let (Some(email), Some(t)) = (clean(&req.email), req.email_thread.as_ref())
        && !t.sender_auth.authenticated
    {
        return Ok(Caller {
            member: Member::unauthenticated_email(&email),
            handle: crate::identity::normalize_email(&email),
        });
    }
    if let (Some(email), Some(d)) = (
        clean(&req.email),
        req.email_thread
            .as_ref()
            .and_then(|t| t.delegation.as_ref()),
    ) {
        return Ok(Caller {
            member: d.account.clone(),
            handle: crate::identity::normalize_email(&email),
        });
    }
    if let Some(email) = clean(&req.email) {
        if !email.contains('@') {
            return Err(TurnError::Invalid(format!(
                "{email:?} is not an email address"
            )));
        }
        let member = state.identity.resolve_email_sender(&email).await?;
        return Ok(Caller {
            member,
            handle: crate::identity::normalize_email(&email),
        });
    }
    // (3) Slack.
    if let Some(slack) = clean(&req.slack_user_id) {
        let member = state.identity.resolve_slack_member(&slack).await?;
        return Ok(Caller {
            member,
            handle: slack,
        });
    }
    // (4) Nobody.
    Ok(Caller {
        member: unresolved(ANONYMOUS_REF.into()),
        handle: ANONYMOUS_REF.into(),
    })
}

fn unresolved(principal_ref: String) -> Member {
    Member {
        principal: None,
        principal_ref,
        tier: Tier::Unresolved,
        is_admin: false,
        source: TierSource::Unresolved,
        acts_for: None,
    }
}

/// The tool layer's view of the member. Admin rights never reach the API
/// (§5.2) or the token-only test chat (review M-1), whoever the address is.
pub(super) fn turn_principal(
    member: &Member,
    surface: Surface,
    origin: TurnOrigin,
    user_name: Option<&str>,
) -> TurnPrincipal {
    let row = member.principal.as_ref();
    TurnPrincipal {
        id: row.map(|p| p.id),
        principal_ref: member.principal_ref.clone(),
        // A caller-given name (web chat `user_name`, an email's `From`
        // name) is cut: it goes into the system prompt (review L-6).
        display_name: row.and_then(|p| p.display_name.clone()).or_else(|| {
            user_name
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| cut_chars(n, MAX_DISPLAY_NAME_CHARS).to_string())
        }),
        tier: member.tier.clone(),
        is_admin: member.is_admin && surface != Surface::Api && origin != TurnOrigin::WebTestChat,
        slack_user_id: row.and_then(|p| p.slack_user_id.clone()),
        email: row.and_then(|p| p.email.clone()),
    }
}

/// A dashboard owner/admin talking on Slack (§5.2): their principal's
/// email is a `tenant_users` row with an admin role.
pub(super) async fn is_dashboard_admin(
    state: &TurnServices,
    tenant: Uuid,
    member: &Member,
) -> Result<bool, TurnError> {
    let Some(email) = member.principal.as_ref().and_then(|p| p.email.as_deref()) else {
        return Ok(false);
    };
    let user: Option<TenantUser> = state
        .store
        .find_unique(
            Some(tenant),
            TenantUser::EMAIL_KEY,
            key().str(&crate::identity::normalize_email(email)),
        )
        .await
        .map_err(anyhow::Error::from)?;
    Ok(user.is_some_and(|u| matches!(u.role, TenantRole::Owner | TenantRole::Admin)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admin_member() -> Member {
        Member {
            principal: None,
            principal_ref: "email:owner@acme.org".into(),
            tier: Tier::parse_or_unresolved("member"),
            is_admin: true,
            source: TierSource::Integration,
            acts_for: None,
        }
    }

    /// M-1: an address the integration marks admin is never admin on the
    /// token-only test chat (nor on the API); the dashboard chat keeps it.
    #[test]
    fn security_m1_test_chat_principal_is_never_admin() {
        let m = admin_member();
        let p = |surface, origin| turn_principal(&m, surface, origin, None).is_admin;
        assert!(!p(Surface::Web, TurnOrigin::WebTestChat));
        assert!(!p(Surface::Api, TurnOrigin::Channel));
        assert!(p(Surface::Web, TurnOrigin::Channel));
    }

    /// L-6: a caller-given display name (web `user_name`, an email's `From`
    /// name) reaches the prompt cut to 200 characters.
    #[test]
    fn security_l6_display_name_is_cut_to_200_chars() {
        let m = admin_member();
        let long = "é".repeat(100_000);
        let p = turn_principal(&m, Surface::Email, TurnOrigin::Channel, Some(&long));
        assert_eq!(
            p.display_name.unwrap().chars().count(),
            MAX_DISPLAY_NAME_CHARS
        );
        assert_eq!(MAX_DISPLAY_NAME_CHARS, 200);
        let short = turn_principal(&m, Surface::Email, TurnOrigin::Channel, Some(" Ada "));
        assert_eq!(short.display_name.as_deref(), Some("Ada"));
    }
}
